/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The gate's journal records (src/shared/audit.h), written by loop-gate: a decision on a request (by a
 * human, the session cache, a timeout or the policy), a request pending a human's answer, a decision the
 * container's supervisor made by itself and reported, and the counts of what the per-container and
 * per-peer limiters held back. Targets and messages come from the container: they are escaped for display
 * (text-escape.h) and cut to GATE_DISPLAY_MAX in MESSAGE. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit.h"
#include "gate-approval.h"
#include "gate-audit.h"

#define GATE_DISPLAY_MAX 1024U                  /* bytes of a target or message shown in lists and MESSAGE */

/* Requests without a token we know come from anyone who can reach the socket, the agent included: a
 * flood of them must not drown the journal (journald drops what exceeds its rate, and the real decisions
 * with it). A few per peer and window are journaled one by one, the rest as one count per burst. */
#define GATE_UNAUTH_PER_WINDOW 3U
#define GATE_UNAUTH_WINDOW_USEC (10ULL * 1000000ULL)

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

/* AUDIT_GATE_DECISION or AUDIT_GATE_PENDING (without decision, actor, reason and latency). */
void gate_record_decision(const char *channel, AuditEvent event, const GateDecision *d);

/* An answer refused because its id's digest is not the pending request P's: one AUDIT_GATE_ANSWER_REFUSED
 * record with what was answered and what waits under that number (nothing is decided; P keeps waiting). */
void gate_record_answer_refused(const char *channel, const GatePending *p, uint64_t id, const char *digest,
                                const char *answer, const char *actor);

/* A decision the container's supervisor made by itself. Everything but the channel (ours) and the
 * container (its token's) is the container's account; the report's own "channel" is only noted when it
 * disagrees. */
void gate_record_local(const char *channel, const char *container, const GateAuditReport *rep);

/* AuditLimiter summaries (userdata: the channel): local reports of a container held back, requests
 * without a valid token of a peer refused. */
void gate_record_local_dropped(const char *container, uint64_t suppressed, void *userdata);
void gate_record_unauth_dropped(const char *peer, uint64_t suppressed, void *userdata);
