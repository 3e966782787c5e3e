/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The approval protocol of the security gate, as loop-gate@NAME.service keeps it for one channel: pure
 * state, no I/O, no clock of its own (every call takes "now" in microseconds of CLOCK_MONOTONIC).
 *
 * A container whose policy says "approve" asks the host (POST /api/gate/container-approval, see
 * services/loop-gate.c). The request is answered at once when it can be:
 *   1. the container's session cache has a decision for its cache key (a human answered "session" or
 *      "deny-session" before): allow or deny, actor "cache";
 *   2. nobody can be asked (approvals are off: no approval timeout): deny, reason "no-approver";
 *   3. a rate limit of the container is reached, checked in the order total, pending, per minute: deny,
 *      reason "rate-limit-total", "rate-limit-pending", "rate-limit-per-minute";
 * otherwise it becomes a pending request with an id, shown to humans, until
 *   - a human answers: once (allow), session (allow, cached), deny, deny-session (deny, cached); a session
 *     answer also settles the container's other pending requests with the same cache key;
 *   - the approval timeout passes: deny, actor "timeout", reason "timeout" (not a human's no);
 *   - the container is removed: deny, reason "container-removed";
 *   - the caller goes away: deny, reason "caller-gone" (nobody receives it; it is still a decision).
 * Every settled request is reported once through the GateResolvedFn callback, and then freed.
 *
 * Everything a container can cause is capped: pending requests (also across containers), containers
 * tracked, cache entries per container, and the length of each field. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "channel-defaults.h"
#include "macro.h"

#define GATE_KIND_NAME_MAX 16U
#define GATE_TARGET_MAX 4096U                   /* bytes of a request's target */
#define GATE_MESSAGE_MAX 1024U                  /* bytes of a request's message */
#define GATE_CACHE_KEY_MAX (GATE_TARGET_MAX + 256U)
/* Request ids start at a random point of [MIN, MIN + SPAN) per service start and count up. */
#define GATE_APPROVAL_ID_MIN 1000U
#define GATE_APPROVAL_ID_SPAN 1000000000U
/* A request id as humans see it is N-DIGEST: DIGEST is the first GATE_APPROVAL_DIGEST_HEX hex digits of
 * SHA-256 over the container, kind and target, so an answer names what was shown, not only a number. */
#define GATE_APPROVAL_DIGEST_HEX 8U
#define GATE_APPROVAL_ID_STR_MAX (20U + 1U + GATE_APPROVAL_DIGEST_HEX + 1U)
#define GATE_RULE_MAX 64U
#define GATE_PENDING_MAX 1024U                  /* pending requests of the whole channel */
#define GATE_CONTAINERS_MAX 1024U               /* containers with state (counters, cache) */
#define GATE_CACHE_ENTRIES_MAX 1024U            /* session decisions remembered per container */
#define GATE_RATE_WINDOW_USEC (60ULL * 1000000ULL)

/* The reference's defaults (gates.rate_limits) and ours for gates.approval_timeout_sec: the table the
 * config and the generator share (channel-defaults.h). */
#define GATE_RATE_TOTAL_DEFAULT CHANNEL_GATE_RATE_TOTAL_DEFAULT
#define GATE_RATE_PENDING_DEFAULT CHANNEL_GATE_RATE_PENDING_DEFAULT
#define GATE_RATE_PER_MINUTE_DEFAULT CHANNEL_GATE_RATE_PER_MINUTE_DEFAULT
#define GATE_APPROVAL_TIMEOUT_SEC_DEFAULT CHANNEL_GATE_APPROVAL_TIMEOUT_SEC_DEFAULT

typedef enum GateAnswer {
        GATE_ANSWER_ONCE,
        GATE_ANSWER_SESSION,
        GATE_ANSWER_DENY,
        GATE_ANSWER_DENY_SESSION,
        _GATE_ANSWER_MAX,
        _GATE_ANSWER_INVALID = -EINVAL,
} GateAnswer;

const char *gate_answer_to_string(GateAnswer a);        /* "once", "session", "deny", "deny-session" */
GateAnswer gate_answer_from_string(const char *s);

/* Kinds of requests: those of the in-container supervisor and the Docker API proxy's. */
bool gate_request_kind_is_valid(const char *kind);      /* connect, execve, file, docker */

typedef struct GateLimits {
        uint64_t total;                 /* requests per container that reach a human, ever; 0: no limit */
        uint64_t pending;               /* waiting at once per container; 0: no limit (GATE_PENDING_MAX holds) */
        uint64_t per_minute;            /* per container in a minute's window; 0: no limit */
        uint64_t timeout_usec;          /* how long a human has; 0: nobody is asked (no-approver) */
} GateLimits;

/* What a container asks; strings are copied. */
typedef struct GateRequestInfo {
        const char *container;          /* from the token that authenticated the caller */
        const char *kind;
        const char *target;
        const char *message;            /* may be NULL */
        const char *cache_key;          /* may be NULL: such a request is never cached */
        const char *rule;               /* the policy rule that said "approve", may be NULL */
        pid_t pid;                      /* the trapped process as the container sees it, 0 if unknown */
} GateRequestInfo;

/* The answer a request gets. Strings are static. */
typedef struct GateOutcome {
        bool allow;
        const char *actor;              /* "cache", "timeout", "gate", or the human (GateApprovals owns it) */
        const char *reason;             /* "once", "session", "deny", "deny-session", "timeout", ... */
} GateOutcome;

typedef struct GatePending {
        uint64_t id;                    /* > 0, unique in the life of the GateApprovals */
        char digest[GATE_APPROVAL_DIGEST_HEX + 1];      /* lowercase hex, see GATE_APPROVAL_DIGEST_HEX */
        char *container, *kind, *target, *message, *cache_key, *rule;
        pid_t pid;
        uint64_t created_usec;          /* monotonic */
        uint64_t created_realtime_usec; /* for display; set by the caller if it wants */
        void *userdata;                 /* the caller's, e.g. the connection waiting for the answer */
        struct GatePending *next;
} GatePending;

typedef struct GateApprovals GateApprovals;

/* Called once for every request that was pending and is now settled, before it is freed. */
typedef void (*GateResolvedFn)(GateApprovals *a, GatePending *p, const GateOutcome *o, uint64_t now_usec,
                               void *userdata);

int gate_approvals_new(const GateLimits *limits, GateResolvedFn resolved, void *userdata, GateApprovals **ret);
GateApprovals *gate_approvals_free(GateApprovals *a);   /* settles nothing: callers deny first */
DEFINE_TRIVIAL_CLEANUP_FUNC(GateApprovals *, gate_approvals_free);

/* Validates and submits a request. Returns
 *   0  answered at once: *ret_outcome says how (cache, no-approver, rate limit);
 *   1  pending: *ret_pending is the new request (owned by a; it is reported through the callback);
 *  -EINVAL  the request is malformed (unknown kind, missing or overlong field, bad container id);
 *  -ENOBUFS the channel already has GATE_PENDING_MAX pending requests or GATE_CONTAINERS_MAX containers;
 *  -ENOMEM.
 * Callers deny on any error. */
int gate_approvals_submit(GateApprovals *a, const GateRequestInfo *info, uint64_t now_usec,
                          GateOutcome *ret_outcome, GatePending **ret_pending);

/* A human's answer to pending request id, whose digest must be the one shown with it (the request the
 * human saw); actor names them (the outcome points to it during the callback). Returns the number of
 * requests settled (>= 1: a session answer may settle more), -ENOENT when id is not pending (any more),
 * -ESTALE when digest is not the pending request's (nothing is settled). */
int gate_approvals_answer(GateApprovals *a, uint64_t id, const char *digest, GateAnswer answer, const char *actor,
                          uint64_t now_usec);

/* The digest of a request (GATE_APPROVAL_DIGEST_HEX lowercase hex digits and a NUL into ret). */
void gate_request_digest(const char *container, const char *kind, const char *target,
                         char ret[static GATE_APPROVAL_DIGEST_HEX + 1]);
/* Parses "N-DIGEST" (DIGEST in either case, stored lowercase). -EINVAL for anything else, a bare N too. */
int gate_request_id_parse(const char *s, uint64_t *ret_id, char ret_digest[static GATE_APPROVAL_DIGEST_HEX + 1]);

/* Denies what has waited timeout_usec or longer. Returns the number settled. */
int gate_approvals_expire(GateApprovals *a, uint64_t now_usec);
/* When the next pending request times out (monotonic usec), UINT64_MAX when none is pending. */
uint64_t gate_approvals_next_deadline(const GateApprovals *a);

/* The container is gone: denies its pending requests (reason "container-removed") and forgets its
 * counters and cache. Returns the number of requests denied. */
int gate_approvals_remove_container(GateApprovals *a, const char *container, uint64_t now_usec);

/* Forgets every container for which gone(id) says true, as gate_approvals_remove_container() does.
 * Returns the number of requests denied. */
int gate_approvals_forget_gone(GateApprovals *a, bool (*gone)(const char *container, void *userdata),
                               void *userdata, uint64_t now_usec);

/* Settles one pending request with a decision of the gate itself (actor "gate"): the caller went away
 * ("caller-gone"), the service stops ("service-stopping"). -ENOENT when id is not pending. */
int gate_approvals_deny(GateApprovals *a, uint64_t id, const char *reason, uint64_t now_usec);
/* The same for every pending request; returns how many. */
int gate_approvals_deny_all(GateApprovals *a, const char *reason, uint64_t now_usec);

GatePending *gate_approvals_find(const GateApprovals *a, uint64_t id);
/* Pending requests in the order they came (ascending id): for (p = first(a); p; p = p->next). */
GatePending *gate_approvals_first(const GateApprovals *a);
size_t gate_approvals_n_pending(const GateApprovals *a);
/* Containers a has state for (counters or cache), for tests. */
size_t gate_approvals_n_containers(const GateApprovals *a);
