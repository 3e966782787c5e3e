/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <poll.h>
#include <systemd/sd-daemon.h>

#include "dockerproxy-conn.h"
#include "dockerproxy-pin.h"
#include "dockerproxy-record.h"
#include "io-util.h"
#include "strv.h"

/* ---- I/O ---- */

int proxy_send_all(int fd, const void *data, size_t size) {
        const char *p = data;

        while (size > 0) {
                ssize_t k = send(fd, p, size, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                p += k;
                size -= (size_t) k;
        }
        return 0;
}

/* Two buffers in one sendmsg() where the socket takes them: a response head and the body that came with
 * it reach the client in one wake-up, not two. */
int proxy_send_two(int fd, const void *a, size_t a_size, const void *b, size_t b_size) {
        struct iovec iov[2] = { { .iov_base = (void *) a, .iov_len = a_size }, { .iov_base = (void *) b, .iov_len = b_size } };
        struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };

        while (iov[0].iov_len + iov[1].iov_len > 0) {
                ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                for (size_t i = 0; i < 2; i++) {
                        size_t n = MIN((size_t) k, iov[i].iov_len);
                        iov[i].iov_base = (char *) iov[i].iov_base + n;
                        iov[i].iov_len -= n;
                        k -= (ssize_t) n;
                }
                if (iov[0].iov_len == 0) {      /* sendmsg() takes the first entry first */
                        m.msg_iov = &iov[1];
                        m.msg_iovlen = 1;
                }
        }
        return 0;
}

/* Without a deadline the (blocking) socket is read at once: no poll() before it. */
ssize_t proxy_recv_some(int fd, void *buf, size_t size, uint64_t deadline) {
        for (;;) {
                int r = deadline == UINT64_MAX ? 0 : fd_wait_until(fd, POLLIN, deadline);
                if (r < 0)
                        return r;
                ssize_t k = recv(fd, buf, size, 0);
                if (k < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                return k < 0 ? -errno : k;
        }
}

/* The wait for a kept connection's next request watches the engine connection kept from the last one
 * too, in the same poll(): one the engine closed (or that has something unasked to say) is dropped here,
 * and one that stayed idle need not be looked at again before the request goes on it (proxy_conn_forward()).
 * 1: the client has something, 0: the deadline came (the caller's read finds out), < 0: an error. */
static int conn_wait_with_engine(ProxyConn *c) {
        for (;;) {
                struct pollfd p[2] = { { .fd = c->fd, .events = POLLIN }, { .fd = c->up, .events = POLLIN | POLLRDHUP } };
                uint64_t now = clock_usec(CLOCK_MONOTONIC);
                int timeout = -1, k;

                if (c->deadline_usec != UINT64_MAX) {
                        if (now >= c->deadline_usec)
                                return 0;
                        timeout = (int) MIN((c->deadline_usec - now + 999) / 1000, (uint64_t) INT32_MAX);
                }
                k = poll(p, c->up >= 0 ? 2 : 1, timeout);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (c->up >= 0 && p[1].revents) {
                        c->up = safe_close(c->up);
                        continue;
                }
                if (k > 0) {
                        c->up_seen_idle = c->up >= 0;
                        return 1;
                }
        }
}

/* Reads more of the request into c->in, growing it up to its cap; -EFBIG when that is full, 0 at EOF. */
ssize_t proxy_conn_read_more(ProxyConn *c) {
        const size_t cap = PROXY_HEADER_SIZE_MAX + PROXY_BODY_MAX + HTTP_CHUNKED_FRAMING_MAX;
        ssize_t k;

        if (c->in_size >= c->in_allocated) {
                size_t n = MIN(MAX(c->in_allocated * 2, (size_t) PROXY_IN_INITIAL), cap);
                char *p;
                if (c->in_allocated >= cap)
                        return -EFBIG;
                p = realloc(c->in, n);
                if (!p)
                        return -ENOMEM;
                c->in = p;
                c->in_allocated = n;
        }
        if (c->in_size == 0 && c->up >= 0 && c->deadline_usec != UINT64_MAX) {
                int r = conn_wait_with_engine(c);
                if (r < 0)
                        return r;
                if (r > 0) {            /* readable: read at once, no second poll() */
                        k = recv(c->fd, c->in, c->in_allocated, 0);
                        if (k < 0 && errno != EINTR && errno != EAGAIN)
                                return -errno;
                        if (k >= 0) {
                                c->in_size += (size_t) k;
                                return k;
                        }
                }
        }
        k = proxy_recv_some(c->fd, c->in + c->in_size, c->in_allocated - c->in_size, c->deadline_usec);
        if (k > 0)
                c->in_size += (size_t) k;
        return k;
}

/* ---- answers of the proxy itself ---- */

/* An answer of the proxy's own: status and a JSON body; reason is what the journal says. Every error
 * status is a deny in the record, whatever was decided before (a 502 after an allow included). */
int proxy_conn_reply_body(ProxyConn *c, int status, const char *rule, const char *reason, const char *body) {
        _cleanup_free_ char *buf = NULL;
        size_t size;
        int r;

        proxy_conn_thaw(c);
        c->status = status;
        if (rule)
                c->rule = rule;
        if (status >= 400 || !c->decision)
                c->decision = status < 400 ? "allow" : "deny";
        /* a request answered before its body was read ends its connection: the rest is not a request */
        if (!c->complete)
                c->keep_alive = false;
        r = http_response_format(status, "application/json", body, strlen(body), c->keep_alive, &buf, &size);
        if (r < 0)
                return r;
        if (!c->reason)
                c->reason = strdup(reason);
        /* journaled before the caller hears of it, like the gate's decisions */
        proxy_conn_record(c);
        c->rule = NULL;
        return proxy_send_all(c->fd, buf, size);
}

/* {"message": "..."}: what the docker CLI prints for an error. */
int proxy_conn_reply(ProxyConn *c, int status, const char *rule, const char *message) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        _cleanup_free_ char *text = NULL;

        if (asprintf(&text, "loop-dockerproxy: %s", message) < 0 || !o)
                return -ENOMEM;
        json_object_object_add(o, "message", json_object_new_string(text));
        return proxy_conn_reply_body(c, status, rule, message, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
}

/* An answer of the proxy's own for an allowed request (a default network, the network list). */
int proxy_conn_answer_json(ProxyConn *c, json_object *o) {
        _cleanup_free_ char *buf = NULL;
        const char *body = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        size_t size;
        int r;

        r = http_response_format(200, "application/json", body, strlen(body), c->keep_alive, &buf, &size);
        if (r < 0)
                return proxy_conn_reply(c, 500, NULL, "out of memory");
        c->status = 200;
        r = proxy_send_all(c->fd, buf, size);
        proxy_conn_record(c);
        c->rule = NULL;
        return r;
}

/* ---- the engine ---- */

/* A client of the engine for the proxy's own questions (inspect, list), with their time limit. */
int proxy_engine_open(DockerProxy *p, Engine **ret) {
        int r = engine_new(p->engine_socket, ret);

        if (r >= 0)
                engine_set_timeout(*ret, PROXY_ENGINE_TIMEOUT_SEC);
        return r;
}

/* The inspect reply of a container, or an answer to the client saying why there is none. */
int proxy_conn_inspect_container(ProxyConn *c, const char *ref, json_object **ret) {
        _cleanup_(engine_freep) Engine *e = NULL;
        int r;

        r = proxy_engine_open(c->proxy, &e);
        if (r < 0)
                return proxy_conn_reply(c, 500, "engine", "out of memory"), r;
        r = engine_container_inspect(e, ref, ret);
        if (r < 0)
                return proxy_conn_reply(c, 502, "engine", "the engine cannot be asked about the container"), r;
        return 0;
}

/* After refusing a request whose body the client is still sending (a build context, say), read and drop
 * the rest for a while, so that the client reads the answer instead of a broken pipe. Bounded in time
 * and bytes: a client cannot keep a worker this way. */
#define PROXY_LINGER_USEC (5ULL * 1000000ULL)
#define PROXY_LINGER_BYTES (256ULL * 1024ULL * 1024ULL)

void proxy_lingering_close(int fd) {
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + PROXY_LINGER_USEC, total = 0;
        char buf[16384];

        (void) shutdown(fd, SHUT_WR);
        while (total < PROXY_LINGER_BYTES) {
                ssize_t k = proxy_recv_some(fd, buf, sizeof(buf), deadline);
                if (k <= 0)
                        break;
                total += (uint64_t) k;
        }
}

/* Ready for the connection's next request: what this one left in the buffer (a pipelined request)
 * moves to its start, the rest of the per-request state is cleared. */
void proxy_conn_next_request(ProxyConn *c) {
        assert(c->complete && c->consumed <= c->in_size);
        memmove(c->in, c->in + c->consumed, c->in_size - c->consumed);
        c->in_size -= c->consumed;
        http_request_done(&c->head);
        c->head = (HttpRequest) {};
        /* a query that stayed empty (most requests have none, and nothing was added) is the next one's */
        if (c->target.query && json_object_object_length(c->target.query) == 0 && !c->spare_query)
                c->spare_query = json_object_get(c->target.query);
        proxy_target_done(&c->target);
        c->head_size = 0;
        c->content_length = 0;
        c->complete = false;
        c->consumed = 0;
        c->keep_alive = false;
        c->rule = NULL;
        c->decision = NULL;
        c->actor = NULL;
        c->actor_owned = mfree(c->actor_owned);
        c->reason = mfree(c->reason);
        json_object_put(c->default_network);
        c->default_network = NULL;
        c->status = 0;
        c->froze = false;
        c->n_frozen = 0;
        c->frozen_usec = 0;
        c->hold_until_engine_done = false;
        c->body_changed = false;
        c->fields = mfree(c->fields);
        c->up_seen_idle = false;
        c->n_requests++;
        c->start_usec = 0;      /* set when the next request's first byte is in */
        c->deadline_usec = clock_usec(CLOCK_MONOTONIC) + PROXY_KEEPALIVE_IDLE_USEC;
}

int proxy_conn_new(DockerProxy *p, SocketConnection *sc, int fd, ProxyConn **ret) {
        struct ucred cred = {};
        socklen_t len = sizeof(cred);
        ProxyConn *c;

        c = calloc(1, sizeof(ProxyConn));
        if (!c)
                return -ENOMEM;
        c->proxy = p;
        c->sc = sc;
        c->fd = fd;
        c->up = -EBADF;
        c->frozen_root_fd = -EBADF;
        (void) getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
        c->peer_pid = len == sizeof(cred) ? cred.pid : 0;
        c->peer_uid = len == sizeof(cred) ? cred.uid : (uid_t) -1;
        c->peer_gid = len == sizeof(cred) ? cred.gid : (gid_t) -1;
        c->start_usec = clock_usec(CLOCK_MONOTONIC);
        c->deadline_usec = c->start_usec + PROXY_HEAD_TIMEOUT_USEC;
        c->in_allocated = PROXY_IN_INITIAL;
        c->in = malloc(c->in_allocated);
        if (!c->in) {
                free(c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

ProxyConn *proxy_conn_free(ProxyConn *c) {
        if (!c)
                return NULL;
        /* c->fd is the skeleton's (or the caller's) */
        safe_close(c->up);
        safe_close(c->frozen_root_fd);
        http_request_done(&c->head);
        proxy_target_done(&c->target);
        free(c->reason);
        free(c->fields);
        json_object_put(c->default_network);
        json_object_put(c->empty_body);
        json_object_put(c->spare_query);
        strv_free(c->frozen);
        free(c->peer_name);
        free(c->http_verdict_path);
        free(c->actor_owned);
        free(c->in);
        free(c->io);
        free(c->io_scratch);
        free(c->response_head);
        free(c);
        return NULL;
}

int proxy_conn_empty_body(ProxyConn *c, json_object **ret) {
        if (!c->empty_body) {
                c->empty_body = json_object_new_object();
                if (!c->empty_body)
                        return -ENOMEM;
        }
        assert(json_object_object_length(c->empty_body) == 0);
        *ret = json_object_get(c->empty_body);
        return 0;
}

int proxy_conn_head_begin(ProxyConn *c) {
        return c->sc ? socket_connection_head_begin(c->sc) : 0;
}

void proxy_conn_head_end(ProxyConn *c) {
        if (c->sc)
                (void) socket_connection_head_end(c->sc);
}

bool proxy_conn_head_expired(ProxyConn *c) {
        return c->sc && socket_connection_head_expired(c->sc);
}

bool proxy_conn_stopping(ProxyConn *c) {
        return c->sc && socket_service_stopping(socket_connection_service(c->sc));
}
