/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Starts chromium-headless-shell speaking CDP over --remote-debugging-pipe (it reads fd 3, writes fd 4),
 * for the drivers in test/browser and test/bench: sandboxed (as nobody when run as root: Chrome refuses
 * its sandbox as root), or with --no-sandbox when asked. */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <signal.h>
#include <sys/wait.h>

#include "cdp.h"

#define NOBODY 65534

static inline pid_t chrome_start(const char *chrome, const char *profile, bool sandbox, int *ret_to, int *ret_from) {
        int to[2], from[2];
        pid_t pid;

        if (pipe2(to, O_CLOEXEC) < 0 || pipe2(from, O_CLOEXEC) < 0)
                return -errno;
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                char arg_profile[512];
                const char *argv[] = {
                        chrome, "--remote-debugging-pipe", arg_profile, "--no-first-run", "--no-default-browser-check",
                        "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", "--disable-dev-shm-usage", "--disable-breakpad", "--log-level=3",
                        "--window-size=1280,800", "about:blank",
                        sandbox ? NULL : "--no-sandbox", NULL,
                };

                /* Chrome reads fd 3 and writes fd 4: moved above 4 first, so that dup2() never finds an fd
                 * already in place (which would keep its close-on-exec flag) */
                int r = fcntl(to[0], F_DUPFD, 10), w = fcntl(from[1], F_DUPFD, 10);
                if (r < 0 || w < 0 || dup2(r, 3) < 0 || dup2(w, 4) < 0)
                        _exit(127);
                if (sandbox && getuid() == 0 &&
                    (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0))
                        _exit(127);
                setenv("HOME", profile, 1);
                snprintf(arg_profile, sizeof(arg_profile), "--user-data-dir=%s/profile", profile);
                execv(chrome, (char **) argv);
                _exit(127);
        }
        close(to[0]);
        close(from[1]);
        *ret_to = to[1];
        *ret_from = from[0];
        return pid;
}


/* Starts Chrome and connects a CDP client that got an answer: sandboxed first, with --no-sandbox only if
 * that fails (*ret_sandbox says which). The pid, and the pipe fds the client uses (the caller's to close
 * after cdp_free()). */
static inline int chrome_connect(const char *chrome, const char *profile, pid_t *ret_pid, Cdp **ret_cdp,
                                 int *ret_to, int *ret_from, bool *ret_sandbox) {
        int k = -EIO;

        for (int attempt = 0; attempt < 2; attempt++) {
                bool sandbox = attempt == 0;
                int to = -EBADF, from = -EBADF;
                pid_t pid = chrome_start(chrome, profile, sandbox, &to, &from);
                Cdp *c = NULL;

                if (pid < 0)
                        return pid;
                k = cdp_new(from, to, &c);
                if (k >= 0)
                        k = cdp_call(c, NULL, "Browser.getVersion", NULL, 30 * 1000000ULL, NULL, NULL);
                if (k >= 0) {
                        *ret_pid = pid;
                        *ret_cdp = c;
                        *ret_to = to;
                        *ret_from = from;
                        *ret_sandbox = sandbox;
                        return 0;
                }
                cdp_free(c);
                close(to);
                close(from);
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
        return k;
}
