/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The host's side of POST /api/gate/audit (services/loop-gate.c): a decision the in-container supervisor
 * made by itself (a default-rule deny of /etc/shadow, say), reported so that it reaches the journal, as
 * src/gate/gate-client.h documents it. Pure code, no I/O, no clock of its own.
 *
 * Everything in a report is the container's claim. gate_audit_report_parse() only makes sure it is
 * well-formed and bounded; who sent it (the container) comes from the bearer token and where (the channel)
 * from the service instance, never from the body.
 *
 * How many reports per container reach the journal is capped with an AuditLimiter (src/shared/audit-limiter.h). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "audit-limiter.h"
#include "macro.h"

#define GATE_AUDIT_TARGET_MAX (8U * 1024U)      /* bytes of a report's target */
#define GATE_AUDIT_MESSAGE_MAX 1024U            /* bytes of the rule's message or failure reason */
#define GATE_AUDIT_RULE_MAX 64U                 /* "file[12]", "default", "error", "no-path" */
#define GATE_AUDIT_NAME_MAX 32U                 /* a syscall or file operation name */
#define GATE_AUDIT_CHANNEL_MAX 64U              /* the claimed channel (CHANNEL_NAME_MAX) */
#define GATE_AUDIT_ACTOR_MAX 64U                /* prompted_who: empty for local decisions */
#define GATE_AUDIT_ERRNO_MAX 4095
#define GATE_AUDIT_RATE_PER_WINDOW 200U         /* reports journaled per container and window */
#define GATE_AUDIT_WINDOW_USEC 1000000ULL

/* A well-formed report. The strings point into the json_object it was parsed from. */
typedef struct GateAuditReport {
        int64_t ts_ns;                  /* CLOCK_REALTIME of the container, 0 when not sent */
        const char *channel;            /* claimed, informational; "" when not sent */
        pid_t pid;
        const char *kind;               /* "connect", "execve", "file" */
        const char *syscall;            /* [a-z0-9_], may be "" */
        const char *op;                 /* [a-z_-], NULL when not sent */
        const char *target;             /* any bytes but NUL; escape before showing */
        const char *rule;               /* printable ASCII, no blanks */
        bool allow;
        uint64_t latency_ns;
        int error;                      /* the errno the caller got, 0..GATE_AUDIT_ERRNO_MAX */
        const char *message;            /* "" when not sent; escape before showing */
} GateAuditReport;

/* Checks every field of o: types, lengths, vocabularies ("kind", "decision", "event" must be "local").
 * Unknown keys are ignored, so the supervisor may add fields. Returns 0, or -EBADMSG with the first
 * offending key in *ret_bad_field (a static string). */
int gate_audit_report_parse(json_object *o, GateAuditReport *ret, const char **ret_bad_field);
