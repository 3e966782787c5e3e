/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop chrome NAME`: the channel's Chrome container in the foreground (loop-chrome@NAME.service's main
 * process): created by the runner like every container, ready (sd_notify) once its bridge listens on
 * RUNTIME/NAME/chrome/cdp.sock, stopped on SIGTERM. runner.h says what the container gets.
 *
 * `loop chrome-bridge --socket PATH -- CHROME...`: in the Chrome container, Chrome's parent: CDP over
 * --remote-debugging-pipe relayed to a unix socket (chrome-bridge.h). Refuses a Chrome command line with
 * --no-sandbox: Chrome keeps its own sandbox or does not run. */

#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "chrome-bridge.h"
#include "config.h"
#include "gate-token.h"
#include "log.h"
#include "loop.h"
#include "runner.h"
#include "string-util.h"

static void on_stop(int sig) {
        (void) sig;
        runner_interrupt();
}

static void on_ready(const char *container_name, void *userdata) {
        (void) userdata;
        (void) sd_notifyf(false, "READY=1\nSTATUS=Chrome runs in container %s.", container_name);
}

int verb_chrome(int argc, char *argv[]) {
        enum { ARG_USER = 0x100 };
        static const struct option options[] = {
                { "help", no_argument,       NULL, 'h' },
                { "user", required_argument, NULL, ARG_USER },
                {}
        };
        struct sigaction sa = { .sa_handler = on_stop };
        const char *user = GATE_TOKEN_USER, *reason;
        _cleanup_free_ char *dir = NULL;
        struct passwd *pw;
        int c, r, exit_code = -1;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("%s chrome [--user USER] NAME\n\n"
                               "Run the channel's Chrome container until stopped (loop-chrome@NAME.service).\n"
                               "Chrome runs as USER (default: %s, the browser service's user), the only one that\n"
                               "can open its CDP socket in %s/NAME/chrome/.\n",
                               program_invocation_short_name, GATE_TOKEN_USER, loop_runtime_dir());
                        return EXIT_SUCCESS;
                case ARG_USER: user = optarg; break;
                default:
                        return EXIT_FAILURE;
                }
        if (optind + 1 != argc) {
                log_error("Usage: loop chrome [--user USER] NAME");
                return EXIT_FAILURE;
        }
        if (channel_name_check(argv[optind], &reason) < 0)
                return log_error_errno(EINVAL, "\"%s\" is not a valid channel name: %s.", argv[optind], reason), EXIT_FAILURE;
        pw = getpwnam(user);
        if (!pw)
                return log_error_errno(ENOENT, "No user \"%s\" for Chrome and the browser service (systemd-sysusers makes it).",
                                       user), EXIT_FAILURE;
        if (pw->pw_uid == 0)
                return log_error_errno(EPERM, "Chrome never runs as root."), EXIT_FAILURE;
        if (asprintf(&dir, "%s/%s/chrome", loop_runtime_dir(), argv[optind]) < 0)
                return log_oom(), EXIT_FAILURE;
        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGINT, &sa, NULL);

        r = runner_chrome_run(&(ChromeRequest) {
                        .channel = argv[optind],
                        .cdp_dir = dir,
                        .uid = pw->pw_uid,
                        .gid = pw->pw_gid,
                        .ready = on_ready,
                }, &exit_code);
        if (r < 0)
                return EXIT_FAILURE;
        if (exit_code != 0)
                log_warning("The Chrome container of channel %s exited with status %d.", argv[optind], exit_code);
        return exit_code == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int verb_chrome_bridge(int argc, char *argv[]) {
        enum { ARG_SOCKET = 0x100 };
        static const struct option options[] = {
                { "help",   no_argument,       NULL, 'h' },
                { "socket", required_argument, NULL, ARG_SOCKET },
                {}
        };
        const char *socket_path = getenv("LOOP_CDP_SOCKET");
        int c, r;

        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("%s chrome-bridge [--socket PATH] -- CHROME [ARGS...]\n\n"
                               "In the Chrome container: start CHROME (with --remote-debugging-pipe) and relay its\n"
                               "CDP pipe to one client on the unix socket PATH (default: $LOOP_CDP_SOCKET).\n",
                               program_invocation_short_name);
                        return EXIT_SUCCESS;
                case ARG_SOCKET: socket_path = optarg; break;
                default:
                        return EXIT_FAILURE;
                }
        if (isempty(socket_path) || optind >= argc) {
                log_error("Usage: loop chrome-bridge --socket PATH -- CHROME [ARGS...]");
                return EXIT_FAILURE;
        }
        for (int i = optind; i < argc; i++) {
                if (streq(argv[i], "--no-sandbox") || startswith(argv[i], "--no-sandbox=")) {
                        log_error("Refusing to run Chrome with --no-sandbox: Chrome keeps its own sandbox.");
                        return EXIT_FAILURE;
                }
        }
        {
                bool pipe = false;
                for (int i = optind; i < argc; i++)
                        pipe = pipe || streq(argv[i], "--remote-debugging-pipe");
                if (!pipe) {
                        log_error("Chrome's command line lacks --remote-debugging-pipe: there would be no CDP to relay.");
                        return EXIT_FAILURE;
                }
        }
        r = chrome_bridge_run(&(ChromeBridge) { .socket_path = socket_path, .chrome_argv = argv + optind });
        if (r < 0)
                return EXIT_FAILURE;
        return r;
}
