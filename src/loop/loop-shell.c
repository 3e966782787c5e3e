/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop shell NAME [-- CMD...]`: a shell (or CMD) as the agent user in the channel's shell container, the
 * same container for every terminal (seed 001's FindOrCreateShell). With a terminal on both ends the exec
 * gets a pseudo-terminal (raw mode here, window size passed on, resized on SIGWINCH); otherwise stdin and
 * stdout are plain streams, so `echo cmd | loop shell NAME` works in scripts. The exit status is the
 * shell's. When the last session ends the container stops and is removed after container_keep_alive_sec,
 * unless a shell is opened again before. */

#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>

#include "engine-frames.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "loop.h"
#include "loop-options.h"
#include "runner.h"
#include "strv.h"

#define SHELL_BUFFER_SIZE (64U * 1024U)
#define SHELL_EXIT_SETTLE_TRIES 40U     /* x 50 ms: the engine records the exit a moment after the stream ends */

static volatile sig_atomic_t window_changed;

static void on_winch(int sig) {
        (void) sig;
        window_changed = 1;
}

static void resize(Engine *e, const char *exec_id) {
        struct winsize ws;

        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_row == 0 || ws.ws_col == 0)
                return;
        if (engine_exec_resize(e, exec_id, ws.ws_row, ws.ws_col) < 0)
                log_debug("Failed to resize the terminal, ignoring: %s", engine_last_error(e));
}

/* Without a TTY the stream is framed: each frame goes to our stdout or stderr. */
static int write_frame(int stream, const char *data, size_t size, void *userdata) {
        return loop_write(stream == 2 ? STDERR_FILENO : STDOUT_FILENO, data, size);
}

/* Copies stdin to the connection and the connection to stdout until the connection ends. */
static int pump(int fd, bool tty, const char *pending, size_t pending_size, Engine *e, const char *exec_id) {
        _cleanup_free_ char *buf = malloc(SHELL_BUFFER_SIZE);
        EngineFrames d = { .mode = ENGINE_FRAMES_MULTIPLEXED, .fn = write_frame };
        bool stdin_open = true;
        int r;

        if (!buf)
                return log_oom();
        if (pending_size > 0) {
                r = tty ? loop_write(STDOUT_FILENO, pending, pending_size) : engine_frames_feed(&d, pending, pending_size);
                if (r < 0)
                        return r;
        }
        for (;;) {
                struct pollfd p[2] = {
                        { .fd = fd, .events = POLLIN },
                        { .fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN },
                };
                ssize_t n;

                if (window_changed) {
                        window_changed = 0;
                        resize(e, exec_id);
                }
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        n = read(fd, buf, SHELL_BUFFER_SIZE);
                        if (n < 0 && errno != EINTR && errno != EAGAIN)
                                return -errno;
                        if (n == 0)
                                return 0;       /* the exec ended */
                        if (n > 0) {
                                r = tty ? loop_write(STDOUT_FILENO, buf, (size_t) n) : engine_frames_feed(&d, buf, (size_t) n);
                                if (r < 0)
                                        return r;
                        }
                }
                if (stdin_open && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
                        n = read(STDIN_FILENO, buf, SHELL_BUFFER_SIZE);
                        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (n <= 0) {
                                /* EOF: the shell sees the end of its input, its output still comes. */
                                stdin_open = false;
                                (void) shutdown(fd, SHUT_WR);
                                continue;
                        }
                        r = loop_write(fd, buf, (size_t) n);
                        if (r < 0)
                                return r;
                }
        }
}

static int exec_exit_code(Engine *e, const char *exec_id) {
        for (unsigned i = 0; i < SHELL_EXIT_SETTLE_TRIES; i++) {
                _cleanup_(json_object_putp) json_object *j = NULL;
                json_object *running, *code;

                if (engine_exec_inspect(e, exec_id, &j) < 0)
                        return log_error_errno(EIO, "Cannot read the shell's exit status: %s", engine_last_error(e));
                if (!json_object_object_get_ex(j, "Running", &running) || !json_object_get_boolean(running)) {
                        if (json_object_object_get_ex(j, "ExitCode", &code) && json_object_is_type(code, json_type_int))
                                return json_object_get_int(code) & 0xff;
                        return log_error_errno(EBADMSG, "The engine reports no exit status for the shell.");
                }
                (void) nanosleep(&(struct timespec) { .tv_nsec = 50 * 1000 * 1000 }, NULL);
        }
        return log_error_errno(ETIMEDOUT, "The shell's exec still runs after its stream ended.");
}

/* A session counts for the other terminals' releases once the engine says it runs (it started it for
 * the attach; a second at most): only then is the channel's registry lock let go (runner_shell_started()). */
static void wait_exec_running(Engine *e, const char *exec_id) {
        for (unsigned i = 0; i < 50; i++) {
                _cleanup_(json_object_putp) json_object *x = NULL;
                json_object *v;

                if (engine_exec_inspect(e, exec_id, &x) < 0)
                        return;
                if ((json_object_object_get_ex(x, "Running", &v) && json_object_get_boolean(v)) ||
                    (json_object_object_get_ex(x, "Pid", &v) && json_object_get_int64(v) > 0))
                        return;
                (void) usleep(20 * 1000);
        }
}

/* Where the agent image keeps loop (image/agent/Containerfile, test/lib/test-image.sh). */
#define LOOP_IMAGE_BINARY "/usr/local/bin/loop"

int verb_shell(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                {}
        };
        static char * const login_shell[] = {
                (char *) "/bin/sh", (char *) "-c",
                (char *) "if [ -x /bin/bash ]; then exec /bin/bash -l; else exec /bin/sh -l; fi",
                NULL,
        };
        _cleanup_(shell_target_done) ShellTarget t = {};
        _cleanup_free_ char *exec_id = NULL, *pending = NULL, *term = NULL;
        _cleanup_strv_free_ char **env = NULL, **sealed = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct termios saved;
        bool tty, raw = false;
        size_t pending_size = 0;
        const char *channel;
        char * const *cmd;
        int c, r, status;

        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        printf("loop shell NAME [-- CMD...]\n\nOpen a shell (or run CMD) as the agent user in channel "
                               "NAME's shell container,\nthe same container for every terminal.\n");
                        return EXIT_SUCCESS;
                default:
                        return EXIT_FAILURE;
                }
        if (loop_take_channel_argument(argc, argv, "loop shell NAME [-- CMD...]", &channel) < 0)
                return EXIT_FAILURE;
        cmd = optind < argc ? argv + optind : login_shell;

        /* A terminal session: the registry's events go to the journal, not into the user's shell. */
        if (!getenv("LOOP_LOG_LEVEL") && log_resolve_target() == LOG_TARGET_CONSOLE && log_get_max_level() > LOG_NOTICE)
                log_set_max_level(LOG_NOTICE);

        r = runner_shell_open(channel, &t);
        if (r < 0)
                return EXIT_FAILURE;
        log_debug("Using shell container %s (%.12s).", t.name, t.id);

        tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
        if (tty && getenv("TERM")) {
                if (asprintf(&term, "TERM=%s", getenv("TERM")) < 0 || strv_consume(&env, TAKE_PTR(term)) < 0)
                        return log_oom(), EXIT_FAILURE;
        }

        /* The session is not the entrypoint's child: it gets the same Landlock seal itself, and the
         * configured envs, which the container's own environment holds only encoded (agent-env.h). */
        if (strv_extend(&sealed, LOOP_IMAGE_BINARY) < 0 || strv_extend(&sealed, "seal") < 0 ||
            strv_extend(&sealed, "--agent-env") < 0 || strv_extend(&sealed, "--") < 0)
                return log_oom(), EXIT_FAILURE;
        for (char * const *a = cmd; *a; a++)
                if (strv_extend(&sealed, *a) < 0)
                        return log_oom(), EXIT_FAILURE;

        EngineExecSpec spec = { .argv = sealed, .env = env, .user = t.user, .tty = tty, .attach_stdin = true };
        r = engine_exec_create_spec(t.conn->engine, t.id, &spec, &exec_id);
        if (r < 0) {
                log_error_errno(r, "Failed to create the shell session: %s", engine_last_error(t.conn->engine));
                (void) runner_shell_release(&t);
                return EXIT_FAILURE;
        }
        r = engine_exec_attach(t.conn->engine, exec_id, tty, &fd, &pending, &pending_size);
        if (r < 0) {
                log_error_errno(r, "Failed to start the shell session: %s", engine_last_error(t.conn->engine));
                (void) runner_shell_release(&t);
                return EXIT_FAILURE;
        }
        wait_exec_running(t.conn->engine, exec_id);
        runner_shell_started(&t);

        if (tty) {
                struct sigaction sa = { .sa_handler = on_winch };
                struct termios rawt;

                (void) sigaction(SIGWINCH, &sa, NULL);
                resize(t.conn->engine, exec_id);
                if (tcgetattr(STDIN_FILENO, &saved) >= 0) {
                        rawt = saved;
                        cfmakeraw(&rawt);
                        raw = tcsetattr(STDIN_FILENO, TCSANOW, &rawt) >= 0;
                }
        }
        r = pump(fd, tty, pending, pending_size, t.conn->engine, exec_id);
        if (raw)
                (void) tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
        if (r < 0)
                log_error_errno(r, "The shell session broke off: %m");
        fd = safe_close(fd);

        status = exec_exit_code(t.conn->engine, exec_id);
        (void) runner_shell_release(&t);
        if (r < 0 || status < 0 || t.tampered)
                return EXIT_FAILURE;
        return status;
}
