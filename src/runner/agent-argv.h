/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The agent's command line inside the container (Claude Code's flags, or any agent binary). */

#include <stdbool.h>

typedef struct AgentRequest {
        const char *bin;                /* claude_bin_path, or --agent */
        const char *model;              /* NULL or "": no --model */
        const char *mcp_config;         /* path inside the container */
        const char *resume;             /* session id, or NULL */
        bool fork_session;
        const char *append_system_prompt;
        char * const *add_dirs;         /* --add-dir each */
        const char *prompt;
} AgentRequest;

/* claude --mcp-config F [--model M] --print --verbose --output-format stream-json
 *        --dangerously-skip-permissions [--resume SID [--fork-session]] [--add-dir D]...
 *        [--append-system-prompt S] PROMPT */
int agent_argv_build(const AgentRequest *r, char ***ret);
