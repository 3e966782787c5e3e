/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* One exchange of the gateway (egress_conn_forward()) between a client and an upstream that are both
 * socketpairs: the upstream connection comes from the pool, so nothing is resolved or dialled. The
 * upstream runs on a thread: it reads the request up to an end the case names, records it, and answers
 * with the case's canned response. */

#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>

#include "egress-exchange.h"
#include "tap.h"

#define UPSTREAM_KEY "http example.com 80"

typedef struct Upstream {
        int fd;
        const char *request_end;        /* the request is read until it ends with this */
        const char *response;           /* NULL: close without answering */
        size_t response_size;           /* 0: strlen(response) */
        char got[4096];
        size_t n_got;
} Upstream;

static void *upstream_run(void *userdata) {
        Upstream *u = userdata;
        size_t l = strlen(u->request_end);

        while (u->n_got < sizeof u->got - 1) {
                ssize_t k = read(u->fd, u->got + u->n_got, 1);
                if (k <= 0)
                        break;
                u->n_got++;
                if (u->n_got >= l && memcmp(u->got + u->n_got - l, u->request_end, l) == 0)
                        break;
        }
        u->got[u->n_got] = 0;
        if (u->response)
                (void) write(u->fd, u->response, u->response_size ?: strlen(u->response));
        else
                (void) shutdown(u->fd, SHUT_RDWR);
        return NULL;
}

/* All the client end has, until the gateway's end is quiet (it wrote everything before forward returned). */
static size_t client_drain(int fd, char *buf, size_t size) {
        size_t n = 0;

        while (n < size - 1) {
                ssize_t k = recv(fd, buf + n, size - 1 - n, MSG_DONTWAIT);
                if (k <= 0)
                        break;
                n += (size_t) k;
        }
        buf[n] = 0;
        return n;
}

typedef struct Case {
        const char *request;            /* what the client sent: head, and what follows it */
        const char *upstream_head;      /* the head the gateway sends upstream */
        const char *request_end;
        const char *response;
        size_t response_size;           /* 0: strlen(response) */
        const char *secret, *dummy;     /* a credential injected into the request */
} Case;

typedef struct Result {
        int r;
        char upstream_got[4096];
        char client_got[8192];
        bool again;
        size_t pooled;                  /* upstream connections in the pool afterwards */
} Result;

static void run_case(const Case *k, Result *ret) {
        HttpLimits limits = { .header_size_max = GATEWAY_HEADER_SIZE_MAX, .headers_max = GATEWAY_HEADERS_MAX,
                              .body_size_max = GATEWAY_BODY_MAX, .chunked = true, .proxy_forms = true, .head_only = true };
        EgressGateway g = {};
        EgressConn *c = NULL;
        EgressPooled e = { .fd = -EBADF };
        Upstream u = { .request_end = k->request_end, .response = k->response, .response_size = k->response_size };
        int up[2], client[2], status;
        size_t consumed, n = strlen(k->request);
        pthread_t t;

        *ret = (Result) {};
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, up) < 0 ||
            socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, client) < 0 ||
            egress_pool_new(4, 60ULL * 1000000ULL, &g.pool) < 0 || egress_conn_new(&g, NULL, &c) < 0)
                abort();
        g.channel = (char *) "test";
        e.fd = up[0];
        (void) egress_pool_put(g.pool, UPSTREAM_KEY, &e, clock_usec(CLOCK_MONOTONIC));
        u.fd = up[1];
        c->fd = client[0];

        /* the head parsed as the gateway does; what follows it stays in c->buf, like connection_read_head() */
        memcpy(c->buf, k->request, n);
        c->size = n;
        if (http_request_parse(c->buf, c->size, &limits, &c->req, &consumed, &status, NULL) <= 0)
                abort();
        memmove(c->buf, c->buf + consumed, c->size - consumed);
        c->size -= consumed;
        if (k->secret && egress_scrub_add(&c->scrub, k->secret, k->dummy) < 0)
                abort();

        (void) pthread_create(&t, NULL, upstream_run, &u);
        (void) shutdown(client[1], SHUT_WR);    /* the client sent all it had */
        ret->r = egress_conn_forward(c, "example.com", 80, false, k->upstream_head, strlen(k->upstream_head));
        (void) pthread_join(t, NULL);
        memcpy(ret->upstream_got, u.got, sizeof u.got);
        (void) client_drain(client[1], ret->client_got, sizeof ret->client_got);
        ret->again = c->again;
        ret->pooled = egress_pool_size(g.pool);

        egress_conn_free(c);            /* c->fd is the skeleton's: ours here */
        safe_close(client[0]);
        safe_close(client[1]);
        safe_close(up[1]);
        egress_pool_free(g.pool);
}

static void test_length(void) {
        static const char response[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        Result r;

        run_case(&(Case) {
                .request = "GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\n\r\n",
                .upstream_head = "GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n",
                .request_end = "\r\n\r\n",
                .response = response,
        }, &r);
        ok(r.r == 0, "an exchange with a Content-Length response succeeds");
        is_str(r.upstream_got, "GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n", "the upstream gets the head as given");
        is_str(r.client_got, response, "the client gets the response byte for byte");
        ok(r.again && r.pooled == 1, "both connections can carry the next request: the upstream one is back in the pool");
}

static void test_chunked_response(void) {
        static const char response[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                       "5;ext=1\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n";
        Result r;

        run_case(&(Case) {
                .request = "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n",
                .upstream_head = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
                .request_end = "\r\n\r\n",
                .response = response,
        }, &r);
        ok(r.r == 0, "an exchange with a chunked response succeeds");
        is_str(r.client_got, response, "a chunked response passes byte for byte, extensions and trailers included");
        ok(r.again && r.pooled == 1, "its end is found from its chunks: both connections are kept");
}

static void test_chunked_request(void) {
        Result r;

        run_case(&(Case) {
                .request = "POST http://example.com/up HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "3;name=value\r\nabc\r\n2\r\nde\r\n0\r\nX-Dropped: yes\r\n\r\n",
                .upstream_head = "POST /up HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n",
                .request_end = "0\r\n\r\n",
                .response = "HTTP/1.1 204 No Content\r\n\r\n",
        }, &r);
        ok(r.r == 0, "an exchange with a chunked request body succeeds");
        /* what arrived together is decoded together: one chunk of the data, then the last chunk */
        ok(strstr(r.upstream_got, "\r\n\r\n5\r\nabcde\r\n0\r\n\r\n") != NULL && !strstr(r.upstream_got, "name=value") &&
           !strstr(r.upstream_got, "X-Dropped"), "the body goes up re-chunked, without the client's extensions and trailers");
}

static void test_scrubbed(void) {
        Result r;

        run_case(&(Case) {
                .request = "GET http://example.com/me HTTP/1.1\r\nHost: example.com\r\n\r\n",
                .upstream_head = "GET /me HTTP/1.1\r\nHost: example.com\r\n\r\n",
                .request_end = "\r\n\r\n",
                .response = "HTTP/1.1 200 OK\r\nContent-Length: 28\r\n\r\nyour key is real-secret-1234",
                .secret = "real-secret-1234",
                .dummy = "dummy-0000000000000000",
        }, &r);
        ok(r.r == 0, "an exchange of an injected request succeeds");
        ok(!strstr(r.client_got, "real-secret-1234") && strstr(r.client_got, "dummy-0000000000000000"),
           "the secret in the response reaches the client as its dummy");
        ok(strstr(r.client_got, "Transfer-Encoding: chunked\r\n") && !strstr(r.client_got, "Content-Length"),
           "the scrubbed body is sent chunked (the dummy's length differs)");
}

/* A server that echoes the request's headers compressed (Accept-Encoding is the agent's to send, and a
 * server may compress anyway): the scrubber sees deflate's bytes, never the secret, and the agent would
 * inflate it. Such an answer to an injected request is refused, not passed on. */
static void test_scrubbed_encoded(void) {
        /* gzip of {"headers":{"Authorization":"token real-secret-1234"}} */
        static const char gz[] =
                "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\xab\x56\xca\x48\x4d\x4c\x49\x2d\x2a\x56\xb2\xaa\x56\x72"
                "\x2c\x2d\xc9\xc8\x2f\xca\xac\x4a\x2c\xc9\xcc\xcf\x53\xb2\x52\x2a\xc9\xcf\x4e\xcd\x53\x28\x4a\x4d"
                "\xcc\xd1\x2d\x4e\x4d\x2e\x4a\x2d\xd1\x35\x34\x32\x36\x51\xaa\xad\x05\x00\x40\x11\x7f\x85\x36\x00"
                "\x00\x00";
        static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                                   "Content-Length: 74\r\n\r\n";
        char response[sizeof head + sizeof gz];
        Result r;

        memcpy(response, head, sizeof head - 1);
        memcpy(response + sizeof head - 1, gz, sizeof gz - 1);
        run_case(&(Case) {
                .request = "GET http://example.com/headers HTTP/1.1\r\nHost: example.com\r\n\r\n",
                .upstream_head = "GET /headers HTTP/1.1\r\nHost: example.com\r\nAccept-Encoding: identity\r\n\r\n",
                .request_end = "\r\n\r\n",
                .response = response,
                .response_size = sizeof head - 1 + sizeof gz - 1,
                .secret = "real-secret-1234",
                .dummy = "dummy-0000000000000000",
        }, &r);
        ok(r.r < 0, "a compressed answer to an injected request fails the exchange (the secret cannot be scrubbed)");
        ok(startswith(r.client_got, "HTTP/1.1 502 ") && strstr(r.client_got, "Content-Encoding") && !memchr(r.client_got, 0x8b, strlen(r.client_got)),
           "the client is answered 502 saying why, and gets none of the compressed body");
        ok(!r.again && r.pooled == 0, "neither connection is kept");

        run_case(&(Case) {
                .request = "GET http://example.com/me HTTP/1.1\r\nHost: example.com\r\n\r\n",
                .upstream_head = "GET /me HTTP/1.1\r\nHost: example.com\r\nAccept-Encoding: identity\r\n\r\n",
                .request_end = "\r\n\r\n",
                .response = "HTTP/1.1 200 OK\r\nContent-Encoding: Identity \r\nContent-Length: 28\r\n\r\nyour key is real-secret-1234",
                .secret = "real-secret-1234",
                .dummy = "dummy-0000000000000000",
        }, &r);
        ok(r.r == 0 && strstr(r.client_got, "your key is dummy-0000000000000000"),
           "Content-Encoding: identity is no coding: scrubbed and passed on");

        run_case(&(Case) {
                .request = "GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\n\r\n",
                .upstream_head = "GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n",
                .request_end = "\r\n\r\n",
                .response = response,
                .response_size = sizeof head - 1 + sizeof gz - 1,
        }, &r);
        ok(r.r == 0 && r.again, "a compressed answer to a request without a credential passes as it is");
}

static void test_upstream_gone(void) {
        Result r;

        run_case(&(Case) {
                .request = "POST http://example.com/x HTTP/1.1\r\nHost: example.com\r\nContent-Length: 2\r\n\r\nhi",
                .upstream_head = "POST /x HTTP/1.1\r\nHost: example.com\r\nContent-Length: 2\r\n\r\n",
                .request_end = "hi",
                .response = NULL,
        }, &r);
        ok(r.r < 0, "an upstream that closes without answering fails the exchange");
        ok(startswith(r.client_got, "HTTP/1.1 502 ") != NULL, "the client is answered 502");
        ok(!r.again && r.pooled == 0, "neither connection is kept");
}

/* egress_write_all(), what both the client and the upstream side write through. */
static void test_write_all(void) {
        SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
        SSL *ssl = ctx ? SSL_new(ctx) : NULL;
        char got[8] = {};
        int p[2];

        ok(pipe2(p, O_CLOEXEC) == 0, "a pipe to write to");
        is_int(egress_write_all(NULL, p[1], "plain", 5, -EIO), 0, "without TLS, egress_write_all() writes to the fd");
        ok(read(p[0], got, sizeof got) == 5 && memcmp(got, "plain", 5) == 0, "all of it");
        ok(ssl != NULL, "a TLS object with no connection");
        is_int(egress_write_all(ssl, p[1], "x", 1, -EPIPE), -EPIPE, "a failed SSL_write() is the caller's error (client: -EPIPE)");
        is_int(egress_write_all(ssl, p[1], "x", 1, -EIO), -EIO, "... (upstream: -EIO)");
        SSL_free(ssl);
        SSL_CTX_free(ctx);
        close(p[0]);
        close(p[1]);
}

int main(void) {
        test_write_all();
        test_length();
        test_chunked_response();
        test_chunked_request();
        test_scrubbed();
        test_scrubbed_encoded();
        test_upstream_gone();
        return done_testing();
}
