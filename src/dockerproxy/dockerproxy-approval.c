/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <curl/curl.h>

#include "curl-buffer.h"
#include "dockerproxy-access.h"
#include "dockerproxy-approval.h"
#include "gate-token.h"
#include "io-util.h"
#include "text-escape.h"

static int read_token(const char *channel, const char *container, char ret[static GATE_TOKEN_HEX_LEN + 1]) {
        _cleanup_close_ int dir_fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        r = gate_token_dir_open(channel, &dir_fd);
        if (r < 0)
                return r;
        r = read_full_file_at(dir_fd, container, GATE_TOKEN_HEX_LEN + 1, true, &text, &size);
        if (r < 0)
                return r;
        text[strcspn(text, "\n")] = 0;
        if (!gate_token_is_well_formed(text))
                return -EBADMSG;
        memcpy(ret, text, GATE_TOKEN_HEX_LEN + 1);
        return 0;
}

/* "docker:METHOD:/containers/ID-replaced/exec" (as "*"): ids and names replaced, so a session answer covers the kind
 * of request, not one container. */
static char *approval_cache_key(const ProxyConn *c) {
        _cleanup_free_ char *ref = NULL;
        const char *path = c->target.unversioned;
        char *key = NULL;

        if (proxy_path_ref(c->head.method, path, &ref) != PROXY_REF_NONE && ref) {
                const char *after = strchr(path + 1, '/');
                size_t prefix = (size_t) (after - path) + 1;
                const char *tail = after + 1 + strlen(ref);
                if (asprintf(&key, "docker:%s:%.*s*%s", c->head.method, (int) prefix, path, tail) < 0)
                        return NULL;
                return key;
        }
        if (asprintf(&key, "docker:%s:%s", c->head.method, path) < 0)
                return NULL;
        return key;
}

/* Asks loop-gate@NAME. Never fails: trouble is a deny with the reason in *ret_reason. */
/* A human's answer can take minutes: a service that stops does not wait for it (the request is denied). */
static int approval_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
        return proxy_conn_stopping(userdata) ? 1 : 0;
}

bool proxy_conn_ask_human(ProxyConn *c, const ProxyVerdict *v, char **ret_actor, char **ret_reason) {
        _cleanup_free_ char *auth = NULL, *target = NULL, *key = NULL;
        _cleanup_(json_object_putp) json_object *req = NULL, *reply = NULL;
        char token[GATE_TOKEN_HEX_LEN + 1];
        CurlBuffer buf = { .max = PROXY_APPROVAL_REPLY_MAX };
        struct curl_slist *headers = NULL;
        json_object *d, *a, *rs;
        bool allow = false;
        long code = 0;
        CURLcode cr;
        CURL *h;
        int r;

        *ret_actor = NULL;
        if (!c->peer_name) {
                *ret_reason = strdup("caller-unknown");
                return false;
        }
        r = read_token(c->proxy->channel, c->peer_name, token);
        if (r < 0) {
                *ret_reason = strdup("no-token");
                return false;
        }
        target = text_escape_display(c->target.path, PROXY_DISPLAY_MAX);
        key = approval_cache_key(c);
        req = json_object_new_object();
        if (!target || !key || !req || asprintf(&auth, "Authorization: Bearer %s", token) < 0) {
                *ret_reason = strdup("oom");
                return false;
        }
        {
                _cleanup_free_ char *t = NULL;
                if (asprintf(&t, "%s %s", c->head.method, target) < 0) {
                        *ret_reason = strdup("oom");
                        return false;
                }
                json_object_object_add(req, "kind", json_object_new_string("docker"));
                json_object_object_add(req, "target", json_object_new_string(t));
        }
        json_object_object_add(req, "message", json_object_new_string(v->message ?: "Docker API request"));
        json_object_object_add(req, "cache_key", json_object_new_string(key));
        json_object_object_add(req, "rule", json_object_new_string(v->rule_id));
        json_object_object_add(req, "pid", json_object_new_int(0));

        h = curl_easy_init();
        headers = curl_slist_append(headers, auth);
        headers = curl_slist_append(headers, "Content-Type: application/json");
        explicit_bzero(token, sizeof(token));
        if (!h || !headers) {
                curl_slist_free_all(headers);
                if (h)
                        curl_easy_cleanup(h);
                *ret_reason = strdup("oom");
                return false;
        }
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->proxy->gate_socket);
        curl_easy_setopt(h, CURLOPT_URL, "http://loop-gate/api/gate/container-approval");
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_buffer_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &buf);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, PROXY_APPROVAL_TIMEOUT_SEC);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, approval_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        cr = curl_easy_perform(h);
        if (cr == CURLE_OK)
                curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_slist_free_all(headers);
        curl_easy_cleanup(h);
        explicit_bzero(auth, strlen(auth));

        if (code != 200 || buf.overflow || !buf.data || !(reply = json_tokener_parse(buf.data)) ||
            !json_object_object_get_ex(reply, "decision", &d)) {
                free(buf.data);
                *ret_reason = strdup(cr == CURLE_ABORTED_BY_CALLBACK ? "proxy-stopping" :
                                     code == 0 ? "gate-unreachable" : "gate-error");
                return false;
        }
        allow = streq_ptr(json_object_get_string(d), "allow");
        if (json_object_object_get_ex(reply, "actor", &a))
                *ret_actor = strdup(strempty(json_object_get_string(a)));
        if (json_object_object_get_ex(reply, "reason", &rs))
                *ret_reason = strdup(strempty(json_object_get_string(rs)));
        free(buf.data);
        return allow;
}
