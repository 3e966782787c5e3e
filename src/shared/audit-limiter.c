/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "audit-limiter.h"
#include "macro.h"

typedef struct LimiterEntry {
        char *key;
        uint64_t window_start;
        uint64_t admitted, suppressed;
} LimiterEntry;

struct AuditLimiter {
        unsigned per_window;
        uint64_t window_usec;
        LimiterEntry *entries;          /* unordered; at most AUDIT_LIMITER_KEYS_MAX */
        size_t n, allocated;
        /* events of keys that found the table full, in a window of their own */
        uint64_t overflow_start, overflow;
};

int audit_limiter_new(unsigned per_window, uint64_t window_usec, AuditLimiter **ret) {
        AuditLimiter *l;

        if (window_usec == 0)
                return -EINVAL;
        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->per_window = per_window;
        l->window_usec = window_usec;
        *ret = l;
        return 0;
}

AuditLimiter *audit_limiter_free(AuditLimiter *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n; i++)
                free(l->entries[i].key);
        free(l->entries);
        free(l);
        return NULL;
}

static bool window_over(const AuditLimiter *l, uint64_t start, uint64_t now) {
        return now == UINT64_MAX || now - start >= l->window_usec;
}

static void entry_end_window(LimiterEntry *e, AuditSummaryFn fn, void *userdata) {
        if (e->suppressed > 0 && fn)
                fn(e->key, e->suppressed, userdata);
        e->admitted = e->suppressed = 0;
}

int audit_limiter_admit(AuditLimiter *l, const char *key, uint64_t now,
                             AuditSummaryFn fn, void *userdata) {
        LimiterEntry *e = NULL;

        assert(l);
        assert(key);

        for (size_t i = 0; i < l->n; i++)
                if (streq(l->entries[i].key, key)) {
                        e = &l->entries[i];
                        break;
                }

        if (!e && l->n >= AUDIT_LIMITER_KEYS_MAX) {
                if (l->overflow > 0 && window_over(l, l->overflow_start, now)) {
                        if (fn)
                                fn(NULL, l->overflow, userdata);
                        l->overflow = 0;
                }
                if (l->overflow == 0)
                        l->overflow_start = now;
                l->overflow++;
                return 0;
        }
        if (!e) {
                char *copy;

                if (l->n >= l->allocated) {
                        size_t m = MIN(MAX(l->allocated * 2, (size_t) 8), (size_t) AUDIT_LIMITER_KEYS_MAX);
                        LimiterEntry *p = reallocarray(l->entries, m, sizeof(*p));
                        if (!p)
                                return -ENOMEM;
                        l->entries = p;
                        l->allocated = m;
                }
                copy = strdup(key);
                if (!copy)
                        return -ENOMEM;
                e = &l->entries[l->n++];
                *e = (LimiterEntry) { .key = copy, .window_start = now };
        } else if (window_over(l, e->window_start, now)) {
                entry_end_window(e, fn, userdata);
                e->window_start = now;
        }

        if (e->admitted < l->per_window) {
                e->admitted++;
                return 1;
        }
        e->suppressed++;
        return 0;
}

void audit_limiter_expire(AuditLimiter *l, uint64_t now, AuditSummaryFn fn, void *userdata) {
        assert(l);

        for (size_t i = 0; i < l->n; ) {
                LimiterEntry *e = &l->entries[i];

                if (!window_over(l, e->window_start, now)) {
                        i++;
                        continue;
                }
                entry_end_window(e, fn, userdata);
                free(e->key);
                l->entries[i] = l->entries[--l->n];
        }
        if (l->overflow > 0 && window_over(l, l->overflow_start, now)) {
                if (fn)
                        fn(NULL, l->overflow, userdata);
                l->overflow = 0;
        }
}

uint64_t audit_limiter_next_deadline(const AuditLimiter *l) {
        uint64_t next = UINT64_MAX;

        for (size_t i = 0; i < l->n; i++)
                next = MIN(next, l->entries[i].window_start + l->window_usec);
        if (l->overflow > 0)
                next = MIN(next, l->overflow_start + l->window_usec);
        return next;
}

size_t audit_limiter_n_keys(const AuditLimiter *l) {
        return l->n + (l->overflow > 0);
}
