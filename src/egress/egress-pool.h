/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What makes a second request to an upstream cheap, shared by the gateway's connection threads:
 *
 *   EgressPool      idle upstream connections (TCP, or TLS on it) by key ("scheme host port"), for the
 *                   next request there from this client or another: one TCP and TLS handshake serves many;
 *   EgressSessions  upstream TLS sessions by key ("host:port"), resumed by the next new connection there:
 *                   a full handshake and certificate check per connection would cost more than a request.
 *
 * Both are capped (a full pool drops its oldest connection, a full session cache starts over) and take a
 * mutex only around their own tables, never across I/O. */

#include <netinet/in.h>
#include <openssl/ssl.h>
#include <stdint.h>

#include "macro.h"

typedef struct EgressPool EgressPool;

typedef struct EgressPooled {
        int fd;
        SSL *ssl;                       /* NULL: plain TCP */
        char address[INET6_ADDRSTRLEN]; /* the upstream's, for the journal */
} EgressPooled;

int egress_pool_new(size_t max, uint64_t idle_usec, EgressPool **ret);
EgressPool *egress_pool_free(EgressPool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(EgressPool *, egress_pool_free);

/* The newest idle connection to key, taken out of the pool: returns 1 with *ret, 0 when there is none.
 * One idle longer than idle_usec at now (CLOCK_MONOTONIC µs), or readable (the server closed it, or sent
 * bytes nobody asked for), is dropped on the way. */
int egress_pool_take(EgressPool *p, const char *key, uint64_t now, EgressPooled *ret);

/* Keeps e (fd and ssl) for key from now on; the oldest connection goes when the pool is full. Takes e
 * over whatever it returns (-ENOMEM: e was closed). */
int egress_pool_put(EgressPool *p, const char *key, EgressPooled *e, uint64_t now);

size_t egress_pool_size(EgressPool *p);

typedef struct EgressSessions EgressSessions;

int egress_sessions_new(size_t max, EgressSessions **ret);
EgressSessions *egress_sessions_free(EgressSessions *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(EgressSessions *, egress_sessions_free);

/* Keeps session for key, replacing the one it had; takes the reference over when it returns 1 (what
 * OpenSSL's new-session callback returns), 0 when it could not keep it. */
int egress_sessions_put(EgressSessions *s, const char *key, SSL_SESSION *session);

/* Sets the session kept for key on ssl (before SSL_connect()); nothing when there is none. */
void egress_sessions_resume(EgressSessions *s, const char *key, SSL *ssl);
