/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* loop-gate: the host side of the security gate for one channel (loop-gate@NAME.service), started by
 * loop-gate@NAME.socket. Two listening sockets come from systemd, told apart by FileDescriptorName=:
 *
 *   "gate"   /run/loop/NAME/gate.sock, bind-mounted into the channel's containers:
 *              POST /api/gate/container-approval
 *              Authorization: Bearer <the container's token>
 *              {"kind":"execve","target":"git push","message":"...","cache_key":"...","rule":"cmd[3]","pid":42}
 *            -> 200 {"decision":"allow"|"deny","actor":"...","reason":"..."}
 *            The reply waits until a human answers, the session cache answers or the approval timeout
 *            passes. Anything else (bad token, bad request, overload) is answered with a deny, and a
 *            caller whose connection breaks must take that as a deny too: fail closed.
 *              POST /api/gate/audit
 *              Authorization: Bearer <the container's token>
 *              {"kind":"file","target":"/etc/shadow","rule_id":"default","decision":"deny",...}
 *            -> 200 {}: a decision the supervisor made by itself (src/gate/gate-client.h has the body), journaled
 *            as a gate-decision with LOOP_SOURCE=local, at most GATE_AUDIT_RATE_PER_WINDOW per container
 *            and second (the rest is counted in one gate-audit-dropped entry); allows only when
 *            gates.audit.verbose is on here. 401 for a bad token and 400 for a bad body, journaling nothing.
 *   "admin"  /run/loop/NAME/gate-admin.sock, root and group loop only (`loop gate`), never the user the
 *            service and the channel's other helpers run as (403):
 *              GET  /api/gate/pending              -> {"channel":..., "pending":[...]}
 *              POST /api/gate/pending/N-DIGEST {"answer":"once|session|deny|deny-session"}
 *            The DIGEST (src/gate/gate-approval.h) must be the pending request's: an answer names the container,
 *            kind and target the human was shown, so a stale or mistyped id answers nothing (409).
 *
 * Settings come from the environment that loop-generator writes into the unit's drop-in (the service
 * cannot read /etc/loop/loop.json, which holds credentials): LOOP_GATE_APPROVAL_TIMEOUT_SEC,
 * LOOP_GATE_RATE_TOTAL, LOOP_GATE_RATE_PENDING, LOOP_GATE_RATE_PER_MINUTE, LOOP_GATE_AUDIT_VERBOSE,
 * LOOP_GATE_WEBHOOK_URL, and LOOP_GATE_IDLE_SEC (how long to linger when there is nothing to do).
 *
 * The service exits when idle: no connection, nothing pending, no webhook in flight and no container it
 * keeps state for (counters, session cache) whose token still exists. The next connection starts it
 * again through the socket. */

#include <curl/curl.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "audit.h"
#include "channel-defaults.h"
#include "config.h"
#include "gate-approval.h"
#include "gate-audit.h"
#include "gate-record.h"
#include "gate-server.h"
#include "gate-token.h"
#include "gate-webhook.h"
#include "http-server.h"
#include "io-util.h"
#include "log.h"
#include "socket-service.h"
#include "strv.h"
#include "text-escape.h"
#include "env-util.h"

/* ---- audit ---- */

/* A request with no token we know: refused; journaled while its peer stays within the limit. */
static bool unauthorized_journaled(GateConn *c) {
        char peer[64];
        int r;

        (void) snprintf(peer, sizeof(peer), "pid %d uid %u", (int) c->peer_pid, (unsigned) c->peer_uid);
        r = audit_limiter_admit(c->server->unauth_limiter, peer, clock_usec(CLOCK_MONOTONIC),
                                     gate_record_unauth_dropped, c->server->channel);
        return r != 0;  /* out of memory: journaled rather than lost */
}

static void on_resolved(GateApprovals *a, GatePending *p, const GateOutcome *o, uint64_t now, void *userdata) {
        GateServer *s = userdata;
        GateConn *c = p->userdata;
        GateDecision d = {
                .container = p->container, .kind = p->kind, .target = p->target, .rule = p->rule,
                .pid = p->pid, .id = p->id, .digest = p->digest, .allow = o->allow, .actor = o->actor, .reason = o->reason,
                .latency_usec = now - p->created_usec,
        };

        gate_record_decision(s->channel, AUDIT_GATE_DECISION, &d);

        if (!c || c->dead || c->waiting_id != p->id)
                return;
        c->waiting_id = 0;

        _cleanup_(json_object_putp) json_object *j = gate_decision_json(o->allow, o->actor, o->reason, p->id);
        if (!j || gate_conn_reply(c, 200, j, !c->close_after_write) < 0 || gate_conn_flush(c) < 0)
                gate_conn_close(c);
        else
                (void) sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

/* ---- webhook ---- */

static int on_webhook_exit(sd_event_source *src, const siginfo_t *si, void *userdata) {
        GateServer *s = userdata;

        if (s->n_webhooks > 0)
                s->n_webhooks--;
        if (si->si_code != CLD_EXITED || si->si_status != 0)
                log_warning("Webhook notice failed (status %d), ignoring.", si->si_status);
        sd_event_source_unref(src);
        gate_server_update_idle(s);
        return 0;
}

/* Tells the webhook about a new pending request from a child process (gate-webhook.h), so that a slow
 * or dead endpoint never delays the loop. Failures are logged and otherwise ignored: the webhook
 * informs, it never decides. */
static void webhook_notify(GateServer *s, const GatePending *p) {
        _cleanup_free_ char *body = NULL;
        pid_t pid;
        int r;

        if (!s->webhook_url)
                return;
        if (s->n_webhooks >= GATE_WEBHOOK_CHILDREN_MAX) {
                log_warning("%u webhook notices in flight, not sending one for request %" PRIu64 ".",
                            s->n_webhooks, p->id);
                return;
        }
        r = gate_webhook_body(s->channel, p, s->limits.timeout_usec, &body);
        if (r < 0) {
                log_oom();
                return;
        }
        r = gate_webhook_spawn(s->webhook_url, body, &pid);
        if (r < 0) {
                log_warning_errno(r, "Cannot fork for the webhook, ignoring: %m");
                return;
        }
        r = sd_event_add_child(s->event, NULL, pid, WEXITED, on_webhook_exit, s);
        if (r < 0) {
                log_warning_errno(r, "Cannot watch the webhook child, ignoring: %m");
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                return;
        }
        s->n_webhooks++;
}

/* ---- the container endpoint ---- */

static const char *json_string_field(json_object *o, const char *key, bool *bad) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return NULL;
        if (!json_object_is_type(v, json_type_string)) {
                *bad = true;
                return NULL;
        }
        /* a NUL inside would make the value seen by humans differ from the one decided on */
        if (strlen(json_object_get_string(v)) != (size_t) json_object_get_string_len(v)) {
                *bad = true;
                return NULL;
        }
        return json_object_get_string(v);
}

static int parse_json_body(const HttpRequest *req, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        json_tokener *tok;
        enum json_tokener_error e;

        tok = json_tokener_new_ex(GATE_JSON_DEPTH_MAX);
        if (!tok)
                return -ENOMEM;
        o = json_tokener_parse_ex(tok, req->body, (int) req->body_size);
        e = json_tokener_get_error(tok);
        if (e == json_tokener_success && (size_t) json_tokener_get_parse_end(tok) != req->body_size)
                e = json_tokener_error_parse_unexpected;
        json_tokener_free(tok);
        if (e != json_tokener_success || !json_object_is_type(o, json_type_object))
                return -EBADMSG;
        *ret = TAKE_PTR(o);
        return 0;
}

/* The container whose token the request carries; -EACCES when it carries none we know. */
static int container_authenticate(GateServer *s, const HttpRequest *req, char **ret_container) {
        _cleanup_close_ int dir_fd = -EBADF;
        const char *auth, *token;
        int r;

        auth = http_request_header(req, "Authorization");
        token = auth ? startswith(auth, "Bearer ") : NULL;
        r = gate_token_dir_open(s->channel, &dir_fd);
        if (r < 0 && r != -ENOENT)
                log_error_errno(r, "Cannot open the token directory of channel %s: %m", s->channel);
        if (!token || r < 0 || gate_token_find_at(dir_fd, token, ret_container) < 0)
                return -EACCES;
        return 0;
}

/* POST /api/gate/audit: answered at once and never waits for anything, so that reports, however many,
 * cannot hold up approvals; the limiter keeps them from flooding the journal. */
static int handle_audit_request(GateConn *c, const HttpRequest *req) {
        GateServer *s = c->server;
        _cleanup_(json_object_putp) json_object *body = NULL, *ok = NULL;
        _cleanup_free_ char *container = NULL;
        GateAuditReport rep;
        const char *bad = NULL;
        int r;

        if (!streq(req->method, "POST"))
                return gate_conn_reply_error(c, 405, "use POST", req->keep_alive);
        if (container_authenticate(s, req, &container) < 0) {
                if (unauthorized_journaled(c))
                        log_warning("Audit report with an unknown token from pid %d (uid %u), refused.",
                                    (int) c->peer_pid, (unsigned) c->peer_uid);
                return gate_conn_reply_error(c, 401, "unauthorized", false);
        }
        if (parse_json_body(req, &body) < 0 || gate_audit_report_parse(body, &rep, &bad) < 0) {
                _cleanup_free_ char *text = NULL;

                log_debug("Malformed audit report from container %s (%s), ignoring it.", container, strna(bad));
                if (asprintf(&text, "bad field: %s", bad ?: "(not JSON)") < 0)
                        return -ENOMEM;
                return gate_conn_reply_error(c, 400, text, req->keep_alive);
        }

        /* The container's verbose setting is its own claim; ours decides whether allows are recorded. */
        if (!rep.allow || s->verbose) {
                r = audit_limiter_admit(s->audit_limiter, container, clock_usec(CLOCK_MONOTONIC), gate_record_local_dropped, s->channel);
                if (r < 0)
                        return r;
                if (r > 0)
                        gate_record_local(s->channel, container, &rep);
                /* the caller's gate_server_update_idle() arms the timer that ends the window */
        }

        /* 200 {} rather than 204, which may not carry the Content-Length every reply of ours has. */
        ok = json_object_new_object();
        if (!ok)
                return -ENOMEM;
        return gate_conn_reply(c, 200, ok, req->keep_alive);
}

static int handle_container_request(GateConn *c, const HttpRequest *req) {
        GateServer *s = c->server;
        _cleanup_(json_object_putp) json_object *body = NULL;
        _cleanup_free_ char *container = NULL;
        GateRequestInfo info = {};
        GateOutcome o;
        GatePending *p = NULL;
        json_object *v;
        bool bad = false;
        int r;

        if (streq(req->path, "/api/gate/audit"))
                return handle_audit_request(c, req);
        if (!streq(req->path, "/api/gate/container-approval"))
                return gate_conn_reply_deny(c, 404, "bad-request", NULL, req->keep_alive);
        if (!streq(req->method, "POST"))
                return gate_conn_reply_deny(c, 405, "bad-request", NULL, req->keep_alive);

        if (container_authenticate(s, req, &container) < 0) {
                _cleanup_(json_object_putp) json_object *refusal = NULL;

                if (unauthorized_journaled(c))
                        return gate_conn_reply_deny(c, 401, "unauthorized", NULL, false);
                refusal = gate_decision_json(false, "gate", "unauthorized", 0);
                return refusal ? gate_conn_reply(c, 401, refusal, false) : -ENOMEM;
        }

        if (parse_json_body(req, &body) < 0)
                return gate_conn_reply_deny(c, 400, "bad-request", container, req->keep_alive);
        info = (GateRequestInfo) {
                .container = container,
                .kind = json_string_field(body, "kind", &bad),
                .target = json_string_field(body, "target", &bad),
                .message = json_string_field(body, "message", &bad),
                .cache_key = json_string_field(body, "cache_key", &bad),
                .rule = json_string_field(body, "rule", &bad),
        };
        if (json_object_object_get_ex(body, "pid", &v) && !json_object_is_type(v, json_type_null)) {
                int64_t pid = json_object_get_int64(v);
                if (!json_object_is_type(v, json_type_int) || pid < 0 || pid > INT32_MAX)
                        bad = true;
                else
                        info.pid = (pid_t) pid;
        }
        if (bad)
                return gate_conn_reply_deny(c, 400, "bad-request", container, req->keep_alive);

        r = gate_approvals_submit(s->approvals, &info, clock_usec(CLOCK_MONOTONIC), &o, &p);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return gate_conn_reply_deny(c, r == -ENOBUFS ? 429 : 400, r == -ENOBUFS ? "overloaded" : "bad-request",
                                  container, req->keep_alive);
        if (r == 0) {
                _cleanup_(json_object_putp) json_object *j = gate_decision_json(o.allow, o.actor, o.reason, 0);
                GateDecision d = {
                        .container = container, .kind = info.kind, .target = info.target, .rule = info.rule,
                        .pid = info.pid, .allow = o.allow, .actor = o.actor, .reason = o.reason,
                };
                /* Every answer given without a human this time is journaled too: an allow from the
                 * session cache means as much as the approval it repeats. */
                gate_record_decision(s->channel, AUDIT_GATE_DECISION, &d);
                if (!j)
                        return -ENOMEM;
                return gate_conn_reply(c, 200, j, req->keep_alive);
        }

        p->userdata = c;
        p->created_realtime_usec = clock_usec(CLOCK_REALTIME);
        c->waiting_id = p->id;
        if (!req->keep_alive)
                c->close_after_write = true;
        {
                GateDecision d = {
                        .container = container, .kind = p->kind, .target = p->target, .rule = p->rule,
                        .pid = p->pid, .id = p->id, .digest = p->digest,
                };
                gate_record_decision(s->channel, AUDIT_GATE_PENDING, &d);
        }
        webhook_notify(s, p);
        return 0;
}

/* ---- the admin endpoint ---- */

static int peer_name(uid_t uid, char **ret) {
        struct passwd pw, *result = NULL;
        char buf[4096];

        if (getpwuid_r(uid, &pw, buf, sizeof(buf), &result) == 0 && result)
                return (*ret = strdup(result->pw_name)) ? 0 : -ENOMEM;
        return asprintf(ret, "uid:%u", (unsigned) uid) < 0 ? -ENOMEM : 0;
}

static json_object *pending_json(GateServer *s, const GatePending *p, uint64_t now) {
        _cleanup_free_ char *id = NULL, *target = NULL, *message = NULL;
        json_object *o = json_object_new_object();
        uint64_t waited = now - p->created_usec;

        target = text_escape_display(p->target, GATE_DISPLAY_MAX);
        message = text_escape_display(strempty(p->message), GATE_DISPLAY_MAX);
        if (!o || !target || !message || asprintf(&id, "%s/%" PRIu64 "-%s", s->channel, p->id, p->digest) < 0) {
                json_object_put(o);
                return NULL;
        }
        json_object_object_add(o, "id", json_object_new_string(id));
        json_object_object_add(o, "channel", json_object_new_string(s->channel));
        json_object_object_add(o, "number", json_object_new_uint64(p->id));
        json_object_object_add(o, "digest", json_object_new_string(p->digest));
        json_object_object_add(o, "container", json_object_new_string(p->container));
        json_object_object_add(o, "kind", json_object_new_string(p->kind));
        json_object_object_add(o, "target", json_object_new_string(target));
        json_object_object_add(o, "message", json_object_new_string(message));
        json_object_object_add(o, "rule", json_object_new_string(strempty(p->rule)));
        json_object_object_add(o, "pid", json_object_new_int(p->pid));
        json_object_object_add(o, "created_usec", json_object_new_uint64(p->created_realtime_usec));
        json_object_object_add(o, "waiting_sec", json_object_new_uint64(waited / 1000000ULL));
        json_object_object_add(o, "timeout_sec",
                               json_object_new_uint64(s->limits.timeout_usec > waited ?
                                                      (s->limits.timeout_usec - waited) / 1000000ULL : 0));
        return o;
}

static int handle_admin_request(GateConn *c, const HttpRequest *req) {
        GateServer *s = c->server;
        const char *id_str;

        /* The gate runs as user loop, as the channel's other helpers do (loop-tasks@, loop-browser@), and
         * they see this socket in the channel's runtime directory: a helper taken over (the agent talks to
         * them) must neither read nor answer the agent's asks. A human is root or a member of group loop. */
        if (c->peer_uid == geteuid() && c->peer_uid != 0) {
                log_warning("Admin request from pid %d, which runs as the helpers' user (uid %u), refused.",
                            (int) c->peer_pid, (unsigned) c->peer_uid);
                return gate_conn_reply_error(c, 403, "the helpers' user may not answer the gate: run loop gate as root "
                                             "or as a member of group loop", req->keep_alive);
        }

        if (streq(req->path, "/api/gate/pending")) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();
                json_object *list = json_object_new_array();
                uint64_t now = clock_usec(CLOCK_MONOTONIC);

                if (!streq(req->method, "GET")) {
                        json_object_put(list);
                        return gate_conn_reply_error(c, 405, "use GET", req->keep_alive);
                }
                if (!o || !list) {
                        json_object_put(list);
                        return -ENOMEM;
                }
                json_object_object_add(o, "channel", json_object_new_string(s->channel));
                json_object_object_add(o, "pending", list);
                for (GatePending *p = gate_approvals_first(s->approvals); p; p = p->next) {
                        json_object *e = pending_json(s, p, now);
                        if (!e)
                                return -ENOMEM;
                        json_object_array_add(list, e);
                }
                return gate_conn_reply(c, 200, o, req->keep_alive);
        }

        id_str = startswith(req->path, "/api/gate/pending/");
        if (id_str) {
                _cleanup_(json_object_putp) json_object *body = NULL, *reply = NULL;
                _cleanup_free_ char *actor = NULL;
                json_object *v;
                char digest[GATE_APPROVAL_DIGEST_HEX + 1];
                GateAnswer answer;
                GatePending *p;
                uint64_t id;
                int r;

                if (!streq(req->method, "POST"))
                        return gate_conn_reply_error(c, 405, "use POST", req->keep_alive);
                if (gate_request_id_parse(id_str, &id, digest) < 0)
                        return gate_conn_reply_error(c, 400, "bad request id (N-DIGEST, as `loop gate list` shows)",
                                           req->keep_alive);
                if (parse_json_body(req, &body) < 0 ||
                    !json_object_object_get_ex(body, "answer", &v) || !json_object_is_type(v, json_type_string) ||
                    json_object_get_string_len(v) > (int) GATE_ADMIN_ANSWER_MAX)
                        return gate_conn_reply_error(c, 400, "the body must be {\"answer\": \"once|session|deny|deny-session\"}",
                                           req->keep_alive);
                answer = gate_answer_from_string(json_object_get_string(v));
                if (answer < 0)
                        return gate_conn_reply_error(c, 400, "answer must be once, session, deny or deny-session", req->keep_alive);

                r = peer_name(c->peer_uid, &actor);
                if (r < 0)
                        return r;
                p = gate_approvals_find(s->approvals, id);
                if (p && !streq(p->digest, digest)) {
                        gate_record_answer_refused(s->channel, p, id, digest, gate_answer_to_string(answer), actor);
                        return gate_conn_reply_error(c, 409, "the id names another request than this one: its target is not the "
                                           "one that was shown (see `loop gate list`); nothing was answered",
                                           req->keep_alive);
                }
                r = gate_approvals_answer(s->approvals, id, digest, answer, actor, clock_usec(CLOCK_MONOTONIC));
                if (r == -ENOENT)
                        return gate_conn_reply_error(c, 404, "no such pending request (answered, timed out or withdrawn)",
                                           req->keep_alive);
                if (r < 0)
                        return r;
                reply = json_object_new_object();
                if (!reply)
                        return -ENOMEM;
                json_object_object_add(reply, "settled", json_object_new_int(r));
                json_object_object_add(reply, "answer", json_object_new_string(gate_answer_to_string(answer)));
                json_object_object_add(reply, "actor", json_object_new_string(actor));
                return gate_conn_reply(c, 200, reply, req->keep_alive);
        }

        return gate_conn_reply_error(c, 404, "unknown endpoint", req->keep_alive);
}

/* ---- timers ---- */

static bool token_gone(const char *container, void *userdata) {
        int dir_fd = *(int *) userdata;
        return dir_fd < 0 || !gate_token_exists_at(dir_fd, container);
}

static int server_forget_removed(GateServer *s) {
        _cleanup_close_ int dir_fd = -EBADF;
        int r;

        if (gate_approvals_n_containers(s->approvals) == 0)
                return 0;
        r = gate_token_dir_open(s->channel, &dir_fd);
        if (r < 0 && r != -ENOENT)
                return log_warning_errno(r, "Cannot open the token directory, checking later: %m");
        r = gate_approvals_forget_gone(s->approvals, token_gone, &dir_fd, clock_usec(CLOCK_MONOTONIC));
        if (r > 0)
                log_info("Denied %d pending request(s) of removed containers.", r);
        return r;
}

static int on_deadline(sd_event_source *src, uint64_t usec, void *userdata) {
        GateServer *s = userdata;

        (void) gate_approvals_expire(s->approvals, clock_usec(CLOCK_MONOTONIC));
        gate_server_update_idle(s);
        return 0;
}

static int on_audit_window(sd_event_source *src, uint64_t usec, void *userdata) {
        GateServer *s = userdata;

        audit_limiter_expire(s->audit_limiter, clock_usec(CLOCK_MONOTONIC), gate_record_local_dropped, s->channel);
        audit_limiter_expire(s->unauth_limiter, clock_usec(CLOCK_MONOTONIC), gate_record_unauth_dropped, s->channel);
        gate_server_update_idle(s);
        return 0;
}

static int on_recheck(sd_event_source *src, uint64_t usec, void *userdata) {
        GateServer *s = userdata;

        (void) server_forget_removed(s);
        (void) sd_event_source_set_time_relative(src, GATE_TOKEN_RECHECK_USEC);
        gate_server_update_idle(s);
        return 0;
}

/* The skeleton's stop: SIGTERM or SIGINT. */
static void on_stop(SocketService *service, void *userdata) {
        GateServer *s = userdata;
        int n;

        /* Whoever waits gets a deny now rather than a broken connection. */
        n = gate_approvals_deny_all(s->approvals, "service-stopping", clock_usec(CLOCK_MONOTONIC));
        if (n > 0)
                log_notice("Stopping: denied %d pending request(s).", n);
        audit_limiter_expire(s->audit_limiter, UINT64_MAX, gate_record_local_dropped, s->channel);
        audit_limiter_expire(s->unauth_limiter, UINT64_MAX, gate_record_unauth_dropped, s->channel);
        for (GateConn *c = s->connections; c; c = c->next)
                if (c->out_size > 0)
                        (void) gate_conn_flush(c);
}

static int handle_request(GateConn *c, const HttpRequest *req) {
        return c->admin ? handle_admin_request(c, req) : handle_container_request(c, req);
}

/* ---- setup ---- */

static int server_settings(GateServer *s, uint64_t *ret_idle_usec) {
        _cleanup_free_ char *from_credential = NULL;
        uint64_t timeout_sec, idle_sec, verbose;
        const char *url, *creds;
        int r;

        if ((r = env_uint("LOOP_GATE_APPROVAL_TIMEOUT_SEC", GATE_APPROVAL_TIMEOUT_SEC_DEFAULT, 86400, &timeout_sec)) < 0 ||
            (r = env_uint("LOOP_GATE_RATE_TOTAL", GATE_RATE_TOTAL_DEFAULT, 10000000, &s->limits.total)) < 0 ||
            (r = env_uint("LOOP_GATE_RATE_PENDING", GATE_RATE_PENDING_DEFAULT, 10000, &s->limits.pending)) < 0 ||
            (r = env_uint("LOOP_GATE_RATE_PER_MINUTE", GATE_RATE_PER_MINUTE_DEFAULT, 100000, &s->limits.per_minute)) < 0 ||
            (r = env_uint("LOOP_GATE_AUDIT_VERBOSE", CHANNEL_GATE_AUDIT_VERBOSE_DEFAULT, 1, &verbose)) < 0 ||
            (r = env_uint("LOOP_GATE_IDLE_SEC", GATE_IDLE_SEC_DEFAULT, 86400, &idle_sec)) < 0)
                return r;
        s->limits.timeout_usec = timeout_sec * 1000000ULL;
        s->verbose = verbose;
        *ret_idle_usec = MAX(idle_sec, 1U) * 1000000ULL;

        /* The generator passes the URL as a credential (it may hold a secret); the environment is for
         * running by hand. */
        url = getenv("LOOP_GATE_WEBHOOK_URL");
        creds = getenv("CREDENTIALS_DIRECTORY");
        if (isempty(url) && !isempty(creds)) {
                _cleanup_close_ int dir_fd = open(creds, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                size_t size;

                r = dir_fd < 0 ? -errno :
                        read_full_file_at(dir_fd, "webhook-url", GATE_WEBHOOK_URL_MAX, true, &from_credential, &size);
                if (r < 0 && r != -ENOENT)
                        return log_error_errno(r, "Cannot read the webhook-url credential: %m");
                if (r >= 0) {
                        from_credential[strcspn(from_credential, "\r\n")] = 0;
                        url = from_credential;
                }
        }
        if (!isempty(url)) {
                if (!startswith(url, "http://") && !startswith(url, "https://"))
                        return log_error_errno(EINVAL, "LOOP_GATE_WEBHOOK_URL must be an http(s) URL.");
                s->webhook_url = strdup(url);
                if (!s->webhook_url)
                        return log_oom();
                /* It may carry the chat's credential. */
                (void) audit_add_secret(url);
        }
        return 0;
}

/* Two listening sockets, told apart by FileDescriptorName=: "gate" (required) and "admin". */
static int server_listen(GateServer *s) {
        bool have_gate = false;
        int r;

        r = socket_service_listen_systemd(s->service);
        if (r == -EBADF)
                return log_error_errno(r, "No sockets passed; loop-gate is started by loop-gate@NAME.socket.");
        if (r < 0)
                return log_error_errno(r, "The sockets from systemd are not listening AF_UNIX stream sockets: %m");
        for (size_t i = 0; i < socket_service_n_listeners(s->service); i++) {
                const char *name = socket_service_listener_name(s->service, i);

                if (!streq(name, "gate") && !streq(name, "admin"))
                        return log_error_errno(EINVAL, "Socket %zu is named \"%s\", expected \"gate\" or \"admin\" "
                                               "(FileDescriptorName=).", i, name);
                have_gate = have_gate || streq(name, "gate");
        }
        if (!have_gate)
                return log_error_errno(EINVAL, "No \"gate\" socket was passed.");
        return 0;
}

static void server_done(GateServer *s) {
        SocketService *service = TAKE_PTR(s->service);  /* gate_server_update_idle() does nothing from here */

        while (s->connections) {
                GateConn *c = s->connections;
                c->waiting_id = 0;
                c->dead = true;
                gate_conn_free(c);
        }
        sd_event_source_disable_unref(s->deadline_timer);
        sd_event_source_disable_unref(s->recheck_timer);
        sd_event_source_disable_unref(s->audit_timer);
        gate_approvals_free(s->approvals);
        audit_limiter_free(s->audit_limiter);
        audit_limiter_free(s->unauth_limiter);
        socket_service_free(service);
        free(s->webhook_url);
        free(s->channel);
}

static int run(int argc, char *argv[]) {
        _cleanup_(server_done) GateServer s = { .handle = handle_request };
        const char *reason;
        char *channel = NULL;
        uint64_t idle_usec;
        sigset_t mask;
        int r;

        log_setup();

        r = socket_service_parse_argv(argc, argv, "CHANNEL",
                                      "The host side of the security gate of a channel, started by loop-gate@CHANNEL.socket.",
                                      NULL, 0, 1, &channel);
        if (r <= 0)
                return r;
        if (channel_name_check(channel, &reason) < 0)
                return log_error_errno(EINVAL, "\"%s\" is not a valid channel name: %s.", channel, reason);
        s.channel = strdup(channel);
        if (!s.channel)
                return log_oom();

        r = server_settings(&s, &idle_usec);
        if (r < 0)
                return r;
        r = gate_approvals_new(&s.limits, on_resolved, &s, &s.approvals);
        if (r < 0)
                return log_oom();
        r = audit_limiter_new(GATE_AUDIT_RATE_PER_WINDOW, GATE_AUDIT_WINDOW_USEC, &s.audit_limiter);
        if (r >= 0)
                r = audit_limiter_new(GATE_UNAUTH_PER_WINDOW, GATE_UNAUTH_WINDOW_USEC, &s.unauth_limiter);
        if (r < 0)
                return log_oom();

        /* SIGCHLD for the webhook children (sd_event_add_child); the skeleton blocks SIGTERM/SIGINT. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Cannot block signals: %m");

        r = socket_service_new(&(SocketServiceConfig) {
                        .idle_usec = idle_usec,
                        .accept = gate_server_on_accept,
                        .keeps_alive = gate_server_busy,
                        .stop = on_stop,
                        .userdata = &s,
                }, &s.service);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the event loop: %m");
        s.event = socket_service_event(s.service);
        if ((r = sd_event_add_time(s.event, &s.deadline_timer, CLOCK_MONOTONIC, UINT64_MAX, 0, on_deadline, &s)) < 0 ||
            (r = sd_event_add_time_relative(s.event, &s.recheck_timer, CLOCK_MONOTONIC, GATE_TOKEN_RECHECK_USEC,
                                            0, on_recheck, &s)) < 0 ||
            (r = sd_event_add_time(s.event, &s.audit_timer, CLOCK_MONOTONIC, UINT64_MAX, 0, on_audit_window, &s)) < 0)
                return log_error_errno(r, "Cannot set up the event loop: %m");
        (void) sd_event_source_set_enabled(s.deadline_timer, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(s.audit_timer, SD_EVENT_OFF);
        (void) sd_event_source_set_enabled(s.recheck_timer, SD_EVENT_OFF);

        r = server_listen(&s);
        if (r < 0)
                return r;

        log_debug("Gate of channel %s ready (approval timeout %" PRIu64 "s, limits total %" PRIu64
                  ", pending %" PRIu64 ", per minute %" PRIu64 "%s).",
                  s.channel, (uint64_t) (s.limits.timeout_usec / 1000000U), s.limits.total, s.limits.pending,
                  s.limits.per_minute, s.webhook_url ? ", webhook on" : "");
        (void) sd_notify(false, "READY=1\nSTATUS=Serving approvals.");
        gate_server_update_idle(&s);

        r = socket_service_run(s.service);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
