/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cdp.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "time-util.h"

#define CDP_ERROR_TEXT_MAX 1024U                /* Chrome's error messages are one line */
#define CDP_BUFFER_KEEP (1024U * 1024U)         /* a larger buffer is given back after its message */
#define CDP_PUMP_READS_MAX 64U                  /* reads of one cdp_pump(c, 0) */
#define CDP_SEND_TIMEOUT_USEC (5U * 1000000ULL)  /* a pipe Chrome does not read for this long is broken */

struct Cdp {
        int read_fd, write_fd;
        bool write_not_socket;                  /* send() said ENOTSOCK: a pipe, write() from now on */

        char *chunk;                            /* CDP_READ_CHUNK bytes, one read() */
        char *buf;                              /* the message being received, without its NUL */
        size_t len, alloc;
        bool skipping;                          /* the current message went over CDP_MESSAGE_MAX */

        int closed;                             /* 0, or the error every call now fails with */
        bool in_handler;
        uint64_t next_id;
        uint64_t dropped;

        CdpEventHandler handler;
        void *userdata;

        /* the call waiting for its answer (wait_id 0: none) */
        uint64_t wait_id;
        bool answered, oversized;
        json_object *result;
        char *error;
};

int cdp_new(int read_fd, int write_fd, Cdp **ret) {
        _cleanup_(cdp_freep) Cdp *c = NULL;

        assert(ret);
        if (read_fd < 0 || write_fd < 0)
                return -EBADF;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (Cdp) { .read_fd = read_fd, .write_fd = write_fd, .next_id = 1 };
        c->chunk = malloc(CDP_READ_CHUNK);
        if (!c->chunk)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

Cdp *cdp_free(Cdp *c) {
        if (!c)
                return NULL;
        free(c->chunk);
        free(c->buf);
        json_object_put(c->result);
        free(c->error);
        return mfree(c);
}

void cdp_set_event_handler(Cdp *c, CdpEventHandler handler, void *userdata) {
        assert(c);
        c->handler = handler;
        c->userdata = userdata;
}

bool cdp_is_closed(Cdp *c) {
        return c->closed != 0;
}

uint64_t cdp_messages_dropped(Cdp *c) {
        return c->dropped;
}

static bool cdp_name_valid(const char *s, size_t max) {
        size_t n = strnlen(s, max + 1);

        if (n == 0 || n > max)
                return false;
        for (size_t i = 0; i < n; i++)
                if (s[i] <= ' ' || s[i] >= 0x7f || s[i] == '"' || s[i] == '\\')
                        return false;
        return true;
}

static void cdp_drop(Cdp *c, const char *why) {
        c->dropped++;
        log_debug("CDP: dropped a message from Chrome: %s", why);
}

static void cdp_handle_response(Cdp *c, uint64_t id, json_object *o) {
        json_object *result, *error, *message;

        if (c->wait_id == 0 || id != c->wait_id || c->answered)
                return;         /* the answer to a call that timed out: nobody waits for it */

        if (json_object_object_get_ex(o, "error", &error)) {
                const char *m = json_object_object_get_ex(error, "message", &message) &&
                                json_object_is_type(message, json_type_string) ?
                                json_object_get_string(message) : "(no message)";
                c->error = strndup(m, CDP_ERROR_TEXT_MAX);
                if (!c->error)
                        return;         /* the call runs into its timeout */
        } else if (json_object_object_get_ex(o, "result", &result) &&
                   json_object_is_type(result, json_type_object))
                c->result = json_object_get(result);
        else {
                c->result = json_object_new_object();
                if (!c->result)
                        return;
        }
        c->answered = true;
}

static void cdp_handle_event(Cdp *c, const char *method, json_object *o) {
        _cleanup_(json_object_putp) json_object *empty = NULL;
        json_object *params, *sid;
        const char *session_id = NULL;

        if (!cdp_name_valid(method, CDP_METHOD_MAX))
                return cdp_drop(c, "bad method name");
        if (json_object_object_get_ex(o, "sessionId", &sid)) {
                if (!json_object_is_type(sid, json_type_string) ||
                    !cdp_name_valid(json_object_get_string(sid), CDP_SESSION_ID_MAX))
                        return cdp_drop(c, "bad session id");
                session_id = json_object_get_string(sid);
        }
        if (!json_object_object_get_ex(o, "params", &params) || !json_object_is_type(params, json_type_object)) {
                params = empty = json_object_new_object();
                if (!empty)
                        return cdp_drop(c, "out of memory");
        }
        if (!c->handler)
                return;
        c->in_handler = true;
        c->handler(session_id, method, params, c->userdata);
        c->in_handler = false;
}

static void cdp_handle_message(Cdp *c, const char *text, size_t size) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        json_tokener *tok;
        json_object *id, *method;
        bool complete;

        tok = json_tokener_new_ex(CDP_JSON_DEPTH_MAX);
        if (!tok)
                return cdp_drop(c, "out of memory");
        o = json_tokener_parse_ex(tok, text, (int) size);
        complete = json_tokener_get_error(tok) == json_tokener_success;
        if (complete)
                for (size_t i = json_tokener_get_parse_end(tok); i < size; i++)
                        if (!strchr(" \t\r\n", text[i]))
                                complete = false;
        json_tokener_free(tok);
        if (!complete || !json_object_is_type(o, json_type_object))
                return cdp_drop(c, "not a JSON object");

        if (json_object_object_get_ex(o, "id", &id)) {
                int64_t v;

                if (!json_object_is_type(id, json_type_int))
                        return cdp_drop(c, "id is not an integer");
                v = json_object_get_int64(id);
                if (v <= 0)
                        return cdp_drop(c, "id out of range");
                return cdp_handle_response(c, (uint64_t) v, o);
        }
        if (json_object_object_get_ex(o, "method", &method) && json_object_is_type(method, json_type_string))
                return cdp_handle_event(c, json_object_get_string(method), o);
        cdp_drop(c, "neither an answer nor an event");
}

static int cdp_append(Cdp *c, const char *data, size_t n) {
        if (n == 0)
                return 0;
        if (c->len + n > c->alloc) {
                size_t a = MAX(c->alloc * 2, c->len + n);
                char *p;

                a = MIN(MAX(a, (size_t) 4096), (size_t) CDP_MESSAGE_MAX);
                p = realloc(c->buf, a);
                if (!p)
                        return -ENOMEM;
                c->buf = p;
                c->alloc = a;
        }
        memcpy(c->buf + c->len, data, n);
        c->len += n;
        return 0;
}

int cdp_feed(Cdp *c, const void *data, size_t size) {
        const char *p = data;
        int r;

        assert(c);
        while (size > 0) {
                const char *nul = memchr(p, 0, size);
                size_t n = nul ? (size_t) (nul - p) : size;

                if (!c->skipping && c->len + n > CDP_MESSAGE_MAX) {
                        c->skipping = true;
                        c->len = 0;
                }
                if (!c->skipping) {
                        r = cdp_append(c, p, n);
                        if (r < 0)
                                return r;
                }
                if (nul) {
                        if (c->skipping) {
                                c->skipping = false;
                                c->oversized = true;
                                cdp_drop(c, "message above CDP_MESSAGE_MAX");
                        } else if (c->len > 0)
                                cdp_handle_message(c, c->buf, c->len);
                        c->len = 0;
                        if (c->alloc > CDP_BUFFER_KEEP) {
                                c->buf = mfree(c->buf);
                                c->alloc = 0;
                        }
                        n++;
                }
                p += n;
                size -= n;
        }
        return 0;
}

static int cdp_fail(Cdp *c, int error) {
        if (c->closed == 0)
                c->closed = error;
        return c->closed;
}

/* Waits until Chrome's end is readable (or deadline), reads once and dispatches. 0 after a read,
 * -ETIMEDOUT, -ECONNRESET at EOF, or -errno. deadline 0: only if readable now. */
static int cdp_read_some(Cdp *c, uint64_t deadline) {
        ssize_t k;
        int r;

        if (c->closed != 0)
                return c->closed;
        if (deadline == 0) {
                struct pollfd p = { .fd = c->read_fd, .events = POLLIN };

                r = poll(&p, 1, 0);
                if (r < 0)
                        return errno == EINTR ? -ETIMEDOUT : -errno;
                if (r == 0)
                        return -ETIMEDOUT;
        } else {
                r = fd_wait_until(c->read_fd, POLLIN, deadline);
                if (r < 0)
                        return r;
        }
        k = read(c->read_fd, c->chunk, CDP_READ_CHUNK);
        if (k < 0) {
                if (errno == EINTR || errno == EAGAIN)
                        return 0;
                return cdp_fail(c, errno == ECONNRESET ? -ECONNRESET : -errno);
        }
        if (k == 0)
                return cdp_fail(c, -ECONNRESET);
        return cdp_feed(c, c->chunk, (size_t) k);
}

static int cdp_write_all(Cdp *c, const char *p, size_t n, uint64_t deadline) {
        while (n > 0) {
                ssize_t k;
                int r;

                if (!c->write_not_socket) {
                        k = send(c->write_fd, p, n, MSG_NOSIGNAL);
                        if (k < 0 && errno == ENOTSOCK) {
                                c->write_not_socket = true;
                                continue;
                        }
                } else
                        k = write(c->write_fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return -errno;
                        r = fd_wait_until(c->write_fd, POLLOUT, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* Writes one call; its id in *ret_id. */
static int cdp_write_call(Cdp *c, const char *session_id, const char *method, json_object *params,
                          uint64_t deadline, uint64_t *ret_id) {
        _cleanup_(json_object_putp) json_object *m = NULL;
        const char *text;
        uint64_t id;
        size_t size;
        int r;

        if (!cdp_name_valid(method, CDP_METHOD_MAX) ||
            (session_id && !cdp_name_valid(session_id, CDP_SESSION_ID_MAX)) ||
            (params && !json_object_is_type(params, json_type_object)))
                return -EINVAL;
        if (c->closed != 0)
                return c->closed;

        id = c->next_id++;
        m = json_object_new_object();
        if (!m)
                return -ENOMEM;
        r = json_add(m, "id", json_object_new_int64((int64_t) id));
        r = r < 0 ? r : json_add(m, "method", json_object_new_string(method));
        r = r < 0 ? r : json_add(m, "params", params ? json_object_get(params) : json_object_new_object());
        if (session_id)
                r = r < 0 ? r : json_add(m, "sessionId", json_object_new_string(session_id));
        if (r < 0)
                return r;
        text = json_object_to_json_string_length(m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &size);
        if (!text)
                return -ENOMEM;

        /* the text's own NUL ends the message */
        r = cdp_write_all(c, text, size + 1, deadline);
        if (r < 0)
                /* a message cut in the middle leaves the stream unusable, whatever the reason */
                return cdp_fail(c, r == -ECONNRESET ? r : -EPIPE);
        *ret_id = id;
        return 0;
}

int cdp_send(Cdp *c, const char *session_id, const char *method, json_object *params) {
        uint64_t id;

        assert(c);
        assert(method);
        return cdp_write_call(c, session_id, method, params, clock_usec(CLOCK_MONOTONIC) + CDP_SEND_TIMEOUT_USEC, &id);
}

int cdp_call(Cdp *c, const char *session_id, const char *method, json_object *params,
             uint64_t timeout_usec, json_object **ret_result, char **ret_error) {
        uint64_t id, deadline;
        int r;

        assert(c);
        assert(method);
        if (c->in_handler || c->wait_id != 0)
                return -EBUSY;

        deadline = clock_usec(CLOCK_MONOTONIC) + timeout_usec;
        r = cdp_write_call(c, session_id, method, params, deadline, &id);
        if (r < 0)
                return r;

        c->wait_id = id;
        c->answered = c->oversized = false;
        while (!c->answered) {
                r = cdp_read_some(c, deadline);
                if (r >= 0 && !c->answered && c->oversized)
                        r = -EMSGSIZE;
                if (r < 0)
                        break;
        }
        c->wait_id = 0;
        if (r < 0 && !c->answered)
                return r;

        if (c->error) {
                if (ret_error)
                        *ret_error = TAKE_PTR(c->error);
                c->error = mfree(c->error);
                return -EPROTO;
        }
        if (ret_result)
                *ret_result = TAKE_PTR(c->result);
        json_object_put(TAKE_PTR(c->result));
        return 0;
}

int cdp_pump(Cdp *c, uint64_t timeout_usec) {
        uint64_t deadline;
        int r;

        assert(c);
        if (c->in_handler || c->wait_id != 0)
                return -EBUSY;
        if (timeout_usec == 0) {
                for (unsigned i = 0; i < CDP_PUMP_READS_MAX; i++) {
                        r = cdp_read_some(c, 0);
                        if (r == -ETIMEDOUT)
                                return 0;
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        deadline = clock_usec(CLOCK_MONOTONIC) + timeout_usec;
        for (;;) {
                r = cdp_read_some(c, deadline);
                if (r == -ETIMEDOUT)
                        return 0;
                if (r < 0)
                        return r;
        }
}

int cdp_pump_until(Cdp *c, CdpDonePredicate done, void *userdata, uint64_t timeout_usec) {
        uint64_t deadline;
        int r;

        assert(c);
        assert(done);
        if (c->in_handler || c->wait_id != 0)
                return -EBUSY;
        deadline = clock_usec(CLOCK_MONOTONIC);
        deadline = timeout_usec > UINT64_MAX - deadline ? UINT64_MAX : deadline + timeout_usec;
        while (!done(userdata)) {
                /* sleeps in poll() until Chrome's end is readable: the predicate is asked after each read */
                r = cdp_read_some(c, deadline);
                if (r == -ETIMEDOUT)
                        return 0;
                if (r < 0)
                        return r;
        }
        return 1;
}
