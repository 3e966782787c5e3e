/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What `loop mcp` and `loop mcp-browser` share: both are stdio MCP servers in the agent container whose
 * every call goes, with the container's token, to a helper of the channel on a socket the runner bound in.
 * Their command lines are the same (the runner's MCP config passes the same options to both). */

#include <stddef.h>

#include "mcp-server.h"

typedef struct McpVerb {
        const char *verb;                       /* "mcp", "mcp-browser" */
        const char *summary;                    /* the help's second paragraph */
        const char *what;                       /* "task service", "browser service" */
        const char *env_socket, *env_token;     /* the environment's defaults, from the runner */
        const char *default_socket, *default_token;
} McpVerb;

typedef struct McpVerbArgs {
        const char *channel;                    /* NULL when not given */
        const char *socket_path;
        const char *token_file;
} McpVerbArgs;

/* Parses the verb's command line (--channel-id, --api-url (accepted, unused), --log, --socket, --token-file,
 * --help) and points standard error at --log (standard output is the protocol). Returns 1 to serve, 0 when
 * --help was answered, or -EINVAL for a usage error (said). */
int mcp_verb_parse(const McpVerb *v, int argc, char *argv[], McpVerbArgs *ret);

/* The container's token from token_file (its first line), in *ret (wipe and free it), its size in
 * *ret_size. -errno when it cannot be read. */
int mcp_verb_token_read(const char *token_file, char **ret, size_t *ret_size);

/* Checks the tool table and serves it over standard input and output; the verb's exit status. */
int mcp_verb_serve(McpStdioServer *s);
