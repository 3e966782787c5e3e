/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop gate list|approve|deny`: the humans' side of the security gate. Each channel's loop-gate@NAME
 * service listens on /run/loop/NAME/gate-admin.sock (root and group loop only); connecting starts it if
 * it is not running, and a service that was not running has nothing pending. Request ids are
 * NAME/N-DIGEST, unambiguous across channels; DIGEST binds the id to the container, kind and target that
 * `loop gate list` showed (the gate refuses an answer whose digest is not the pending request's), and a
 * bare N-DIGEST is accepted when exactly one channel has request N pending. */

#include <curl/curl.h>
#include <getopt.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "config.h"
#include "curl-buffer.h"
#include "dirent-util.h"
#include "gate-approval.h"
#include "gate-token.h"
#include "json-util.h"
#include "log.h"
#include "loop.h"
#include "loop-options.h"
#include "strv.h"

#define GATE_CMD_RESPONSE_MAX (32U * 1024U * 1024U)
#define GATE_CMD_TIMEOUT_MS 15000L
#define GATE_ADMIN_SOCKET "gate-admin.sock"

static int admin_socket_path(const char *channel, char **ret) {
        return asprintf(ret, "%s/%s/" GATE_ADMIN_SOCKET, loop_runtime_dir(), channel) < 0 ? -ENOMEM : 0;
}

/* One request to a channel's admin socket. Returns the HTTP status (> 0) and the JSON body, -ENOENT when
 * the channel has no gate socket, -EACCES when we may not connect, -ECONNREFUSED, -EIO otherwise. */
static int admin_call(const char *channel, const char *method, const char *path, const char *body,
                      json_object **ret) {
        _cleanup_free_ char *socket_path = NULL, *url = NULL;
        _cleanup_free_ char *data = NULL;
        CurlBuffer b = { .max = GATE_CMD_RESPONSE_MAX };
        struct curl_slist *headers = NULL;
        struct stat st;
        CURL *curl;
        CURLcode cr;
        long status = 0;
        int r;

        r = admin_socket_path(channel, &socket_path);
        if (r < 0)
                return r;
        if (stat(socket_path, &st) < 0)
                return -errno;
        if (!S_ISSOCK(st.st_mode))
                return -ENOTSOCK;
        if (access(socket_path, R_OK | W_OK) < 0)
                return -errno;
        if (asprintf(&url, "http://localhost%s", path) < 0)
                return -ENOMEM;

        curl = curl_easy_init();
        if (!curl)
                return -ENOMEM;
        headers = curl_slist_append(headers, "Content-Type: application/json");
        curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, socket_path);
        curl_easy_setopt(curl, CURLOPT_URL, url);
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, GATE_CMD_TIMEOUT_MS);
        curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, curl_buffer_write);
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, &b);
        if (body)
                curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        cr = curl_easy_perform(curl);
        if (cr == CURLE_OK)
                curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        curl_slist_free_all(headers);
        curl_easy_cleanup(curl);
        data = b.data;

        if (cr == CURLE_COULDNT_CONNECT)
                return -ECONNREFUSED;
        if (cr != CURLE_OK || b.overflow) {
                log_debug("Request to %s failed: %s", socket_path, curl_easy_strerror(cr));
                return -EIO;
        }
        if (ret) {
                *ret = data ? json_tokener_parse(data) : NULL;
                if (!*ret)
                        return -EBADMSG;
        }
        return (int) status;
}

static int log_admin_error(int r, const char *channel) {
        if (r == -EACCES || r == -EPERM)
                return log_error_errno(r, "Cannot reach the gate of channel %s: %m (root or members of group loop only).", channel);
        if (r == -ENOENT)
                return log_error_errno(r, "Channel %s has no gate socket (%s/%s/" GATE_ADMIN_SOCKET "): is its gate enabled "
                                       "and loop.target started?", channel, loop_runtime_dir(), channel);
        return log_error_errno(r, "Cannot talk to the gate of channel %s: %m", channel);
}

static int cmp_string(const void *a, const void *b) {
        return strcmp(*(char * const *) a, *(char * const *) b);
}

/* Channels with an admin socket, sorted. */
static int gate_channels(char ***ret) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_strv_free_ char **l = NULL;
        struct dirent *de;
        int r;

        d = opendir(loop_runtime_dir());
        if (!d) {
                if (errno == ENOENT) {
                        *ret = NULL;
                        return 0;
                }
                return -errno;
        }
        while ((de = readdir(d))) {
                _cleanup_free_ char *p = NULL;
                struct stat st;

                if (channel_name_check(de->d_name, NULL) < 0)
                        continue;
                r = admin_socket_path(de->d_name, &p);
                if (r < 0)
                        return r;
                if (stat(p, &st) < 0 || !S_ISSOCK(st.st_mode))
                        continue;
                r = strv_extend(&l, de->d_name);
                if (r < 0)
                        return r;
        }
        if (l)
                qsort(l, strv_length(l), sizeof(char *), cmp_string);
        *ret = TAKE_PTR(l);
        return 0;
}

static const char *json_str(json_object *o, const char *key) {
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return "";
        return json_object_get_string(v);
}

static int64_t json_int(json_object *o, const char *key) {
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return 0;
        return json_object_get_int64(v);
}

/* Collects the pending requests of channels (all with a socket when channels is NULL) into one array. */
static int collect_pending(char **channels, bool quiet, json_object **ret) {
        _cleanup_(json_object_putp) json_object *all = json_object_new_array();
        _cleanup_strv_free_ char **found = NULL;
        int r, ret_r = 0;

        if (!all)
                return log_oom();
        if (!channels) {
                r = gate_channels(&found);
                if (r < 0)
                        return log_error_errno(r, "Cannot list %s: %m", loop_runtime_dir());
                channels = found;
        }

        STRV_FOREACH(c, channels) {
                _cleanup_(json_object_putp) json_object *reply = NULL;
                json_object *list;

                r = admin_call(*c, "GET", "/api/gate/pending", NULL, &reply);
                if (r < 0) {
                        if (!quiet)
                                ret_r = log_admin_error(r, *c);
                        continue;
                }
                if (r != 200 || !json_object_object_get_ex(reply, "pending", &list) ||
                    !json_object_is_type(list, json_type_array)) {
                        ret_r = log_error_errno(EBADMSG, "The gate of channel %s answered with status %d.", *c, r);
                        continue;
                }
                for (size_t i = 0; i < json_object_array_length(list); i++)
                        json_object_array_add(all, json_object_get(json_object_array_get_idx(list, i)));
        }
        *ret = TAKE_PTR(all);
        return ret_r;
}

static void gate_list_help(void) {
        printf("loop gate list [NAME] [--json]\n");
}

static int gate_list(int argc, char *argv[]) {
        _cleanup_(json_object_putp) json_object *all = NULL;
        char *one[2] = {};
        bool json;
        int r;

        r = loop_parse_json_options(argc, argv, gate_list_help, &json);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (argc - optind > 1)
                return log_error("Too many arguments."), EXIT_FAILURE;
        if (optind < argc) {
                if (!loop_check_channel_name(argv[optind]))
                        return EXIT_FAILURE;
                one[0] = argv[optind];
        }

        r = collect_pending(one[0] ? one : NULL, !one[0], &all);
        if (!all)
                return EXIT_FAILURE;

        if (json) {
                if (json_print(stdout, all, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE) < 0)
                        return log_error("Cannot print the list."), EXIT_FAILURE;
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }

        if (json_object_array_length(all) == 0) {
                printf("No approval requests pending.\n");
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        printf("%-26s %-24s %-8s %8s %8s  %s\n", "ID", "CONTAINER", "KIND", "WAITING", "LEFT", "TARGET");
        for (size_t i = 0; i < json_object_array_length(all); i++) {
                json_object *e = json_object_array_get_idx(all, i);
                const char *message = json_str(e, "message"), *rule = json_str(e, "rule");

                /* Targets and messages come escaped by the gate: no control or bidi character reaches
                 * the terminal. */
                printf("%-26s %-24s %-8s %7" PRIi64 "s %7" PRIi64 "s  %s\n",
                       json_str(e, "id"), json_str(e, "container"), json_str(e, "kind"),
                       json_int(e, "waiting_sec"), json_int(e, "timeout_sec"), json_str(e, "target"));
                if (!isempty(message) || !isempty(rule))
                        printf("%-26s %s%s%s%s\n", "", isempty(rule) ? "" : "rule ", rule,
                               !isempty(rule) && !isempty(message) ? ": " : "", message);
        }
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* NAME/N-DIGEST, or N-DIGEST when exactly one channel has request N pending. */
static int resolve_id(const char *arg, char **ret_channel, uint64_t *ret_number, char ret_digest[static GATE_APPROVAL_DIGEST_HEX + 1]) {
        _cleanup_free_ char *channel = NULL;
        const char *slash = strrchr(arg, '/'), *num = slash ? slash + 1 : arg;
        uint64_t n;

        if (gate_request_id_parse(num, &n, ret_digest) < 0)
                return log_error_errno(EINVAL, "\"%s\" is not a request id (NAME/N-DIGEST, as `loop gate list` shows).", arg);

        if (slash) {
                channel = strndup(arg, (size_t) (slash - arg));
                if (!channel)
                        return log_oom();
                if (channel_name_check(channel, NULL) < 0)
                        return log_error_errno(EINVAL, "\"%s\" does not name a channel.", arg);
        } else {
                _cleanup_(json_object_putp) json_object *all = NULL;
                size_t matches = 0;

                /* Only the number picks the channel: the digest is checked by that channel's gate. */
                (void) collect_pending(NULL, true, &all);
                for (size_t i = 0; all && i < json_object_array_length(all); i++) {
                        json_object *e = json_object_array_get_idx(all, i);
                        if ((uint64_t) json_int(e, "number") == n) {
                                matches++;
                                free(channel);
                                channel = strdup(json_str(e, "channel"));
                                if (!channel)
                                        return log_oom();
                        }
                }
                if (matches == 0)
                        return log_error_errno(ENOENT, "No channel has request %" PRIu64 " pending.", n);
                if (matches > 1)
                        return log_error_errno(EINVAL, "Request %" PRIu64 " is pending in %zu channels; say which: NAME/%s.",
                                               n, matches, arg);
        }
        *ret_channel = TAKE_PTR(channel);
        *ret_number = n;
        return 0;
}

static int gate_answer(int argc, char *argv[], bool allow) {
        static const struct option options[] = {
                { "session", no_argument, NULL, 's' },
                { "help",    no_argument, NULL, 'h' },
                {}
        };
        _cleanup_(json_object_putp) json_object *reply = NULL;
        _cleanup_free_ char *channel = NULL, *path = NULL, *body = NULL;
        char digest[GATE_APPROVAL_DIGEST_HEX + 1];
        bool session = false;
        const char *answer;
        uint64_t n = 0;
        int c, r;

        while ((c = getopt_long(argc, argv, "sh", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        session = true;
                        break;
                case 'h':
                        printf("loop gate %s ID [--session]\n", allow ? "approve" : "deny");
                        return EXIT_SUCCESS;
                default:
                        return EXIT_FAILURE;
                }
        if (argc - optind != 1)
                return log_error("Expected one request id (NAME/N-DIGEST), see `loop gate list`."), EXIT_FAILURE;

        r = resolve_id(argv[optind], &channel, &n, digest);
        if (r < 0)
                return EXIT_FAILURE;

        answer = allow ? (session ? "session" : "once") : (session ? "deny-session" : "deny");
        if (asprintf(&path, "/api/gate/pending/%" PRIu64 "-%s", n, digest) < 0 ||
            asprintf(&body, "{\"answer\":\"%s\"}", answer) < 0)
                return log_oom(), EXIT_FAILURE;

        r = admin_call(channel, "POST", path, body, &reply);
        if (r < 0)
                return log_admin_error(r, channel), EXIT_FAILURE;
        if (r == 404)
                return log_error("Request %s/%" PRIu64 "-%s is not pending (answered, timed out or withdrawn).", channel, n,
                                 digest), EXIT_FAILURE;
        if (r == 409)
                return log_error("Refused: %s/%" PRIu64 "-%s does not name what is pending as request %" PRIu64 " (its container, "
                                 "kind or target differ from the ones shown with this id). Nothing was answered; see "
                                 "`loop gate list`.", channel, n, digest, n), EXIT_FAILURE;
        if (r != 200)
                return log_error("The gate of channel %s refused the answer: %s", channel, json_str(reply, "error")),
                        EXIT_FAILURE;

        printf("%s %s/%" PRIu64 "-%s (%s)", allow ? "Approved" : "Denied", channel, n, digest, answer);
        if (json_int(reply, "settled") > 1)
                printf(", and %" PRIi64 " more waiting request(s) of that container with the same key",
                       json_int(reply, "settled") - 1);
        printf(".\n");
        return EXIT_SUCCESS;
}

int verb_gate(int argc, char *argv[]) {
        const char *cmd = argc > 1 ? argv[1] : NULL;

        if (!cmd || streq(cmd, "--help") || streq(cmd, "-h")) {
                printf("loop gate list [NAME] [--json]     Show approval requests waiting for a human\n"
                       "loop gate approve ID [--session]   Allow it (--session: also later ones with the same key)\n"
                       "loop gate deny ID [--session]      Deny it (--session: also later ones with the same key)\n");
                return cmd ? EXIT_SUCCESS : EXIT_FAILURE;
        }
        argc--;
        argv++;
        optind = 0;
        if (streq(cmd, "list"))
                return gate_list(argc, argv);
        if (streq(cmd, "approve"))
                return gate_answer(argc, argv, true);
        if (streq(cmd, "deny"))
                return gate_answer(argc, argv, false);
        log_error("Unknown command \"gate %s\". See 'loop gate --help'.", cmd);
        return EXIT_FAILURE;
}
