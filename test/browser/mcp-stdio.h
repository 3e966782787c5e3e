/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A small MCP client over stdio for test-browser-chromium: it starts `loop mcp-browser --socket S
 * --token-file T` (the agent's real path to the browser: the MCP server in the agent container, which
 * sends every call to loop-browser@ and so to the Chrome container), initializes the session, and makes
 * tool calls, one JSON-RPC line each, answering them as browser_tool_call() would (McpToolResult). A
 * JSON-RPC error (an unknown tool) is an error result with the error's message. */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "mcp-server.h"

typedef struct McpStdio {
        pid_t pid;
        FILE *to;       /* the server's stdin */
        FILE *from;     /* its stdout */
        int next_id;
} McpStdio;

/* Sends one request and reads lines until the answer with its id; the answer in *ret (owned). */
static inline int mcp_stdio_request(McpStdio *c, const char *method, json_object *params, json_object **ret) {
        json_object *req = json_object_new_object();
        int id = ++c->next_id;
        char *line = NULL;
        size_t size = 0;

        json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(req, "id", json_object_new_int(id));
        json_object_object_add(req, "method", json_object_new_string(method));
        if (params)
                json_object_object_add(req, "params", json_object_get(params));
        if (fprintf(c->to, "%s\n", json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN)) < 0 || fflush(c->to) != 0) {
                json_object_put(req);
                return -EPIPE;
        }
        json_object_put(req);
        while (getline(&line, &size, c->from) > 0) {
                json_object *a = json_tokener_parse(line), *v;

                if (a && json_object_object_get_ex(a, "id", &v) && json_object_get_int(v) == id) {
                        free(line);
                        *ret = a;
                        return 0;
                }
                json_object_put(a);     /* a notification, or a line that is not ours */
        }
        free(line);
        return -ECONNRESET;
}

/* Starts the server and initializes the session; *ret_tools is how many tools tools/list offers. */
static inline int mcp_stdio_start(const char *loop, const char *socket_path, const char *token_file, McpStdio *ret,
                                  int *ret_tools) {
        const char *argv[] = { loop, "mcp-browser", "--socket", socket_path, "--token-file", token_file, NULL };
        json_object *a = NULL, *res, *tools, *p;
        posix_spawn_file_actions_t fa;
        int to[2], from[2], k;
        pid_t pid;

        if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
                return -errno;
        /* the pipes' ends become the server's stdin and stdout (dup2 clears close-on-exec) */
        k = posix_spawn_file_actions_init(&fa);
        if (k == 0)
                k = posix_spawn_file_actions_adddup2(&fa, to[0], STDIN_FILENO);
        if (k == 0)
                k = posix_spawn_file_actions_adddup2(&fa, from[1], STDOUT_FILENO);
        if (k == 0)
                k = posix_spawn(&pid, loop, &fa, NULL, (char **) argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        close(to[0]);
        close(from[1]);
        if (k != 0) {
                close(to[1]);
                close(from[0]);
                return -k;
        }
        *ret = (McpStdio) { .pid = pid, .to = fdopen(to[1], "w"), .from = fdopen(from[0], "r") };
        if (!ret->to || !ret->from)
                return -ENOMEM;

        p = json_tokener_parse("{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                               "\"clientInfo\":{\"name\":\"test-browser-chromium\",\"version\":\"1\"}}");
        k = mcp_stdio_request(ret, "initialize", p, &a);
        json_object_put(p);
        if (k < 0)
                return k;
        k = json_object_object_get_ex(a, "result", &res) ? 0 : -EPROTO;
        json_object_put(a);
        if (k < 0)
                return k;
        fprintf(ret->to, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        k = mcp_stdio_request(ret, "tools/list", NULL, &a);
        if (k < 0)
                return k;
        *ret_tools = json_object_object_get_ex(a, "result", &res) && json_object_object_get_ex(res, "tools", &tools) ?
                (int) json_object_array_length(tools) : -1;
        json_object_put(a);
        return 0;
}

/* tools/call: the result as browser_tool_call() fills it (text, is_error, image). */
static inline int mcp_stdio_tool_call(McpStdio *c, const char *tool, json_object *args, McpToolResult *ret) {
        json_object *p = json_object_new_object(), *a = NULL, *res, *v, *content;
        size_t text_len = 0;
        char *text = NULL;
        int k;

        json_object_object_add(p, "name", json_object_new_string(tool));
        json_object_object_add(p, "arguments", json_object_get(args));
        k = mcp_stdio_request(c, "tools/call", p, &a);
        json_object_put(p);
        if (k < 0)
                return k;
        *ret = (McpToolResult) {};
        if (json_object_object_get_ex(a, "error", &v)) {
                json_object *m = NULL;
                (void) json_object_object_get_ex(v, "message", &m);
                ret->is_error = true;
                k = asprintf(&ret->text, "JSON-RPC error: %s", m ? json_object_get_string(m) : "?") < 0 ? -ENOMEM : 0;
                json_object_put(a);
                return k;
        }
        if (!json_object_object_get_ex(a, "result", &res) || !json_object_object_get_ex(res, "content", &content)) {
                json_object_put(a);
                return -EPROTO;
        }
        ret->is_error = json_object_object_get_ex(res, "isError", &v) && json_object_get_boolean(v);
        for (size_t i = 0; i < json_object_array_length(content); i++) {
                json_object *item = json_object_array_get_idx(content, i), *type, *t;

                if (!json_object_object_get_ex(item, "type", &type))
                        continue;
                if (strcmp(json_object_get_string(type), "text") == 0 && json_object_object_get_ex(item, "text", &t)) {
                        size_t n = json_object_get_string_len(t);
                        char *x = realloc(text, text_len + n + 1);
                        if (!x)
                                break;
                        text = x;
                        memcpy(text + text_len, json_object_get_string(t), n + 1);
                        text_len += n;
                } else if (strcmp(json_object_get_string(type), "image") == 0 && json_object_object_get_ex(item, "data", &t)) {
                        free(ret->image);
                        ret->image = strdup(json_object_get_string(t));
                        ret->image_mime_type = "image/png";
                }
        }
        ret->text = text ?: strdup("");
        json_object_put(a);
        return 0;
}

/* Ends the session: stdin closed, the server exits. */
static inline void mcp_stdio_stop(McpStdio *c) {
        if (c->to)
                fclose(c->to);
        if (c->from)
                fclose(c->from);
        if (c->pid > 0 && waitpid(c->pid, NULL, 0) < 0)
                kill(c->pid, SIGKILL);
        *c = (McpStdio) {};
}
