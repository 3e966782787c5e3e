/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate-token.h"
#include "io-util.h"
#include "log.h"
#include "loop-mcp-verb.h"
#include "string-util.h"

static void help(const McpVerb *v) {
        printf("%s %s [--channel-id NAME] [--log FILE] [--socket PATH] [--token-file PATH]\n\n"
               "%s\n\n"
               "  --channel-id NAME   The channel (as the runner's MCP config says)\n"
               "  --api-url URL       Accepted for compatibility; the %s is a unix socket\n"
               "  --log FILE          Diagnostics go to FILE instead of standard error\n"
               "  --socket PATH       The %s (default: $%s, else %s)\n"
               "  --token-file PATH   The container's token (default: $%s, else %s)\n",
               program_invocation_short_name, v->verb, v->summary, v->what, v->what, v->env_socket,
               v->default_socket, v->env_token, v->default_token);
}

int mcp_verb_parse(const McpVerb *v, int argc, char *argv[], McpVerbArgs *ret) {
        enum { ARG_CHANNEL = 0x100, ARG_API_URL, ARG_LOG, ARG_SOCKET, ARG_TOKEN_FILE };
        static const struct option options[] = {
                { "help",       no_argument,       NULL, 'h' },
                { "channel-id", required_argument, NULL, ARG_CHANNEL },
                { "api-url",    required_argument, NULL, ARG_API_URL },
                { "log",        required_argument, NULL, ARG_LOG },
                { "socket",     required_argument, NULL, ARG_SOCKET },
                { "token-file", required_argument, NULL, ARG_TOKEN_FILE },
                {}
        };
        McpVerbArgs a = { .socket_path = getenv(v->env_socket), .token_file = getenv(v->env_token) };
        const char *log_path = NULL;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(v);
                        return 0;
                case ARG_CHANNEL:    a.channel = optarg; break;
                case ARG_API_URL:    break;
                case ARG_LOG:        log_path = optarg; break;
                case ARG_SOCKET:     a.socket_path = optarg; break;
                case ARG_TOKEN_FILE: a.token_file = optarg; break;
                default:
                        return -EINVAL;         /* getopt said why */
                }
        if (optind < argc) {
                log_error("Unexpected argument \"%s\" (see 'loop %s --help').", argv[optind], v->verb);
                return -EINVAL;
        }
        if (isempty(a.socket_path))
                a.socket_path = v->default_socket;
        if (isempty(a.token_file))
                a.token_file = v->default_token;
        /* stdout is the protocol: every diagnostic goes to stderr, or to the log file */
        if (log_path) {
                int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd >= 0) {
                        (void) dup2(fd, STDERR_FILENO);
                        safe_close(fd);
                }
        }
        *ret = a;
        return 1;
}

int mcp_verb_token_read(const char *token_file, char **ret, size_t *ret_size) {
        char *token = NULL;
        size_t size = 0;
        int r;

        r = read_full_file_at(AT_FDCWD, token_file, GATE_TOKEN_HEX_LEN + 1, false, &token, &size);
        if (r < 0)
                return r;
        token[strcspn(token, "\r\n")] = 0;
        *ret = token;
        *ret_size = size;
        return 0;
}

int mcp_verb_serve(McpStdioServer *s) {
        int r;

        r = mcp_server_check(s);
        if (r < 0)
                return log_error_errno(r, "The tool table is broken: %m"), EXIT_FAILURE;
        r = mcp_server_run(s, STDIN_FILENO, STDOUT_FILENO);
        if (r < 0)
                return log_error_errno(r, "MCP server failed: %m"), EXIT_FAILURE;
        return EXIT_SUCCESS;
}
