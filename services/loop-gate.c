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
 *   "admin"  /run/loop/NAME/gate-admin.sock, root and group loop only (`loop gate`):
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
#include "config.h"
#include "env-util.h"
#include "gate-approval.h"
#include "gate-audit.h"
#include "gate-token.h"
#include "gate-webhook.h"
#include "http-server.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "strv.h"
#include "text-escape.h"
#include "time-util.h"

#define GATE_CONNECTIONS_MAX 256U               /* container connections at once */
#define GATE_ADMIN_CONNECTIONS_MAX 16U
#define GATE_HEADER_SIZE_MAX (8U * 1024U)
#define GATE_HEADERS_MAX 32U
#define GATE_BODY_MAX (16U * 1024U)             /* a request's JSON: the fields' caps plus room */
#define GATE_JSON_DEPTH_MAX 4
#define GATE_REQUEST_TIMEOUT_USEC (30ULL * 1000000ULL)  /* to send a whole request, or idle keep-alive */
#define GATE_TOKEN_RECHECK_USEC (1ULL * 1000000ULL)     /* how often removed containers are noticed */
#define GATE_IDLE_SEC_DEFAULT 60U
#define GATE_DISPLAY_MAX 1024U                  /* bytes of a target or message shown in lists and MESSAGE */
#define GATE_WEBHOOK_CHILDREN_MAX 8U
#define GATE_WEBHOOK_TIMEOUT_MS 5000L
#define GATE_ADMIN_ANSWER_MAX 64U
#define GATE_WEBHOOK_URL_MAX 4096U

typedef struct Server Server;

typedef struct Connection {
        Server *server;
        int fd;
        bool admin;
        sd_event_source *io, *timer;
        char *in;                               /* GATE_HEADER_SIZE_MAX + GATE_BODY_MAX bytes */
        size_t in_size;
        char *out;
        size_t out_size, out_done;
        bool close_after_write;
        bool sent_continue;
        bool dead;                              /* freed as soon as the current callback returns */
        uint64_t waiting_id;                    /* the pending request this connection waits for */
        uid_t peer_uid;
        pid_t peer_pid;
        struct Connection *prev, *next;
} Connection;

struct Server {
        sd_event *event;
        char *channel;
        GateApprovals *approvals;
        GateLimits limits;
        AuditLimiter *audit_limiter;        /* local decisions journaled per container and second */
        AuditLimiter *unauth_limiter;       /* requests without a known token, journaled per peer */
        bool verbose;
        char *webhook_url;
        uint64_t idle_usec;
        Connection *connections;
        unsigned n_connections, n_admin;
        unsigned n_webhooks;
        int admin_fd;                           /* the listening admin socket, -EBADF when not passed */
        sd_event_source *deadline_timer, *recheck_timer, *idle_timer, *audit_timer;
};

/* ---- audit ---- */

typedef struct GateDecision {
        const char *container;
        const char *kind, *target, *rule;
        pid_t pid;
        uint64_t id;
        const char *digest;                     /* with id: the request as humans name it */
        bool allow;
        const char *actor, *reason;
        uint64_t latency_usec;
} GateDecision;

static void audit_gate(Server *s, AuditEvent event, const GateDecision *d) {
        _cleanup_free_ char *target = NULL, *shown = NULL, *f_pid = NULL, *f_kind = NULL, *f_target = NULL,
                *f_rule = NULL, *f_decision = NULL, *f_actor = NULL, *f_reason = NULL, *f_latency = NULL,
                *f_id = NULL;
        bool pending = event == AUDIT_GATE_PENDING;

        target = text_escape_display(strempty(d->target), 0);
        shown = text_escape_display(strempty(d->target), GATE_DISPLAY_MAX);
        if (!target || !shown ||
            asprintf(&f_pid, "LOOP_PID=%d", (int) d->pid) < 0 ||
            asprintf(&f_kind, "LOOP_KIND=%s", strna(d->kind)) < 0 ||
            asprintf(&f_target, "LOOP_TARGET=%s", target) < 0 ||
            asprintf(&f_rule, "LOOP_RULE=%s", strna(d->rule)) < 0 ||
            asprintf(&f_id, "LOOP_GATE_ID=%s/%" PRIu64 "-%s", s->channel, d->id, strempty(d->digest)) < 0 ||
            (!pending && asprintf(&f_decision, "LOOP_DECISION=%s", d->allow ? "allow" : "deny") < 0) ||
            (!pending && asprintf(&f_actor, "LOOP_ACTOR=%s", strna(d->actor)) < 0) ||
            (!pending && asprintf(&f_reason, "LOOP_REASON=%s", strna(d->reason)) < 0) ||
            (!pending && asprintf(&f_latency, "LOOP_LATENCY_NS=%" PRIu64, (uint64_t) (d->latency_usec * 1000U)) < 0)) {
                log_oom();
                return;
        }

        char *extra[] = { f_pid, f_kind, f_target, f_rule, f_id, f_decision, f_actor, f_reason, f_latency, NULL };
        if (d->id == 0)         /* no request id: the field would name nothing */
                memmove(&extra[4], &extra[5], 5 * sizeof(char *));
        if (pending)
                extra[5] = NULL;
        AuditFields f = {
                .channel = s->channel,
                .container = d->container,
                .extra = extra,
        };

        if (pending)
                (void) audit_log(event, LOG_NOTICE, &f,
                                 "Approval %s/%" PRIu64 "-%s pending: %s %s (container %s, rule %s)",
                                 s->channel, d->id, strempty(d->digest), strna(d->kind), shown, strna(d->container), strna(d->rule));
        else
                (void) audit_log(event, d->allow ? LOG_INFO : LOG_WARNING, &f,
                                 "Gate %s: %s %s (container %s, actor %s, reason %s)",
                                 d->allow ? "allow" : "deny", strna(d->kind), shown, strna(d->container),
                                 strna(d->actor), strna(d->reason));
}

/* A decision the container's supervisor made by itself. Everything but the channel (ours) and the
 * container (its token's) is the container's account; the report's own "channel" is only noted when it
 * disagrees. */
static void audit_local(Server *s, const char *container, const GateAuditReport *rep) {
        _cleanup_free_ char *target = NULL, *shown = NULL, *message = NULL, *claimed = NULL, *f_pid = NULL,
                *f_kind = NULL, *f_target = NULL, *f_rule = NULL, *f_decision = NULL, *f_latency = NULL,
                *f_syscall = NULL, *f_op = NULL, *f_errno = NULL, *f_message = NULL, *f_claimed = NULL;
        const char *decision = rep->allow ? "allow" : "deny";

        target = text_escape_display(rep->target, 0);
        shown = text_escape_display(rep->target, GATE_DISPLAY_MAX);
        message = text_escape_display(rep->message, GATE_DISPLAY_MAX);
        claimed = text_escape_display(rep->channel, GATE_DISPLAY_MAX);
        if (!target || !shown || !message || !claimed ||
            asprintf(&f_pid, "LOOP_PID=%d", (int) rep->pid) < 0 ||
            asprintf(&f_kind, "LOOP_KIND=%s", rep->kind) < 0 ||
            asprintf(&f_target, "LOOP_TARGET=%s", target) < 0 ||
            asprintf(&f_rule, "LOOP_RULE=%s", rep->rule) < 0 ||
            asprintf(&f_decision, "LOOP_DECISION=%s", decision) < 0 ||
            asprintf(&f_latency, "LOOP_LATENCY_NS=%" PRIu64, rep->latency_ns) < 0 ||
            asprintf(&f_syscall, "LOOP_SYSCALL=%s", rep->syscall) < 0 ||
            asprintf(&f_errno, "LOOP_ERRNO=%d", rep->error) < 0 ||
            (rep->op && asprintf(&f_op, "LOOP_OP=%s", rep->op) < 0) ||
            (!isempty(rep->message) && asprintf(&f_message, "LOOP_RULE_MESSAGE=%s", message) < 0) ||
            (!isempty(rep->channel) && !streq(rep->channel, s->channel) &&
             asprintf(&f_claimed, "LOOP_CLAIMED_CHANNEL=%s", claimed) < 0)) {
                log_oom();
                return;
        }

        char *extra[] = {
                f_pid, f_kind, f_target, f_rule, f_decision, (char *) "LOOP_ACTOR=policy", (char *) "LOOP_SOURCE=local",
                f_latency, f_syscall, f_errno,
                NULL, NULL, NULL, NULL,         /* the optional ones, packed: the list ends at the first NULL */
        };
        char *optional[] = { f_op, f_message, f_claimed };
        size_t n = 10;
        for (size_t i = 0; i < ELEMENTSOF(optional); i++)
                if (optional[i])
                        extra[n++] = optional[i];
        AuditFields f = {
                .channel = s->channel,
                .container = container,
                .extra = extra,
        };

        (void) audit_log(AUDIT_GATE_DECISION, rep->allow ? LOG_INFO : LOG_WARNING, &f,
                         "Gate %s (local): %s%s%s %s (container %s, rule %s, errno %d)",
                         decision, rep->kind, rep->op ? " " : "", strempty(rep->op), shown, container, rep->rule,
                         rep->error);
}

static void audit_local_dropped(const char *container, uint64_t suppressed, void *userdata) {
        Server *s = userdata;
        _cleanup_free_ char *f_dropped = NULL, *f_limit = NULL;

        if (asprintf(&f_dropped, "LOOP_DROPPED=%" PRIu64, suppressed) < 0 ||
            asprintf(&f_limit, "LOOP_LIMIT=%u", GATE_AUDIT_RATE_PER_WINDOW) < 0) {
                log_oom();
                return;
        }
        char *extra[] = { f_dropped, f_limit, NULL };
        AuditFields f = {
                .channel = s->channel,
                .container = container,
                .extra = extra,
        };
        (void) audit_log(AUDIT_GATE_AUDIT_DROPPED, LOG_WARNING, &f,
                         "Gate held back %" PRIu64 " local decision reports of %s%s (more than %u a second).",
                         suppressed, container ? "container " : "", container ?: "containers beyond the count",
                         GATE_AUDIT_RATE_PER_WINDOW);
}

/* Requests without a token we know come from anyone who can reach the socket, the agent included: a
 * flood of them must not drown the journal (journald drops what exceeds its rate, and the real decisions
 * with it). A few per peer and window are journaled one by one, the rest as one count per burst. */
#define GATE_UNAUTH_PER_WINDOW 3U
#define GATE_UNAUTH_WINDOW_USEC (10ULL * 1000000ULL)

static void audit_unauth_dropped(const char *peer, uint64_t suppressed, void *userdata) {
        Server *s = userdata;
        _cleanup_free_ char *f_dropped = NULL, *f_limit = NULL, *f_peer = NULL;

        if (asprintf(&f_dropped, "LOOP_DROPPED=%" PRIu64, suppressed) < 0 ||
            asprintf(&f_limit, "LOOP_LIMIT=%u", GATE_UNAUTH_PER_WINDOW) < 0 ||
            asprintf(&f_peer, "LOOP_PEER=%s", peer ?: "beyond-the-count") < 0) {
                log_oom();
                return;
        }
        char *extra[] = { f_dropped, f_limit, f_peer, NULL };
        AuditFields f = { .channel = s->channel, .extra = extra };
        (void) audit_log(AUDIT_GATE_AUDIT_DROPPED, LOG_WARNING, &f,
                         "Gate refused %" PRIu64 " more requests without a valid token from %s in %llu s "
                         "(the first %u journaled one by one).", suppressed, peer ?: "peers beyond the count",
                         GATE_UNAUTH_WINDOW_USEC / 1000000ULL, GATE_UNAUTH_PER_WINDOW);
}

/* A request with no token we know: refused; journaled while its peer stays within the limit. */
static bool unauthorized_journaled(Connection *c) {
        char peer[64];
        int r;

        (void) snprintf(peer, sizeof(peer), "pid %d uid %u", (int) c->peer_pid, (unsigned) c->peer_uid);
        r = audit_limiter_admit(c->server->unauth_limiter, peer, clock_usec(CLOCK_MONOTONIC),
                                     audit_unauth_dropped, c->server);
        return r != 0;  /* out of memory: journaled rather than lost */
}

/* ---- connections ---- */

static void server_update_idle(Server *s);

static void connection_free(Connection *c) {
        Server *s;

        if (!c)
                return;
        s = c->server;
        if (c->prev)
                c->prev->next = c->next;
        else
                s->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        if (c->admin)
                s->n_admin--;
        else
                s->n_connections--;
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->fd);
        free(c->in);
        free(c->out);
        free(c);
        server_update_idle(s);
}

/* Marks c to be freed; with a request waiting, that request is denied first (nobody will receive it,
 * but the decision is recorded). */
static void connection_close(Connection *c) {
        Server *s = c->server;

        if (c->dead)
                return;
        c->dead = true;
        if (c->waiting_id > 0) {
                uint64_t id = c->waiting_id;
                c->waiting_id = 0;
                (void) gate_approvals_deny(s->approvals, id, "caller-gone", clock_usec(CLOCK_MONOTONIC));
        }
}

static int connection_flush(Connection *c) {
        while (c->out_done < c->out_size) {
                ssize_t k = send(c->fd, c->out + c->out_done, c->out_size - c->out_done, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return sd_event_source_set_io_events(c->io, EPOLLIN | EPOLLRDHUP | EPOLLOUT);
                        return -errno;
                }
                c->out_done += (size_t) k;
        }
        c->out = mfree(c->out);
        c->out_size = c->out_done = 0;
        if (c->close_after_write)
                return -ECONNRESET;     /* done with it */
        return sd_event_source_set_io_events(c->io, EPOLLIN | EPOLLRDHUP);
}

static int connection_queue(Connection *c, const char *data, size_t size) {
        char *p;

        p = realloc(c->out, c->out_size + size);
        if (!p)
                return -ENOMEM;
        memcpy(p + c->out_size, data, size);
        c->out = p;
        c->out_size += size;
        return 0;
}

static int connection_reply(Connection *c, int status, json_object *body, bool keep_alive) {
        _cleanup_free_ char *buf = NULL;
        const char *text = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : NULL;
        size_t size;
        int r;

        if (c->dead)
                return 0;
        r = http_response_format(status, "application/json", text, text ? strlen(text) : 0, keep_alive, &buf, &size);
        if (r < 0)
                return r;
        r = connection_queue(c, buf, size);
        if (r < 0)
                return r;
        if (!keep_alive)
                c->close_after_write = true;
        return 0;
}

static json_object *decision_json(bool allow, const char *actor, const char *reason, uint64_t id) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        json_object_object_add(o, "decision", json_object_new_string(allow ? "allow" : "deny"));
        json_object_object_add(o, "actor", json_object_new_string(strempty(actor)));
        json_object_object_add(o, "reason", json_object_new_string(strempty(reason)));
        if (id > 0)
                json_object_object_add(o, "id", json_object_new_uint64(id));
        return o;
}

/* {"error": message}: for the admin socket, and for audit reports, which are not decisions. */
static int reply_error(Connection *c, int status, const char *message, bool keep_alive) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "error", json_object_new_string(message));
        return connection_reply(c, status, o, keep_alive);
}

/* A deny that never became a request: unauthorized, malformed, overloaded. */
static int reply_deny(Connection *c, int status, const char *reason, const char *container, bool keep_alive) {
        _cleanup_(json_object_putp) json_object *o = decision_json(false, "gate", reason, 0);
        GateDecision d = { .container = container, .allow = false, .actor = "gate", .reason = reason };

        audit_gate(c->server, AUDIT_GATE_DECISION, &d);
        if (!o)
                return -ENOMEM;
        return connection_reply(c, status, o, keep_alive);
}

static void on_resolved(GateApprovals *a, GatePending *p, const GateOutcome *o, uint64_t now, void *userdata) {
        Server *s = userdata;
        Connection *c = p->userdata;
        GateDecision d = {
                .container = p->container, .kind = p->kind, .target = p->target, .rule = p->rule,
                .pid = p->pid, .id = p->id, .digest = p->digest, .allow = o->allow, .actor = o->actor, .reason = o->reason,
                .latency_usec = now - p->created_usec,
        };

        audit_gate(s, AUDIT_GATE_DECISION, &d);

        if (!c || c->dead || c->waiting_id != p->id)
                return;
        c->waiting_id = 0;

        _cleanup_(json_object_putp) json_object *j = decision_json(o->allow, o->actor, o->reason, p->id);
        if (!j || connection_reply(c, 200, j, !c->close_after_write) < 0 || connection_flush(c) < 0)
                connection_close(c);
        else
                (void) sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

/* ---- webhook ---- */

static int on_webhook_exit(sd_event_source *src, const siginfo_t *si, void *userdata) {
        Server *s = userdata;

        if (s->n_webhooks > 0)
                s->n_webhooks--;
        if (si->si_code != CLD_EXITED || si->si_status != 0)
                log_warning("Webhook notice failed (status %d), ignoring.", si->si_status);
        sd_event_source_unref(src);
        server_update_idle(s);
        return 0;
}

_noreturn_ static void webhook_child(const char *url, const char *body) {
        CURL *curl;
        struct curl_slist *headers = NULL;
        long code = 0;
        CURLcode cr;
        sigset_t none;

        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);

        curl = curl_easy_init();
        if (!curl)
                _exit(EXIT_FAILURE);
        headers = curl_slist_append(headers, "Content-Type: application/json");
        curl_easy_setopt(curl, CURLOPT_URL, url);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, GATE_WEBHOOK_TIMEOUT_MS);
        curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
        cr = curl_easy_perform(curl);
        if (cr == CURLE_OK)
                curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
        _exit(cr == CURLE_OK && code >= 200 && code < 300 ? EXIT_SUCCESS : EXIT_FAILURE);
}

/* Tells the webhook about a new pending request from a child process, so that a slow or dead endpoint
 * never delays the loop. Failures are logged and otherwise ignored: the webhook informs, it never
 * decides. */
static void webhook_notify(Server *s, const GatePending *p) {
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
        r = gate_webhook_body(s->channel, p, s->limits.timeout_usec / 1000000ULL, GATE_DISPLAY_MAX, &body);
        if (r < 0) {
                log_warning_errno(r, "Cannot write the webhook notice for request %" PRIu64 ", not sending it: %m",
                                  p->id);
                return;
        }

        pid = fork();
        if (pid < 0) {
                log_warning_errno(errno, "Cannot fork for the webhook, ignoring: %m");
                return;
        }
        if (pid == 0)
                webhook_child(s->webhook_url, body);

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
static int container_authenticate(Server *s, const HttpRequest *req, char **ret_container) {
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
static int handle_audit_request(Connection *c, const HttpRequest *req) {
        Server *s = c->server;
        _cleanup_(json_object_putp) json_object *body = NULL, *ok = NULL;
        _cleanup_free_ char *container = NULL;
        GateAuditReport rep;
        const char *bad = NULL;
        int r;

        if (!streq(req->method, "POST"))
                return reply_error(c, 405, "use POST", req->keep_alive);
        if (container_authenticate(s, req, &container) < 0) {
                if (unauthorized_journaled(c))
                        log_warning("Audit report with an unknown token from pid %d (uid %u), refused.",
                                    (int) c->peer_pid, (unsigned) c->peer_uid);
                return reply_error(c, 401, "unauthorized", false);
        }
        if (parse_json_body(req, &body) < 0 || gate_audit_report_parse(body, &rep, &bad) < 0) {
                _cleanup_free_ char *text = NULL;

                log_debug("Malformed audit report from container %s (%s), ignoring it.", container, strna(bad));
                if (asprintf(&text, "bad field: %s", bad ?: "(not JSON)") < 0)
                        return -ENOMEM;
                return reply_error(c, 400, text, req->keep_alive);
        }

        /* The container's verbose setting is its own claim; ours decides whether allows are recorded. */
        if (!rep.allow || s->verbose) {
                r = audit_limiter_admit(s->audit_limiter, container, clock_usec(CLOCK_MONOTONIC), audit_local_dropped, s);
                if (r < 0)
                        return r;
                if (r > 0)
                        audit_local(s, container, &rep);
                /* the caller's server_update_idle() arms the timer that ends the window */
        }

        /* 200 {} rather than 204, which may not carry the Content-Length every reply of ours has. */
        ok = json_object_new_object();
        if (!ok)
                return -ENOMEM;
        return connection_reply(c, 200, ok, req->keep_alive);
}

static int handle_container_request(Connection *c, const HttpRequest *req) {
        Server *s = c->server;
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
                return reply_deny(c, 404, "bad-request", NULL, req->keep_alive);
        if (!streq(req->method, "POST"))
                return reply_deny(c, 405, "bad-request", NULL, req->keep_alive);

        if (container_authenticate(s, req, &container) < 0) {
                _cleanup_(json_object_putp) json_object *refusal = NULL;

                if (unauthorized_journaled(c))
                        return reply_deny(c, 401, "unauthorized", NULL, false);
                refusal = decision_json(false, "gate", "unauthorized", 0);
                return refusal ? connection_reply(c, 401, refusal, false) : -ENOMEM;
        }

        if (parse_json_body(req, &body) < 0)
                return reply_deny(c, 400, "bad-request", container, req->keep_alive);
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
                return reply_deny(c, 400, "bad-request", container, req->keep_alive);

        r = gate_approvals_submit(s->approvals, &info, clock_usec(CLOCK_MONOTONIC), &o, &p);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return reply_deny(c, r == -ENOBUFS ? 429 : 400, r == -ENOBUFS ? "overloaded" : "bad-request",
                                  container, req->keep_alive);
        if (r == 0) {
                _cleanup_(json_object_putp) json_object *j = decision_json(o.allow, o.actor, o.reason, 0);
                GateDecision d = {
                        .container = container, .kind = info.kind, .target = info.target, .rule = info.rule,
                        .pid = info.pid, .allow = o.allow, .actor = o.actor, .reason = o.reason,
                };
                /* Every answer given without a human this time is journaled too: an allow from the
                 * session cache means as much as the approval it repeats. */
                audit_gate(s, AUDIT_GATE_DECISION, &d);
                if (!j)
                        return -ENOMEM;
                return connection_reply(c, 200, j, req->keep_alive);
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
                audit_gate(s, AUDIT_GATE_PENDING, &d);
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

static json_object *pending_json(Server *s, const GatePending *p, uint64_t now) {
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

static int handle_admin_request(Connection *c, const HttpRequest *req) {
        Server *s = c->server;
        const char *id_str;

        if (streq(req->path, "/api/gate/pending")) {
                _cleanup_(json_object_putp) json_object *o = json_object_new_object();
                json_object *list = json_object_new_array();
                uint64_t now = clock_usec(CLOCK_MONOTONIC);

                if (!streq(req->method, "GET")) {
                        json_object_put(list);
                        return reply_error(c, 405, "use GET", req->keep_alive);
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
                return connection_reply(c, 200, o, req->keep_alive);
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
                        return reply_error(c, 405, "use POST", req->keep_alive);
                if (gate_request_id_parse(id_str, &id, digest) < 0)
                        return reply_error(c, 400, "bad request id (N-DIGEST, as `loop gate list` shows)",
                                           req->keep_alive);
                if (parse_json_body(req, &body) < 0 ||
                    !json_object_object_get_ex(body, "answer", &v) || !json_object_is_type(v, json_type_string) ||
                    json_object_get_string_len(v) > (int) GATE_ADMIN_ANSWER_MAX)
                        return reply_error(c, 400, "the body must be {\"answer\": \"once|session|deny|deny-session\"}",
                                           req->keep_alive);
                answer = gate_answer_from_string(json_object_get_string(v));
                if (answer < 0)
                        return reply_error(c, 400, "answer must be once, session, deny or deny-session", req->keep_alive);

                r = peer_name(c->peer_uid, &actor);
                if (r < 0)
                        return r;
                p = gate_approvals_find(s->approvals, id);
                if (p && !streq(p->digest, digest)) {
                        _cleanup_free_ char *shown = text_escape_display(p->target, GATE_DISPLAY_MAX);

                        log_warning("Refused %s's answer \"%s\" to %s/%" PRIu64 "-%s: request %" PRIu64 " is %s/%" PRIu64 "-%s "
                                    "(%s of %s by %s), not the one answered; nothing was decided.",
                                    actor, gate_answer_to_string(answer), s->channel, id, digest, id, s->channel,
                                    id, p->digest, p->kind, strna(shown), p->container);
                        return reply_error(c, 409, "the id names another request than this one: its target is not the "
                                           "one that was shown (see `loop gate list`); nothing was answered",
                                           req->keep_alive);
                }
                r = gate_approvals_answer(s->approvals, id, digest, answer, actor, clock_usec(CLOCK_MONOTONIC));
                if (r == -ENOENT)
                        return reply_error(c, 404, "no such pending request (answered, timed out or withdrawn)",
                                           req->keep_alive);
                if (r < 0)
                        return r;
                reply = json_object_new_object();
                if (!reply)
                        return -ENOMEM;
                json_object_object_add(reply, "settled", json_object_new_int(r));
                json_object_object_add(reply, "answer", json_object_new_string(gate_answer_to_string(answer)));
                json_object_object_add(reply, "actor", json_object_new_string(actor));
                return connection_reply(c, 200, reply, req->keep_alive);
        }

        return reply_error(c, 404, "unknown endpoint", req->keep_alive);
}

/* ---- I/O ---- */

static int connection_process(Connection *c) {
        static const char continue_line[] = "HTTP/1.1 100 Continue\r\n\r\n";
        HttpLimits limits = {
                .header_size_max = GATE_HEADER_SIZE_MAX,
                .headers_max = GATE_HEADERS_MAX,
                .body_size_max = GATE_BODY_MAX,
        };

        /* One request at a time: while one waits or its answer is being written, the rest stays queued. */
        while (!c->dead && c->waiting_id == 0 && c->out_size == 0 && c->in_size > 0) {
                _cleanup_(http_request_done) HttpRequest req = {};
                HttpParseInfo info;
                size_t consumed;
                int status = 0, r;

                r = http_request_parse(c->in, c->in_size, &limits, &req, &consumed, &status, &info);
                if (r == 0) {
                        if (info.expect_continue && !c->sent_continue) {
                                c->sent_continue = true;
                                r = connection_queue(c, continue_line, sizeof(continue_line) - 1);
                                if (r < 0)
                                        return r;
                        }
                        break;
                }
                if (r < 0) {
                        if (c->admin)
                                r = reply_error(c, status, http_status_reason(status), false);
                        else
                                r = reply_deny(c, status, "bad-request", NULL, false);
                        if (r < 0)
                                return r;
                        c->in_size = 0;
                        break;
                }

                memmove(c->in, c->in + consumed, c->in_size - consumed);
                c->in_size -= consumed;
                c->sent_continue = false;
                (void) sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);

                r = c->admin ? handle_admin_request(c, &req) : handle_container_request(c, &req);
                if (r < 0)
                        return r;
                if (c->waiting_id == 0 && c->out_size == 0)
                        /* nothing to say: cannot happen, but never leave a caller hanging */
                        return -EIO;
        }

        if (c->out_size > 0)
                return connection_flush(c);
        if (c->waiting_id == 0)
                (void) sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
        return 0;
}

static int on_connection_io(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Connection *c = userdata;
        size_t cap = GATE_HEADER_SIZE_MAX + GATE_BODY_MAX;
        int r = 0;

        if (revents & EPOLLOUT) {
                r = connection_flush(c);
                if (r < 0)
                        goto close;
        }

        if (revents & EPOLLIN) {
                for (;;) {
                        ssize_t k;

                        if (c->in_size >= cap) {
                                /* Only a client that sends more while it waits gets here. */
                                r = -ENOBUFS;
                                goto close;
                        }
                        k = recv(fd, c->in + c->in_size, cap - c->in_size, MSG_DONTWAIT);
                        if (k < 0) {
                                if (errno == EINTR)
                                        continue;
                                if (errno == EAGAIN)
                                        break;
                                r = -errno;
                                goto close;
                        }
                        if (k == 0) {
                                r = -ECONNRESET;
                                goto close;
                        }
                        c->in_size += (size_t) k;
                }
        } else if (revents & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
                r = -ECONNRESET;
                goto close;
        }

        r = connection_process(c);
        if (r < 0)
                goto close;
        if (c->dead)
                connection_free(c);     /* updates the timers itself */
        else
                /* a request may have become pending: its deadline and the token checks start now */
                server_update_idle(c->server);
        return 0;

close:
        if (r != -ECONNRESET)
                log_debug_errno(r, "Closing connection: %m");
        connection_close(c);
        connection_free(c);
        return 0;
}

static int on_connection_timeout(sd_event_source *src, uint64_t usec, void *userdata) {
        Connection *c = userdata;

        if (c->waiting_id > 0)
                return 0;
        log_debug("Closing a connection that sent no complete request in time.");
        connection_close(c);
        connection_free(c);
        return 0;
}

static int on_listen(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Server *s = userdata;
        bool admin = fd == s->admin_fd;

        for (;;) {
                _cleanup_close_ int cfd = -EBADF;
                struct ucred cred = {};
                socklen_t len = sizeof(cred);
                Connection *c;
                int r;

                cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        if (errno != EAGAIN)
                                log_warning_errno(errno, "accept() failed, ignoring: %m");
                        return 0;
                }
                /* Over the cap: closing is a deny for the caller, and costs us nothing. */
                if (admin ? s->n_admin >= GATE_ADMIN_CONNECTIONS_MAX : s->n_connections >= GATE_CONNECTIONS_MAX) {
                        log_warning("Too many %s connections, refusing one.", admin ? "admin" : "container");
                        continue;
                }
                if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                        log_warning_errno(errno, "Cannot get the peer's credentials, refusing: %m");
                        continue;
                }

                c = calloc(1, sizeof(*c));
                if (!c || !(c->in = malloc(GATE_HEADER_SIZE_MAX + GATE_BODY_MAX))) {
                        free(c);
                        log_oom();
                        continue;
                }
                c->server = s;
                c->admin = admin;
                c->peer_uid = cred.uid;
                c->peer_pid = cred.pid;
                c->fd = TAKE_FD(cfd);
                c->next = s->connections;
                if (s->connections)
                        s->connections->prev = c;
                s->connections = c;
                if (admin)
                        s->n_admin++;
                else
                        s->n_connections++;

                r = sd_event_add_io(s->event, &c->io, c->fd, EPOLLIN | EPOLLRDHUP, on_connection_io, c);
                if (r >= 0)
                        r = sd_event_add_time_relative(s->event, &c->timer, CLOCK_MONOTONIC,
                                                       GATE_REQUEST_TIMEOUT_USEC, 0, on_connection_timeout, c);
                if (r < 0) {
                        log_warning_errno(r, "Cannot watch a new connection, closing it: %m");
                        connection_free(c);
                        continue;
                }
                server_update_idle(s);
        }
}

/* ---- timers ---- */

static void server_arm_deadline(Server *s) {
        uint64_t next = gate_approvals_next_deadline(s->approvals);

        if (next == UINT64_MAX) {
                (void) sd_event_source_set_enabled(s->deadline_timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time(s->deadline_timer, next);
        (void) sd_event_source_set_enabled(s->deadline_timer, SD_EVENT_ONESHOT);
}

static void server_arm_audit_timer(Server *s) {
        uint64_t next = MIN(audit_limiter_next_deadline(s->audit_limiter),
                            audit_limiter_next_deadline(s->unauth_limiter));

        if (next == UINT64_MAX) {
                (void) sd_event_source_set_enabled(s->audit_timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time(s->audit_timer, next);
        (void) sd_event_source_set_enabled(s->audit_timer, SD_EVENT_ONESHOT);
}

static bool token_gone(const char *container, void *userdata) {
        int dir_fd = *(int *) userdata;
        return dir_fd < 0 || !gate_token_exists_at(dir_fd, container);
}

static int server_forget_removed(Server *s) {
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

static void server_update_idle(Server *s) {
        bool busy = s->connections || gate_approvals_n_pending(s->approvals) > 0 || s->n_webhooks > 0 ||
                gate_approvals_n_containers(s->approvals) > 0 ||
                audit_limiter_n_keys(s->audit_limiter) > 0 ||   /* a summary may be due */
                audit_limiter_n_keys(s->unauth_limiter) > 0;

        server_arm_deadline(s);
        server_arm_audit_timer(s);
        (void) sd_event_source_set_enabled(s->recheck_timer,
                                           gate_approvals_n_containers(s->approvals) > 0 ? SD_EVENT_ON : SD_EVENT_OFF);
        if (busy) {
                (void) sd_event_source_set_enabled(s->idle_timer, SD_EVENT_OFF);
                return;
        }
        if (sd_event_source_get_enabled(s->idle_timer, NULL) > 0)
                return;         /* already counting down */
        (void) sd_event_source_set_time_relative(s->idle_timer, s->idle_usec);
        (void) sd_event_source_set_enabled(s->idle_timer, SD_EVENT_ONESHOT);
}

static int on_deadline(sd_event_source *src, uint64_t usec, void *userdata) {
        Server *s = userdata;

        (void) gate_approvals_expire(s->approvals, clock_usec(CLOCK_MONOTONIC));
        server_update_idle(s);
        return 0;
}

static int on_audit_window(sd_event_source *src, uint64_t usec, void *userdata) {
        Server *s = userdata;

        audit_limiter_expire(s->audit_limiter, clock_usec(CLOCK_MONOTONIC), audit_local_dropped, s);
        audit_limiter_expire(s->unauth_limiter, clock_usec(CLOCK_MONOTONIC), audit_unauth_dropped, s);
        server_update_idle(s);
        return 0;
}

static int on_recheck(sd_event_source *src, uint64_t usec, void *userdata) {
        Server *s = userdata;

        (void) server_forget_removed(s);
        (void) sd_event_source_set_time_relative(src, GATE_TOKEN_RECHECK_USEC);
        server_update_idle(s);
        return 0;
}

static int on_idle(sd_event_source *src, uint64_t usec, void *userdata) {
        Server *s = userdata;

        log_debug("Idle, exiting; the socket starts us again.");
        return sd_event_exit(s->event, 0);
}

static int on_terminate(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata) {
        Server *s = userdata;
        int n;

        /* Whoever waits gets a deny now rather than a broken connection. */
        n = gate_approvals_deny_all(s->approvals, "service-stopping", clock_usec(CLOCK_MONOTONIC));
        if (n > 0)
                log_notice("Stopping: denied %d pending request(s).", n);
        audit_limiter_expire(s->audit_limiter, UINT64_MAX, audit_local_dropped, s);
        audit_limiter_expire(s->unauth_limiter, UINT64_MAX, audit_unauth_dropped, s);
        for (Connection *c = s->connections; c; c = c->next)
                if (c->out_size > 0)
                        (void) connection_flush(c);
        return sd_event_exit(s->event, 0);
}

/* ---- setup ---- */

static int server_settings(Server *s) {
        _cleanup_free_ char *from_credential = NULL;
        uint64_t timeout_sec, idle_sec, verbose;
        const char *url, *creds;
        int r;

        if ((r = env_uint("LOOP_GATE_APPROVAL_TIMEOUT_SEC", GATE_APPROVAL_TIMEOUT_SEC_DEFAULT, 86400, &timeout_sec)) < 0 ||
            (r = env_uint("LOOP_GATE_RATE_TOTAL", GATE_RATE_TOTAL_DEFAULT, 10000000, &s->limits.total)) < 0 ||
            (r = env_uint("LOOP_GATE_RATE_PENDING", GATE_RATE_PENDING_DEFAULT, 10000, &s->limits.pending)) < 0 ||
            (r = env_uint("LOOP_GATE_RATE_PER_MINUTE", GATE_RATE_PER_MINUTE_DEFAULT, 100000, &s->limits.per_minute)) < 0 ||
            (r = env_uint("LOOP_GATE_AUDIT_VERBOSE", 0, 1, &verbose)) < 0 ||
            (r = env_uint("LOOP_GATE_IDLE_SEC", GATE_IDLE_SEC_DEFAULT, 86400, &idle_sec)) < 0)
                return r;
        s->limits.timeout_usec = timeout_sec * 1000000ULL;
        s->verbose = verbose;
        s->idle_usec = MAX(idle_sec, 1U) * 1000000ULL;

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

static int server_listen(Server *s) {
        _cleanup_strv_free_ char **names = NULL;
        bool have_gate = false;
        int n, r;

        n = sd_listen_fds_with_names(true, &names);
        if (n < 0)
                return log_error_errno(n, "Failed to get the listening sockets from systemd: %m");
        if (n == 0)
                return log_error_errno(EBADF, "No sockets passed; loop-gate is started by loop-gate@NAME.socket.");

        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;
                const char *name = names && names[i] ? names[i] : "unknown";
                bool admin;

                if (streq(name, "gate"))
                        admin = false;
                else if (streq(name, "admin"))
                        admin = true;
                else
                        return log_error_errno(EINVAL, "Socket %d is named \"%s\", expected \"gate\" or \"admin\" "
                                               "(FileDescriptorName=).", fd, name);
                r = sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0);
                if (r < 0)
                        return log_error_errno(r, "Cannot check socket %s: %m", name);
                if (r == 0)
                        return log_error_errno(EINVAL, "Socket %s is not a listening AF_UNIX stream socket.", name);
                r = fcntl(fd, F_GETFL);
                if (r < 0 || fcntl(fd, F_SETFL, r | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                        return log_error_errno(errno, "Cannot make socket %s non-blocking: %m", name);
                if (admin)
                        s->admin_fd = fd;
                r = sd_event_add_io(s->event, NULL, fd, EPOLLIN, on_listen, s);
                if (r < 0)
                        return log_error_errno(r, "Cannot watch socket %s: %m", name);
                have_gate = have_gate || !admin;
        }
        if (!have_gate)
                return log_error_errno(EINVAL, "No \"gate\" socket was passed.");
        return 0;
}

static void server_done(Server *s) {
        while (s->connections) {
                Connection *c = s->connections;
                c->waiting_id = 0;
                c->dead = true;
                connection_free(c);
        }
        sd_event_source_disable_unref(s->deadline_timer);
        sd_event_source_disable_unref(s->recheck_timer);
        sd_event_source_disable_unref(s->idle_timer);
        sd_event_source_disable_unref(s->audit_timer);
        gate_approvals_free(s->approvals);
        audit_limiter_free(s->audit_limiter);
        audit_limiter_free(s->unauth_limiter);
        sd_event_unref(s->event);
        free(s->webhook_url);
        free(s->channel);
}

static int run(int argc, char *argv[]) {
        _cleanup_(server_done) Server s = { .admin_fd = -EBADF };
        const char *reason;
        sigset_t mask;
        int r;

        log_setup();

        if (argc != 2)
                return log_error_errno(EINVAL, "Usage: %s CHANNEL (started by loop-gate@CHANNEL.socket)",
                                       program_invocation_short_name);
        if (channel_name_check(argv[1], &reason) < 0)
                return log_error_errno(EINVAL, "\"%s\" is not a valid channel name: %s.", argv[1], reason);
        s.channel = strdup(argv[1]);
        if (!s.channel)
                return log_oom();

        r = server_settings(&s);
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

        /* SIGCHLD for the webhook children (sd_event_add_child), SIGTERM/SIGINT to deny what waits. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Cannot block signals: %m");
        /* A webhook child must not take a broken pipe for a reason to die silently. */
        (void) signal(SIGPIPE, SIG_IGN);

        r = sd_event_default(&s.event);
        if (r < 0)
                return log_error_errno(r, "Cannot allocate the event loop: %m");
        if ((r = sd_event_add_signal(s.event, NULL, SIGTERM, on_terminate, &s)) < 0 ||
            (r = sd_event_add_signal(s.event, NULL, SIGINT, on_terminate, &s)) < 0 ||
            (r = sd_event_add_time(s.event, &s.deadline_timer, CLOCK_MONOTONIC, UINT64_MAX, 0, on_deadline, &s)) < 0 ||
            (r = sd_event_add_time_relative(s.event, &s.recheck_timer, CLOCK_MONOTONIC, GATE_TOKEN_RECHECK_USEC,
                                            0, on_recheck, &s)) < 0 ||
            (r = sd_event_add_time_relative(s.event, &s.idle_timer, CLOCK_MONOTONIC, s.idle_usec, 0, on_idle, &s)) < 0 ||
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

        r = sd_event_loop(s.event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
