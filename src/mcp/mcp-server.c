/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io-util.h"
#include "mcp-server.h"
#include "json-util.h"

const char * const MCP_PROTOCOL_VERSIONS[] = { "2025-06-18", "2025-03-26", "2024-11-05", NULL };

const char *mcp_arg_string(json_object *args, const char *key) {
        json_object *v;

        if (!args || !json_object_object_get_ex(args, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

void mcp_result_done(McpToolResult *r) {
        free(r->text);
        free(r->image);
        *r = (McpToolResult) {};
}

int mcp_result_printf(McpToolResult *r, bool is_error, const char *format, ...) {
        va_list ap;
        char *t;
        int k;

        va_start(ap, format);
        k = vasprintf(&t, format, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        free(r->text);
        r->text = t;
        r->is_error = is_error;
        return 0;
}

/* The whole line must be one value, nothing after it but blanks. */
static json_object *json_parse_capped(const char *text, size_t size) {
        json_object *o = NULL;

        if (json_parse_untrusted(text, size, MCP_MESSAGE_MAX, MCP_JSON_DEPTH_MAX, false, &o, NULL) < 0)
                return NULL;
        return o;
}

int mcp_server_check(const McpStdioServer *s) {
        for (size_t i = 0; i < s->n_tools; i++) {
                json_object *schema;

                if (isempty(s->tools[i].name) || !s->tools[i].call || !s->tools[i].input_schema)
                        return -EINVAL;
                for (size_t j = 0; j < i; j++)
                        if (streq(s->tools[i].name, s->tools[j].name))
                                return -EEXIST;
                schema = json_parse_capped(s->tools[i].input_schema, strlen(s->tools[i].input_schema));
                if (!schema || !json_object_is_type(schema, json_type_object)) {
                        json_object_put(schema);
                        return -EINVAL;
                }
                json_object_put(schema);
        }
        return 0;
}

/* ---- answers ---- */

static int answer_finish(json_object *a, char **ret) {
        const char *t = json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        char *s = t ? strdup(t) : NULL;

        json_object_put(a);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static json_object *answer_new(json_object *id) {
        json_object *a = json_object_new_object();

        if (!a)
                return NULL;
        if (json_object_object_add(a, "jsonrpc", json_object_new_string("2.0")) < 0 ||
            json_object_object_add(a, "id", id ? json_object_get(id) : NULL) < 0) {
                json_object_put(a);
                return NULL;
        }
        return a;
}

static int answer_error(json_object *id, int code, const char *message, char **ret) {
        json_object *a = answer_new(id), *e = json_object_new_object();

        if (!a || !e ||
            json_object_object_add(e, "code", json_object_new_int(code)) < 0 ||
            json_object_object_add(e, "message", json_object_new_string(message)) < 0 ||
            json_object_object_add(a, "error", e) < 0) {
                json_object_put(e);
                json_object_put(a);
                return -ENOMEM;
        }
        return answer_finish(a, ret);
}

/* Takes result. */
static int answer_result(json_object *id, json_object *result, char **ret) {
        json_object *a = answer_new(id);

        if (!a || !result || json_object_object_add(a, "result", result) < 0) {
                json_object_put(result);
                json_object_put(a);
                return -ENOMEM;
        }
        return answer_finish(a, ret);
}

/* ---- methods ---- */

static const char *version_negotiate(const char *asked) {
        for (size_t i = 0; MCP_PROTOCOL_VERSIONS[i]; i++)
                if (streq_ptr(asked, MCP_PROTOCOL_VERSIONS[i]))
                        return MCP_PROTOCOL_VERSIONS[i];
        return MCP_PROTOCOL_VERSIONS[0];
}

static int method_initialize(McpStdioServer *s, json_object *id, json_object *params, char **ret) {
        json_object *r, *caps, *info, *v = NULL;

        if (params && !json_object_is_type(params, json_type_object))
                return answer_error(id, JSONRPC_INVALID_PARAMS, "params must be an object", ret);
        if (params)
                json_object_object_get_ex(params, "protocolVersion", &v);
        if (!v || !json_object_is_type(v, json_type_string))
                return answer_error(id, JSONRPC_INVALID_PARAMS, "params.protocolVersion must be a string", ret);

        s->protocol_version = version_negotiate(json_object_get_string(v));
        s->initialized = true;

        r = json_object_new_object();
        caps = json_object_new_object();
        info = json_object_new_object();
        if (!r || !caps || !info ||
            json_object_object_add(caps, "tools", json_object_new_object()) < 0 ||
            json_object_object_add(info, "name", json_object_new_string(strempty(s->name))) < 0 ||
            json_object_object_add(info, "version", json_object_new_string(strempty(s->version))) < 0 ||
            json_object_object_add(r, "protocolVersion", json_object_new_string(s->protocol_version)) < 0 ||
            json_object_object_add(r, "capabilities", caps) < 0) {
                json_object_put(r);
                json_object_put(caps);
                json_object_put(info);
                return -ENOMEM;
        }
        caps = NULL;
        if (json_object_object_add(r, "serverInfo", info) < 0) {
                json_object_put(info);
                json_object_put(r);
                return -ENOMEM;
        }
        if (s->instructions && json_object_object_add(r, "instructions", json_object_new_string(s->instructions)) < 0) {
                json_object_put(r);
                return -ENOMEM;
        }
        return answer_result(id, r, ret);
}

static int method_tools_list(McpStdioServer *s, json_object *id, char **ret) {
        json_object *r = json_object_new_object(), *list = json_object_new_array();

        if (!r || !list || json_object_object_add(r, "tools", list) < 0) {
                json_object_put(r);
                json_object_put(list);
                return -ENOMEM;
        }
        for (size_t i = 0; i < s->n_tools; i++) {
                const McpTool *t = s->tools + i;
                json_object *o = json_object_new_object();
                json_object *schema = json_parse_capped(t->input_schema, strlen(t->input_schema));

                if (!o || !schema ||
                    json_object_object_add(o, "name", json_object_new_string(t->name)) < 0 ||
                    json_object_object_add(o, "description", json_object_new_string(strempty(t->description))) < 0 ||
                    json_object_object_add(o, "inputSchema", schema) < 0) {
                        json_object_put(o);
                        json_object_put(schema);
                        json_object_put(r);
                        return -ENOMEM;
                }
                if (json_object_array_add(list, o) < 0) {
                        json_object_put(o);
                        json_object_put(r);
                        return -ENOMEM;
                }
        }
        return answer_result(id, r, ret);
}

static int method_tools_call(McpStdioServer *s, json_object *id, json_object *params, char **ret) {
        _cleanup_(json_object_putp) json_object *empty = NULL;
        McpToolResult result = {};
        json_object *name, *args = NULL, *r, *content, *item;
        const McpTool *tool = NULL;
        bool is_error;
        int q;

        if (!params || !json_object_is_type(params, json_type_object) ||
            !json_object_object_get_ex(params, "name", &name) || !json_object_is_type(name, json_type_string))
                return answer_error(id, JSONRPC_INVALID_PARAMS, "params.name must be a string", ret);
        for (size_t i = 0; i < s->n_tools; i++)
                if (streq(s->tools[i].name, json_object_get_string(name)))
                        tool = s->tools + i;
        if (!tool)
                return answer_error(id, JSONRPC_INVALID_PARAMS, "unknown tool", ret);
        if (json_object_object_get_ex(params, "arguments", &args) && args &&
            !json_object_is_type(args, json_type_object))
                return answer_error(id, JSONRPC_INVALID_PARAMS, "params.arguments must be an object", ret);
        if (!args) {
                args = empty = json_object_new_object();
                if (!args)
                        return -ENOMEM;
        }

        q = tool->call(args, s->userdata, &result);
        if (q == -ENOMEM) {
                mcp_result_done(&result);
                return q;
        }
        if (q < 0 || !result.text ||
            (result.image && (!result.image_mime_type || strlen(result.image) > MCP_TOOL_IMAGE_MAX))) {
                mcp_result_done(&result);
                result.is_error = true;
                if (mcp_result_printf(&result, true, "internal error: %s", strerror(q < 0 ? -q : EIO)) < 0)
                        return -ENOMEM;
        }
        if (strlen(result.text) > MCP_TOOL_TEXT_MAX)
                result.text[MCP_TOOL_TEXT_MAX] = 0;

        r = json_object_new_object();
        content = json_object_new_array();
        item = json_object_new_object();
        q = !r || !content || !item ||
            json_object_object_add(item, "type", json_object_new_string("text")) < 0 ||
            json_object_object_add(item, "text", json_object_new_string(result.text)) < 0 ||
            json_object_array_add(content, item) < 0;
        if (!q)
                item = NULL;    /* the array's now */
        if (!q && result.image) {
                item = json_object_new_object();
                q = !item ||
                    json_object_object_add(item, "type", json_object_new_string("image")) < 0 ||
                    json_object_object_add(item, "data", json_object_new_string(result.image)) < 0 ||
                    json_object_object_add(item, "mimeType", json_object_new_string(result.image_mime_type)) < 0 ||
                    json_object_array_add(content, item) < 0;
                if (!q)
                        item = NULL;
        }
        is_error = result.is_error;
        mcp_result_done(&result);
        if (q) {
                json_object_put(item);
                json_object_put(content);
                json_object_put(r);
                return -ENOMEM;
        }
        if (json_object_object_add(r, "content", content) < 0) {
                json_object_put(content);
                json_object_put(r);
                return -ENOMEM;
        }
        if (json_object_object_add(r, "isError", json_object_new_boolean(is_error)) < 0) {
                json_object_put(r);
                return -ENOMEM;
        }
        return answer_result(id, r, ret);
}

/* json-c holds an integer in 64 bits and saturates one beyond them at INT64_MIN or UINT64_MAX: such an
 * id would be answered changed, and the client could not match the answer to its request. */
static bool id_fits(json_object *id) {
        if (!json_object_is_type(id, json_type_int))
                return true;
        return json_object_get_int64(id) != INT64_MIN && json_object_get_uint64(id) != UINT64_MAX;
}

int mcp_server_handle(McpStdioServer *s, const char *message, size_t size, char **ret_answer) {
        _cleanup_(json_object_putp) json_object *m = NULL;
        json_object *v, *id = NULL, *params = NULL;
        const char *method;
        bool has_id;

        assert(s);
        assert(ret_answer);

        *ret_answer = NULL;
        m = json_parse_capped(message, size);
        if (!m)
                return answer_error(NULL, JSONRPC_PARSE_ERROR, "Parse error", ret_answer);
        if (!json_object_is_type(m, json_type_object))
                return answer_error(NULL, JSONRPC_INVALID_REQUEST, "a message must be a JSON object (no batches)", ret_answer);

        has_id = json_object_object_get_ex(m, "id", &id);
        /* an id is a string or a number; null is not allowed by MCP */
        if (has_id && !(json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int) ||
                       json_object_is_type(id, json_type_double)))
                return answer_error(NULL, JSONRPC_INVALID_REQUEST, "id must be a string or a number", ret_answer);
        if (has_id && !id_fits(id))
                return answer_error(NULL, JSONRPC_INVALID_REQUEST, "id must be a string or a number within 64 bits", ret_answer);
        if (!json_object_object_get_ex(m, "jsonrpc", &v) || !json_object_is_type(v, json_type_string) ||
            !streq(json_object_get_string(v), "2.0"))
                return answer_error(id, JSONRPC_INVALID_REQUEST, "jsonrpc must be \"2.0\"", ret_answer);
        if (!json_object_object_get_ex(m, "method", &v)) {
                /* a response to a request of ours: we send none, so there is nothing to match it to */
                if (has_id && (json_object_object_get_ex(m, "result", NULL) || json_object_object_get_ex(m, "error", NULL)))
                        return 0;
                return answer_error(id, JSONRPC_INVALID_REQUEST, "method missing", ret_answer);
        }
        if (!json_object_is_type(v, json_type_string))
                return answer_error(id, JSONRPC_INVALID_REQUEST, "method must be a string", ret_answer);
        method = json_object_get_string(v);
        json_object_object_get_ex(m, "params", &params);
        if (params && !json_object_is_type(params, json_type_object))
                return has_id ? answer_error(id, JSONRPC_INVALID_PARAMS, "params must be an object", ret_answer) : 0;

        if (!has_id)
                return 0;       /* notifications/initialized, notifications/cancelled, ...: nothing to answer */

        if (streq(method, "initialize"))
                return method_initialize(s, id, params, ret_answer);
        if (streq(method, "ping"))
                return answer_result(id, json_object_new_object(), ret_answer);
        if (!s->initialized)
                return answer_error(id, MCP_ERROR_NOT_INITIALIZED, "the server is not initialized", ret_answer);
        if (streq(method, "tools/list"))
                return method_tools_list(s, id, ret_answer);
        if (streq(method, "tools/call"))
                return method_tools_call(s, id, params, ret_answer);
        return answer_error(id, JSONRPC_METHOD_NOT_FOUND, "Method not found", ret_answer);
}

static int answer_write(int fd, const char *answer) {
        int r;

        r = loop_write(fd, answer, strlen(answer));
        if (r < 0)
                return r;
        return loop_write(fd, "\n", 1);
}

int mcp_server_run(McpStdioServer *s, int in_fd, int out_fd) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        bool skipping = false;  /* inside a line above MCP_MESSAGE_MAX */
        int r;

        buf = malloc(MCP_MESSAGE_MAX + 1);
        if (!buf)
                return -ENOMEM;

        for (;;) {
                char *nl;
                ssize_t k;

                k = read(in_fd, buf + size, MCP_MESSAGE_MAX + 1 - size);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return 0;       /* a last line without newline is not a message: the client went */
                size += (size_t) k;

                while ((nl = memchr(buf, '\n', size))) {
                        size_t n = (size_t) (nl - buf);
                        _cleanup_free_ char *answer = NULL;

                        if (skipping)
                                skipping = false;
                        else if (n > 0 && !(n == 1 && buf[0] == '\r')) {
                                r = mcp_server_handle(s, buf, n, &answer);
                                if (r < 0)
                                        return r;
                                if (answer && (r = answer_write(out_fd, answer)) < 0)
                                        return r;
                        }
                        memmove(buf, nl + 1, size - n - 1);
                        size -= n + 1;
                }
                if (size > MCP_MESSAGE_MAX) {
                        _cleanup_free_ char *answer = NULL;

                        if (!skipping) {
                                r = answer_error(NULL, JSONRPC_PARSE_ERROR, "message too large", &answer);
                                if (r < 0)
                                        return r;
                                r = answer_write(out_fd, answer);
                                if (r < 0)
                                        return r;
                        }
                        skipping = true;
                        size = 0;
                }
        }
}
