/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "audit.h"
#include "dockerproxy-record.h"
#include "log.h"
#include "text-escape.h"

/* ---- the journal ---- */

/* The fields of fixed form (a method, a rule id, numbers) are formatted into buffers on the stack: this
 * runs for every request. The values of free form (the path, the reason, the approver's name) are
 * allocated, each once. */
#define PROXY_RECORD_FIELD_MAX 128U

/* key: "RULE:PEER" */
static void refusals_summary(const char *key, uint64_t suppressed, void *userdata) {
        DockerProxy *p = userdata;
        _cleanup_free_ char *rule = NULL, *f_dropped = NULL, *f_limit = NULL, *f_peer = NULL, *f_rule = NULL;
        const char *colon = key ? strchr(key, ':') : NULL;
        const char *peer = colon ? colon + 1 : "peers beyond the count";

        rule = colon ? strndup(key, (size_t) (colon - key)) : strdup("refused");
        if (!rule ||
            asprintf(&f_dropped, "LOOP_DROPPED=%" PRIu64, suppressed) < 0 ||
            asprintf(&f_limit, "LOOP_LIMIT=%u", PROXY_REFUSED_PER_WINDOW) < 0 ||
            asprintf(&f_peer, "LOOP_PEER=%s", colon ? peer : "beyond-the-count") < 0 ||
            asprintf(&f_rule, "LOOP_RULE=%s", rule) < 0) {
                log_oom();
                return;
        }
        char *extra[] = { (char *) "LOOP_KIND=docker", (char *) "LOOP_DECISION=deny", f_rule, f_dropped, f_limit,
                          f_peer, NULL };
        AuditFields f = { .channel = p->channel, .extra = extra };
        (void) audit_log(AUDIT_DOCKERPROXY_REQUEST, LOG_WARNING, &f,
                         "Docker API deny: %" PRIu64 " more connections or requests of %s refused (rule %s) in %llu s "
                         "(the first %u journaled one by one).", suppressed, peer, rule,
                         PROXY_REFUSED_WINDOW_USEC / 1000000ULL, PROXY_REFUSED_PER_WINDOW);
}

/* Whether this refusal of peer is journaled by itself (else it is counted for a summary). */
bool proxy_refusal_journaled(DockerProxy *p, const char *rule, pid_t pid, uid_t uid) {
        char key[96];
        int r;

        if (!p->refusals)
                return true;
        (void) snprintf(key, sizeof(key), "%s:pid %d uid %u", rule, (int) pid, (unsigned) uid);
        pthread_mutex_lock(&p->refusal_lock);
        r = audit_limiter_admit(p->refusals, key, clock_usec(CLOCK_MONOTONIC), refusals_summary, p);
        pthread_mutex_unlock(&p->refusal_lock);
        return r != 0;  /* out of memory: journaled rather than lost */
}

void proxy_refusals_expire(DockerProxy *p, uint64_t now) {
        if (!p->refusals)
                return;
        pthread_mutex_lock(&p->refusal_lock);
        audit_limiter_expire(p->refusals, now, refusals_summary, p);
        pthread_mutex_unlock(&p->refusal_lock);
}

uint64_t proxy_refusals_next_deadline(DockerProxy *p) {
        uint64_t next;

        if (!p->refusals)
                return UINT64_MAX;
        pthread_mutex_lock(&p->refusal_lock);
        next = audit_limiter_next_deadline(p->refusals);
        pthread_mutex_unlock(&p->refusal_lock);
        return next;
}

static char *record_field(const char *name, const char *value) {
        size_t n = strlen(name), v = strlen(value);
        char *s = malloc(n + v + 1);

        if (s)
                memcpy(mempcpy(s, name, n), value, v + 1);
        return s;
}

void proxy_conn_record(ProxyConn *c) {
        _cleanup_free_ char *path = NULL, *reason = NULL, *f_path = NULL, *f_reason = NULL, *f_actor = NULL,
                *f_fields = NULL, *first_line = NULL;
        char f_peer[PROXY_RECORD_FIELD_MAX], f_peer_uid[PROXY_RECORD_FIELD_MAX], f_method[PROXY_RECORD_FIELD_MAX], f_rule[PROXY_RECORD_FIELD_MAX], f_status[PROXY_RECORD_FIELD_MAX],
                f_latency[PROXY_RECORD_FIELD_MAX], f_frozen[PROXY_RECORD_FIELD_MAX], f_frozen_us[PROXY_RECORD_FIELD_MAX];
        const char *method = c->head.method ?: "-";
        uint64_t latency = clock_usec(CLOCK_MONOTONIC) - c->start_usec;
        bool deny = !streq_ptr(c->decision, "allow");

        if (c->unjournaled)     /* counted for a summary record (proxy_refusal_journaled()) */
                return;
        /* a request that never parsed: what it began with, so that the record says what was refused */
        if (!c->target.path && !c->head.path && c->in && c->in_size > 0) {
                size_t n = 0;
                while (n < c->in_size && n < PROXY_DISPLAY_MAX && c->in[n] != '\r' && c->in[n] != '\n' && c->in[n] != 0)
                        n++;
                first_line = strndup(c->in, n);
        }
        path = text_escape_display(c->target.path ?: c->head.path ?: strempty(first_line), PROXY_DISPLAY_MAX);
        reason = text_escape_display(strempty(c->reason), PROXY_DISPLAY_MAX);
        if (!path || !reason)
                goto oom;
        f_path = record_field("LOOP_PATH=", path);
        f_reason = record_field("LOOP_REASON=", reason);
        f_actor = record_field("LOOP_ACTOR=", c->actor ?: "policy");
        if (!f_path || !f_reason || !f_actor)
                goto oom;
        /* the method is a token of at most HTTP_METHOD_MAX bytes (src/shared/http-server.c) */
        snprintf(f_method, sizeof(f_method), "LOOP_METHOD=%s", method);
        snprintf(f_rule, sizeof(f_rule), "LOOP_RULE=%s", strna(c->rule));
        snprintf(f_status, sizeof(f_status), "LOOP_STATUS=%d", c->status);
        snprintf(f_latency, sizeof(f_latency), "LOOP_LATENCY_NS=%" PRIu64, latency * 1000U);
        snprintf(f_peer, sizeof(f_peer), "LOOP_PEER_PID=%d", (int) c->peer_pid);
        snprintf(f_peer_uid, sizeof(f_peer_uid), "LOOP_PEER_UID=%d", (int) c->peer_uid);
        char *extra[16] = { (char *) "LOOP_KIND=docker", f_method, f_path, f_rule,
                            (char *) (deny ? "LOOP_DECISION=deny" : "LOOP_DECISION=allow"), f_status, f_latency,
                            f_actor, f_peer, f_peer_uid };
        size_t n = 10;
        if (!isempty(c->fields)) {
                f_fields = record_field("LOOP_FIELDS=", c->fields);
                if (!f_fields)
                        goto oom;
                extra[n++] = f_fields;
        }
        if (c->froze) {         /* a start with pins: how many of the channel's containers it froze, how long */
                snprintf(f_frozen, sizeof(f_frozen), "LOOP_FROZEN=%u", c->n_frozen);
                snprintf(f_frozen_us, sizeof(f_frozen_us), "LOOP_FROZEN_US=%" PRIu64, c->frozen_usec);
                extra[n++] = f_frozen;
                extra[n++] = f_frozen_us;
        }
        if (!isempty(c->reason))
                extra[n++] = f_reason;
        extra[n] = NULL;
        AuditFields f = { .channel = c->proxy->channel, .container = c->peer_name, .extra = extra };
        (void) audit_log(AUDIT_DOCKERPROXY_REQUEST, deny ? LOG_WARNING : LOG_INFO, &f,
                         "Docker API %s: %s %s -> %d (rule %s%s%s)", deny ? "deny" : "allow", method, path,
                         c->status, strna(c->rule), isempty(c->reason) ? "" : ": ", reason);
        return;
oom:
        log_oom();
}
