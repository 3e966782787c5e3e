/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <curl/curl.h>
#include <pthread.h>
#include <time.h>

#include "curl-buffer.h"
#include "gate-client.h"
#include "json-util.h"
#include "log.h"

typedef struct AuditItem {
        struct AuditItem *next;
        char *body;
} AuditItem;

struct GateClient {
        char *socket_path;
        char *authorization;    /* "Authorization: Bearer <token>" */
        char *channel;

        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_cond_t drained;         /* nothing queued, nothing being sent */
        AuditItem *head, *tail;
        size_t queued;
        bool sending;
        uint64_t dropped;
        bool stop;
        bool thread_started;
        pthread_t thread;
};

static void curl_slist_free_allp(struct curl_slist **l) {
        curl_slist_free_all(*l);
}

static void curl_easy_cleanupp(CURL **h) {
        if (*h)
                curl_easy_cleanup(*h);
}

/* One POST; returns the HTTP status (>= 0) or a negative errno, the body in *reply. */
static int post(const GateClient *c, const char *path, const char *body, long timeout_sec, CurlBuffer *reply) {
        _cleanup_(curl_easy_cleanupp) CURL *h = NULL;
        _cleanup_(curl_slist_free_allp) struct curl_slist *headers = NULL;
        _cleanup_free_ char *url = NULL;
        long status = 0;
        CURLcode cc;

        h = curl_easy_init();
        if (!h)
                return -ENOMEM;
        if (asprintf(&url, "http://loop-gate%s", path) < 0)
                return -ENOMEM;
        headers = curl_slist_append(NULL, c->authorization);
        if (!headers || !curl_slist_append(headers, "Content-Type: application/json") ||
            !curl_slist_append(headers, "Expect:"))
                return -ENOMEM;

        if (curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket_path) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http") != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, GATE_CONNECT_TIMEOUT_SEC) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_sec) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_buffer_write) != CURLE_OK ||
            curl_easy_setopt(h, CURLOPT_WRITEDATA, reply) != CURLE_OK)
                return -EINVAL;

        cc = curl_easy_perform(h);
        if (cc != CURLE_OK) {
                log_debug("POST %s on %s failed: %s", path, c->socket_path, curl_easy_strerror(cc));
                return cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT :
                       cc == CURLE_WRITE_ERROR && reply->overflow ? -EMSGSIZE : -ECONNREFUSED;
        }
        if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
                return -EPROTO;
        return (int) status;
}

static void *audit_thread(void *userdata) {
        GateClient *c = userdata;

        pthread_mutex_lock(&c->lock);
        for (;;) {
                AuditItem *item;
                CurlBuffer reply = { .max = GATE_REPLY_MAX };
                int r;

                while (!c->head && !c->stop)
                        pthread_cond_wait(&c->cond, &c->lock);
                if (!c->head)
                        break;
                item = c->head;
                c->head = item->next;
                if (!c->head)
                        c->tail = NULL;
                c->queued--;
                c->sending = true;
                pthread_mutex_unlock(&c->lock);

                r = post(c, "/api/gate/audit", item->body, GATE_AUDIT_TIMEOUT_SEC, &reply);
                if (r < 0 || r / 100 != 2)
                        log_debug("Audit record not taken by the gate (%i), it is in the container log only.", r);
                free(reply.data);
                free(item->body);
                free(item);

                pthread_mutex_lock(&c->lock);
                c->sending = false;
                if (!c->head)
                        pthread_cond_broadcast(&c->drained);
        }
        pthread_mutex_unlock(&c->lock);
        return NULL;
}

int gate_client_new(const char *socket_path, const char *token, const char *channel, GateClient **ret) {
        _cleanup_(gate_client_freep) GateClient *c = NULL;
        int r;

        if (token && strlen(token) > GATE_TOKEN_MAX)
                return -E2BIG;
        if (token && strpbrk(token, "\r\n"))
                return -EINVAL;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        pthread_mutex_init(&c->lock, NULL);
        pthread_cond_init(&c->cond, NULL);
        pthread_cond_init(&c->drained, NULL);
        c->channel = strdup(strempty(channel));
        if (!c->channel)
                return -ENOMEM;
        if (socket_path) {
                c->socket_path = strdup(socket_path);
                if (!c->socket_path)
                        return -ENOMEM;
                if (asprintf(&c->authorization, "Authorization: Bearer %s", strempty(token)) < 0)
                        return -ENOMEM;
                r = -pthread_create(&c->thread, NULL, audit_thread, c);
                if (r < 0)
                        return r;
                c->thread_started = true;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

GateClient *gate_client_free(GateClient *c) {
        if (!c)
                return NULL;
        if (c->thread_started) {
                pthread_mutex_lock(&c->lock);
                c->stop = true;
                pthread_cond_signal(&c->cond);
                pthread_mutex_unlock(&c->lock);
                (void) pthread_join(c->thread, NULL);
        }
        for (AuditItem *i = c->head, *n; i; i = n) {
                n = i->next;
                free(i->body);
                free(i);
        }
        if (c->authorization)
                explicit_bzero(c->authorization, strlen(c->authorization));
        free(c->authorization);
        free(c->socket_path);
        free(c->channel);
        pthread_mutex_destroy(&c->lock);
        pthread_cond_destroy(&c->cond);
        pthread_cond_destroy(&c->drained);
        return mfree(c);
}

static void approval_fail(GateApproval *ret, const char *reason) {
        *ret = (GateApproval) { .allow = false };
        (void) snprintf(ret->actor, sizeof(ret->actor), "%s", "supervisor");
        (void) snprintf(ret->reason, sizeof(ret->reason), "%s", reason);
}

void gate_client_request_approval(GateClient *c, GateKind kind, const char *syscall, const char *op,
                                  const char *target, const char *rule_id, const char *message,
                                  const char *cache_key, pid_t pid, GateApproval *ret) {
        _cleanup_(json_object_putp) json_object *req = NULL, *reply_json = NULL;
        json_object *d, *v;
        CurlBuffer reply = { .max = GATE_REPLY_MAX };
        int status;

        if (!c || !c->socket_path)
                return approval_fail(ret, "no-gate-socket");

        req = json_object_new_object();
        if (!req ||
            json_add(req, "kind", json_object_new_string(gate_kind_to_string(kind))) < 0 ||
            json_add(req, "target", json_object_new_string(strempty(target))) < 0 ||
            json_add(req, "message", json_object_new_string(strempty(message))) < 0 ||
            json_add(req, "cache_key", json_object_new_string(strempty(cache_key))) < 0 ||
            json_add(req, "pid", json_object_new_int(pid)) < 0 ||
            json_add(req, "rule", json_object_new_string(strempty(rule_id))) < 0 ||
            json_add(req, "syscall", json_object_new_string(strempty(syscall))) < 0 ||
            (op && json_add(req, "op", json_object_new_string(op)) < 0))
                return approval_fail(ret, "out-of-memory");

        status = post(c, "/api/gate/container-approval",
                      json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), GATE_APPROVAL_TIMEOUT_SEC, &reply);
        if (status < 0) {
                free(reply.data);
                return approval_fail(ret, status == -ETIMEDOUT ? "gate-timeout" :
                                          status == -EMSGSIZE ? "gate-reply-too-big" : "gate-unreachable");
        }
        if (status != 200) {
                char reason[64];

                free(reply.data);
                (void) snprintf(reason, sizeof(reason), "gate-http-%i", status);
                return approval_fail(ret, reason);
        }
        reply_json = reply.data ? json_tokener_parse(reply.data) : NULL;
        free(reply.data);
        if (!json_object_is_type(reply_json, json_type_object) ||
            !json_object_object_get_ex(reply_json, "decision", &d) || !json_object_is_type(d, json_type_string))
                return approval_fail(ret, "gate-bad-reply");

        *ret = (GateApproval) { .allow = streq(json_object_get_string(d), "allow") };
        if (json_object_object_get_ex(reply_json, "actor", &v) && json_object_is_type(v, json_type_string))
                (void) snprintf(ret->actor, sizeof(ret->actor), "%s", json_object_get_string(v));
        if (json_object_object_get_ex(reply_json, "reason", &v) && json_object_is_type(v, json_type_string))
                (void) snprintf(ret->reason, sizeof(ret->reason), "%s", json_object_get_string(v));
}

json_object *gate_audit_record_json(const GateClient *c, const GateAuditRecord *rec) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o ||
            json_add(o, "ts", json_object_new_int64(rec->ts_ns)) < 0 ||
            json_add(o, "channel", json_object_new_string(c ? c->channel : "")) < 0 ||
            json_add(o, "pid", json_object_new_int(rec->pid)) < 0 ||
            json_add(o, "kind", json_object_new_string(strempty(gate_kind_to_string(rec->kind)))) < 0 ||
            json_add(o, "syscall", json_object_new_string(strempty(rec->syscall))) < 0 ||
            (rec->op && json_add(o, "op", json_object_new_string(rec->op)) < 0) ||
            json_add(o, "target", json_object_new_string(strempty(rec->target))) < 0 ||
            json_add(o, "rule_id", json_object_new_string(strempty(rec->rule_id))) < 0 ||
            json_add(o, "decision", json_object_new_string(strempty(decision_to_string(rec->decision)))) < 0 ||
            json_add(o, "event", json_object_new_string(strempty(rec->event))) < 0 ||
            json_add(o, "prompted_who", json_object_new_string(strempty(rec->actor))) < 0 ||
            json_add(o, "latency_ns", json_object_new_int64((int64_t) rec->latency_ns)) < 0 ||
            json_add(o, "errno", json_object_new_int(rec->error)) < 0 ||
            json_add(o, "message", json_object_new_string(strempty(rec->message))) < 0)
                return NULL;
        return TAKE_PTR(o);
}

int gate_client_audit(GateClient *c, json_object *record) {
        AuditItem *item;

        if (!c || !c->socket_path)
                return 0;
        item = calloc(1, sizeof(*item));
        if (!item)
                return -ENOMEM;
        item->body = strdup(json_object_to_json_string_ext(record, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        if (!item->body) {
                free(item);
                return -ENOMEM;
        }

        pthread_mutex_lock(&c->lock);
        if (c->queued >= GATE_AUDIT_QUEUE_MAX) {
                c->dropped++;
                pthread_mutex_unlock(&c->lock);
                free(item->body);
                free(item);
                return -ENOBUFS;
        }
        if (c->tail)
                c->tail->next = item;
        else
                c->head = item;
        c->tail = item;
        c->queued++;
        pthread_cond_signal(&c->cond);
        pthread_mutex_unlock(&c->lock);
        return 0;
}

int gate_client_audit_flush(GateClient *c, unsigned timeout_ms) {
        struct timespec deadline;
        int r = 0;

        if (!c || !c->thread_started)
                return 0;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += timeout_ms / 1000U;
        deadline.tv_nsec += (long) (timeout_ms % 1000U) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
        }

        pthread_mutex_lock(&c->lock);
        while ((c->head || c->sending) && r == 0)
                r = -pthread_cond_timedwait(&c->drained, &c->lock, &deadline);
        pthread_mutex_unlock(&c->lock);
        return r == -ETIMEDOUT ? r : 0;
}
