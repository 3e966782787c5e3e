/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop mcp-browser`: the agent's browser as an MCP server over stdio (the runner's MCP config names it
 * "loop-browser"). It holds no state and speaks no CDP: it lists the 19 tools (BROWSER_TOOLS, with their
 * input schemas) and sends every call to the channel's loop-browser@NAME on the socket the runner
 * bind-mounted (/run/loop/browser.sock) with the container's token (/run/loop/browser-token); the host
 * side's answer is the tool's result. Without the socket or the token every call is an isError result
 * that says why: the agent's other tools keep working. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "browser-call.h"
#include "browser-tools.h"
#include "config-build.h"
#include "log.h"
#include "loop.h"
#include "loop-mcp-verb.h"
#include "mcp-server.h"

/* The tool table is the browsertools module's; a call carries no tool name, so each slot has a
 * trampoline that knows its index. */
#define MCP_BROWSER_TOOLS_MAX 32

static McpVerbArgs mcp_browser;

static int forward(size_t i, json_object *args, McpToolResult *result) {
        _cleanup_free_ char *token = NULL;
        size_t token_size = 0;
        int r;

        r = mcp_verb_token_read(mcp_browser.token_file, &token, &token_size);
        if (r < 0)
                return mcp_result_printf(result, true, "The browser is not available in this container (no token at %s: %s).",
                                         mcp_browser.token_file, strerror(-r));
        r = browser_call(mcp_browser.socket_path, token, BROWSER_TOOLS[i].name, args, result);
        explicit_bzero(token, token_size);
        return r;
}

#define TRAMPOLINE(n) \
        static int tool_##n(json_object *args, void *userdata, McpToolResult *r) { return forward(n, args, r); }
TRAMPOLINE(0) TRAMPOLINE(1) TRAMPOLINE(2) TRAMPOLINE(3) TRAMPOLINE(4) TRAMPOLINE(5) TRAMPOLINE(6) TRAMPOLINE(7)
TRAMPOLINE(8) TRAMPOLINE(9) TRAMPOLINE(10) TRAMPOLINE(11) TRAMPOLINE(12) TRAMPOLINE(13) TRAMPOLINE(14)
TRAMPOLINE(15) TRAMPOLINE(16) TRAMPOLINE(17) TRAMPOLINE(18) TRAMPOLINE(19) TRAMPOLINE(20) TRAMPOLINE(21)
TRAMPOLINE(22) TRAMPOLINE(23) TRAMPOLINE(24) TRAMPOLINE(25) TRAMPOLINE(26) TRAMPOLINE(27) TRAMPOLINE(28)
TRAMPOLINE(29) TRAMPOLINE(30) TRAMPOLINE(31)

static int (* const trampolines[MCP_BROWSER_TOOLS_MAX])(json_object *, void *, McpToolResult *) = {
        tool_0, tool_1, tool_2, tool_3, tool_4, tool_5, tool_6, tool_7, tool_8, tool_9, tool_10, tool_11,
        tool_12, tool_13, tool_14, tool_15, tool_16, tool_17, tool_18, tool_19, tool_20, tool_21, tool_22,
        tool_23, tool_24, tool_25, tool_26, tool_27, tool_28, tool_29, tool_30, tool_31,
};

static const McpVerb verb = {
        .verb = "mcp-browser",
        .summary = "The agent's browser as an MCP server over stdio (in the agent container); every call goes to\n"
                   "the channel's loop-browser@NAME on the host, which drives the channel's Chrome.",
        .what = "browser service",
        .env_socket = "LOOP_BROWSER_SOCKET",
        .env_token = "LOOP_BROWSER_TOKEN_FILE",
        .default_socket = BROWSER_CONTAINER_SOCKET,
        .default_token = BROWSER_CONTAINER_TOKEN,
};

int verb_mcp_browser(int argc, char *argv[]) {
        McpTool tools[MCP_BROWSER_TOOLS_MAX];
        _cleanup_free_ char *instructions = NULL;
        int r;

        r = mcp_verb_parse(&verb, argc, argv, &mcp_browser);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (BROWSER_TOOLS_COUNT > MCP_BROWSER_TOOLS_MAX)
                return log_error_errno(E2BIG, "The browser has more tools than this server can list."), EXIT_FAILURE;
        for (size_t i = 0; i < BROWSER_TOOLS_COUNT; i++) {
                tools[i] = BROWSER_TOOLS[i];
                tools[i].call = trampolines[i];
        }
        if (asprintf(&instructions, "A Chrome browser for the loop channel %s, run on the host in its own container; its "
                     "traffic goes through the channel's egress gateway, so the same allowlist applies. file:, chrome: "
                     "and other non-network URLs are refused.", mcp_browser.channel ?: "of this container") < 0)
                return log_oom(), EXIT_FAILURE;

        McpStdioServer s = {
                .name = "loop-browser",
                .version = PACKAGE_VERSION,
                .instructions = instructions,
                .tools = tools,
                .n_tools = BROWSER_TOOLS_COUNT,
        };
        return mcp_verb_serve(&s);
}
