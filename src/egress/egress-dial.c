/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>

#include "egress-dial.h"
#include "io-util.h"
#include "log.h"

/* ---- upstream connections ---- */

static int connect_timeout(int fd, const struct sockaddr *sa, socklen_t len) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        socklen_t el = sizeof(int);
        int e = 0, n;

        if (connect(fd, sa, len) >= 0)
                return 0;
        if (errno != EINPROGRESS)
                return -errno;
        do
                n = poll(&p, 1, GATEWAY_CONNECT_TIMEOUT_MS);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if (n == 0)
                return -ETIMEDOUT;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
                return -errno;
        return -e;
}

static void socket_set_blocking_timeouts(int fd) {
        struct timeval tv = { .tv_sec = GATEWAY_IO_TIMEOUT_SEC };
        int one = 1;

        (void) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Resolves host and returns its addresses the policy lets us connect to, or a refusal. */
static int resolve_checked(EgressConn *c, const char *host, uint16_t port, struct sockaddr_storage *ret,
                           socklen_t *ret_len, size_t *ret_n) {
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP };
        struct addrinfo *res = NULL;
        EgressAddressClass blocked = EGRESS_ADDRESS_PUBLIC;
        char service[8];
        size_t n = 0;
        int q;

        (void) snprintf(service, sizeof service, "%u", port);
        q = getaddrinfo(host, service, &hints, &res);
        if (q != 0) {
                c->decision = "error";
                c->reason = "resolve-failed";
                (void) egress_conn_reply(c, 502, "the name cannot be resolved");
                return -EHOSTUNREACH;
        }
        for (struct addrinfo *a = res; a && n < GATEWAY_ADDRESSES_MAX; a = a->ai_next) {
                EgressAddressClass k = egress_address_classify(a->ai_addr, &c->gw->own);
                if (k != EGRESS_ADDRESS_PUBLIC) {
                        blocked = k;
                        continue;
                }
                memcpy(&ret[n], a->ai_addr, a->ai_addrlen);
                ret_len[n++] = a->ai_addrlen;
        }
        freeaddrinfo(res);
        if (n == 0) {
                static _Thread_local char reason[64];
                (void) snprintf(reason, sizeof reason, "address-blocked:%s", egress_address_class_to_string(blocked));
                return egress_conn_refuse(c, 403, "deny", reason, "the name leads to an address the gateway does not connect to");
        }
        *ret_n = n;
        return 0;
}

static int tcp_connect_any(EgressConn *c, const struct sockaddr_storage *addrs, const socklen_t *lens, size_t n) {
        int last = -ECONNREFUSED;

        for (size_t i = 0; i < n; i++) {
                _cleanup_close_ int fd = socket(addrs[i].ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                struct sockaddr_storage peer;
                socklen_t pl = sizeof peer;

                if (fd < 0)
                        return -errno;
                last = connect_timeout(fd, (const struct sockaddr *) &addrs[i], lens[i]);
                if (last < 0)
                        continue;
                /* The address actually connected to is checked again, whatever resolved to it. */
                if (getpeername(fd, (struct sockaddr *) &peer, &pl) < 0)
                        return -errno;
                if (egress_address_classify((struct sockaddr *) &peer, &c->gw->own) != EGRESS_ADDRESS_PUBLIC) {
                        last = -EACCES;
                        continue;
                }
                (void) egress_address_format((struct sockaddr *) &peer, c->address, sizeof c->address);
                socket_set_blocking_timeouts(fd);
                return TAKE_FD(fd);
        }
        return last;
}

/* A tunnel through the host's HTTP proxy to an address we checked. */
static int proxy_tunnel(EgressConn *c, const struct sockaddr_storage *target) {
        const EgressUpstream *p = &c->gw->config.proxy;
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP };
        struct addrinfo *res = NULL;
        struct sockaddr_storage addrs[GATEWAY_ADDRESSES_MAX];
        socklen_t lens[GATEWAY_ADDRESSES_MAX];
        char service[8], ip[INET6_ADDRSTRLEN], reply_buf[GATEWAY_PROXY_REPLY_MAX + 1];
        _cleanup_free_ char *request = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t n = 0, got = 0;
        uint16_t port;
        int q;

        (void) snprintf(service, sizeof service, "%u", p->port);
        if (getaddrinfo(p->host, service, &hints, &res) != 0)
                return -EHOSTUNREACH;
        for (struct addrinfo *a = res; a && n < GATEWAY_ADDRESSES_MAX; a = a->ai_next) {
                memcpy(&addrs[n], a->ai_addr, a->ai_addrlen);
                lens[n++] = a->ai_addrlen;
        }
        freeaddrinfo(res);

        /* the proxy itself may well sit on a private address: it is the operator's */
        for (size_t i = 0; i < n && fd < 0; i++) {
                int s = socket(addrs[i].ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (s < 0)
                        return -errno;
                if (connect_timeout(s, (struct sockaddr *) &addrs[i], lens[i]) < 0) {
                        safe_close(s);
                        continue;
                }
                fd = s;
        }
        if (fd < 0)
                return -ECONNREFUSED;
        socket_set_blocking_timeouts(fd);

        (void) egress_address_format((const struct sockaddr *) target, ip, sizeof ip);
        port = ntohs(target->ss_family == AF_INET ? ((const struct sockaddr_in *) target)->sin_port
                                                   : ((const struct sockaddr_in6 *) target)->sin6_port);
        if (asprintf(&request, target->ss_family == AF_INET6 ? "CONNECT [%s]:%u HTTP/1.1\r\nHost: [%s]:%u\r\n%s%s%s\r\n"
                                                             : "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n%s%s%s\r\n",
                     ip, port, ip, port, p->authorization ? "Proxy-Authorization: " : "", strempty(p->authorization),
                     p->authorization ? "\r\n" : "") < 0)
                return -ENOMEM;
        q = loop_write(fd, request, strlen(request));
        explicit_bzero(request, strlen(request));
        if (q < 0)
                return q;
        /* Byte by byte up to the blank line: what follows belongs to the tunnel. */
        while (got < GATEWAY_PROXY_REPLY_MAX) {
                ssize_t k = read(fd, reply_buf + got, 1);
                if (k <= 0)
                        return -ECONNRESET;
                got++;
                if (got >= 4 && memcmp(reply_buf + got - 4, "\r\n\r\n", 4) == 0)
                        break;
        }
        reply_buf[got] = 0;
        if (startswith(reply_buf, "HTTP/1.1 407") || startswith(reply_buf, "HTTP/1.0 407"))
                return -EKEYREJECTED;   /* the proxy wants (other) credentials */
        if (!(startswith(reply_buf, "HTTP/1.1 200") || startswith(reply_buf, "HTTP/1.0 200")))
                return -ECONNREFUSED;
        memcpy(c->address, ip, sizeof ip);
        return TAKE_FD(fd);
}

/* Connects c->up to host:port (directly or through the host's proxy) or refuses. */
int egress_conn_upstream_open(EgressConn *c, const char *host, uint16_t port) {
        struct sockaddr_storage addrs[GATEWAY_ADDRESSES_MAX];
        socklen_t lens[GATEWAY_ADDRESSES_MAX];
        size_t n = 0;
        int q;

        q = resolve_checked(c, host, port, addrs, lens, &n);
        if (q < 0)
                return q;
        if (c->gw->config.proxy.host) {
                q = -ECONNREFUSED;
                for (size_t i = 0; i < n && q < 0 && q != -EKEYREJECTED; i++)
                        q = proxy_tunnel(c, &addrs[i]);
                if (q == -EKEYREJECTED) {
                        c->decision = "error";
                        c->reason = "upstream-proxy-auth";
                        (void) egress_conn_reply(c, 502, "the host's proxy refused the gateway's credentials (407)");
                        return q;
                }
        } else
                q = tcp_connect_any(c, addrs, lens, n);
        if (q == -EACCES)
                return egress_conn_refuse(c, 403, "deny", "address-blocked:connected", "the connection ended at a refused address");
        if (q < 0) {
                c->decision = "error";
                c->reason = q == -ETIMEDOUT ? "connect-timeout" : "connect-failed";
                (void) egress_conn_reply(c, q == -ETIMEDOUT ? 504 : 502, "the upstream server cannot be reached");
                return q;
        }
        c->up = q;
        return 0;
}

static int session_key(const EgressConn *c, char *buf, size_t size) {
        int n = snprintf(buf, size, "%s:%u", strempty(c->host), c->port);
        return n > 0 && (size_t) n < size ? 0 : -ENAMETOOLONG;
}

static int on_new_session(SSL *ssl, SSL_SESSION *session) {
        EgressConn *c = SSL_get_app_data(ssl);
        char key[EGRESS_HOST_MAX + 8];

        if (!c || session_key(c, key, sizeof key) < 0)
                return 0;
        return egress_sessions_put(c->gw->sessions, key, session);
}

int egress_upstream_tls_new(const char *ca_file, SSL_CTX **ret) {
        SSL_CTX *tls;

        tls = SSL_CTX_new(TLS_client_method());
        if (!tls)
                return -ENOMEM;
        (void) SSL_CTX_set_min_proto_version(tls, TLS1_2_VERSION);
        /* Many servers close without close_notify. The agent's HTTP client sees any truncation in the
         * response's own framing (Content-Length, chunks, SSE), which passes through untouched. */
        SSL_CTX_set_options(tls, SSL_OP_IGNORE_UNEXPECTED_EOF);
        /* A record in one read() rather than its header and then its body; a download's records, several
         * in one read() (GATEWAY_TLS_READ_BUFFER_SIZE). */
        SSL_CTX_set_read_ahead(tls, 1);
        SSL_CTX_set_default_read_buffer_len(tls, GATEWAY_TLS_READ_BUFFER_SIZE);
        SSL_CTX_set_session_cache_mode(tls, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        SSL_CTX_sess_set_new_cb(tls, on_new_session);
        SSL_CTX_set_verify(tls, SSL_VERIFY_PEER, NULL);
        if (SSL_CTX_set_default_verify_paths(tls) != 1)
                log_warning("Cannot load the system's trust store; only egress.ca_file is trusted.");
        if (ca_file && SSL_CTX_load_verify_locations(tls, ca_file, NULL) != 1) {
                SSL_CTX_free(tls);
                return -ENOENT;
        }
        *ret = tls;
        return 0;
}

static void session_resume(EgressConn *c) {
        char key[EGRESS_HOST_MAX + 8];

        if (session_key(c, key, sizeof key) >= 0)
                egress_sessions_resume(c->gw->sessions, key, c->ssl);
}

static int upstream_tls(EgressConn *c, const char *host) {
        struct in6_addr a6;
        struct in_addr a4;

        c->ssl = SSL_new(c->gw->tls);
        if (!c->ssl)
                return -ENOMEM;
        if (SSL_set_fd(c->ssl, c->up) != 1 || SSL_set_app_data(c->ssl, c) != 1)
                return -EIO;
        /* Names get SNI and a name check, IP literals an address check. */
        if (inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1) {
                if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) != 1)
                        return -EIO;
        } else if (SSL_set_tlsext_host_name(c->ssl, host) != 1 || SSL_set1_host(c->ssl, host) != 1)
                return -EIO;
        session_resume(c);
        if (SSL_connect(c->ssl) != 1) {
                unsigned long e = ERR_peek_last_error();
                log_debug("TLS to %s failed: %s (verify: %s)", host, ERR_reason_error_string(e) ?: "?",
                          X509_verify_cert_error_string(SSL_get_verify_result(c->ssl)));
                ERR_clear_error();
                c->decision = "error";
                c->reason = "upstream-tls";
                (void) egress_conn_reply(c, 502, "the upstream server's TLS certificate cannot be verified");
                return -EPROTO;
        }
        log_debug("TLS to %s:%u %s.", host, c->port, SSL_session_reused(c->ssl) ? "resumed" : "with a full handshake");
        return 0;
}

int egress_conn_up_write(EgressConn *c, const void *buf, size_t n) {
        return egress_write_all(c->ssl, c->up, buf, n, -EIO);
}

ssize_t egress_conn_up_read(EgressConn *c, void *buf, size_t n) {
        if (!c->ssl) {
                ssize_t k;
                do
                        k = read(c->up, buf, n);
                while (k < 0 && errno == EINTR);
                return k < 0 ? -errno : k;
        }
        int k = SSL_read(c->ssl, buf, (int) MIN(n, (size_t) INT_MAX));
        if (k > 0)
                return k;
        if (SSL_get_error(c->ssl, k) == SSL_ERROR_ZERO_RETURN)
                return 0;
        /* Servers that close without close_notify are common; after a response that is an end. */
        return SSL_get_error(c->ssl, k) == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 ? 0 : -EIO;
}

/* ---- the upstream connection pool ---- */

/* An idle connection to key, the newest first (egress_pool_take()). */
static bool pool_take(EgressConn *c, const char *key) {
        EgressPooled e;

        if (egress_pool_take(c->gw->pool, key, clock_usec(CLOCK_MONOTONIC), &e) <= 0)
                return false;
        c->up = e.fd;
        c->ssl = e.ssl;
        memcpy(c->address, e.address, sizeof c->address);
        if (c->ssl)
                (void) SSL_set_app_data(c->ssl, c);
        return true;
}

/* Hands c->up to the pool (reusable) or closes it. */
void egress_conn_upstream_release(EgressConn *c, bool reusable) {
        if (c->up < 0)
                return;
        /* bytes after the response that OpenSSL read ahead: the server is confused */
        if (c->ssl && SSL_has_pending(c->ssl))
                reusable = false;
        if (reusable && c->up_key) {
                EgressPooled e = { .fd = TAKE_FD(c->up), .ssl = TAKE_PTR(c->ssl) };

                if (e.ssl)
                        (void) SSL_set_app_data(e.ssl, NULL);
                memcpy(e.address, c->address, sizeof e.address);
                (void) egress_pool_put(c->gw->pool, c->up_key, &e, clock_usec(CLOCK_MONOTONIC));
                return;
        }
        if (c->ssl) {
                (void) SSL_shutdown(c->ssl);
                SSL_free(TAKE_PTR(c->ssl));
        }
        c->up = safe_close(c->up);
}

/* c->up to host:port, TLS verified when tls: from the pool, or a new connection (which refuses or
 * answers the client itself on failure). */
int egress_conn_upstream_get(EgressConn *c, const char *host, uint16_t port, bool tls) {
        int q;

        free(c->up_key);
        if (asprintf(&c->up_key, "%s %s %u", tls ? "https" : "http", host, port) < 0) {
                c->up_key = NULL;
                return -ENOMEM;
        }
        c->up_pooled = pool_take(c, c->up_key);
        if (c->up_pooled)
                return 0;
        q = egress_conn_upstream_open(c, host, port);
        if (q >= 0 && tls)
                q = upstream_tls(c, host);
        return q;
}
