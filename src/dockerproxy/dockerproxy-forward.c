/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <poll.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>

#include "dockerproxy-forward.h"
#include "dockerproxy-pin.h"
#include "dockerproxy-record.h"
#include "log.h"
#include "socket-util.h"

/* ---- forwarding ---- */

/* A wait on the engine with no end of its own (an answer that takes as long as a container runs: wait,
 * logs -f, an attach whose client stopped sending) wakes this often to see whether the service is done
 * draining. The engine's socket times its blocking reads out as often (SO_RCVTIMEO). */
#define PROXY_ENGINE_WAIT_CHECK_USEC (1000ULL * 1000ULL)

bool proxy_header_is_hop_by_hop(const HttpRequest *req, const char *name) {
        /* Besides RFC 9110 7.6.1's (and any header a Connection header names): those the proxy writes itself
         * when it rebuilds the request, and Expect (it answers 100-continue itself). */
        static const char * const own[] = { "Host", "Content-Length", "Expect", NULL };

        return http_request_header_is_hop_by_hop(req, name, own);
}

bool proxy_path_is_hijack(const char *method, const char *path) {
        const char *rest;

        if (!streq(method, "POST"))
                return false;
        if ((rest = startswith(path, "/containers/")) || (rest = startswith(path, "/exec/"))) {
                const char *slash = strchr(rest, '/');
                return slash && slash != rest &&
                        (strcasecmp(slash, "/attach") == 0 || strcasecmp(slash, "/start") == 0) &&
                        (startswith(path, "/containers/") ? strcasecmp(slash, "/attach") == 0 : strcasecmp(slash, "/start") == 0);
        }
        return false;
}

/* The head sent to the engine. body_size UINT64_MAX: chunked. Built in one allocation sized first:
 * this runs for every request. */
static int format_upstream_head(ProxyConn *c, bool hijack, uint64_t body_size, bool has_body, char **ret, size_t *ret_size) {
        _cleanup_free_ char *target = NULL;
        const char *connection = NULL;
        size_t size;
        char *buf, *p;

        target = proxy_target_format(&c->target);
        if (!target)
                return -ENOMEM;
        if (hijack)
                connection = http_request_header(&c->head, "Upgrade") ? "Connection: Upgrade\r\nUpgrade: tcp\r\n" :
                                                                         "Connection: close\r\n";
        size = strlen(c->head.method) + strlen(target) + (sizeof(" HTTP/1.1\r\nHost: docker\r\n") - 1) + 2 +
                strlen(strempty(connection)) + (sizeof("Content-Length: 18446744073709551615\r\n") - 1) +
                (sizeof("Transfer-Encoding: chunked\r\n") - 1) + 2 + 1;
        for (size_t i = 0; i < c->head.n_headers; i++)
                size += strlen(c->head.headers[i].name) + 2 + strlen(c->head.headers[i].value) + 2;
        buf = malloc(size);
        if (!buf)
                return -ENOMEM;
        p = stpcpy(stpcpy(stpcpy(stpcpy(buf, c->head.method), " "), target), " HTTP/1.1\r\nHost: docker\r\n");
        for (size_t i = 0; i < c->head.n_headers; i++)
                if (!proxy_header_is_hop_by_hop(&c->head, c->head.headers[i].name))
                        p = stpcpy(stpcpy(stpcpy(stpcpy(p, c->head.headers[i].name), ": "), c->head.headers[i].value), "\r\n");
        /* not hijacked: HTTP/1.1's default, the engine connection is kept for the client's next request */
        if (connection)
                p = stpcpy(p, connection);
        if (body_size == UINT64_MAX)
                p = stpcpy(p, "Transfer-Encoding: chunked\r\n");
        else if (has_body || body_size > 0)
                p += sprintf(p, "Content-Length: %" PRIu64 "\r\n", body_size);
        p = stpcpy(p, "\r\n");
        *ret = buf;
        *ret_size = (size_t) (p - buf);
        return 0;
}

int proxy_engine_connect(DockerProxy *p) {
        int fd;

        fd = unix_connect(p->engine_socket, 0, 0);
        if (fd < 0)
                return fd;
        /* blocking reads end this often without data, for a look at the service (engine_recv()) */
        struct timeval tv = { .tv_sec = PROXY_ENGINE_WAIT_CHECK_USEC / 1000000ULL, .tv_usec = PROXY_ENGINE_WAIT_CHECK_USEC % 1000000ULL };
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        return fd;
}

/* Streams the rest of a request body from the client to the engine: Content-Length bytes, or chunks
 * (decoded and re-encoded, so the engine sees only framing we checked). pending are bytes already read. */
static int stream_request_body(ProxyConn *c, int up, const char *pending, size_t n_pending) {
        HttpChunked ch = { .framing_unlimited = true };         /* passed on, never buffered */
        uint64_t left = c->content_length;
        char *buf = c->io, *dec = c->io_scratch;
        int r;

        for (;;) {
                const char *data;
                size_t size;

                if (n_pending > 0) {
                        data = pending;
                        size = MIN(n_pending, (size_t) PROXY_IO_BUFFER);
                        pending += size;
                        n_pending -= size;
                } else {
                        if (!c->head.chunked && left == 0)
                                return 0;
                        ssize_t k = proxy_recv_some(c->fd, buf, PROXY_IO_BUFFER, clock_usec(CLOCK_MONOTONIC) + PROXY_BODY_IDLE_TIMEOUT_MS * 1000ULL);
                        if (k < 0)
                                return (int) k;
                        if (k == 0)
                                return -EPIPE;          /* a body cut short never reaches its end */
                        data = buf;
                        size = (size_t) k;
                }

                if (c->head.chunked) {
                        size_t out, used;
                        char hdr[32];
                        int done = http_chunked_decode(&ch, data, size, dec, &out, &used);
                        if (done < 0)
                                return done;
                        if (out > 0) {
                                int l = snprintf(hdr, sizeof(hdr), "%zx\r\n", out);
                                if ((r = proxy_send_all(up, hdr, (size_t) l)) < 0 || (r = proxy_send_all(up, dec, out)) < 0 ||
                                    (r = proxy_send_all(up, "\r\n", 2)) < 0)
                                        return r;
                        }
                        if (done == 1)  /* bytes after the body's end belong to nobody: dropped */
                                return proxy_send_all(up, "0\r\n\r\n", 5);
                } else {
                        size_t n = (size_t) MIN((uint64_t) size, left);
                        r = proxy_send_all(up, data, n);
                        if (r < 0)
                                return r;
                        left -= n;
                        if (left == 0)
                                return 0;
                }
        }
}

/* Whether a wait on the engine ends because the service stops: SIGTERM came and the client's connection
 * is shut down (by the skeleton when the drain time ended, or by the client). */
static bool conn_cut(ProxyConn *c) {
        struct pollfd p = { .fd = c->fd };

        return proxy_conn_stopping(c) && poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR));
}

/* A blocking read of the engine's answer, at once (no poll() before it), until the service is done
 * draining (-ESHUTDOWN). */
static ssize_t engine_recv(ProxyConn *c, int up, void *buf, size_t size) {
        for (;;) {
                ssize_t k = recv(up, buf, size, 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN) {         /* SO_RCVTIMEO: a look at the service */
                        if (conn_cut(c))
                                return -ESHUTDOWN;
                        continue;
                }
                return k < 0 ? -errno : k;
        }
}

/* Waits until the engine has something to say, passing on what the client sends meanwhile when the
 * stream is hijacked (its stdin) and otherwise only watching it for hanging up. 1: the engine's side is
 * readable; 0: the client is gone (a follow stream ends here); < 0: an error. */
/* The record of an allowed request, when it is still to be written: at the latest when the proxy would
 * wait, so that what came at once goes on at once and the record costs no latency. */
static void record_pending(ProxyConn *c) {
        if (c->rule) {
                proxy_conn_record(c);
                c->rule = NULL;         /* recorded */
        }
}

static int relay_wait(ProxyConn *c, int up, bool hijack, bool *client_open) {
        char *buf = c->io_scratch;      /* c->io may hold engine bytes not yet sent */
        int r;

        record_pending(c);

        for (;;) {
                struct pollfd p[2] = {
                        { .fd = up, .events = POLLIN },
                        { .fd = *client_open ? c->fd : -1, .events = (hijack ? POLLIN : 0) | POLLRDHUP },
                };
                int n = poll(p, 2, *client_open ? -1 : (int) (PROXY_ENGINE_WAIT_CHECK_USEC / 1000));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0) {           /* the engine alone is watched: a look at the service */
                        if (conn_cut(c))
                                return -ESHUTDOWN;
                        continue;
                }
                if (p[1].revents && !hijack) {
                        /* gone, or only done sending: it still reads */
                        if (p[1].revents & (POLLHUP | POLLERR))
                                return 0;
                        *client_open = false;
                } else if (p[1].revents) {
                        ssize_t k = recv(c->fd, buf, PROXY_IO_BUFFER, 0);
                        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (k <= 0) {
                                *client_open = false;
                                (void) shutdown(up, SHUT_WR);
                        } else if ((r = proxy_send_all(up, buf, (size_t) k)) < 0)
                                return r;
                }
                if (p[0].revents)
                        return 1;
        }
}

/* The engine's bytes that need no look (a hijacked stream: attach, exec output; an answer without
 * framing, which ends where the connection does) move to the client through a pipe with splice(): no
 * copy through user space, and up to PROXY_PIPE_SIZE a system call. Until the engine closes (0) or the
 * client leaves. Without a pipe (-EMFILE, say), -EOPNOTSUPP before anything moved: the caller copies
 * instead. A chunked answer (logs, events, build output: what the engines send) is copied, since its
 * framing is read to know where it ends; an answer of known length mostly comes with its head. */
#define PROXY_PIPE_SIZE (1024U * 1024U)

static int relay_splice(ProxyConn *c, int up, bool hijack) {
        _cleanup_close_ int pipe_r = -EBADF, pipe_w = -EBADF;
        bool client_open = true, need_wait = hijack;
        int fds[2], r;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -EOPNOTSUPP;
        pipe_r = fds[0];
        pipe_w = fds[1];
        (void) fcntl(pipe_w, F_SETPIPE_SZ, PROXY_PIPE_SIZE);    /* a smaller pipe only costs more calls */

        for (;;) {
                /* hijacked: the client's side is served between reads; else the engine is read while it
                 * has something and waited for (watching the client) only when it has not */
                if (need_wait) {
                        r = relay_wait(c, up, hijack, &client_open);
                        if (r <= 0)
                                return r;
                }
                need_wait = hijack;
                ssize_t k = splice(up, NULL, pipe_w, NULL, PROXY_PIPE_SIZE, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
                if (k < 0 && errno == EAGAIN) {
                        need_wait = true;
                        continue;
                }
                /* less than asked: what was queued is all in the pipe, the next read waits first (as in
                 * relay(): no splice() that only finds EAGAIN) */
                if (k > 0 && (size_t) k < PROXY_PIPE_SIZE)
                        need_wait = true;
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0) {           /* the engine closed: the answer ends here */
                        (void) shutdown(c->fd, SHUT_WR);
                        return 0;
                }
                while (k > 0) {
                        ssize_t w = splice(pipe_r, NULL, c->fd, NULL, (size_t) k, SPLICE_F_MOVE);
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w <= 0)
                                return w < 0 ? -errno : -EPIPE;
                        k -= w;
                }
        }
}

/* Both ways until the engine is done: what the client sends goes to the engine when the stream is
 * hijacked (its stdin); otherwise the client is only watched for hanging up, and what it sends stays in the
 * socket (its next request, read after this answer; nothing after a request reaches the engine as part
 * of it). initial are response bytes that came with the head. Returns 1 when the response ended where
 * its framing says and nothing followed it (both connections may carry another request), 0 when it
 * ended otherwise (the engine closed, the client left). prefix (the response head, when its body is
 * chunked and part of it came with the head) goes out with the first bytes, in one sendmsg(), and the
 * request is journaled then. */
static int relay(ProxyConn *c, int up, bool hijack, const HttpResponseHead *h, bool head_request,
                 const char *initial, size_t n_initial, const char *prefix, size_t n_prefix) {
        HttpChunked ch = { .framing_unlimited = true };
        uint64_t left = h->length;
        char *buf = c->io;
        bool framed = !hijack && (h->chunked || h->has_length || head_request || h->status == 204 ||
                                  h->status == 304 || h->status < 200);
        bool client_open = true;
        /* an answer held to its end (c->hold_until_engine_done) is read without a client once it left:
         * the engine is not told (a shutdown() would make Podman cancel the request and close while its
         * build's steps still run in this process's network namespace) */
        bool client_gone = false;
        int r;

        if (framed && !h->chunked && (head_request || h->status == 204 || h->status == 304 || h->status < 200 || left == 0))
                return n_initial == 0;

        /* what needs no look goes by splice(): the bytes that came with the head first */
        if (!framed && n_prefix == 0) {
                if (n_initial > 0 && (r = proxy_send_all(c->fd, initial, n_initial)) < 0)
                        return r;
                r = relay_splice(c, up, hijack);
                if (r != -EOPNOTSUPP)
                        return r;
                n_initial = 0;
        }

        bool need_wait = hijack;
        for (;;) {
                const char *data;
                size_t n;

                if (n_initial > 0) {
                        data = initial;
                        n = MIN(n_initial, (size_t) PROXY_IO_BUFFER);
                        initial += n;
                        n_initial -= n;
                } else {
                        /* as relay_splice(): a stream that is not hijacked is read while the engine has
                         * something, and poll()ed only when it has not */
                        if (need_wait) {
                                r = relay_wait(c, up, hijack, &client_open);
                                if (r < 0)
                                        return r;
                                if (r == 0 && framed && c->hold_until_engine_done) {
                                        client_open = false;    /* relay_wait() watches the engine alone */
                                        client_gone = true;
                                        continue;
                                }
                                if (r == 0)
                                        return 0;
                        }
                        need_wait = hijack;
                        /* what the engine has sent so far, in one recv() and so one send(): a log stream
                         * comes in chunks of a few KB (a line each), and every send() wakes the client. A
                         * stream socket's recv() takes all that is queued up to the size asked: less means
                         * nothing is left, and the next read waits (poll()) without a recv() that only
                         * finds EAGAIN (one system call in four per wake-up of a log stream) */
                        n = 0;
                        for (;;) {
                                ssize_t k = recv(up, buf, PROXY_IO_BUFFER, hijack ? 0 : MSG_DONTWAIT);
                                if (k < 0 && errno == EINTR)
                                        continue;
                                if ((k < 0 && errno == EAGAIN) || (k > 0 && (size_t) k < PROXY_IO_BUFFER))
                                        need_wait = true;
                                if (k > 0)
                                        n = (size_t) k;
                                break;          /* the end or an error comes again after the data */
                        }
                        if (n == 0 && need_wait)
                                continue;
                        if (n == 0)
                                break;
                        data = buf;
                }

                bool done = false, surplus = false;
                if (framed && h->chunked) {
                        size_t out, used;
                        /* only the framing: the bytes go on as they came */
                        r = http_chunked_decode(&ch, data, n, NULL, &out, &used);
                        if (r < 0)
                                return r;
                        if (r == 1) {
                                surplus = used < n || n_initial > 0;
                                n = used;
                                done = true;
                        }
                } else if (framed) {
                        surplus = n > left || (n == left && n_initial > 0);
                        n = (size_t) MIN((uint64_t) n, left);
                        left -= n;
                        done = left == 0;
                }
                if (n_prefix > 0) {
                        r = proxy_send_two(c->fd, prefix, n_prefix, data, n);
                        n_prefix = 0;
                } else
                        r = client_gone ? 0 : proxy_send_all(c->fd, data, n);
                if (r < 0 && framed && c->hold_until_engine_done) {
                        client_open = false;
                        client_gone = true;
                } else if (r < 0)
                        return r;
                if (done)
                        return client_gone ? 0 : !surplus;      /* an engine that says more than it framed is not reused */
        }
        (void) shutdown(c->fd, SHUT_WR);
        return 0;
}

static bool header_line_is(const char *line, size_t len, const char *name) {
        size_t n = strlen(name);
        return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

/* The engine's response head as the client gets it: the engine's Connection and Keep-Alive headers
 * (about the engine connection) replaced by one about the client's. */
int proxy_response_head_for_client(const char *head, size_t size, bool keep_alive, char **ret, size_t *ret_size) {
        const char *end = head + size - 2, *line = head, *eol;  /* end: the empty line */
        char *buf, *p;

        buf = malloc(size + sizeof("Connection: keep-alive\r\n"));
        if (!buf)
                return -ENOMEM;
        p = buf;
        for (bool status_line = true; line < end; line = eol + 2, status_line = false) {
                eol = http_find_crlf(line, (size_t) (end + 2 - line));
                size_t len = (size_t) (eol - line);
                if (status_line || !(header_line_is(line, len, "Connection") || header_line_is(line, len, "Keep-Alive") ||
                                     header_line_is(line, len, "Proxy-Connection")))
                        p = mempcpy(p, line, len + 2);
        }
        p = stpcpy(p, keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n");
        *ret = buf;
        *ret_size = (size_t) (p - buf);
        return 0;
}

/* Whether a kept engine connection is still usable: idle, it has nothing to say; readable means the
 * engine closed it (or broke the protocol). */
static bool upstream_is_idle(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
        return poll(&p, 1, 0) == 0;
}

/* The rest of a (start's) answer after its head h, into buf (up to PROXY_RESPONSE_HEAD_MAX bytes in
 * all, at most PROXY_FROZEN_BODY_TIMEOUT_USEC): its body as framed, or until the engine closes. An
 * answer that does not fit is passed on as usual once the buffer is full; the engine has acted by then. */
#define PROXY_FROZEN_BODY_TIMEOUT_USEC (10ULL * 1000000ULL)

static void conn_read_whole_answer(ProxyConn *c, int up, char *buf, size_t *size, const HttpResponseHead *h, bool head_request) {
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + PROXY_FROZEN_BODY_TIMEOUT_USEC;

        if (head_request || h->status == 204 || h->status == 304 || h->status < 200 ||
            (h->has_length && !h->chunked && h->length == 0))
                return;
        while (*size < PROXY_RESPONSE_HEAD_MAX) {
                if (h->chunked) {
                        HttpChunked ch = { .framing_unlimited = true };
                        size_t out, used;
                        if (http_chunked_decode(&ch, buf + h->head_size, *size - h->head_size, NULL, &out, &used) != 0)
                                return;         /* ended, or malformed: relay() says so */
                } else if (h->has_length && *size - h->head_size >= h->length)
                        return;
                ssize_t k = proxy_recv_some(up, buf + *size, PROXY_RESPONSE_HEAD_MAX - *size, deadline);
                if (k <= 0) {
                        if (k < 0)
                                log_warning_errno((int) k, "Channel %s: the engine's answer to a start did not end, "
                                                  "thawing: %m", c->proxy->channel);
                        return;
                }
                *size += (size_t) k;
        }
}

/* Sends the request to the engine and streams the answer back. body NULL: the body is streamed from
 * the client (pending bytes first). The engine connection kept in c->up is used when it is still idle
 * and the request is not streamed (so that it can be sent again when the engine closed the kept
 * connection just then); one whose answer ended cleanly is kept for the next request. */
/* Reads and drops what the engine still sends until it closes the connection (or it fails). Our side is
 * shut first: the engine sees the client gone (Go's server cancels a request whose client did so) and
 * closes the connection once its answer is over instead of keeping it alive. A framed answer whose
 * client left is read to its end by relay() first, without that shutdown(): Podman, told, cancels a
 * build and closes while the build's steps still run (which one of the two came first was a race). */
static void drain_until_engine_done(ProxyConn *c, int up, char *buf) {
        (void) shutdown(up, SHUT_WR);
        while (engine_recv(c, up, buf, PROXY_IO_BUFFER) > 0)
                ;
}

int proxy_conn_forward(ProxyConn *c, const char *body, size_t body_size, const char *pending, size_t n_pending) {
        _cleanup_close_ int up = TAKE_FD(c->up);
        _cleanup_free_ char *head = NULL, *client_head = NULL;
        char *rbuf;
        bool hijack = proxy_path_is_hijack(c->head.method, c->target.unversioned);
        bool streamed = !body, head_request = streq(c->head.method, "HEAD");
        bool reused, may_resend = streq(c->head.method, "GET") || head_request;
        HttpResponseHead h = {};
        size_t head_size, rsize = 0, client_head_size = 0;
        int r;

        /* a request without a body whose head was awaited with the engine connection watched (and found
         * idle) goes on it without another look: what the engine did since is what a look just before
         * the send could miss too, and a GET or HEAD is sent again on a new connection then */
        bool looked = c->up_seen_idle && !c->head.chunked && c->content_length == 0;
        if (up >= 0 && (streamed || hijack || (!looked && !upstream_is_idle(up))))
                up = safe_close(up);
        r = format_upstream_head(c, hijack, streamed ? (c->head.chunked ? UINT64_MAX : c->content_length) : body_size,
                                 !streamed && (body_size > 0 || c->content_length > 0 || c->head.chunked), &head, &head_size);
        if (r < 0)
                return proxy_conn_reply(c, 500, NULL, "out of memory");
        if (!c->io)
                c->io = malloc(PROXY_IO_BUFFER);
        if (!c->io_scratch)
                c->io_scratch = malloc(PROXY_IO_BUFFER);
        if (!c->response_head)
                c->response_head = malloc(PROXY_RESPONSE_HEAD_MAX);
        if (!c->io || !c->io_scratch || !c->response_head)
                return proxy_conn_reply(c, 500, NULL, "out of memory");
        rbuf = c->response_head;

        for (;;) {
                reused = up >= 0;
                if (!reused) {
                        up = proxy_engine_connect(c->proxy);
                        if (up < 0) {
                                log_warning_errno(up, "Cannot connect to the engine at %s: %m", c->proxy->engine_socket);
                                return proxy_conn_reply(c, 502, NULL, "the engine is not reachable");
                        }
                }
                r = proxy_send_all(up, head, head_size);
                if (r >= 0 && !streamed && body_size > 0)
                        r = proxy_send_all(up, body, body_size);
                if (r < 0 && reused) {          /* the engine closed the kept connection: a new one */
                        up = safe_close(up);
                        continue;
                }
                if (r >= 0 && streamed)
                        r = stream_request_body(c, up, pending, n_pending);
                if (r == -EBADMSG || r == -EFBIG)
                        return proxy_conn_reply(c, 400, "parse", "malformed chunked body");
                if (r == -ETIMEDOUT)
                        return proxy_conn_reply(c, 408, "parse", "the request body stalled");
                if (r < 0) {
                        c->status = 502;
                        c->decision = "deny";
                        c->reason = strdup("the request could not be sent to the engine");
                        return r;
                }

                /* the response head, as the engine sends it */
                for (;;) {
                        ssize_t k = engine_recv(c, up, rbuf + rsize, PROXY_RESPONSE_HEAD_MAX - rsize);
                        if (k == -ESHUTDOWN) {
                                c->status = 503;
                                c->decision = "deny";
                                c->reason = strdup("the service stopped before the engine answered");
                                return -ESHUTDOWN;
                        }
                        if (k <= 0) {
                                r = -EPIPE;
                                break;
                        }
                        rsize += (size_t) k;
                        r = http_response_head_parse(rbuf, rsize, PROXY_RESPONSE_HEAD_MAX, &h);
                        if (r < 0)
                                return proxy_conn_reply(c, 502, NULL, "the engine's answer is malformed");
                        if (r > 0)
                                break;
                }
                if (r > 0)
                        break;
                /* closed without a byte of answer: a kept connection the engine dropped as we sent on it;
                 * only a request without side effects is sent again */
                if (reused && rsize == 0 && may_resend) {
                        up = safe_close(up);
                        continue;
                }
                return proxy_conn_reply(c, 502, NULL, "the engine closed the connection without an answer");
        }
        c->status = h.status;
        if (c->start_locked) {          /* also when there was nothing to freeze */
                /* the engine answers a start once the runtime has mounted; its whole answer is read
                 * before the channel is thawed and the client hears of it (an attach's stream is not
                 * an answer that ends: Podman initialised the container before it switched protocols) */
                if (!(hijack && (h.status == 101 || (h.status == 200 && h.stream_type))))
                        conn_read_whole_answer(c, up, rbuf, &rsize, &h, head_request);
                proxy_conn_thaw(c);
        }

        hijack = hijack && (h.status == 101 || (h.status == 200 && h.stream_type));
        bool framed = !hijack && (h.chunked || h.has_length || head_request || h.status == 204 || h.status == 304 ||
                                  h.status < 200);
        bool bodyless = head_request || h.status == 204 || h.status == 304 || h.status < 200;
        size_t extra = rsize - h.head_size, with_head = 0;
        /* a chunked body's first bytes, come with the head, go out with it (relay()) */
        bool head_with_chunks = framed && h.chunked && !bodyless && extra > 0;
        if (!framed)
                c->keep_alive = false;          /* the answer ends where the connection does */
        if (hijack)
                r = proxy_send_all(c->fd, rbuf, h.head_size);
        else {
                r = proxy_response_head_for_client(rbuf, h.head_size, c->keep_alive, &client_head, &client_head_size);
                /* a body of known length that came (part or whole) with the head goes out with it */
                if (framed && !bodyless && !h.chunked && h.has_length && extra <= h.length)
                        with_head = extra;
                if (r >= 0 && !head_with_chunks)
                        r = proxy_send_two(c->fd, client_head, client_head_size, rbuf + h.head_size, with_head);
        }
        /* journaled once the engine acted and the client has the head: the decision was made (and a
         * refusal journaled) before the request went to the engine. A stream (hijacked, or unframed) is
         * journaled now, as it may be long; a framed answer when the proxy would first wait for the
         * engine (record_pending() in relay_wait()) or at its end (proxy_conn_serve()), whichever
         * comes first: what the engine sent at once reaches the client without the record between. */
        if (!framed)
                record_pending(c);
        /* the client left before the head reached it: an answer that holds the proxy is read to its end
         * all the same when it is framed (relay() finds the client gone, the engine is not told) */
        if (r < 0 && !(framed && c->hold_until_engine_done)) {
                record_pending(c);
                if (c->hold_until_engine_done)
                        drain_until_engine_done(c, up, c->io_scratch);
                return r;
        }

        HttpResponseHead rest = h;
        rest.length -= with_head;
        r = relay(c, up, hijack, &rest, head_request, rbuf + h.head_size + with_head, extra - with_head,
                  head_with_chunks ? client_head : NULL, head_with_chunks ? client_head_size : 0);
        record_pending(c);
        if (r <= 0 && c->hold_until_engine_done)
                drain_until_engine_done(c, up, c->io_scratch);
        if (r < 0)
                return r;
        if (r == 0)
                c->keep_alive = false;
        else if (!h.close)
                c->up = TAKE_FD(up);
        return 0;
}
