/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The wire between `loop mcp-browser` (in an agent container) and loop-browser@NAME (the host side), on
 * the socket the runner bind-mounts at /run/loop/browser.sock: one request per connection, one JSON line
 * each way:
 *
 *   {"token": "<the container's browser token>", "tool": "navigate", "args": {...}}
 *   {"ok": true, "text": "...", "isError": false}      the tool's answer (isError: the tool refused),
 *     + "image": "<base64>", "mimeType": "image/png"    with a screenshot when there is no screenshots dir
 *   {"ok": false, "error": "why"}                       the service refused the call (token, size, ...)
 *
 * The token names the container (RUNTIME/NAME/browser-tokens/, as the gate's); nobody else is served. */

#include <json-c/json.h>
#include <stdint.h>

#include "mcp-server.h"

#define BROWSER_TOKENS_DIRNAME "browser-tokens"
#define BROWSER_CONTAINER_SOCKET "/run/loop/browser.sock"
#define BROWSER_CONTAINER_TOKEN "/run/loop/browser-token"
#define BROWSER_CONTAINER_SCREENSHOTS "/run/loop/screenshots"
#define BROWSER_REQUEST_MAX (1024U * 1024U)             /* an evaluate expression or typed text fits */
#define BROWSER_ANSWER_MAX (8U * 1024U * 1024U)         /* a base64 screenshot fits, JSON-escaped */
#define BROWSER_TOOL_NAME_MAX 64U
/* A wait_for_* may take 60 s; a cold Chrome start comes before the first call. */
#define BROWSER_CALL_TIMEOUT_SEC 150

typedef struct BrowserRequest {
        char *token;
        char *tool;
        json_object *args;              /* always an object */
} BrowserRequest;

void browser_request_done(BrowserRequest *r);

/* Parses one request line (size bytes, need not be NUL-terminated). -EINVAL with a reason for the caller
 * in *ret_reason (static text) when it is not a request. */
int browser_request_parse(const char *text, size_t size, BrowserRequest *ret, const char **ret_reason);

/* The answer lines, without their newline. */
int browser_answer_format(const McpToolResult *result, char **ret);
int browser_answer_format_refusal(const char *error, char **ret);

/* Client side: one call over the socket at socket_path with token. The tool's answer, or a clear isError
 * text when the service cannot be reached, refuses, or answers nonsense, in *result. Returns 0, or -ENOMEM. */
int browser_call(const char *socket_path, const char *token, const char *tool, json_object *args,
                 McpToolResult *result);
