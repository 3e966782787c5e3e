/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp-server.h"
#include "tap.h"

static int tool_echo(json_object *args, void *userdata, McpToolResult *r) {
        const char *text = mcp_arg_string(args, "text");
        if (!text)
                return mcp_result_printf(r, true, "text is required");
        return mcp_result_printf(r, false, "%s", text);
}

static int tool_picture(json_object *args, void *userdata, McpToolResult *r) {
        int k = mcp_result_printf(r, false, "A picture");
        if (k < 0)
                return k;
        r->image = strdup(mcp_arg_string(args, "big") ? "" : "iVBORw0KGgo=");
        if (!r->image)
                return -ENOMEM;
        if (mcp_arg_string(args, "big")) {
                free(r->image);
                r->image = malloc(MCP_TOOL_IMAGE_MAX + 2);
                if (!r->image)
                        return -ENOMEM;
                memset(r->image, 'A', MCP_TOOL_IMAGE_MAX + 1);
                r->image[MCP_TOOL_IMAGE_MAX + 1] = 0;
        }
        r->image_mime_type = "image/png";
        return 0;
}

static int tool_broken(json_object *args, void *userdata, McpToolResult *r) {
        return -EIO;
}

static const McpTool tools[] = {
        { "echo", "Says text back.", "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}", tool_echo },
        { "broken", "Fails.", "{\"type\":\"object\"}", tool_broken },
        { "picture", "Gives an image.", "{\"type\":\"object\"}", tool_picture },
};

static McpStdioServer server_new(void) {
        return (McpStdioServer) { .name = "test", .version = "1", .tools = tools, .n_tools = ELEMENTSOF(tools) };
}

/* The answer to msg, parsed. */
static json_object *ask(McpStdioServer *s, const char *msg) {
        char *a = NULL;
        json_object *o;

        if (mcp_server_handle(s, msg, strlen(msg), &a) < 0 || !a)
                return NULL;
        o = json_tokener_parse(a);
        free(a);
        return o;
}

static int error_code(json_object *o) {
        json_object *e, *c;
        if (!o || !json_object_object_get_ex(o, "error", &e) || !json_object_object_get_ex(e, "code", &c))
                return 0;
        return json_object_get_int(c);
}

static const char *path_string(json_object *o, const char *a, const char *b) {
        json_object *x, *y;
        if (!o || !json_object_object_get_ex(o, a, &x) || !json_object_object_get_ex(x, b, &y))
                return NULL;
        return json_object_get_string(y);
}

static void initialize(McpStdioServer *s, const char *version, const char *want) {
        _cleanup_free_ char *msg = NULL;
        json_object *o;

        asprintf(&msg, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
                 "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"0\"}}}", version);
        o = ask(s, msg);
        ok(streq_ptr(path_string(o, "result", "protocolVersion"), want), "initialize with %s agrees on %s", version, want);
        json_object_put(o);
}

static void test_negotiation(void) {
        McpStdioServer s = server_new();
        initialize(&s, "2025-06-18", "2025-06-18");
        s = server_new();
        initialize(&s, "2025-03-26", "2025-03-26");
        s = server_new();
        initialize(&s, "2024-11-05", "2024-11-05");
        s = server_new();
        initialize(&s, "1999-01-01", MCP_PROTOCOL_VERSION_LATEST);
}

static void test_protocol(void) {
        McpStdioServer s = server_new();
        json_object *o, *r, *list, *content, *item;
        char *a = NULL;

        ok(mcp_server_check(&s) == 0, "the tool table is valid");

        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
        is_int(error_code(o), MCP_ERROR_NOT_INITIALIZED, "tools/list before initialize is refused");
        json_object_put(o);
        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
        ok(o && json_object_object_get_ex(o, "result", NULL), "ping is answered before initialize");
        json_object_put(o);

        initialize(&s, "2025-06-18", "2025-06-18");
        {
                const char *n = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
                ok(mcp_server_handle(&s, n, strlen(n), &a) == 0 && !a,
                   "notifications/initialized gets no answer");
        }

        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/list\"}");
        ok(o && json_object_object_get_ex(o, "result", &r) && json_object_object_get_ex(r, "tools", &list) &&
           json_object_array_length(list) == 3 &&
           streq_ptr(path_string(json_object_array_get_idx(list, 0), "inputSchema", "type"), "object"),
           "tools/list names every tool with its inputSchema");
        ok(o && json_object_object_get_ex(o, "id", &r) && streq(json_object_get_string(r), "x"), "a string id is echoed");
        json_object_put(o);

        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}}");
        ok(o && json_object_object_get_ex(o, "result", &r) && json_object_object_get_ex(r, "content", &content) &&
           (item = json_object_array_get_idx(content, 0)) && streq_ptr(path_string(o, "result", "isError"), "false") &&
           json_object_object_get_ex(item, "text", &r) && streq(json_object_get_string(r), "hi"),
           "tools/call answers with the tool's text");
        json_object_put(o);

        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"picture\"}}");
        ok(o && json_object_object_get_ex(o, "result", &r) && json_object_object_get_ex(r, "content", &content) &&
           json_object_array_length(content) == 2 && streq_ptr(path_string(o, "result", "isError"), "false") &&
           (item = json_object_array_get_idx(content, 1)) &&
           json_object_object_get_ex(item, "type", &r) && streq(json_object_get_string(r), "image") &&
           json_object_object_get_ex(item, "data", &r) && streq(json_object_get_string(r), "iVBORw0KGgo=") &&
           json_object_object_get_ex(item, "mimeType", &r) && streq(json_object_get_string(r), "image/png"),
           "a tool's image is an {type: image, data, mimeType} content item after the text");
        json_object_put(o);
        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"picture\",\"arguments\":{\"big\":\"1\"}}}");
        ok(o && json_object_object_get_ex(o, "result", &r) && json_object_object_get_ex(r, "content", &content) &&
           json_object_array_length(content) == 1 && streq_ptr(path_string(o, "result", "isError"), "true"),
           "an image above MCP_TOOL_IMAGE_MAX is not sent: an isError result");
        json_object_put(o);

        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}");
        ok(o && streq_ptr(path_string(o, "result", "isError"), "true"), "a tool's refusal is an isError result");
        json_object_put(o);

        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"broken\",\"arguments\":{}}}");
        ok(o && streq_ptr(path_string(o, "result", "isError"), "true"), "a tool that fails is an isError result");
        json_object_put(o);

        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"}}");
        is_int(error_code(o), JSONRPC_INVALID_PARAMS, "an unknown tool is invalid params");
        json_object_put(o);
        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":[1]}}");
        is_int(error_code(o), JSONRPC_INVALID_PARAMS, "arguments that are not an object are invalid params");
        json_object_put(o);
        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/list\"}");
        is_int(error_code(o), JSONRPC_METHOD_NOT_FOUND, "an unknown method is method-not-found");
        json_object_put(o);
        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":7,");
        is_int(error_code(o), JSONRPC_PARSE_ERROR, "a truncated message is a parse error");
        json_object_put(o);
        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"} x");
        is_int(error_code(o), JSONRPC_PARSE_ERROR, "junk after the message is a parse error");
        json_object_put(o);
        o = ask(&s, "[{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}]");
        is_int(error_code(o), JSONRPC_INVALID_REQUEST, "a batch is an invalid request");
        json_object_put(o);
        o = ask(&s, "{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"ping\"}");
        is_int(error_code(o), JSONRPC_INVALID_REQUEST, "jsonrpc other than 2.0 is an invalid request");
        json_object_put(o);
        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}");
        is_int(error_code(o), JSONRPC_INVALID_REQUEST, "an object id is an invalid request");
        json_object_put(o);
        /* json-c saturates integers beyond 64 bits: the answer's id was 18446744073709551615, not the
         * request's, and the client waited for ever */
        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999,\"method\":\"ping\"}");
        is_int(error_code(o), JSONRPC_INVALID_REQUEST, "an id above 64 bits is an invalid request, not answered with another id");
        json_object_put(o);
        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":-9223372036854775809,\"method\":\"ping\"}");
        is_int(error_code(o), JSONRPC_INVALID_REQUEST, "an id below 64 bits is an invalid request");
        json_object_put(o);
        o = ask(&s, "{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"method\":\"ping\"}");
        ok(o && json_object_object_get_ex(o, "result", NULL) &&
           streq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"result\":{}}"),
           "the largest 64-bit id is echoed as it came");
        json_object_put(o);
        {
                char deep[200];
                memset(deep, '[', sizeof deep - 1);
                deep[sizeof deep - 1] = 0;
                o = ask(&s, deep);
                is_int(error_code(o), JSONRPC_PARSE_ERROR, "nesting deeper than MCP_JSON_DEPTH_MAX is a parse error");
                json_object_put(o);
        }
}

static void test_run(void) {
        McpStdioServer s = server_new();
        int in[2], out[2];
        char buf[4096];
        ssize_t n;
        size_t big = MCP_MESSAGE_MAX + 10;
        char *junk = malloc(big);

        if (pipe(in) < 0 || pipe(out) < 0 || !junk) {
                ok(0, "pipes");
                return;
        }
        if (fork() == 0) {
                close(in[0]);
                close(out[1]);
                memset(junk, 'x', big);
                (void) !write(in[1], junk, big);
                (void) !write(in[1], "\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n", 42);
                close(in[1]);
                _exit(0);
        }
        close(in[1]);
        ok(mcp_server_run(&s, in[0], out[1]) == 0, "the server ends at the end of its input");
        close(out[1]);
        n = read(out[0], buf, sizeof buf - 1);
        buf[n > 0 ? n : 0] = 0;
        ok(strstr(buf, "message too large") && strstr(buf, "\"id\":9,\"result\":{}"),
           "a line above MCP_MESSAGE_MAX is refused and the next message is answered");
        close(in[0]);
        close(out[0]);
        free(junk);
}

int main(void) {
        test_negotiation();
        test_protocol();
        test_run();
        return done_testing();
}
