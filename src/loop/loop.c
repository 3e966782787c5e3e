/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <getopt.h>

#include "config-build.h"
#include "log.h"
#include "loop.h"

typedef struct Verb {
        const char *name;
        int (*run)(int argc, char *argv[]);
} Verb;

static const Verb verbs[] = {
        { "config",   verb_config },
        { "channels", verb_channels },
        { "run",      verb_run },
        { "image",    verb_image },
        { "logs",     verb_logs },
        { "send",     verb_send },
        { "outbox",   verb_outbox },
        { "results",  verb_outbox },
        { "queue",    verb_queue },
        { "runner",   verb_runner },
        { "status",   verb_status },
        { "gate",     verb_gate },
        { "cleanup",  verb_cleanup },
        { "reconcile", verb_reconcile },
        { "shell",    verb_shell },
        { "privdrop", verb_privdrop },
        { "syscallwrap", verb_syscallwrap },
        { "relay",    verb_relay },
        { "profile",  verb_profile },
        { "seal",     verb_seal },
        { "task",     verb_task },
        { "mcp",      verb_mcp },
        { "mcp-browser", verb_mcp_browser },
        { "chrome",   verb_chrome },
        { "chrome-bridge", verb_chrome_bridge },
};

static void help(void) {
        printf("%s [OPTIONS...] COMMAND ...\n\n"
               "Run AI coding agents in hardened containers, one channel per project.\n\n"
               "Commands:\n"
               "  config check [--json] [--strict] [NAME...]\n"
               "                         Validate loop.json and the channel files\n"
               "  channels [--json]      List the configured channels\n"
               "  run [OPTIONS] NAME [--] PROMPT...\n"
               "                         Run one prompt on a channel in a container\n"
               "  send NAME [--] PROMPT...|-\n"
               "                         Queue a prompt for the channel's runner service\n"
               "  outbox NAME [--json] [-n N]\n"
               "                         Show the results of queued prompts (alias: results)\n"
               "  queue NAME [--json]    Show queued and failed messages\n"
               "  logs [-f] [--json] [-n N] [--event EVENT] [NAME]\n"
               "                         Show the audit events of a channel from the journal\n"
               "  status [NAME] [--json] Channels, runner services, queues, containers and scopes\n"
               "  cleanup [NAME]         Stop and remove loop's containers\n"
               "  gate list [NAME] [--json]\n"
               "                         Show approval requests of the security gate\n"
               "  gate approve|deny ID [--session]\n"
               "                         Answer one (ID as `gate list` shows it: NAME/N-DIGEST)\n"
               "  reconcile [NAME...]    Sync the container registry with the engine\n"
               "  shell NAME [-- CMD...] A shell in the channel's shell container\n"
               "  runner NAME            Process the channel's queue (loop-agent@NAME.service)\n"
               "  task list|show|add|edit|enable|disable|rm|run NAME ...\n"
               "                         The channel's scheduled tasks (systemd timers)\n"
               "  mcp --channel-id NAME  The agent's MCP server (in the container): its scheduled tasks\n"
               "  mcp-browser --channel-id NAME\n"
               "                         The agent's browser MCP server (in the container)\n"
               "  chrome NAME            Run the channel's Chrome container (loop-chrome@NAME.service)\n"
               "  image build|list|rm    Build the agent image (no registry needed), list, remove\n"
               "  seal [--work-dir DIR] -- COMMAND...\n"
               "                         Run COMMAND under Landlock (in the container's entrypoint)\n"
               "  profile seccomp [--arch ARCH]\n"
               "                         Print the containers' seccomp workload profile\n\n"
               "Options:\n"
               "  -h --help              Show this help\n"
               "     --version           Show the version\n\n"
               "Environment:\n"
               "  LOOP_CONFIG_DIR        Configuration directory (default: %s)\n"
               "  LOOP_LOG_LEVEL         debug, info, notice, warning, err\n\n"
               "See loop(1) and the README for the channel file format.\n",
               program_invocation_short_name, LOOP_CONFIG_DIR_DEFAULT);
}

int main(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100 };
        static const struct option options[] = {
                { "help",    no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        int c;

        log_setup();

        /* Options before the command only; "+" stops at the first non-option so verbs parse their own. */
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return EXIT_SUCCESS;
                case ARG_VERSION:
                        printf("loop %s\n", PACKAGE_VERSION);
                        return EXIT_SUCCESS;
                default:
                        return EXIT_FAILURE;    /* getopt printed why */
                }

        if (optind >= argc) {
                log_error("No command given. See '%s --help'.", program_invocation_short_name);
                return EXIT_FAILURE;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[optind], verbs[i].name)) {
                        argv += optind;
                        argc -= optind;
                        optind = 0;     /* reinitialise getopt for the verb */
                        return verbs[i].run(argc, argv);
                }

        log_error("Unknown command \"%s\". See '%s --help'.", argv[optind], program_invocation_short_name);
        return EXIT_FAILURE;
}
