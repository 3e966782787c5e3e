/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What the gateway keeps between requests: idle upstream connections (EgressPool), upstream TLS
 * sessions (EgressSessions) and the leaf certificates of intercepted hosts (EgressLeafCache), the last
 * made outside its lock, once per host. Connections are socketpairs; the test's end tells whether the
 * pool closed its end. */

#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/socket.h>

#include "egress-leaf.h"
#include "egress-pool.h"
#include "tap.h"

#define SEC 1000000ULL

/* A pooled connection; *ret_peer is the upstream's end. */
static EgressPooled pooled(int *ret_peer) {
        int pair[2];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                abort();
        *ret_peer = pair[1];
        return (EgressPooled) { .fd = pair[0], .address = "192.0.2.1" };
}

/* Whether the pool closed its end of the connection whose upstream end is peer. */
static bool closed_by_pool(int peer) {
        char b;
        ssize_t k = recv(peer, &b, 1, MSG_DONTWAIT);
        /* a socket closed with bytes unread resets the connection */
        return k == 0 || (k < 0 && errno == ECONNRESET);
}

static void test_pool(void) {
        _cleanup_(egress_pool_freep) EgressPool *p = NULL;
        EgressPooled e, got;
        int a, b, c, d;

        ok(egress_pool_new(2, 20 * SEC, &p) == 0, "a pool is made");
        e = pooled(&a);
        ok(egress_pool_put(p, "https example.com 443", &e, 100 * SEC) == 0 && e.fd < 0, "a connection is kept, and taken over");
        ok(egress_pool_take(p, "https other.example 443", 101 * SEC, &got) == 0, "no connection for another key");
        ok(egress_pool_take(p, "https example.com 443", 101 * SEC, &got) == 1 && streq(got.address, "192.0.2.1") &&
           !closed_by_pool(a), "the kept connection is taken for its key, open");
        safe_close(got.fd);
        ok(egress_pool_size(p) == 0, "a taken connection leaves the pool");
        safe_close(a);

        e = pooled(&a);
        (void) egress_pool_put(p, "k", &e, 100 * SEC);
        safe_close(a);
        ok(egress_pool_take(p, "k", 101 * SEC, &got) == 0 && egress_pool_size(p) == 0,
           "a connection the upstream closed is dropped, not handed out");

        e = pooled(&a);
        (void) egress_pool_put(p, "k", &e, 100 * SEC);
        (void) send(a, "x", 1, MSG_NOSIGNAL);
        ok(egress_pool_take(p, "k", 101 * SEC, &got) == 0 && closed_by_pool(a),
           "a connection with bytes nobody asked for is dropped and closed");
        safe_close(a);

        e = pooled(&a);
        (void) egress_pool_put(p, "k", &e, 100 * SEC);
        ok(egress_pool_take(p, "k", 121 * SEC, &got) == 0 && closed_by_pool(a), "a connection idle too long is dropped and closed");
        safe_close(a);

        e = pooled(&a);
        (void) egress_pool_put(p, "k", &e, 100 * SEC);
        e = pooled(&b);
        (void) egress_pool_put(p, "k", &e, 101 * SEC);
        e = pooled(&c);
        (void) egress_pool_put(p, "other", &e, 102 * SEC);
        ok(egress_pool_size(p) == 2 && closed_by_pool(a) && !closed_by_pool(b), "a full pool closes its oldest connection");
        ok(egress_pool_take(p, "k", 103 * SEC, &got) == 1, "the newest connection for a key is taken");
        safe_close(got.fd);
        e = pooled(&d);
        (void) egress_pool_put(p, "k", &e, 104 * SEC);
        p = egress_pool_free(p);
        ok(closed_by_pool(c) && closed_by_pool(d), "freeing the pool closes what it kept");
        safe_close(a);
        safe_close(b);
        safe_close(c);
        safe_close(d);
}

static void test_sessions(void) {
        _cleanup_(egress_sessions_freep) EgressSessions *s = NULL;
        SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
        SSL *ssl = SSL_new(ctx), *other = SSL_new(ctx);
        SSL_SESSION *first = SSL_SESSION_new(), *second = SSL_SESSION_new(), *third = SSL_SESSION_new();

        ok(egress_sessions_new(1, &s) == 0, "a session cache is made");
        ok(egress_sessions_put(s, "example.com:443", first) == 1, "a session is kept");
        egress_sessions_resume(s, "example.com:443", ssl);
        ok(SSL_get_session(ssl) == first, "it is set on the next connection to its host and port");
        egress_sessions_resume(s, "example.com:8443", other);
        ok(SSL_get_session(other) == NULL, "not on a connection to another port");
        ok(egress_sessions_put(s, "example.com:443", second) == 1, "a newer session replaces it");
        ok(egress_sessions_put(s, "other.example:443", third) == 1, "a full cache starts over for another host");
        SSL_free(other);
        other = SSL_new(ctx);
        egress_sessions_resume(s, "example.com:443", other);
        ok(SSL_get_session(other) == NULL, "what it held before is gone");
        SSL_free(ssl);
        SSL_free(other);
        SSL_CTX_free(ctx);
}

/* The leaf cache with a mint that makes empty server contexts: "slow.example" waits for the test. */
static sem_t slow_started, slow_release;
static unsigned mints_slow, mints_other;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static int test_mint(const char *host, SSL_CTX **ret, void *userdata) {
        if (streq(host, "fail.example"))
                return -EIO;
        pthread_mutex_lock(&count_lock);
        if (streq(host, "slow.example"))
                mints_slow++;
        else
                mints_other++;
        pthread_mutex_unlock(&count_lock);
        if (streq(host, "slow.example")) {
                (void) sem_post(&slow_started);
                (void) sem_wait(&slow_release);
        }
        *ret = SSL_CTX_new(TLS_server_method());
        return *ret ? 0 : -ENOMEM;
}

static void *get_slow(void *userdata) {
        SSL_CTX *ctx = NULL;

        if (egress_leaf_cache_get(userdata, "slow.example", &ctx) < 0)
                return NULL;
        return ctx;
}

static void test_leaves(void) {
        _cleanup_(egress_leaf_cache_freep) EgressLeafCache *c = NULL;
        SSL_CTX *x = NULL, *y = NULL, *fast = NULL;
        pthread_t t1, t2;
        void *r1, *r2;

        (void) sem_init(&slow_started, 0, 0);
        (void) sem_init(&slow_release, 0, 0);
        ok(egress_leaf_cache_new(2, test_mint, NULL, &c) == 0, "a leaf cache is made");
        ok(egress_leaf_cache_get(c, "a.example", &x) == 0 && egress_leaf_cache_get(c, "a.example", &y) == 0 && x == y &&
           mints_other == 1, "a host's context is made once and shared");
        SSL_CTX_free(x);
        SSL_CTX_free(y);
        ok(egress_leaf_cache_get(c, "fail.example", &x) == -EIO, "a mint's failure is the caller's");

        (void) pthread_create(&t1, NULL, get_slow, c);
        (void) sem_wait(&slow_started);
        /* with a lock held across the slow mint this would never return (the suite's timeout says so) */
        ok(egress_leaf_cache_get(c, "fast.example", &fast) == 0 && fast, "another host is served while one is being made");
        (void) pthread_create(&t2, NULL, get_slow, c);
        usleep(100 * 1000);     /* t2 most likely waits for t1's mint now; either way it must not make its own */
        (void) sem_post(&slow_release);
        (void) pthread_join(t1, &r1);
        (void) pthread_join(t2, &r2);
        ok(r1 && r1 == r2 && mints_slow == 1, "a host being made is made once: the second asker waits for it");
        SSL_CTX_free(r1);
        SSL_CTX_free(r2);
        SSL_CTX_free(fast);
        ok(egress_leaf_cache_get(c, "b.example", &x) == 0 && egress_leaf_cache_get(c, "c.example", &y) == 0,
           "a full cache starts over and goes on serving");
        SSL_CTX_free(x);
        SSL_CTX_free(y);
}

int main(void) {
        test_pool();
        test_sessions();
        test_leaves();
        return done_testing();
}
