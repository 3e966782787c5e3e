/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <pthread.h>

#include "egress-leaf.h"

typedef struct LeafEntry {
        char *host;
        SSL_CTX *ctx;                   /* NULL: in flight, being made by one thread */
} LeafEntry;

struct EgressLeafCache {
        pthread_mutex_t lock;
        pthread_cond_t made;            /* an entry in flight got its context, or was given up */
        EgressLeafMint mint;
        void *userdata;
        size_t max;
        LeafEntry **entries;
        size_t n;
};

int egress_leaf_cache_new(size_t max, EgressLeafMint mint, void *userdata, EgressLeafCache **ret) {
        EgressLeafCache *c;

        assert(max > 0 && mint);
        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->entries = calloc(max, sizeof *c->entries);
        if (!c->entries) {
                free(c);
                return -ENOMEM;
        }
        c->max = max;
        c->mint = mint;
        c->userdata = userdata;
        (void) pthread_mutex_init(&c->lock, NULL);
        (void) pthread_cond_init(&c->made, NULL);
        *ret = c;
        return 0;
}

static void leaf_entry_free(LeafEntry *e) {
        free(e->host);
        SSL_CTX_free(e->ctx);
        free(e);
}

/* under lock */
static void cache_remove(EgressLeafCache *c, size_t i) {
        c->entries[i] = c->entries[--c->n];
}

EgressLeafCache *egress_leaf_cache_free(EgressLeafCache *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n; i++)
                leaf_entry_free(c->entries[i]);
        free(c->entries);
        (void) pthread_cond_destroy(&c->made);
        (void) pthread_mutex_destroy(&c->lock);
        free(c);
        return NULL;
}

/* under lock */
static LeafEntry *cache_find(EgressLeafCache *c, const char *host) {
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->entries[i]->host, host))
                        return c->entries[i];
        return NULL;
}

int egress_leaf_cache_get(EgressLeafCache *c, const char *host, SSL_CTX **ret) {
        LeafEntry *e, *mine = NULL;
        SSL_CTX *ctx = NULL;
        int r;

        pthread_mutex_lock(&c->lock);
        for (;;) {
                e = cache_find(c, host);
                if (!e)
                        break;
                if (e->ctx) {
                        SSL_CTX_up_ref(e->ctx);
                        *ret = e->ctx;
                        pthread_mutex_unlock(&c->lock);
                        return 0;
                }
                (void) pthread_cond_wait(&c->made, &c->lock);
        }
        /* A full cache starts over, but for the entries in flight: their threads come back to them. If
         * every entry is in flight, this host is made without being cached. */
        if (c->n >= c->max)
                for (size_t i = c->n; i > 0; i--)
                        if (c->entries[i - 1]->ctx) {
                                leaf_entry_free(c->entries[i - 1]);
                                cache_remove(c, i - 1);
                        }
        if (c->n < c->max) {
                mine = calloc(1, sizeof *mine);
                if (mine && !(mine->host = strdup(host))) {
                        free(mine);
                        mine = NULL;
                }
                if (mine)
                        c->entries[c->n++] = mine;
        }
        pthread_mutex_unlock(&c->lock);

        r = c->mint(host, &ctx, c->userdata);

        pthread_mutex_lock(&c->lock);
        if (mine) {
                /* still there: only entries with a context are removed by others */
                for (size_t i = 0; i < c->n; i++)
                        if (c->entries[i] == mine) {
                                if (r >= 0) {
                                        SSL_CTX_up_ref(ctx);
                                        mine->ctx = ctx;
                                } else {
                                        leaf_entry_free(mine);
                                        cache_remove(c, i);
                                }
                                break;
                        }
                (void) pthread_cond_broadcast(&c->made);
        }
        pthread_mutex_unlock(&c->lock);
        if (r < 0)
                return r;
        *ret = ctx;
        return 0;
}

int egress_leaf_mint(const char *host, SSL_CTX **ret, void *userdata) {
        const EgressCa *ca = userdata;
        X509 *cert = NULL;
        EVP_PKEY *key = NULL;
        SSL_CTX *ctx = NULL;
        int r;

        r = egress_ca_issue(ca, host, &cert, &key);
        if (r < 0)
                return r;
        ctx = SSL_CTX_new(TLS_server_method());
        if (!ctx || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
            SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1) {
                SSL_CTX_free(ctx);
                r = -ENOMEM;
        } else {
                SSL_CTX_set_read_ahead(ctx, 1);
                *ret = ctx;
                r = 0;
        }
        X509_free(cert);
        EVP_PKEY_free(key);
        return r;
}
