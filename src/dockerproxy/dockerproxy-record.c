/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "audit.h"
#include "dockerproxy-record.h"
#include "log.h"
#include "text-escape.h"

/* ---- the journal ---- */


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

/* "NAME=value" into a field of PROXY_RECORD_FIELD_MAX bytes, cut to fit as snprintf() would. These run
 * for every request (six fields a record): snprintf() cost as much as the rest of the record's build. */
static void field_put(char *buf, const char *name, const char *value) {
        char *p = stpcpy(buf, name);
        size_t left = PROXY_RECORD_FIELD_MAX - 1 - (size_t) (p - buf), n = strnlen(value, left);

        *(char *) mempcpy(p, value, n) = 0;
}

#define DECIMAL_MAX sizeof("-18446744073709551615")

/* v in decimal at the end of digits[DECIMAL_MAX]; returns where it begins */
static char *decimal_format(char digits[static DECIMAL_MAX], uint64_t v, bool negative) {
        char *d = digits + DECIMAL_MAX;

        *--d = 0;
        do {
                *--d = (char) ('0' + v % 10);
                v /= 10;
        } while (v > 0);
        if (negative)
                *--d = '-';
        return d;
}

static void field_put_u64(char *buf, const char *name, uint64_t v, bool negative) {
        char digits[DECIMAL_MAX];

        field_put(buf, name, decimal_format(digits, v, negative));
}

/* "NAME=value" in fixed (PROXY_RECORD_FIELD_MAX bytes) when it fits, else allocated into *allocated (the
 * path and the actor are short but for rare requests: two allocations a record fewer). NULL when out of
 * memory. */
static const char *field_set(char *fixed, char **allocated, const char *name, const char *value) {
        if (strlen(name) + strlen(value) < PROXY_RECORD_FIELD_MAX) {
                field_put(fixed, name, value);
                return fixed;
        }
        *allocated = record_field(name, value);
        return *allocated;
}

static void field_put_int(char *buf, const char *name, int v) {
        field_put_u64(buf, name, v < 0 ? -(uint64_t) (int64_t) v : (uint64_t) v, v < 0);
}

void proxy_record_done(ProxyRecord *r) {
        free(r->path);
        free(r->reason);
        free(r->f_path);
        free(r->f_reason);
        free(r->f_actor);
        free(r->f_fields);
        *r = (ProxyRecord) {};
}

int proxy_record_build(const ProxyConn *c, uint64_t now, ProxyRecord *r) {
        _cleanup_free_ char *first_line = NULL;
        const char *method = c->head.method ?: "-";
        size_t n = 0;

        *r = (ProxyRecord) { .method = method, .deny = !streq_ptr(c->decision, "allow") };
        /* a request that never parsed: what it began with, so that the record says what was refused */
        if (!c->target.path && !c->head.path && c->in && c->in_size > 0) {
                size_t k = 0;
                while (k < c->in_size && k < PROXY_DISPLAY_MAX && c->in[k] != '\r' && c->in[k] != '\n' && c->in[k] != 0)
                        k++;
                first_line = strndup(c->in, k);
                if (!first_line)
                        return -ENOMEM;
        }
        r->path = text_escape_display(c->target.path ?: c->head.path ?: strempty(first_line), PROXY_DISPLAY_MAX);
        if (!r->path)
                return -ENOMEM;
        if (!isempty(c->reason)) {
                r->reason = text_escape_display(c->reason, PROXY_DISPLAY_MAX);
                if (!r->reason || !(r->f_reason = record_field("LOOP_REASON=", r->reason)))
                        return -ENOMEM;
        }
        if (!field_set(r->f_path_fixed, &r->f_path, "LOOP_PATH=", r->path) ||
            !field_set(r->f_actor_fixed, &r->f_actor, "LOOP_ACTOR=", c->actor ?: "policy"))
                return -ENOMEM;
        /* the method is a token of at most HTTP_METHOD_MAX bytes (src/shared/http-server.c) */
        field_put(r->f_method, "LOOP_METHOD=", method);
        field_put(r->f_rule, "LOOP_RULE=", strna(c->rule));
        field_put_int(r->f_status, "LOOP_STATUS=", c->status);
        field_put_u64(r->f_latency, "LOOP_LATENCY_NS=", (now - c->start_usec) * 1000U, false);
        field_put_int(r->f_peer, "LOOP_PEER_PID=", (int) c->peer_pid);
        field_put_int(r->f_peer_uid, "LOOP_PEER_UID=", (int) c->peer_uid);
        r->extra[n++] = (char *) "LOOP_KIND=docker";
        r->extra[n++] = r->f_method;
        r->extra[n++] = r->f_path ?: r->f_path_fixed;
        r->extra[n++] = r->f_rule;
        r->extra[n++] = (char *) (r->deny ? "LOOP_DECISION=deny" : "LOOP_DECISION=allow");
        r->extra[n++] = r->f_status;
        r->extra[n++] = r->f_latency;
        r->extra[n++] = r->f_actor ?: r->f_actor_fixed;
        r->extra[n++] = r->f_peer;
        r->extra[n++] = r->f_peer_uid;
        if (!isempty(c->fields)) {
                r->f_fields = record_field("LOOP_FIELDS=", c->fields);
                if (!r->f_fields)
                        return -ENOMEM;
                r->extra[n++] = r->f_fields;
        }
        if (c->froze) {         /* a start with pins: how many of the channel's containers it froze, how long */
                snprintf(r->f_frozen, sizeof(r->f_frozen), "LOOP_FROZEN=%u", c->n_frozen);
                snprintf(r->f_frozen_us, sizeof(r->f_frozen_us), "LOOP_FROZEN_US=%" PRIu64, c->frozen_usec);
                r->extra[n++] = r->f_frozen;
                r->extra[n++] = r->f_frozen_us;
        }
        if (!isempty(c->reason))
                r->extra[n++] = r->f_reason;
        r->extra[n] = NULL;
        return 0;
}

const char *proxy_record_message(const ProxyConn *c, const ProxyRecord *r, char *buf, size_t size,
                                  char **ret_allocated) {
        const char *rule = strna(c->rule), *verdict = r->deny ? "deny" : "allow";
        bool has_reason = r->reason;
        char digits[DECIMAL_MAX], *status = decimal_format(digits, c->status < 0 ? -(uint64_t) (int64_t) c->status :
                                                                      (uint64_t) c->status, c->status < 0);
        size_t need = sizeof("Docker API : ") + strlen(verdict) + strlen(r->method) + 1 + strlen(r->path) +
                sizeof(" -> ") + strlen(status) + sizeof(" (rule ") + strlen(rule) + 2 + strlen(strempty(r->reason)) + 1;
        char *p;

        *ret_allocated = NULL;
        if (need > size) {
                buf = *ret_allocated = malloc(need);
                if (!buf)
                        return NULL;
        }
        p = stpcpy(stpcpy(stpcpy(buf, "Docker API "), verdict), ": ");
        p = stpcpy(stpcpy(stpcpy(p, r->method), " "), r->path);
        p = stpcpy(stpcpy(stpcpy(p, " -> "), status), " (rule ");
        p = stpcpy(p, rule);
        if (has_reason)
                p = stpcpy(stpcpy(p, ": "), r->reason);
        (void) stpcpy(p, ")");
        return buf;
}

void proxy_conn_record(ProxyConn *c) {
        _cleanup_(proxy_record_done) ProxyRecord r = {};
        _cleanup_free_ char *allocated = NULL;
        char buf[PROXY_RECORD_MESSAGE_STACK];
        const char *message;

        if (c->unjournaled)     /* counted for a summary record (proxy_refusal_journaled()) */
                return;
        if (proxy_record_build(c, clock_usec(CLOCK_MONOTONIC), &r) < 0 ||
            !(message = proxy_record_message(c, &r, buf, sizeof(buf), &allocated))) {
                log_oom();
                return;
        }
        AuditFields f = { .channel = c->proxy->channel, .container = c->peer_name, .extra = r.extra };
        (void) audit_log_message(AUDIT_DOCKERPROXY_REQUEST, r.deny ? LOG_WARNING : LOG_INFO, &f, message);
        /* as audit_log() clears its message: a path may hold what a registered secret looks like */
        explicit_bzero((char *) message, strlen(message));
}
