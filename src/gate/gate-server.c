/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <sys/socket.h>

#include "gate-record.h"
#include "gate-server.h"
#include "list.h"
#include "log.h"
#include "json-util.h"

/* ---- connections ---- */

void gate_conn_free(GateConn *c) {
        GateServer *s;

        if (!c)
                return;
        s = c->server;
        LIST_REMOVE(s->connections, c);
        if (c->admin)
                s->n_admin--;
        else
                s->n_connections--;
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->fd);
        free(c->in);
        free(c->out);
        free(c);
        gate_server_update_idle(s);
}

/* Marks c to be freed; with a request waiting, that request is denied first (nobody will receive it,
 * but the decision is recorded). */
void gate_conn_close(GateConn *c) {
        GateServer *s = c->server;

        if (c->dead)
                return;
        c->dead = true;
        if (c->waiting_id > 0) {
                uint64_t id = c->waiting_id;
                c->waiting_id = 0;
                (void) gate_approvals_deny(s->approvals, id, "caller-gone", clock_usec(CLOCK_MONOTONIC));
        }
}

int gate_conn_flush(GateConn *c) {
        while (c->out_done < c->out_size) {
                ssize_t k = send(c->fd, c->out + c->out_done, c->out_size - c->out_done, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return sd_event_source_set_io_events(c->io, EPOLLIN | EPOLLRDHUP | EPOLLOUT);
                        return -errno;
                }
                c->out_done += (size_t) k;
        }
        c->out = mfree(c->out);
        c->out_size = c->out_done = 0;
        if (c->close_after_write)
                return -ECONNRESET;     /* done with it */
        return sd_event_source_set_io_events(c->io, EPOLLIN | EPOLLRDHUP);
}

int gate_conn_queue(GateConn *c, const char *data, size_t size) {
        char *p;

        p = realloc(c->out, c->out_size + size);
        if (!p)
                return -ENOMEM;
        memcpy(p + c->out_size, data, size);
        c->out = p;
        c->out_size += size;
        return 0;
}

int gate_conn_reply(GateConn *c, int status, json_object *body, bool keep_alive) {
        _cleanup_free_ char *buf = NULL;
        const char *text = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : NULL;
        size_t size;
        int r;

        if (c->dead)
                return 0;
        r = http_response_format(status, "application/json", text, text ? strlen(text) : 0, keep_alive, &buf, &size);
        if (r < 0)
                return r;
        r = gate_conn_queue(c, buf, size);
        if (r < 0)
                return r;
        if (!keep_alive)
                c->close_after_write = true;
        return 0;
}

json_object *gate_decision_json(bool allow, const char *actor, const char *reason, uint64_t id) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        json_object_object_add(o, "decision", json_object_new_string(allow ? "allow" : "deny"));
        json_object_object_add(o, "actor", json_object_new_string(strempty(actor)));
        json_object_object_add(o, "reason", json_object_new_string(strempty(reason)));
        if (id > 0)
                json_object_object_add(o, "id", json_object_new_uint64(id));
        return o;
}

/* {"error": message}: for the admin socket, and for audit reports, which are not decisions. */
int gate_conn_reply_error(GateConn *c, int status, const char *message, bool keep_alive) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "error", json_object_new_string(message));
        return gate_conn_reply(c, status, o, keep_alive);
}

/* A deny that never became a request: unauthorized, malformed, overloaded. */
int gate_conn_reply_deny(GateConn *c, int status, const char *reason, const char *container, bool keep_alive) {
        _cleanup_(json_object_putp) json_object *o = gate_decision_json(false, "gate", reason, 0);
        GateDecision d = { .container = container, .allow = false, .actor = "gate", .reason = reason };

        gate_record_decision(c->server->channel, AUDIT_GATE_DECISION, &d);
        if (!o)
                return -ENOMEM;
        return gate_conn_reply(c, status, o, keep_alive);
}

/* ---- I/O ---- */

static int connection_process(GateConn *c) {
        static const char continue_line[] = "HTTP/1.1 100 Continue\r\n\r\n";
        HttpLimits limits = {
                .header_size_max = GATE_HEADER_SIZE_MAX,
                .headers_max = GATE_HEADERS_MAX,
                .body_size_max = GATE_BODY_MAX,
        };

        /* One request at a time: while one waits or its answer is being written, the rest stays queued. */
        while (!c->dead && c->waiting_id == 0 && c->out_size == 0 && c->in_size > 0) {
                _cleanup_(http_request_done) HttpRequest req = {};
                HttpParseInfo info;
                size_t consumed;
                int status = 0, r;

                r = http_request_parse(c->in, c->in_size, &limits, &req, &consumed, &status, &info);
                if (r == 0) {
                        if (info.expect_continue && !c->sent_continue) {
                                c->sent_continue = true;
                                r = gate_conn_queue(c, continue_line, sizeof(continue_line) - 1);
                                if (r < 0)
                                        return r;
                        }
                        break;
                }
                if (r < 0) {
                        if (c->admin)
                                r = gate_conn_reply_error(c, status, http_status_reason(status), false);
                        else
                                r = gate_conn_reply_deny(c, status, "bad-request", NULL, false);
                        if (r < 0)
                                return r;
                        c->in_size = 0;
                        break;
                }

                memmove(c->in, c->in + consumed, c->in_size - consumed);
                c->in_size -= consumed;
                c->sent_continue = false;
                (void) sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);

                r = c->server->handle(c, &req);
                if (r < 0)
                        return r;
                if (c->waiting_id == 0 && c->out_size == 0)
                        /* nothing to say: cannot happen, but never leave a caller hanging */
                        return -EIO;
        }

        if (c->out_size > 0)
                return gate_conn_flush(c);
        if (c->waiting_id == 0)
                (void) sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
        return 0;
}

static int on_connection_io(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        GateConn *c = userdata;
        size_t cap = GATE_HEADER_SIZE_MAX + GATE_BODY_MAX;
        int r = 0;

        if (revents & EPOLLOUT) {
                r = gate_conn_flush(c);
                if (r < 0)
                        goto close;
        }

        if (revents & EPOLLIN) {
                for (;;) {
                        ssize_t k;

                        if (c->in_size >= cap) {
                                /* Only a client that sends more while it waits gets here. */
                                r = -ENOBUFS;
                                goto close;
                        }
                        k = recv(fd, c->in + c->in_size, cap - c->in_size, MSG_DONTWAIT);
                        if (k < 0) {
                                if (errno == EINTR)
                                        continue;
                                if (errno == EAGAIN)
                                        break;
                                r = -errno;
                                goto close;
                        }
                        if (k == 0) {
                                r = -ECONNRESET;
                                goto close;
                        }
                        c->in_size += (size_t) k;
                }
        } else if (revents & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) {
                r = -ECONNRESET;
                goto close;
        }

        r = connection_process(c);
        if (r < 0)
                goto close;
        if (c->dead)
                gate_conn_free(c);     /* updates the timers itself */
        else
                /* a request may have become pending: its deadline and the token checks start now */
                gate_server_update_idle(c->server);
        return 0;

close:
        if (r != -ECONNRESET)
                log_debug_errno(r, "Closing connection: %m");
        gate_conn_close(c);
        gate_conn_free(c);
        return 0;
}

static int on_connection_timeout(sd_event_source *src, uint64_t usec, void *userdata) {
        GateConn *c = userdata;

        if (c->waiting_id > 0)
                return 0;
        log_debug("Closing a connection that sent no complete request in time.");
        gate_conn_close(c);
        gate_conn_free(c);
        return 0;
}

void gate_server_on_accept(SocketService *service, int fd, const char *listener, void *userdata) {
        _cleanup_close_ int cfd = fd;
        GateServer *s = userdata;
        bool admin = streq(listener, "admin");
        struct ucred cred = {};
        socklen_t len = sizeof(cred);
        GateConn *c;
        int r;

        /* Over the cap: closing is a deny for the caller, and costs us nothing. */
        if (admin ? s->n_admin >= GATE_ADMIN_CONNECTIONS_MAX : s->n_connections >= GATE_CONNECTIONS_MAX) {
                log_warning("Too many %s connections, refusing one.", admin ? "admin" : "container");
                return;
        }
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                log_warning_errno(errno, "Cannot get the peer's credentials, refusing: %m");
                return;
        }

        c = calloc(1, sizeof(*c));
        if (!c || !(c->in = malloc(GATE_HEADER_SIZE_MAX + GATE_BODY_MAX))) {
                free(c);
                log_oom();
                return;
        }
        c->server = s;
        c->admin = admin;
        c->peer_uid = cred.uid;
        c->peer_pid = cred.pid;
        c->fd = TAKE_FD(cfd);
        LIST_PREPEND(s->connections, c);
        if (admin)
                s->n_admin++;
        else
                s->n_connections++;

        r = sd_event_add_io(s->event, &c->io, c->fd, EPOLLIN | EPOLLRDHUP, on_connection_io, c);
        if (r >= 0)
                r = sd_event_add_time_relative(s->event, &c->timer, CLOCK_MONOTONIC,
                                               GATE_REQUEST_TIMEOUT_USEC, 0, on_connection_timeout, c);
        if (r < 0) {
                log_warning_errno(r, "Cannot watch a new connection, closing it: %m");
                gate_conn_free(c);
                return;
        }
        gate_server_update_idle(s);
}

/* ---- timers ---- */

static void server_arm_deadline(GateServer *s) {
        uint64_t next = gate_approvals_next_deadline(s->approvals);

        if (next == UINT64_MAX) {
                (void) sd_event_source_set_enabled(s->deadline_timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time(s->deadline_timer, next);
        (void) sd_event_source_set_enabled(s->deadline_timer, SD_EVENT_ONESHOT);
}

static void server_arm_audit_timer(GateServer *s) {
        uint64_t next = MIN(audit_limiter_next_deadline(s->audit_limiter),
                            audit_limiter_next_deadline(s->unauth_limiter));

        if (next == UINT64_MAX) {
                (void) sd_event_source_set_enabled(s->audit_timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time(s->audit_timer, next);
        (void) sd_event_source_set_enabled(s->audit_timer, SD_EVENT_ONESHOT);
}

bool gate_server_busy(SocketService *service, void *userdata) {
        GateServer *s = userdata;

        return s->connections || gate_approvals_n_pending(s->approvals) > 0 || s->n_webhooks > 0 ||
                gate_approvals_n_containers(s->approvals) > 0 ||
                audit_limiter_n_keys(s->audit_limiter) > 0 ||   /* a summary may be due */
                audit_limiter_n_keys(s->unauth_limiter) > 0;
}

void gate_server_update_idle(GateServer *s) {
        if (!s->service)
                return;         /* being torn down */
        server_arm_deadline(s);
        server_arm_audit_timer(s);
        (void) sd_event_source_set_enabled(s->recheck_timer,
                                           gate_approvals_n_containers(s->approvals) > 0 ? SD_EVENT_ON : SD_EVENT_OFF);
        socket_service_update_idle(s->service);
}
