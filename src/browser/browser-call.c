/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "browser-call.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "string-util.h"

void browser_request_done(BrowserRequest *r) {
        if (r->token)
                explicit_bzero(r->token, strlen(r->token));
        r->token = mfree(r->token);
        r->tool = mfree(r->tool);
        json_object_put(r->args);
        r->args = NULL;
}

static json_object *parse_object(const char *text, size_t size) {
        json_tokener *tok;
        json_object *o;
        bool ok;

        if (size > INT32_MAX)
                return NULL;
        tok = json_tokener_new_ex(BROWSER_JSON_DEPTH_MAX);
        if (!tok)
                return NULL;
        o = json_tokener_parse_ex(tok, text, (int) size);
        ok = json_tokener_get_error(tok) == json_tokener_success &&
             json_tokener_get_parse_end(tok) == size;
        json_tokener_free(tok);
        if (!ok || !json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

int browser_request_parse(const char *text, size_t size, BrowserRequest *ret, const char **ret_reason) {
        _cleanup_(json_object_putp) json_object *req = NULL;
        json_object *token, *tool, *args = NULL;
        BrowserRequest r = {};

        if (size > BROWSER_REQUEST_MAX) {
                *ret_reason = "the request is too large";
                return -E2BIG;
        }
        req = parse_object(text, size);
        if (!req ||
            !json_object_object_get_ex(req, "token", &token) || !json_object_is_type(token, json_type_string) ||
            !json_object_object_get_ex(req, "tool", &tool) || !json_object_is_type(tool, json_type_string) ||
            (json_object_object_get_ex(req, "args", &args) && args && !json_object_is_type(args, json_type_object))) {
                *ret_reason = "the request is not {\"token\": \"...\", \"tool\": \"...\", \"args\": {...}}";
                return -EINVAL;
        }
        if ((size_t) json_object_get_string_len(tool) > BROWSER_TOOL_NAME_MAX) {
                *ret_reason = "the tool name is too long";
                return -EINVAL;
        }
        r.token = strdup(json_object_get_string(token));
        r.tool = strdup(json_object_get_string(tool));
        r.args = args ? json_object_get(args) : json_object_new_object();
        if (!r.token || !r.tool || !r.args) {
                browser_request_done(&r);
                return -ENOMEM;
        }
        *ret = r;
        return 0;
}

static int format_plain(json_object *o, char **ret) {
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        char *s;

        if (!text || !(s = strdup(text)))
                return -ENOMEM;
        *ret = s;
        return 0;
}

int browser_answer_format(const McpToolResult *result, char **ret) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o || json_object_object_add(o, "ok", json_object_new_boolean(true)) < 0 ||
            json_object_object_add(o, "text", json_object_new_string(result->text ?: "")) < 0 ||
            json_object_object_add(o, "isError", json_object_new_boolean(result->is_error)) < 0)
                return -ENOMEM;
        if (result->image &&
            (json_object_object_add(o, "image", json_object_new_string(result->image)) < 0 ||
             json_object_object_add(o, "mimeType", json_object_new_string(strempty(result->image_mime_type))) < 0))
                return -ENOMEM;
        return format_plain(o, ret);
}

int browser_answer_format_refusal(const char *error, char **ret) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();

        if (!o || json_object_object_add(o, "ok", json_object_new_boolean(false)) < 0 ||
            json_object_object_add(o, "error", json_object_new_string(error)) < 0)
                return -ENOMEM;
        return format_plain(o, ret);
}

static int browser_connect(const char *path, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = BROWSER_CALL_TIMEOUT_SEC };

        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The request line in one go, without SIGPIPE when the service closed first (it refused, or died):
 * the caller gets -EPIPE and answers the agent, instead of dying. */
static int send_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

int browser_call(const char *socket_path, const char *token, const char *tool, json_object *args,
                 McpToolResult *result) {
        _cleanup_(json_object_putp) json_object *req = json_object_new_object(), *answer = NULL;
        _cleanup_free_ char *buf = NULL, *line = NULL;
        _cleanup_close_ int fd = -EBADF;
        json_object *ok, *v;
        const char *text;
        size_t size = 0;
        int r;

        r = browser_connect(socket_path, &fd);
        if (r < 0)
                return mcp_result_printf(result, true, "The browser is not available: the channel's browser service at %s "
                                         "cannot be reached (%s).", socket_path, strerror(-r));
        if (!req ||
            json_object_object_add(req, "token", json_object_new_string(token)) < 0 ||
            json_object_object_add(req, "tool", json_object_new_string(tool)) < 0 ||
            json_object_object_add(req, "args", args ? json_object_get(args) : json_object_new_object()) < 0)
                return -ENOMEM;
        text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text)
                return -ENOMEM;
        if (strlen(text) > BROWSER_REQUEST_MAX)
                return mcp_result_printf(result, true, "The request is too large (at most %u bytes).", BROWSER_REQUEST_MAX);
        if (strprintf(&line, "%s\n", text) < 0)
                return -ENOMEM;
        r = send_all(fd, line, strlen(line));
        if (r < 0)
                return mcp_result_printf(result, true, "The browser service went away: %s.", strerror(-r));

        buf = malloc(BROWSER_ANSWER_MAX + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t k = read(fd, buf + size, BROWSER_ANSWER_MAX - size);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return mcp_result_printf(result, true, "The browser service did not answer: %s.",
                                                 errno == EAGAIN ? "timed out" : strerror(errno));
                if (k == 0)
                        break;
                size += (size_t) k;
                if (memchr(buf + size - k, '\n', (size_t) k))
                        break;
                if (size >= BROWSER_ANSWER_MAX)
                        return mcp_result_printf(result, true, "The browser service's answer is too large.");
        }
        if (size == 0)
                return mcp_result_printf(result, true, "The browser service ended the call without an answer "
                                         "(it stopped or failed; see journalctl -u 'loop-browser@*').");
        if (buf[size - 1] == '\n')
                size--;
        answer = parse_object(buf, size);
        if (!answer || !json_object_object_get_ex(answer, "ok", &ok))
                return mcp_result_printf(result, true, "The browser service's answer cannot be read.");
        if (!json_object_get_boolean(ok)) {
                json_object_object_get_ex(answer, "error", &v);
                return mcp_result_printf(result, true, "Refused by the browser service: %s",
                                         v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "no reason given");
        }
        if (!json_object_object_get_ex(answer, "text", &v) || !json_object_is_type(v, json_type_string))
                return mcp_result_printf(result, true, "The browser service's answer has no text.");
        result->text = strdup(json_object_get_string(v));
        if (!result->text)
                return -ENOMEM;
        result->is_error = json_object_object_get_ex(answer, "isError", &ok) && json_object_get_boolean(ok);
        if (json_object_object_get_ex(answer, "image", &v)) {
                json_object *mime;

                /* what the agent's client shows the model: a PNG of bounded size, nothing else */
                if (!json_object_is_type(v, json_type_string) || (size_t) json_object_get_string_len(v) > MCP_TOOL_IMAGE_MAX ||
                    !json_object_object_get_ex(answer, "mimeType", &mime) || !json_object_is_type(mime, json_type_string) ||
                    !streq(json_object_get_string(mime), "image/png"))
                        return mcp_result_printf(result, true, "The browser service's answer has an image that cannot be used.");
                result->image = strdup(json_object_get_string(v));
                if (!result->image)
                        return -ENOMEM;
                result->image_mime_type = "image/png";
        }
        return 0;
}
