/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The MCP config the agent gets. */

#include <json-c/json.h>

#include "config.h"

/* {"mcpServers": {...}}: the user's servers plus the built-in "loop" server (unless the user defines one
 * named "loop"): command loop_bin, args ["mcp", "--channel-id", CHANNEL, "--log", WORK_DIR/.loop/mcp.log];
 * with browser on, also "loop-browser" (["mcp-browser", "--channel-id", CHANNEL, "--log", ...]). */
int mcp_config_build(const LoopConfig *c, const char *channel, const char *work_dir, const char *loop_bin,
                     json_object **ret);
/* WORK_DIR/.loop/mcp-CHANNEL.json */
char *mcp_config_path(const char *work_dir, const char *channel);
