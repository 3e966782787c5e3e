/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The seccomp user-notification supervisor of `loop syscallwrap`: the filter the agent's process
 * installs, and the threads of the root parent that answer its notifications.
 *
 * Every trapped call is read from the caller's memory (/proc/PID/mem, opened with the caller's
 * filesystem credentials, which ptrace's FSCREDS check accepts without CAP_SYS_PTRACE). A new caller's
 * /proc/PID handles are opened and the notification id is checked again before anything is decided, so a
 * recycled pid is never read; a known caller's handles are kept with a pidfd of it, which shows it is still
 * the same task (see caller_handles() for when kept memory may be read). Then:
 *   file calls   are resolved by gate_resolve() and, when the policy allows, performed by the supervisor
 *                thread itself with the caller's uid, gid, groups and umask and no capabilities, on the
 *                very objects it checked: opens get their fd injected (SECCOMP_IOCTL_NOTIF_ADDFD with
 *                ADDFD_FLAG_SEND), the others (mkdir, unlink, rename, link, symlink, chmod, chown, mknod,
 *                truncate) return their result. The caller's own syscall never runs.
 *   execve(at)   must run in the caller: argv and the filename are read twice and must agree, then the
 *                kernel continues the call (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
 *   connect      the same for AF_UNIX addresses; other families are not gated and continue at once.
 * Denials return EPERM. "approve" asks the host gate (gate-client.h) and blocks only that caller: one
 * worker receives and handles calls in turn, and a standby takes over receiving when a call keeps it
 * longer than a few milliseconds (then another standby is started). */

#include <stdint.h>
#include <sys/types.h>

#include "gate-client.h"
#include "gate-policy.h"

#define GATE_WORKERS_MIN 2U             /* the receiver and a standby */
#define GATE_WORKERS_MAX 64U            /* each blocked approval holds one */
#define GATE_APPROVALS_PENDING_MAX 32U  /* more approvals at once are denied ("too-many-pending") */
#define GATE_DENY_ERRNO EPERM

typedef struct GateSupervisorConfig {
        const GatePolicy *policy;
        GateClient *client;             /* approvals and audit records; may be NULL */
        uid_t uid;                      /* the agent's credentials: every filtered process has them */
        gid_t gid;
        const gid_t *groups;
        size_t n_groups;
        bool verbose;                   /* log and send allows too */
        int log_fd;                     /* one JSON line per decision; -1 for none */
        const struct GateInodeDeny *read_denied;        /* files whose reading is refused by inode; may be NULL */
        bool exec_sole_mm;              /* an exec's verdict can depend on its arguments (rules on them,
                                         * approvals, multi-call applets): continue one only while no other
                                         * task can change them (gate-mm.h) */
} GateSupervisorConfig;

typedef struct GateSupervisor GateSupervisor;

/* What the supervisor decided, for the summary line it leaves when the agent ends: calls decided locally
 * (by policy, no human), and for them two latencies from receiving the call: until the verdict (reading
 * the arguments, resolving the paths, the policy) and until the answer (the verdict plus what the
 * supervisor performs for the caller: the open it emulates, say). Histograms without a ceiling: below
 * 2 * GATE_LATENCY_SUB ns one bucket a nanosecond, above it GATE_LATENCY_SUB buckets for each doubling, so a
 * bucket is never wider than 1/GATE_LATENCY_SUB of what it holds (a percentile is within 0.4% of the exact
 * one), up to the largest uint64_t. */
#define GATE_LATENCY_SUB_BITS 7U
#define GATE_LATENCY_SUB (1U << GATE_LATENCY_SUB_BITS)
#define GATE_LATENCY_BUCKETS ((64U - GATE_LATENCY_SUB_BITS) * GATE_LATENCY_SUB + GATE_LATENCY_SUB)

typedef struct GateSupervisorStats {
        uint64_t local;                 /* calls decided by policy */
        uint64_t approvals;             /* calls a human (or the approval timeout) decided */
        uint64_t decision[GATE_LATENCY_BUCKETS];
        uint64_t answer[GATE_LATENCY_BUCKETS];
} GateSupervisorStats;

void gate_supervisor_stats(GateSupervisor *s, GateSupervisorStats *ret);
/* The bucket of a latency, and back: the middle of what a bucket holds. */
size_t gate_latency_bucket(uint64_t ns);
uint64_t gate_latency_bucket_ns(size_t bucket);
/* The latency at or below which the given per mille of a histogram's calls fall (nearest rank), in
 * nanoseconds (the middle of its bucket); 0 for an empty histogram. */
uint64_t gate_stats_permille_ns(const uint64_t histogram[static GATE_LATENCY_BUCKETS], unsigned permille);

/* In the agent's process, after dropping privileges: installs the filter (TSYNC, a new listener) and
 * returns the listener fd. */
int gate_filter_install(int *ret_notify_fd);

/* Checks that a process with the agent's credentials can be read the way requests will be (the caller
 * must be dumpable): run it on the agent's process before it execs. */
int gate_supervisor_probe(const GateSupervisorConfig *c, pid_t pid);

/* Serves notify_fd (taken over) from worker threads until the process exits. The configuration must
 * outlive the supervisor. Call with all signals blocked: the workers inherit the mask. */
int gate_supervisor_start(const GateSupervisorConfig *c, int notify_fd, GateSupervisor **ret);
