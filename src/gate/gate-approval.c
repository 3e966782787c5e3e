/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <stdint.h>

#include <ctype.h>
#include <openssl/evp.h>
#include <time.h>

#include "gate-approval.h"
#include "gate-token.h"
#include "random-util.h"
#include "string-util.h"

typedef struct GateCacheEntry {
        char *key;
        bool allow;
} GateCacheEntry;

/* What the gate remembers about one container: its counters and its session cache. */
typedef struct GateContainer {
        char *id;
        uint64_t total;                 /* requests that became pending, ever */
        uint64_t pending;
        uint64_t window_start_usec;     /* the per-minute window */
        uint64_t window_count;
        GateCacheEntry *cache;
        size_t n_cache;
        struct GateContainer *next;
} GateContainer;

struct GateApprovals {
        GateLimits limits;
        GateResolvedFn resolved;
        void *userdata;
        uint64_t next_id;
        GatePending *pending, *pending_last;
        size_t n_pending;
        GateContainer *containers;
        size_t n_containers;
};

static const char * const gate_answer_table[_GATE_ANSWER_MAX] = {
        [GATE_ANSWER_ONCE] = "once",
        [GATE_ANSWER_SESSION] = "session",
        [GATE_ANSWER_DENY] = "deny",
        [GATE_ANSWER_DENY_SESSION] = "deny-session",
};

const char *gate_answer_to_string(GateAnswer a) {
        return a >= 0 && a < _GATE_ANSWER_MAX ? gate_answer_table[a] : NULL;
}

GateAnswer gate_answer_from_string(const char *s) {
        return (GateAnswer) string_table_lookup(gate_answer_table, _GATE_ANSWER_MAX, s);
}

bool gate_request_kind_is_valid(const char *kind) {
        static const char * const kinds[] = { "connect", "execve", "file", "docker" };

        if (!kind)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                if (streq(kind, kinds[i]))
                        return true;
        return false;
}

void gate_request_digest(const char *container, const char *kind, const char *target,
                         char ret[static GATE_APPROVAL_DIGEST_HEX + 1]) {
        static const char hex[] = "0123456789abcdef";
        const char *fields[] = { strempty(container), strempty(kind), strempty(target) };
        unsigned char md[EVP_MAX_MD_SIZE] = {};
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        bool good;

        /* The fields are C strings: with their NULs in between, no two requests hash the same text. */
        good = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
        for (size_t i = 0; good && i < ELEMENTSOF(fields); i++)
                good = EVP_DigestUpdate(ctx, fields[i], strlen(fields[i]) + 1) == 1;
        good = good && EVP_DigestFinal_ex(ctx, md, NULL) == 1;
        EVP_MD_CTX_free(ctx);
        if (!good) {
                /* Fail closed: a digest no parsed id can have (not hex), so nothing can be answered. */
                memset(ret, '-', GATE_APPROVAL_DIGEST_HEX);
                ret[GATE_APPROVAL_DIGEST_HEX] = 0;
                return;
        }
        for (size_t i = 0; i < GATE_APPROVAL_DIGEST_HEX / 2; i++) {
                ret[2 * i] = hex[md[i] >> 4];
                ret[2 * i + 1] = hex[md[i] & 15];
        }
        ret[GATE_APPROVAL_DIGEST_HEX] = 0;
}

int gate_request_id_parse(const char *s, uint64_t *ret_id, char ret_digest[static GATE_APPROVAL_DIGEST_HEX + 1]) {
        char digest[GATE_APPROVAL_DIGEST_HEX + 1];
        const char *dash;
        uint64_t id;
        char *end;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        id = strtoull(s, &end, 10);
        if (errno != 0 || id == 0 || *end != '-')
                return -EINVAL;
        dash = end;
        if (strlen(dash + 1) != GATE_APPROVAL_DIGEST_HEX)
                return -EINVAL;
        for (size_t i = 0; i < GATE_APPROVAL_DIGEST_HEX; i++) {
                if (!isxdigit((unsigned char) dash[1 + i]))
                        return -EINVAL;
                digest[i] = (char) tolower((unsigned char) dash[1 + i]);
        }
        digest[GATE_APPROVAL_DIGEST_HEX] = 0;
        *ret_id = id;
        memcpy(ret_digest, digest, sizeof(digest));
        return 0;
}

static void gate_pending_free(GatePending *p) {
        if (!p)
                return;
        free(p->container);
        free(p->kind);
        free(p->target);
        free(p->message);
        free(p->cache_key);
        free(p->rule);
        free(p);
}

static void gate_container_free(GateContainer *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n_cache; i++)
                free(c->cache[i].key);
        free(c->cache);
        free(c->id);
        free(c);
}

int gate_approvals_new(const GateLimits *limits, GateResolvedFn resolved, void *userdata, GateApprovals **ret) {
        GateApprovals *a;

        assert(limits);
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->limits = *limits;
        a->resolved = resolved;
        a->userdata = userdata;
        /* Ids go on from a random start: an id seen before a restart (loop gate approve 3, typed late)
         * never names another request. Below 2^31, so ids stay short enough to type. */
        {
                uint32_t start = 0;

                if (random_bytes(&start, sizeof(start)) < 0)
                        start = (uint32_t) time(NULL);
                a->next_id = GATE_APPROVAL_ID_MIN + start % (GATE_APPROVAL_ID_SPAN);
        }
        *ret = a;
        return 0;
}

GateApprovals *gate_approvals_free(GateApprovals *a) {
        if (!a)
                return NULL;
        while (a->pending) {
                GatePending *p = a->pending;
                a->pending = p->next;
                gate_pending_free(p);
        }
        while (a->containers) {
                GateContainer *c = a->containers;
                a->containers = c->next;
                gate_container_free(c);
        }
        free(a);
        return NULL;
}

static GateContainer *container_find(const GateApprovals *a, const char *id) {
        for (GateContainer *c = a->containers; c; c = c->next)
                if (streq(c->id, id))
                        return c;
        return NULL;
}

static int container_get(GateApprovals *a, const char *id, GateContainer **ret) {
        GateContainer *c = container_find(a, id);

        if (c) {
                *ret = c;
                return 0;
        }
        if (a->n_containers >= GATE_CONTAINERS_MAX)
                return -ENOBUFS;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->id = strdup(id);
        if (!c->id) {
                free(c);
                return -ENOMEM;
        }
        c->next = a->containers;
        a->containers = c;
        a->n_containers++;
        *ret = c;
        return 0;
}

static const GateCacheEntry *cache_lookup(const GateContainer *c, const char *key) {
        if (!key)
                return NULL;
        for (size_t i = 0; i < c->n_cache; i++)
                if (streq(c->cache[i].key, key))
                        return &c->cache[i];
        return NULL;
}

/* A full cache stays as it is: the answer then only holds for the requests it settles. */
static int cache_store(GateContainer *c, const char *key, bool allow) {
        GateCacheEntry *e = (GateCacheEntry *) cache_lookup(c, key);

        if (e) {
                e->allow = allow;
                return 0;
        }
        if (c->n_cache >= GATE_CACHE_ENTRIES_MAX)
                return -ENOBUFS;
        if (!c->cache) {
                c->cache = calloc(GATE_CACHE_ENTRIES_MAX, sizeof(GateCacheEntry));
                if (!c->cache)
                        return -ENOMEM;
        }
        c->cache[c->n_cache].key = strdup(key);
        if (!c->cache[c->n_cache].key)
                return -ENOMEM;
        c->cache[c->n_cache++].allow = allow;
        return 0;
}

static bool field_ok(const char *s, size_t max, bool required) {
        if (!s)
                return !required;
        if (required && !*s)
                return false;
        return strnlen(s, max + 1) <= max;
}

static int dup_optional(const char *s, char **ret) {
        if (!s) {
                *ret = NULL;
                return 0;
        }
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int gate_approvals_submit(GateApprovals *a, const GateRequestInfo *info, uint64_t now_usec,
                          GateOutcome *ret_outcome, GatePending **ret_pending) {
        const GateCacheEntry *e;
        GateContainer *c;
        GatePending *p;
        int r;

        if (!gate_container_id_is_valid(info->container) ||
            !gate_request_kind_is_valid(info->kind) ||
            !field_ok(info->target, GATE_TARGET_MAX, true) ||
            !field_ok(info->message, GATE_MESSAGE_MAX, false) ||
            !field_ok(info->cache_key, GATE_CACHE_KEY_MAX, false) ||
            !field_ok(info->rule, GATE_RULE_MAX, false) ||
            info->pid < 0)
                return -EINVAL;

        r = container_get(a, info->container, &c);
        if (r < 0)
                return r;

        e = cache_lookup(c, info->cache_key);
        if (e) {
                *ret_outcome = (GateOutcome) {
                        .allow = e->allow,
                        .actor = "cache",
                        .reason = e->allow ? "session" : "deny-session",
                };
                return 0;
        }

        if (a->limits.timeout_usec == 0) {
                *ret_outcome = (GateOutcome) { .actor = "gate", .reason = "no-approver" };
                return 0;
        }

        if (a->limits.total > 0 && c->total >= a->limits.total) {
                *ret_outcome = (GateOutcome) { .actor = "gate", .reason = "rate-limit-total" };
                return 0;
        }
        if (a->limits.pending > 0 && c->pending >= a->limits.pending) {
                *ret_outcome = (GateOutcome) { .actor = "gate", .reason = "rate-limit-pending" };
                return 0;
        }
        if (now_usec - c->window_start_usec >= GATE_RATE_WINDOW_USEC || c->window_count == 0) {
                c->window_start_usec = now_usec;
                c->window_count = 0;
        }
        if (a->limits.per_minute > 0 && c->window_count >= a->limits.per_minute) {
                *ret_outcome = (GateOutcome) { .actor = "gate", .reason = "rate-limit-per-minute" };
                return 0;
        }
        if (a->n_pending >= GATE_PENDING_MAX)
                return -ENOBUFS;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        if (!(p->container = strdup(info->container)) ||
            !(p->kind = strdup(info->kind)) ||
            !(p->target = strdup(info->target)) ||
            dup_optional(info->message, &p->message) < 0 ||
            dup_optional(isempty(info->cache_key) ? NULL : info->cache_key, &p->cache_key) < 0 ||
            dup_optional(info->rule, &p->rule) < 0) {
                gate_pending_free(p);
                return -ENOMEM;
        }
        p->pid = info->pid;
        p->created_usec = now_usec;
        p->id = a->next_id++;
        gate_request_digest(p->container, p->kind, p->target, p->digest);

        if (a->pending_last)
                a->pending_last->next = p;
        else
                a->pending = p;
        a->pending_last = p;
        a->n_pending++;

        c->total++;
        c->pending++;
        c->window_count++;

        *ret_pending = p;
        return 1;
}

/* Unlinks p, reports it and frees it. */
static void settle(GateApprovals *a, GatePending *p, const GateOutcome *o, uint64_t now_usec) {
        GatePending *prev = NULL;
        GateContainer *c;

        for (GatePending *i = a->pending; i && i != p; i = i->next)
                prev = i;
        if (prev)
                prev->next = p->next;
        else
                a->pending = p->next;
        if (a->pending_last == p)
                a->pending_last = prev;
        a->n_pending--;
        p->next = NULL;

        c = container_find(a, p->container);
        if (c && c->pending > 0)
                c->pending--;

        if (a->resolved)
                a->resolved(a, p, o, now_usec, a->userdata);
        gate_pending_free(p);
}

GatePending *gate_approvals_find(const GateApprovals *a, uint64_t id) {
        for (GatePending *p = a->pending; p; p = p->next)
                if (p->id == id)
                        return p;
        return NULL;
}

int gate_approvals_answer(GateApprovals *a, uint64_t id, const char *digest, GateAnswer answer, const char *actor,
                          uint64_t now_usec) {
        _cleanup_free_ char *container = NULL, *key = NULL;
        GateOutcome o;
        GatePending *p;
        bool session;
        int n = 0;

        if (answer < 0 || answer >= _GATE_ANSWER_MAX)
                return -EINVAL;
        p = gate_approvals_find(a, id);
        if (!p)
                return -ENOENT;
        if (!digest || !streq(digest, p->digest))
                return -ESTALE;

        o = (GateOutcome) {
                .allow = answer == GATE_ANSWER_ONCE || answer == GATE_ANSWER_SESSION,
                .actor = isempty(actor) ? "unknown" : actor,
                .reason = gate_answer_to_string(answer),
        };
        session = answer == GATE_ANSWER_SESSION || answer == GATE_ANSWER_DENY_SESSION;

        container = strdup(p->container);
        if (!container || (p->cache_key && !(key = strdup(p->cache_key))))
                return -ENOMEM;

        settle(a, p, &o, now_usec);
        n++;

        if (session && key) {
                GateContainer *c = container_find(a, container);

                /* Remembering is best effort: a full cache still settles what is waiting now. */
                if (c)
                        (void) cache_store(c, key, o.allow);

                for (GatePending *i = a->pending, *next; i; i = next) {
                        next = i->next;
                        if (streq(i->container, container) && streq_ptr(i->cache_key, key)) {
                                settle(a, i, &o, now_usec);
                                n++;
                        }
                }
        }
        return n;
}

uint64_t gate_approvals_next_deadline(const GateApprovals *a) {
        /* Requests are kept in arrival order, so the first one is the oldest. */
        if (!a->pending || a->limits.timeout_usec == 0)
                return UINT64_MAX;
        if (a->pending->created_usec > UINT64_MAX - a->limits.timeout_usec)
                return UINT64_MAX;
        return a->pending->created_usec + a->limits.timeout_usec;
}

int gate_approvals_expire(GateApprovals *a, uint64_t now_usec) {
        static const GateOutcome timeout = { .actor = "timeout", .reason = "timeout" };
        int n = 0;

        while (a->pending && gate_approvals_next_deadline(a) <= now_usec) {
                settle(a, a->pending, &timeout, now_usec);
                n++;
        }
        return n;
}

int gate_approvals_remove_container(GateApprovals *a, const char *container, uint64_t now_usec) {
        static const GateOutcome removed = { .actor = "gate", .reason = "container-removed" };
        GateContainer *prev = NULL;
        int n = 0;

        for (GatePending *i = a->pending, *next; i; i = next) {
                next = i->next;
                if (streq(i->container, container)) {
                        settle(a, i, &removed, now_usec);
                        n++;
                }
        }

        for (GateContainer *c = a->containers; c; prev = c, c = c->next)
                if (streq(c->id, container)) {
                        if (prev)
                                prev->next = c->next;
                        else
                                a->containers = c->next;
                        a->n_containers--;
                        gate_container_free(c);
                        break;
                }
        return n;
}

int gate_approvals_forget_gone(GateApprovals *a, bool (*gone)(const char *container, void *userdata),
                               void *userdata, uint64_t now_usec) {
        int n = 0;

        for (GateContainer *c = a->containers, *next; c; c = next) {
                next = c->next;
                if (gone(c->id, userdata)) {
                        _cleanup_free_ char *id = strdup(c->id);
                        if (!id)
                                return -ENOMEM;
                        /* frees c, and only c */
                        n += gate_approvals_remove_container(a, id, now_usec);
                }
        }
        return n;
}

int gate_approvals_deny(GateApprovals *a, uint64_t id, const char *reason, uint64_t now_usec) {
        GateOutcome o = { .actor = "gate", .reason = reason };
        GatePending *p = gate_approvals_find(a, id);

        if (!p)
                return -ENOENT;
        settle(a, p, &o, now_usec);
        return 0;
}

int gate_approvals_deny_all(GateApprovals *a, const char *reason, uint64_t now_usec) {
        GateOutcome o = { .actor = "gate", .reason = reason };
        int n = 0;

        while (a->pending) {
                settle(a, a->pending, &o, now_usec);
                n++;
        }
        return n;
}

GatePending *gate_approvals_first(const GateApprovals *a) {
        return a->pending;
}

size_t gate_approvals_n_pending(const GateApprovals *a) {
        return a->n_pending;
}

size_t gate_approvals_n_containers(const GateApprovals *a) {
        return a->n_containers;
}
