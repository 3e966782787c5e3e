/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A Model Context Protocol server over stdio: JSON-RPC 2.0, one message per line (no embedded newline),
 * generic over a table of tools. `loop mcp` (scheduled tasks) and `loop mcp-browser` give it their tools;
 * everything about the protocol lives here:
 *
 *   initialize                 answers the client's protocolVersion when supported, else the newest
 *                              this server speaks (MCP_PROTOCOL_VERSIONS); capabilities {tools: {}}
 *   notifications/initialized  and every other notification: no answer
 *   ping                       {}
 *   tools/list                 every tool with its JSON Schema inputSchema
 *   tools/call                 the tool's answer as {content: [{type: text, text}], isError}, with an
 *                              {type: image, data, mimeType} item after the text when the tool gave an
 *                              image (a screenshot); a tool's
 *                              own failure (bad arguments, a refusal) is an isError result with a clear
 *                              text, never a JSON-RPC error
 *
 * Protocol errors are JSON-RPC errors: -32700 parse error (also a line above MCP_MESSAGE_MAX or nesting
 * deeper than MCP_JSON_DEPTH_MAX), -32600 invalid request (batches included: MCP 2025-06-18 has none),
 * -32601 unknown method, -32602 invalid params (an unknown tool, arguments that are not an object),
 * -32002 a request other than initialize/ping before initialize. Nothing a client sends crashes it. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

#define MCP_MESSAGE_MAX (1024U * 1024U)         /* one line, newline excluded */
#define MCP_JSON_DEPTH_MAX 32
#define MCP_TOOL_TEXT_MAX (256U * 1024U)        /* a tool's answer is cut to this */
#define MCP_TOOL_IMAGE_MAX (5U * 1024U * 1024U) /* an image's base64, as the model APIs take it */
#define MCP_PROTOCOL_VERSION_LATEST "2025-06-18"

#define JSONRPC_PARSE_ERROR (-32700)
#define JSONRPC_INVALID_REQUEST (-32600)
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define JSONRPC_INVALID_PARAMS (-32602)
#define JSONRPC_INTERNAL_ERROR (-32603)
#define MCP_ERROR_NOT_INITIALIZED (-32002)

/* Newest first. */
extern const char * const MCP_PROTOCOL_VERSIONS[];

typedef struct McpToolResult {
        char *text;                     /* owned; what the model reads */
        bool is_error;
        char *image;                    /* owned, optional: an image in base64, at most MCP_TOOL_IMAGE_MAX */
        const char *image_mime_type;    /* static: "image/png" */
} McpToolResult;

/* Frees what the result owns and empties it. */
void mcp_result_done(McpToolResult *r);

typedef struct McpTool {
        const char *name;
        const char *description;
        const char *input_schema;       /* a JSON Schema object, as JSON text */
        /* arguments is always an object (an empty one when the client sent none). Sets result->text
         * (and is_error for a refusal); returns < 0 only when it could not answer at all (the model then
         * reads "internal error"). */
        int (*call)(json_object *arguments, void *userdata, McpToolResult *result);
} McpTool;

typedef struct McpStdioServer {
        const char *name;               /* serverInfo */
        const char *version;
        const char *instructions;       /* optional, in the initialize answer */
        const McpTool *tools;
        size_t n_tools;
        void *userdata;

        bool initialized;               /* initialize was answered */
        const char *protocol_version;   /* the one agreed on */
} McpStdioServer;

/* Whether the table is usable: unique names, each schema a JSON object. */
int mcp_server_check(const McpStdioServer *s);

/* Handles one message (the line without its newline, size bytes, need not be NUL-terminated). The
 * answer (a JSON text without newline) in *ret_answer, or NULL for a notification. Returns 0, or -ENOMEM. */
int mcp_server_handle(McpStdioServer *s, const char *message, size_t size, char **ret_answer);

/* Serves in_fd/out_fd until end of input. A line above MCP_MESSAGE_MAX is answered with a parse error and
 * skipped to its newline. Returns 0 at end of input, or a negative errno (I/O). */
int mcp_server_run(McpStdioServer *s, int in_fd, int out_fd);

/* Helpers for tools: the string member key of args, NULL when absent or not a string. */
const char *mcp_arg_string(json_object *args, const char *key);
/* A printf-formatted result. */
int mcp_result_printf(McpToolResult *r, bool is_error, const char *format, ...) _printf_(3, 4);
