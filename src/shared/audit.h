/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Every event of loop is one structured journal entry with stable fields, so `journalctl LOOP_EVENT=...`
 * answers questions without a log parser. MESSAGE_ID per kind of event (see loop.catalog). Without a
 * journal (no journald, or LOOP_LOG_TARGET=console) the same event is one line on stderr. Secret values
 * registered with audit_add_secret() never reach either: they are replaced by [REDACTED] in every field.
 *
 * The journal-or-console choice is log.c's (log_setup()): the journal when stderr is the journal stream
 * of a service or LOOP_LOG_TARGET=journal, else stderr. Audit entries go to the journal whatever
 * LOOP_LOG_LEVEL says (they are records, not chatter); on the console they obey it like any message. */

#include "macro.h"

typedef enum AuditEvent {
        AUDIT_CONTAINER_REGISTERED, AUDIT_CONTAINER_STATUS, AUDIT_CONTAINER_REMOVED,
        AUDIT_RUN_STARTED, AUDIT_RUN_TURN, AUDIT_RUN_TOOL_USE, AUDIT_RUN_FINISHED, AUDIT_RUN_FAILED, AUDIT_RUN_RETRIED,
        AUDIT_QUEUE_QUEUED, AUDIT_QUEUE_TAKEN, AUDIT_QUEUE_DONE, AUDIT_QUEUE_RETRY, AUDIT_QUEUE_FAILED,
        AUDIT_RUNNER_STARTED, AUDIT_RUNNER_STOPPED, AUDIT_RUNNER_WAITING,
        AUDIT_GATE_PENDING, AUDIT_GATE_DECISION, AUDIT_GATE_AUDIT_DROPPED, AUDIT_GATE_ANSWER_REFUSED,
        AUDIT_DOCKERPROXY_REQUEST,
        AUDIT_GATEWAY_REQUEST, AUDIT_GATEWAY_FAILED,
        AUDIT_TAMPER,
        AUDIT_TASK_CREATED, AUDIT_TASK_CHANGED, AUDIT_TASK_REMOVED, AUDIT_TASK_FIRED, AUDIT_TASK_REFUSED,
        AUDIT_BROWSER_ACTION, AUDIT_BROWSER_REFUSED,
        _AUDIT_EVENT_MAX,
        _AUDIT_EVENT_INVALID = -EINVAL,
} AuditEvent;

typedef struct AuditFields {
        const char *channel;            /* LOOP_CHANNEL */
        const char *container;          /* LOOP_CONTAINER (id) */
        const char *container_name;     /* LOOP_CONTAINER_NAME */
        const char *container_type;     /* LOOP_CONTAINER_TYPE: agent|shell|chrome */
        const char *scope;              /* LOOP_SCOPE: the transient scope unit */
        const char *session;            /* LOOP_SESSION */
        const char *message_id;         /* LOOP_QUEUE_ID (queue message id) */
        char * const *extra;            /* more "LOOP_KEY=value" fields, NULL-terminated, may be NULL */
} AuditFields;

/* Caps: a field value (MESSAGE included) longer than this is cut and ends in AUDIT_TRUNCATED_MARKER;
 * extra fields beyond AUDIT_EXTRA_MAX are dropped; at most AUDIT_SECRETS_MAX secrets are remembered. */
#define AUDIT_FIELD_MAX (64U * 1024U)
#define AUDIT_EXTRA_MAX 64U
#define AUDIT_SECRETS_MAX 1024U              /* each value counts up to four times: plain, base64 (padded and
                                                 * not) and percent-encoded */
#define AUDIT_SECRET_MIN 8U
#define AUDIT_REDACTED "[REDACTED]"
#define AUDIT_TRUNCATED_MARKER "...[truncated]"

const char *audit_event_to_string(AuditEvent e);       /* LOOP_EVENT value, e.g. "run-finished" */
AuditEvent audit_event_from_string(const char *s);      /* _AUDIT_EVENT_INVALID when unknown */
const char *audit_event_message_id(AuditEvent e);       /* 32 hex chars */

/* Registers value, its base64 (with and without padding) and its percent-encoded form for redaction.
 * Values shorter than AUDIT_SECRET_MIN bytes are ignored (returns 0): they would redact ordinary words.
 * Returns 1 when added, 0 when ignored or already known, -E2BIG when the table is full, -ENOMEM. */
int audit_add_secret(const char *value);
void audit_clear_secrets(void);

/* A copy of value with every registered secret replaced by AUDIT_REDACTED, in *ret: returns 1; 0 (and
 * *ret untouched) when no secret is registered; -ENOMEM. log.c runs every log message through it. */
int audit_redact(const char *value, char **ret);

/* Whether an extra field's name marks its value as secret (contains TOKEN, KEY, SECRET, PASSWORD or
 * AUTHORIZATION, in any case). */
bool audit_field_name_is_secret(const char *name);

/* Logs MESSAGE (printf format) with PRIORITY, MESSAGE_ID, LOOP_EVENT, SYSLOG_IDENTIFIER and the non-NULL
 * fields. Extra fields with an invalid journal field name, or naming a field audit_log() sets itself,
 * are dropped (with a debug message). Returns 0, or a negative errno when the entry could not be
 * written anywhere (a journal failure falls back to stderr first). */
int audit_log(AuditEvent e, int priority, const AuditFields *f, const char *format, ...) _printf_(4, 5);

/* audit_log() with a MESSAGE the caller made (not a format): for a record written per request, where the
 * printf machinery cost as much as the rest of the record. The caller clears message when it may hold
 * what a secret looks like (audit_log() clears its own). */
int audit_log_message(AuditEvent e, int priority, const AuditFields *f, const char *message);
