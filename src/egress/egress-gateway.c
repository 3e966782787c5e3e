/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>

#include "audit.h"
#include "egress-dial.h"
#include "egress-gateway.h"
#include "io-util.h"
#include "log.h"

int egress_conn_new(EgressGateway *g, SocketConnection *sc, EgressConn **ret) {
        EgressConn *c;

        c = calloc(1, sizeof(EgressConn));
        if (!c || !(c->buf = malloc(GATEWAY_HEADER_SIZE_MAX)) || !(c->rbuf = malloc(GATEWAY_STREAM_BUFFER_SIZE)) ||
            !(c->scratch = malloc(GATEWAY_STREAM_BUFFER_SIZE + GATEWAY_CHUNK_LINE_MAX))) {
                if (c) {
                        free(c->buf);
                        free(c->rbuf);
                }
                free(c);
                return -ENOMEM;
        }
        c->gw = g;
        c->sc = sc;
        c->fd = sc ? socket_connection_fd(sc) : -EBADF;
        c->up = -EBADF;
        (void) clock_gettime(CLOCK_MONOTONIC, &c->start);
        *ret = c;
        return 0;
}

/* ---- the journal record ---- */

static uint64_t elapsed_ms(const struct timespec *start) {
        struct timespec now;
        (void) clock_gettime(CLOCK_MONOTONIC, &now);
        return (uint64_t) (now.tv_sec - start->tv_sec) * 1000U + (uint64_t) ((now.tv_nsec - start->tv_nsec) / 1000000L);
}

#define GATEWAY_RECORD_FIELDS_MAX 20U
#define GATEWAY_RECORD_ARENA_SIZE 1024U         /* the usual record's fields; a longer one is allocated */

/* A record's extra fields, "NAME=value" each, written into one buffer on the stack: a record per
 * request should not cost an allocation per field. */
typedef struct RecordFields {
        char *extra[GATEWAY_RECORD_FIELDS_MAX];  /* NULL-terminated */
        size_t n;
        char *allocated[GATEWAY_RECORD_FIELDS_MAX];
        size_t n_allocated;
        char arena[GATEWAY_RECORD_ARENA_SIZE];
        size_t used;
} RecordFields;

static void field_add(RecordFields *r, const char *key, const char *value) {
        size_t kl, vl, need;
        char *p;

        if (!value || r->n >= GATEWAY_RECORD_FIELDS_MAX - 1)
                return;
        kl = strlen(key);
        vl = strlen(value);
        need = kl + 1 + vl + 1;
        if (need <= sizeof r->arena - r->used) {
                p = r->arena + r->used;
                r->used += need;
        } else {
                p = malloc(need);
                if (!p)
                        return;
                r->allocated[r->n_allocated++] = p;
        }
        memcpy(p, key, kl);
        p[kl] = '=';
        memcpy(p + kl + 1, value, vl + 1);
        r->extra[r->n++] = p;
}

void egress_conn_journal(EgressConn *c) {
        char port[8], status[8], sent[24], received[24], duration[24];
        RecordFields r;
        bool allowed = c->decision && (streq(c->decision, "allow") || streq(c->decision, "credential"));
        uint64_t ms = elapsed_ms(&c->start);

        r.n = r.n_allocated = r.used = 0;
        (void) snprintf(port, sizeof port, "%u", c->port);
        (void) snprintf(status, sizeof status, "%d", c->status);
        (void) snprintf(sent, sizeof sent, "%" PRIu64, c->sent);
        (void) snprintf(received, sizeof received, "%" PRIu64, c->received);
        (void) snprintf(duration, sizeof duration, "%" PRIu64, ms);

        field_add(&r, "LOOP_KIND", c->kind);
        field_add(&r, "LOOP_HOST", c->host);
        field_add(&r, "LOOP_PORT", c->port ? port : NULL);
        field_add(&r, "LOOP_DECISION", c->decision);
        field_add(&r, "LOOP_RULE", c->rule);
        field_add(&r, "LOOP_REASON", c->reason);
        field_add(&r, "LOOP_ADDRESS", c->address[0] ? c->address : NULL);
        field_add(&r, "LOOP_METHOD", c->req.method);
        /* the path only: a query may carry a token */
        field_add(&r, "LOOP_PATH", c->req.path && c->req.path[0] ? c->req.path : NULL);
        field_add(&r, "LOOP_STATUS", c->status ? status : NULL);
        field_add(&r, "LOOP_BYTES_SENT", sent);
        field_add(&r, "LOOP_BYTES_RECEIVED", received);
        field_add(&r, "LOOP_DURATION_MS", duration);
        if (!c->handed_over) {
                /* not a container's relay: who it was */
                char pid[16], uid[16];
                (void) snprintf(pid, sizeof pid, "%d", (int) c->peer.pid);
                (void) snprintf(uid, sizeof uid, "%u", (unsigned) c->peer.uid);
                field_add(&r, "LOOP_PEER_PID", pid);
                field_add(&r, "LOOP_PEER_UID", uid);
        }
        r.extra[r.n] = NULL;

        AuditFields f = { .channel = c->gw->channel, .container_name = c->container[0] ? c->container : NULL, .extra = r.extra };
        (void) audit_log(AUDIT_GATEWAY_REQUEST, allowed ? LOG_INFO : LOG_NOTICE, &f,
                         "%s %s %s:%u%s%s%s%s (rule %s, %" PRIu64 " bytes up, %" PRIu64 " down, %" PRIu64 " ms)",
                         strna(c->decision), strna(c->kind), strna(c->host), c->port,
                         c->req.method ? " " : "", strempty(c->req.method), c->reason ? ": " : "", strempty(c->reason),
                         strna(c->rule), c->sent, c->received, ms);
        for (size_t i = 0; i < r.n_allocated; i++)
                free(r.allocated[i]);
}

/* ---- answering the client ---- */

/* Reads until poll says readable or timeout_ms passed. */
ssize_t egress_read_timeout(int fd, void *buf, size_t size, int timeout_ms) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t k;

        for (;;) {
                int n = poll(&p, 1, timeout_ms);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -ETIMEDOUT;
                if (size == 0)
                        return 0;
                k = read(fd, buf, size);
                if (k < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                return k < 0 ? -errno : k;
        }
}

/* The agent's side: the relay's connection, or TLS on it once intercepted. */
ssize_t egress_conn_client_read(EgressConn *c, void *buf, size_t size, int timeout_ms) {
        int k;

        if (!c->client_ssl)
                return egress_read_timeout(c->fd, buf, size, timeout_ms);
        /* with read-ahead, bytes OpenSSL has read but not yet decrypted count too */
        if (!SSL_has_pending(c->client_ssl)) {
                ssize_t q = egress_read_timeout(c->fd, NULL, 0, timeout_ms);   /* waits for readability only */
                if (q == -ETIMEDOUT)
                        return q;
        }
        k = SSL_read(c->client_ssl, buf, (int) MIN(size, (size_t) INT_MAX));
        if (k > 0)
                return k;
        return SSL_get_error(c->client_ssl, k) == SSL_ERROR_ZERO_RETURN ? 0 : -ECONNRESET;
}

int egress_write_all(SSL *ssl, int fd, const void *buf, size_t n, int ssl_error) {
        assert(ssl_error < 0);
        if (!ssl)
                return loop_write(fd, buf, n);
        while (n > 0) {
                int k = SSL_write(ssl, buf, (int) MIN(n, (size_t) INT_MAX));
                if (k <= 0)
                        return ssl_error;
                buf = (const char *) buf + k;
                n -= (size_t) k;
        }
        return 0;
}

int egress_conn_client_write(EgressConn *c, const void *buf, size_t n) {
        return egress_write_all(c->client_ssl, c->fd, buf, n, -EPIPE);
}


int egress_conn_reply(EgressConn *c, int status, const char *why) {
        _cleanup_free_ char *body = NULL, *out = NULL;
        size_t size;
        int r;

        c->status = status;
        if (asprintf(&body, "loop egress gateway: %s\n", why) < 0)
                return -ENOMEM;
        r = http_response_format(status, "text/plain; charset=utf-8", body, strlen(body), false, &out, &size);
        if (r < 0)
                return r;
        return egress_conn_client_write(c, out, size);
}

int egress_conn_refuse(EgressConn *c, int status, const char *decision, const char *reason, const char *why) {
        c->decision = decision;
        c->reason = reason;
        (void) egress_conn_reply(c, status, why);
        return -EACCES;
}

void egress_conn_request_reset(EgressConn *c) {
        http_request_done(&c->req);
        egress_scrub_reset(&c->scrub);
        c->decision = c->rule = c->reason = NULL;
        c->status = 0;
        c->sent = c->received = 0;
        c->address[0] = 0;
        c->again = false;
        (void) clock_gettime(CLOCK_MONOTONIC, &c->start);
}

void egress_conn_free(EgressConn *c) {
        if (!c)
                return;
        egress_conn_upstream_release(c, false);
        free(c->up_key);
        if (c->client_ssl) {
                (void) SSL_shutdown(c->client_ssl);
                SSL_free(c->client_ssl);
        }
        safe_close(c->up);
        /* c->fd is the skeleton's */
        http_request_done(&c->req);
        if (c->buf) {
                explicit_bzero(c->buf, GATEWAY_HEADER_SIZE_MAX);
                free(c->buf);
        }
        if (c->scratch) {
                explicit_bzero(c->scratch, GATEWAY_STREAM_BUFFER_SIZE + GATEWAY_CHUNK_LINE_MAX);
                free(c->scratch);
        }
        free(c->rbuf);
        free(c->host);
        free(c);
}

