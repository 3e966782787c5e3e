/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The container side of the gate's host protocol: what `loop syscallwrap` sends to loop-gate@NAME over
 * the unix socket the runner bind-mounts into the container (LOOP_GATE_SOCKET, default
 * /run/loop/gate.sock). HTTP/1.1 with libcurl; every request carries "Authorization: Bearer
 * <LOOP_GATE_TOKEN>" and "Content-Type: application/json"; the Host is "loop-gate".
 *
 * 1. POST /api/gate/container-approval: a rule said "approve"; the caller blocks until the reply.
 *    Body:  {"kind": "connect"|"execve"|"file",
 *            "target": "<socket path | command line | path>",
 *            "message": "<the rule's message, or \"\">",
 *            "cache_key": "<gate_cache_key_*(): connect:<path> | execve:<base>:<2 args> | file:<op>:<path>>",
 *            "pid": <the caller's pid in the container>,
 *            "rule": "<cmd[3] ...>", "syscall": "<openat ...>", "op": "<read ...>" (file only)}
 *    (services/loop-gate.c reads kind, target, message, cache_key, rule and pid; syscall and op are extra.)
 *    Reply: HTTP 200 with {"decision": "allow"|"deny", "actor": "<who decided>", "reason": "<why>"}.
 *    Only HTTP 200 with decision "allow" allows. Anything else is a deny: the socket missing or refusing,
 *    no reply within GATE_APPROVAL_TIMEOUT_SEC, another status, a reply over GATE_REPLY_MAX bytes or not
 *    that JSON. The host answers for the human (once/session/deny/deny-session, its session cache, rate
 *    limits, "no-approver") and journals the decision; the supervisor caches nothing.
 *
 * 2. POST /api/gate/audit: a decision the supervisor made locally, so the host can journal it (the
 *    container has no journal). Fire and forget: queued (at most GATE_AUDIT_QUEUE_MAX records; more are
 *    dropped and counted), sent one by one from a thread, the reply ignored beyond its status.
 *    loop-gate answers 200 {} and journals a gate-decision with LOOP_SOURCE=local (src/gate/gate-audit.h
 *    checks the body; a bad one is 400, a bad token 401, both journal nothing). It takes the container
 *    from the token and the channel from itself, never from the body; it keeps allows only when its own
 *    gates.audit.verbose is on, and at most GATE_AUDIT_RATE_PER_WINDOW records per container and second.
 *    A target over GATE_AUDIT_TARGET_MAX (a long command line) or a body over its 16 KiB is refused:
 *    that record is in the container log only.
 *    Body:  {"ts": <CLOCK_REALTIME ns>, "channel": "<LOOP_CHANNEL_ID>", "pid": <pid>,
 *            "kind": "connect"|"execve"|"file", "syscall": "<openat ...>", "op": "<read ...>" (file only),
 *            "target": "...", "rule_id": "<file[2] | default | error>", "decision": "allow"|"deny",
 *            "event": "local", "prompted_who": "", "latency_ns": <trap to answer>,
 *            "errno": <what the caller got, 0 for allow>, "message": "<rule message or failure reason>"}
 *    Sent for every local deny, and for allows when LOOP_GATE_VERBOSE=1. Decisions that went through an
 *    approval are not sent again: the host saw them. Every record is also one JSON line on the
 *    supervisor's stderr (the container log), with the same fields plus "event": "approval" for those. */

#include <stdint.h>
#include <sys/types.h>

#include "gate-policy.h"

#define GATE_SOCKET_DEFAULT "/run/loop/gate.sock"
#define GATE_APPROVAL_TIMEOUT_SEC 900L          /* the host times out first; this only bounds a hung host */
#define GATE_CONNECT_TIMEOUT_SEC 5L
#define GATE_AUDIT_TIMEOUT_SEC 5L
#define GATE_REPLY_MAX (64U * 1024U)
#define GATE_AUDIT_QUEUE_MAX 1024U
#define GATE_AUDIT_FLUSH_MS 2000U               /* what the end of the agent waits for queued records */
#define GATE_TOKEN_MAX 512U

typedef struct GateClient GateClient;

typedef struct GateApproval {
        bool allow;
        char actor[64];
        char reason[256];       /* the host's reason, or why the request failed ("gate-unreachable", ...) */
} GateApproval;

typedef struct GateAuditRecord {
        int64_t ts_ns;
        pid_t pid;
        GateKind kind;
        const char *syscall;
        const char *op;         /* file operation, or NULL */
        const char *target;
        const char *rule_id;
        Decision decision;      /* allow or deny */
        const char *event;      /* "local" or "approval" */
        const char *actor;      /* prompted_who: the approval's actor, or NULL */
        uint64_t latency_ns;
        int error;              /* the errno the caller got, 0 */
        const char *message;
} GateAuditRecord;

/* socket_path NULL: every approval is a deny ("no-gate-socket") and audit records only go to stderr.
 * Starts the audit thread; call while curl_global_init() has been done and before dropping privileges
 * in other threads (the thread keeps the creator's credentials, which must reach the socket). */
int gate_client_new(const char *socket_path, const char *token, const char *channel, GateClient **ret);
GateClient *gate_client_free(GateClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(GateClient *, gate_client_free);

/* Never fails: a failure is a deny with the reason in ret. Blocks until the host answers. */
void gate_client_request_approval(GateClient *c, GateKind kind, const char *syscall, const char *op,
                                  const char *target, const char *rule_id, const char *message,
                                  const char *cache_key, pid_t pid, GateApproval *ret);

/* Builds the record's JSON object (for the stderr line and the audit POST). */
json_object *gate_audit_record_json(const GateClient *c, const GateAuditRecord *rec);
/* Queues a record for POST /api/gate/audit; returns -ENOBUFS when the queue is full (dropped). */
int gate_client_audit(GateClient *c, json_object *record);
/* Waits until every queued record was sent, at most timeout_ms (-ETIMEDOUT): for the end of the agent,
 * whose last denials would otherwise die with the queue. */
int gate_client_audit_flush(GateClient *c, unsigned timeout_ms);
