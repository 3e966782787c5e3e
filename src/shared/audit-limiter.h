/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* AuditLimiter caps how many events per key (a container, a peer) reach the journal in each window, so
 * whoever floods a helper cannot flood the journal, and journald's own rate limit can be off for it (it
 * would drop the real decisions along with a flood). What a key held back is handed out once per
 * window for one summary record with the count. Pure code, no I/O, no clock of its own, not
 * thread-safe (callers with threads hold a lock around it). Keys beyond AUDIT_LIMITER_KEYS_MAX share one
 * window of their own. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "time-util.h"

#define AUDIT_LIMITER_KEYS_MAX 1024U            /* keys counted one by one at once */

typedef struct AuditLimiter AuditLimiter;

/* A window ended in which key held back suppressed events (key NULL: events of keys beyond
 * AUDIT_LIMITER_KEYS_MAX, which are not counted one by one). */
typedef void (*AuditSummaryFn)(const char *key, uint64_t suppressed, void *userdata);

int audit_limiter_new(unsigned per_window, uint64_t window_usec, AuditLimiter **ret);
AuditLimiter *audit_limiter_free(AuditLimiter *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(AuditLimiter *, audit_limiter_free);

/* Counts an event of key at now. Ends the key's window first when it is over (a summary goes to fn).
 * Returns 1 when the event may be journaled, 0 when it is held back, -ENOMEM. */
int audit_limiter_admit(AuditLimiter *l, const char *key, uint64_t now, AuditSummaryFn fn, void *userdata);
/* Ends every window that is over at now (UINT64_MAX: all of them), with a summary for each that held
 * events back, and forgets those keys. */
void audit_limiter_expire(AuditLimiter *l, uint64_t now, AuditSummaryFn fn, void *userdata);
/* When the earliest window ends, UINT64_MAX when nothing is counted. */
uint64_t audit_limiter_next_deadline(const AuditLimiter *l);
size_t audit_limiter_n_keys(const AuditLimiter *l);
