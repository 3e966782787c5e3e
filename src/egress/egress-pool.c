/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <poll.h>
#include <pthread.h>

#include "egress-pool.h"

typedef struct PoolEntry {
        char *key;
        EgressPooled e;
        uint64_t since;                 /* CLOCK_MONOTONIC µs */
} PoolEntry;

struct EgressPool {
        pthread_mutex_t lock;
        size_t max;
        uint64_t idle_usec;
        PoolEntry *entries;             /* oldest first */
        size_t n;
};

static void pooled_close(EgressPooled *e) {
        SSL_free(e->ssl);
        e->ssl = NULL;
        e->fd = safe_close(e->fd);
}

int egress_pool_new(size_t max, uint64_t idle_usec, EgressPool **ret) {
        EgressPool *p;

        assert(max > 0);
        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->entries = calloc(max, sizeof *p->entries);
        if (!p->entries) {
                free(p);
                return -ENOMEM;
        }
        p->max = max;
        p->idle_usec = idle_usec;
        (void) pthread_mutex_init(&p->lock, NULL);
        *ret = p;
        return 0;
}

/* under lock */
static void pool_entry_free(EgressPool *p, size_t i) {
        free(p->entries[i].key);
        pooled_close(&p->entries[i].e);
        memmove(&p->entries[i], &p->entries[i + 1], (p->n - i - 1) * sizeof p->entries[0]);
        p->n--;
}

EgressPool *egress_pool_free(EgressPool *p) {
        if (!p)
                return NULL;
        while (p->n > 0)
                pool_entry_free(p, p->n - 1);
        free(p->entries);
        (void) pthread_mutex_destroy(&p->lock);
        free(p);
        return NULL;
}

int egress_pool_take(EgressPool *p, const char *key, uint64_t now, EgressPooled *ret) {
        bool found = false;

        pthread_mutex_lock(&p->lock);
        for (size_t i = p->n; i > 0 && !found; i--) {
                PoolEntry *x = &p->entries[i - 1];
                struct pollfd pfd = { .fd = x->e.fd, .events = POLLIN };

                if (now - x->since > p->idle_usec) {
                        pool_entry_free(p, i - 1);
                        continue;
                }
                if (!streq(x->key, key))
                        continue;
                if (poll(&pfd, 1, 0) != 0) {
                        pool_entry_free(p, i - 1);
                        continue;
                }
                *ret = x->e;
                x->e = (EgressPooled) { .fd = -EBADF };
                pool_entry_free(p, i - 1);
                found = true;
        }
        pthread_mutex_unlock(&p->lock);
        return found;
}

int egress_pool_put(EgressPool *p, const char *key, EgressPooled *e, uint64_t now) {
        char *k = strdup(key);

        if (!k) {
                pooled_close(e);
                return -ENOMEM;
        }
        pthread_mutex_lock(&p->lock);
        if (p->n >= p->max)
                pool_entry_free(p, 0);
        p->entries[p->n++] = (PoolEntry) { .key = k, .e = *e, .since = now };
        pthread_mutex_unlock(&p->lock);
        *e = (EgressPooled) { .fd = -EBADF };
        return 0;
}

size_t egress_pool_size(EgressPool *p) {
        size_t n;

        pthread_mutex_lock(&p->lock);
        n = p->n;
        pthread_mutex_unlock(&p->lock);
        return n;
}

typedef struct SessionEntry {
        char *key;
        SSL_SESSION *session;
} SessionEntry;

struct EgressSessions {
        pthread_mutex_t lock;
        size_t max;
        SessionEntry *entries;
        size_t n;
};

int egress_sessions_new(size_t max, EgressSessions **ret) {
        EgressSessions *s;

        assert(max > 0);
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->entries = calloc(max, sizeof *s->entries);
        if (!s->entries) {
                free(s);
                return -ENOMEM;
        }
        s->max = max;
        (void) pthread_mutex_init(&s->lock, NULL);
        *ret = s;
        return 0;
}

/* under lock */
static void sessions_clear(EgressSessions *s) {
        for (size_t i = 0; i < s->n; i++) {
                free(s->entries[i].key);
                SSL_SESSION_free(s->entries[i].session);
        }
        s->n = 0;
}

EgressSessions *egress_sessions_free(EgressSessions *s) {
        if (!s)
                return NULL;
        sessions_clear(s);
        free(s->entries);
        (void) pthread_mutex_destroy(&s->lock);
        free(s);
        return NULL;
}

int egress_sessions_put(EgressSessions *s, const char *key, SSL_SESSION *session) {
        size_t i;

        pthread_mutex_lock(&s->lock);
        for (i = 0; i < s->n; i++)
                if (streq(s->entries[i].key, key))
                        break;
        if (i == s->n) {
                /* a full cache starts over: sessions are made again by the next handshakes */
                if (s->n >= s->max)
                        sessions_clear(s);
                i = s->n;
                s->entries[i].key = strdup(key);
                if (!s->entries[i].key) {
                        pthread_mutex_unlock(&s->lock);
                        return 0;
                }
                s->entries[i].session = NULL;
                s->n++;
        }
        SSL_SESSION_free(s->entries[i].session);
        s->entries[i].session = session;
        pthread_mutex_unlock(&s->lock);
        return 1;
}

void egress_sessions_resume(EgressSessions *s, const char *key, SSL *ssl) {
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->entries[i].key, key) && s->entries[i].session) {
                        (void) SSL_set_session(ssl, s->entries[i].session);
                        break;
                }
        pthread_mutex_unlock(&s->lock);
}
