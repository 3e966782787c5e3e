/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helper-call.h"
#include "json-util.h"
#include "macro.h"
#include "socket-util.h"

static int send_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

json_object *helper_line_parse_object(const char *text, size_t size, size_t size_max) {
        json_object *o = NULL;

        if (json_parse_untrusted(text, size, size_max, HELPER_CALL_JSON_DEPTH_MAX, false, &o, NULL) < 0)
                return NULL;
        if (!json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

int helper_call(const char *socket_path, uint64_t timeout_usec, json_object *request, size_t request_max,
                size_t answer_max, json_object **ret_answer, const char **ret_failure) {
        _cleanup_free_ char *buf = NULL, *line = NULL;
        _cleanup_close_ int fd = -EBADF;
        const char *text;
        json_object *answer;
        size_t size = 0, text_size;
        int r;

        *ret_failure = NULL;
        text = json_object_to_json_string_ext(request, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text)
                return -ENOMEM;
        text_size = strlen(text);
        if (text_size > request_max)
                return -EMSGSIZE;
        line = malloc(text_size + 1);
        buf = malloc(answer_max + 1);
        if (!line || !buf)
                return -ENOMEM;

        fd = unix_connect(socket_path, 0, timeout_usec);
        if (fd < 0) {
                *ret_failure = "cannot be reached";
                return fd;
        }
        /* the line in one send(), MSG_NOSIGNAL: a helper that closed early is an error here, not SIGPIPE
         * for the caller */
        memcpy(line, text, text_size);
        line[text_size] = '\n';
        r = send_all(fd, line, text_size + 1);
        if (r < 0) {
                *ret_failure = "went away";
                return r;
        }
        for (;;) {
                ssize_t k = read(fd, buf + size, answer_max - size);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        *ret_failure = "did not answer";
                        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
                }
                if (k == 0)
                        break;
                size += (size_t) k;
                if (memchr(buf + size - (size_t) k, '\n', (size_t) k))
                        break;
                if (size >= answer_max) {
                        *ret_failure = "sent an answer that is too large";
                        return -E2BIG;
                }
        }
        if (size == 0) {
                *ret_failure = "ended the call without an answer";
                return -ECONNRESET;
        }
        answer = helper_line_parse_object(buf, size, answer_max);
        if (!answer) {
                *ret_failure = "sent an answer that cannot be read";
                return -EBADMSG;
        }
        *ret_answer = answer;
        return 0;
}
