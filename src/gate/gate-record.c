/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <inttypes.h>

#include "gate-record.h"
#include "log.h"
#include "macro.h"
#include "text-escape.h"

void gate_record_decision(const char *channel, AuditEvent event, const GateDecision *d) {
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
            asprintf(&f_id, "LOOP_GATE_ID=%s/%" PRIu64 "-%s", channel, d->id, strempty(d->digest)) < 0 ||
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
                .channel = channel,
                .container = d->container,
                .extra = extra,
        };

        if (pending)
                (void) audit_log(event, LOG_NOTICE, &f,
                                 "Approval %s/%" PRIu64 "-%s pending: %s %s (container %s, rule %s)",
                                 channel, d->id, strempty(d->digest), strna(d->kind), shown, strna(d->container), strna(d->rule));
        else
                (void) audit_log(event, d->allow ? LOG_INFO : LOG_WARNING, &f,
                                 "Gate %s: %s %s (container %s, actor %s, reason %s)",
                                 d->allow ? "allow" : "deny", strna(d->kind), shown, strna(d->container),
                                 strna(d->actor), strna(d->reason));
}

void gate_record_local(const char *channel, const char *container, const GateAuditReport *rep) {
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
            (!isempty(rep->channel) && !streq(rep->channel, channel) &&
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
                .channel = channel,
                .container = container,
                .extra = extra,
        };

        (void) audit_log(AUDIT_GATE_DECISION, rep->allow ? LOG_INFO : LOG_WARNING, &f,
                         "Gate %s (local): %s%s%s %s (container %s, rule %s, errno %d)",
                         decision, rep->kind, rep->op ? " " : "", strempty(rep->op), shown, container, rep->rule,
                         rep->error);
}

void gate_record_local_dropped(const char *container, uint64_t suppressed, void *userdata) {
        const char *channel = userdata;
        _cleanup_free_ char *f_dropped = NULL, *f_limit = NULL;

        if (asprintf(&f_dropped, "LOOP_DROPPED=%" PRIu64, suppressed) < 0 ||
            asprintf(&f_limit, "LOOP_LIMIT=%u", GATE_AUDIT_RATE_PER_WINDOW) < 0) {
                log_oom();
                return;
        }
        char *extra[] = { f_dropped, f_limit, NULL };
        AuditFields f = {
                .channel = channel,
                .container = container,
                .extra = extra,
        };
        (void) audit_log(AUDIT_GATE_AUDIT_DROPPED, LOG_WARNING, &f,
                         "Gate held back %" PRIu64 " local decision reports of %s%s (more than %u a second).",
                         suppressed, container ? "container " : "", container ?: "containers beyond the count",
                         GATE_AUDIT_RATE_PER_WINDOW);
}

void gate_record_unauth_dropped(const char *peer, uint64_t suppressed, void *userdata) {
        const char *channel = userdata;
        _cleanup_free_ char *f_dropped = NULL, *f_limit = NULL, *f_peer = NULL;

        if (asprintf(&f_dropped, "LOOP_DROPPED=%" PRIu64, suppressed) < 0 ||
            asprintf(&f_limit, "LOOP_LIMIT=%u", GATE_UNAUTH_PER_WINDOW) < 0 ||
            asprintf(&f_peer, "LOOP_PEER=%s", peer ?: "beyond-the-count") < 0) {
                log_oom();
                return;
        }
        char *extra[] = { f_dropped, f_limit, f_peer, NULL };
        AuditFields f = { .channel = channel, .extra = extra };
        (void) audit_log(AUDIT_GATE_AUDIT_DROPPED, LOG_WARNING, &f,
                         "Gate refused %" PRIu64 " more requests without a valid token from %s in %llu s "
                         "(the first %u journaled one by one).", suppressed, peer ?: "peers beyond the count",
                         GATE_UNAUTH_WINDOW_USEC / 1000000ULL, GATE_UNAUTH_PER_WINDOW);
}

void gate_record_answer_refused(const char *channel, const GatePending *p, uint64_t id, const char *digest,
                                const char *answer, const char *actor) {
        _cleanup_free_ char *target = NULL, *shown = NULL, *f_kind = NULL, *f_target = NULL, *f_id = NULL,
                *f_pending = NULL, *f_actor = NULL, *f_answer = NULL, *f_pid = NULL;

        target = text_escape_display(strempty(p->target), 0);
        shown = text_escape_display(strempty(p->target), GATE_DISPLAY_MAX);
        if (!target || !shown ||
            asprintf(&f_kind, "LOOP_KIND=%s", strna(p->kind)) < 0 ||
            asprintf(&f_target, "LOOP_TARGET=%s", target) < 0 ||
            asprintf(&f_id, "LOOP_GATE_ID=%s/%" PRIu64 "-%s", channel, id, digest) < 0 ||
            asprintf(&f_pending, "LOOP_PENDING_GATE_ID=%s/%" PRIu64 "-%s", channel, id, p->digest) < 0 ||
            asprintf(&f_actor, "LOOP_ACTOR=%s", actor) < 0 ||
            asprintf(&f_answer, "LOOP_ANSWER=%s", answer) < 0 ||
            asprintf(&f_pid, "LOOP_PID=%d", (int) p->pid) < 0) {
                log_oom();
                return;
        }
        char *extra[] = { f_kind, f_target, f_id, f_pending, f_actor, f_answer, f_pid,
                          (char *) "LOOP_DECISION=deny", (char *) "LOOP_REASON=digest-mismatch", NULL };
        AuditFields f = { .channel = channel, .container = p->container, .extra = extra };

        (void) audit_log(AUDIT_GATE_ANSWER_REFUSED, LOG_WARNING, &f,
                         "Refused %s's answer \"%s\" to %s/%" PRIu64 "-%s: request %" PRIu64 " is %s/%" PRIu64 "-%s "
                         "(%s of %s by %s), not the one answered; nothing was decided.",
                         actor, answer, channel, id, digest, id, channel, id, p->digest, strna(p->kind), shown,
                         strna(p->container));
}
