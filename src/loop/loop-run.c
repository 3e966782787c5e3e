/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop run NAME [--] PROMPT...`: one prompt on a channel, in the foreground. */

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>

#include "io-util.h"
#include "log.h"
#include "loop.h"
#include "loop-options.h"
#include "runner.h"
#include "strv.h"
#include "text-escape.h"

#define PROMPT_MAX (1024U * 1024U)

/* SIGPIPE too: `loop run demo x | head -2` must not die in the middle of a write and leave the registry
 * saying "running", the MCP config in the work dir and a private engine behind. Every one of them
 * interrupts the run, which stops the container and cleans up; the exit status is 128 + the signal. */
static volatile sig_atomic_t interrupted_by;

static void on_signal(int sig) {
        if (!interrupted_by)
                interrupted_by = sig;
        runner_interrupt();
}

static void run_help(void) {
        printf("loop run [OPTIONS] NAME [--] PROMPT...\n\n"
               "Run one prompt on channel NAME in a container and print the agent's turns as they stream,\n"
               "then the result and the session id. PROMPT \"-\" reads the prompt from standard input.\n\n"
               "  --resume SID     Continue session SID\n"
               "  --image IMAGE    Use IMAGE instead of the channel's container_image\n"
               "  --agent PATH     Run PATH in the container instead of claude_bin_path\n"
               "  --json           Print the raw stream-json events, one per line\n"
               "  -q --quiet       Print only the result\n\n"
               "Exit status: 0 success, 1 the agent failed, 2 the run could not start, 130 interrupted.\n");
}

int verb_run(int argc, char *argv[]) {
        enum { ARG_RESUME = 0x100, ARG_IMAGE, ARG_AGENT, ARG_JSON };
        static const struct option options[] = {
                { "help",   no_argument,       NULL, 'h' },
                { "resume", required_argument, NULL, ARG_RESUME },
                { "image",  required_argument, NULL, ARG_IMAGE },
                { "agent",  required_argument, NULL, ARG_AGENT },
                { "json",   no_argument,       NULL, ARG_JSON },
                { "quiet",  no_argument,       NULL, 'q' },
                {}
        };
        RunRequest req = { .out = stdout };
        _cleanup_(run_outcome_done) RunOutcome outcome = {};
        _cleanup_free_ char *session = NULL;
        _cleanup_free_ char *prompt = NULL;
        struct sigaction sa = { .sa_handler = on_signal };
        bool quiet = false;
        int c, r;

        /* "+": options only before NAME, so a prompt word like "-x" stays part of the prompt. */
        while ((c = getopt_long(argc, argv, "+hq", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        run_help();
                        return EXIT_SUCCESS;
                case ARG_RESUME:
                        req.resume = optarg;
                        break;
                case ARG_IMAGE:
                        req.image = optarg;
                        break;
                case ARG_AGENT:
                        req.agent = optarg;
                        break;
                case ARG_JSON:
                        req.json = true;
                        break;
                case 'q':
                        quiet = true;
                        break;
                default:
                        return 2;
                }

        if (loop_take_channel_argument(argc, argv, "loop run [OPTIONS] NAME [--] PROMPT... (see 'loop run --help')",
                                       &req.channel) < 0)
                return 2;
        if (optind >= argc) {
                log_error("No prompt given (see 'loop run --help').");
                return 2;
        }
        if (optind == argc - 1 && streq(argv[optind], "-")) {
                r = read_text_fd(STDIN_FILENO, PROMPT_MAX, &prompt, NULL);
                if (r < 0) {
                        log_error_errno(r, "Failed to read the prompt from standard input: %m");
                        return 2;
                }
        } else {
                prompt = strv_join(argv + optind, " ");
                if (!prompt)
                        return log_oom(), 2;
        }
        if (isempty(prompt)) {
                log_error("The prompt is empty.");
                return 2;
        }
        req.prompt = prompt;
        if (quiet)
                req.out = NULL;

        (void) sigaction(SIGINT, &sa, NULL);
        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGHUP, &sa, NULL);
        (void) sigaction(SIGPIPE, &sa, NULL);

        /* On a terminal the run's own output is what matters: the registry's container events (info) go
         * to the journal when there is one, and to the console only with LOOP_LOG_LEVEL=info. */
        if (!getenv("LOOP_LOG_LEVEL") && log_resolve_target() == LOG_TARGET_CONSOLE && log_get_max_level() > LOG_NOTICE)
                log_set_max_level(LOG_NOTICE);

        r = runner_run(&req, &outcome);
        if (r == -EINTR || interrupted_by)
                return 128 + (interrupted_by ?: SIGINT);
        if (r < 0)
                return 2;

        /* What the agent wrote reaches the terminal shown, never acted on (text_escape_prose()). */
        session = text_escape_display(strempty(outcome.result.session_id), 0);
        if (!session)
                return log_oom(), 2;
        if (outcome.error != AGENT_ERROR_NONE) {
                _cleanup_free_ char *message = text_escape_display(strna(outcome.error_message), 0);
                log_error("The agent failed (%s): %s", agent_error_kind_to_string(outcome.error), strna(message));
                if (outcome.result.session_id)
                        fprintf(stderr, "session: %s\n", session);
                return 1;
        }
        if (quiet || (!req.json && !outcome.result_printed)) {
                _cleanup_free_ char *result = text_escape_prose(strempty(outcome.result.result), 0);
                if (!result)
                        return log_oom(), 2;
                printf("%s\n", result);
        }
        if (outcome.result.session_id)
                fprintf(stderr, "session: %s (%" PRIu64 " turns, %" PRIu64 " ms%s)\n", session,
                        outcome.result.num_turns, outcome.result.duration_ms,
                        outcome.retries > 0 ? ", after a retry" : "");
        /* The result was written, or lost because the reader went away: then say so in the status. */
        if (fflush(stdout) != 0 || interrupted_by)
                return 128 + (interrupted_by ?: SIGPIPE);
        return EXIT_SUCCESS;
}
