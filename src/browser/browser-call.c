/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "browser-call.h"
#include "helper-call.h"
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


int browser_request_parse(const char *text, size_t size, BrowserRequest *ret, const char **ret_reason) {
        _cleanup_(json_object_putp) json_object *req = NULL;
        json_object *token, *tool, *args = NULL;
        BrowserRequest r = {};

        if (size > BROWSER_REQUEST_MAX) {
                *ret_reason = "the request is too large";
                return -E2BIG;
        }
        req = helper_line_parse_object(text, size, BROWSER_REQUEST_MAX);
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

int browser_call(const char *socket_path, const char *token, const char *tool, json_object *args,
                 McpToolResult *result) {
        _cleanup_(json_object_putp) json_object *req = json_object_new_object(), *answer = NULL;
        const char *failure;
        json_object *ok, *v;
        int r;

        if (!req ||
            json_object_object_add(req, "token", json_object_new_string(token)) < 0 ||
            json_object_object_add(req, "tool", json_object_new_string(tool)) < 0 ||
            json_object_object_add(req, "args", args ? json_object_get(args) : json_object_new_object()) < 0)
                return -ENOMEM;
        r = helper_call(socket_path, BROWSER_CALL_TIMEOUT_SEC * 1000000ULL, req, BROWSER_REQUEST_MAX,
                        BROWSER_ANSWER_MAX, &answer, &failure);
        if (r == -EMSGSIZE)
                return mcp_result_printf(result, true, "The request is too large (at most %u bytes).", BROWSER_REQUEST_MAX);
        if (r < 0 && !failure)
                return r;
        if (r == -ECONNRESET)
                return mcp_result_printf(result, true, "The browser service ended the call without an answer "
                                         "(it stopped or failed; see journalctl -u 'loop-browser@*').");
        if (r < 0)
                return mcp_result_printf(result, true, "The browser is not available: the channel's browser service at %s %s (%s).",
                                         socket_path, failure, r == -EAGAIN ? "timed out" : strerror(-r));
        if (!json_object_object_get_ex(answer, "ok", &ok))
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
