/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The egress gateway's state (EgressGateway, one per process) and one agent connection's
 * (EgressConn, one per connection thread), and what every part of the gateway does with a connection:
 * read from and write to the agent (in clear, or over the TLS the gateway ended when it intercepts),
 * answer it, refuse it, and journal it (one gateway-request record per request). services/loop-gateway.c
 * is the protocol (which request is which, and what the policy says); egress-dial.h opens upstream
 * connections, egress-exchange.h streams a request and its response between the two.
 *
 * Every connection thread reads the EgressGateway but never writes it; what the threads share and change
 * (the pool, the session and leaf caches) locks itself. */

#include <arpa/inet.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "audit-limiter.h"
#include "egress-address.h"
#include "egress-ca.h"
#include "egress-config.h"
#include "egress-leaf.h"
#include "egress-pool.h"
#include "egress-rewrite.h"
#include "egress-token.h"
#include "http-server.h"
#include "socket-service.h"

#define GATEWAY_CONNECTIONS_MAX 256U
#define GATEWAY_HEADER_SIZE_MAX (32U * 1024U)
#define GATEWAY_HEADERS_MAX 100U
#define GATEWAY_BODY_MAX (4ULL * 1024U * 1024U * 1024U)     /* a request body, streamed, never buffered */
#define GATEWAY_HEAD_TIMEOUT_MS (30 * 1000)                 /* to send a request head, or a ClientHello */
#define GATEWAY_CONNECT_TIMEOUT_MS (10 * 1000)
#define GATEWAY_IO_TIMEOUT_SEC 300                          /* silence on an upstream exchange */
#define GATEWAY_TUNNEL_IDLE_MS (600 * 1000)
#define GATEWAY_TUNNEL_HALF_CLOSED_MS (5 * 1000)            /* silence after one side of a tunnel closed */
#define GATEWAY_ADDRESSES_MAX 16U                           /* of a name, tried in order */
#define GATEWAY_IDLE_SEC_DEFAULT 60U
#define GATEWAY_IDLE_SEC_MAX 86400U
#define GATEWAY_DRAIN_SEC 5U                                /* after SIGTERM; the unit's TimeoutStopSec= is 10 s */
#define GATEWAY_STREAM_BUFFER_SIZE (64U * 1024U)            /* per connection, for responses */
#define GATEWAY_CHUNK_LINE_MAX 24U                          /* "%zx\r\n" before a re-chunked piece */
#define GATEWAY_POOL_MAX 64U                                /* idle upstream connections kept */
#define GATEWAY_POOL_IDLE_SEC 20U                           /* below the keep-alive timeout of most servers */
#define GATEWAY_PROXY_REPLY_MAX (8U * 1024U)
#define GATEWAY_LEAVES_MAX 256U                             /* cached leaf certificates; then started over */
#define GATEWAY_CA_PATH "/.loop/ca.pem"                     /* the sandbox CA, for the runner */
#define GATEWAY_SESSIONS_MAX 256U                           /* upstream TLS sessions kept for resumption */
#define GATEWAY_TLS_READ_BUFFER_SIZE (64U * 1024U)          /* per upstream TLS connection, read ahead */


typedef struct EgressGateway {
        char *channel;
        EgressConfig config;            /* .error set: misconfigured, every request is answered 503 */
        SSL_CTX *tls;
        EgressOwnAddresses own;
        EgressCa *ca;                   /* NULL: no state directory, no interception */
        uint8_t token_key[EGRESS_TOKEN_KEY_SIZE];
        bool have_token_key;            /* false: no state directory, every hand-over is refused */

        EgressSessions *sessions;       /* upstream TLS sessions by "host:port" */
        EgressPool *pool;               /* idle upstream connections by "scheme host port" */

        EgressLeafCache *leaves;        /* NULL: no CA, no interception */
        AuditLimiter *busy;             /* connections refused beyond GATEWAY_CONNECTIONS_MAX, per peer */
} EgressGateway;

typedef struct EgressConn {
        EgressGateway *gw;
        SocketConnection *sc;           /* owns fd; shuts its read side when a head is late */
        int fd;
        bool handed_over;               /* the relay of a container the gateway knows handed fd over */
        char container[EGRESS_CONTAINER_NAME_MAX + 1];  /* ... that container's name */
        char dummy[EGRESS_DUMMY_LEN + 1];               /* ... and its model-API dummy */
        struct ucred peer;              /* who connected to the gateway socket */
        EgressScrub scrub;              /* the secrets injected into the current request, for its response */
        SSL *client_ssl;                /* intercepted: TLS with the agent, our leaf certificate */
        int up;
        SSL *ssl;
        char *up_key;                   /* the pool's key of c->up */
        bool up_pooled;                 /* c->up came from the pool (it may have gone stale) */
        char *buf;                      /* GATEWAY_HEADER_SIZE_MAX bytes: request heads, request bodies */
        size_t size;
        char *rbuf;                     /* GATEWAY_STREAM_BUFFER_SIZE bytes: responses */
        char *scratch;                  /* GATEWAY_STREAM_BUFFER_SIZE + GATEWAY_CHUNK_LINE_MAX bytes */
        unsigned requests;              /* answered on this connection so far */
        bool again;                     /* the client connection can carry another request */
        bool quiet;                     /* ended between requests: no journal record */
        HttpRequest req;
        struct timespec start;

        /* the journal record */
        const char *kind;
        const char *decision;
        const char *rule;
        const char *reason;
        char *host;
        uint16_t port;
        char address[INET6_ADDRSTRLEN];
        int status;
        uint64_t sent, received;
} EgressConn;

/* A connection accepted by the skeleton, with its buffers. */
int egress_conn_new(EgressGateway *g, SocketConnection *sc, EgressConn **ret);
void egress_conn_free(EgressConn *c);
/* Forgets the request answered, for the next one on the connection. */
void egress_conn_request_reset(EgressConn *c);

/* The gateway-request journal record of the request (or connection) c. */
void egress_conn_journal(EgressConn *c);

/* Waits for fd to be readable for up to timeout_ms (-ETIMEDOUT), then reads (size 0: only waits). */
ssize_t egress_read_timeout(int fd, void *buf, size_t size, int timeout_ms);
/* The agent's side: the relay's connection, or TLS on it once intercepted. */
ssize_t egress_conn_client_read(EgressConn *c, void *buf, size_t size, int timeout_ms);
int egress_conn_client_write(EgressConn *c, const void *buf, size_t n);
/* Writes all of buf through ssl, or to fd with loop_write() when ssl is NULL. A failed SSL_write() is
 * returned as ssl_error: the caller says what that is (a client gone, -EPIPE; a broken upstream, -EIO). */
int egress_write_all(SSL *ssl, int fd, const void *buf, size_t n, int ssl_error);

/* A text/plain answer "loop egress gateway: why", the connection closed after it; c->status is set. */
int egress_conn_reply(EgressConn *c, int status, const char *why);
/* egress_conn_reply() with the record's decision and reason; returns -EACCES. */
int egress_conn_refuse(EgressConn *c, int status, const char *decision, const char *reason, const char *why);
