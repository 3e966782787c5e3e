/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: the MCP server's message handling (JSON-RPC parsing, dispatch, tool arguments), with
 * a tool table like loop mcp's. Every input gets an answer that is JSON, or none (a notification). */

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp-server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int tool_echo(json_object *args, void *userdata, McpToolResult *r) {
        const char *t = mcp_arg_string(args, "text");
        return mcp_result_printf(r, !t, "%s", t ?: "text is required");
}

static const McpTool tools[] = {
        { "echo", "Says text back.", "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}", tool_echo },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* each input line is one message to one server, so a sequence (initialize, then calls) is reached */
        McpStdioServer s = { .name = "fuzz", .version = "0", .tools = tools, .n_tools = 1 };
        const char *p = (const char *) data, *end = p + size;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
                char *answer = NULL;
                json_object *o;

                if (mcp_server_handle(&s, p, n, &answer) < 0)
                        return 0;
                if (answer) {
                        o = json_tokener_parse(answer);
                        assert(o && json_object_is_type(o, json_type_object));
                        json_object_put(o);
                        free(answer);
                }
                p += n + 1;
        }
        return 0;
}
