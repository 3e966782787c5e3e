/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chrome-bridge.h"
#include "io-util.h"
#include "log.h"
#include "macro.h"
#include "socket-util.h"

/* A direction of the relay: bytes read from one fd waiting to be written to the other. */
typedef struct Pump {
        char buf[CHROME_BRIDGE_BUFFER];
        size_t start, end;
} Pump;

static int listen_at(const char *path, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa;
        mode_t old;
        int r;

        r = sockaddr_un_set_path(&sa, path);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        old = umask(0177);
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                r = -errno;
        umask(old);
        if (r < 0)
                return r;
        if (listen(fd, 4) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int spawn_chrome(char * const *argv, int *ret_to_chrome, int *ret_from_chrome, pid_t *ret_pid) {
        int in[2], out[2];
        pid_t pid;

        /* in: we write, Chrome reads at fd 3; out: Chrome writes at fd 4, we read */
        if (pipe2(in, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(out, O_CLOEXEC) < 0) {
                safe_close(in[0]);
                safe_close(in[1]);
                return -errno;
        }
        pid = fork();
        if (pid < 0) {
                int r = -errno;
                safe_close(in[0]); safe_close(in[1]); safe_close(out[0]); safe_close(out[1]);
                return r;
        }
        if (pid == 0) {
                /* dup2() clears close-on-exec on the copies; the originals go with exec */
                if (dup2(in[0], 3) < 0 || dup2(out[1], 4) < 0)
                        _exit(125);
                (void) signal(SIGPIPE, SIG_DFL);
                execvp(argv[0], argv);
                log_error_errno(errno, "Cannot execute %s: %m", argv[0]);
                _exit(errno == ENOENT ? 127 : 126);
        }
        safe_close(in[0]);
        safe_close(out[1]);
        (void) fcntl(in[1], F_SETFL, O_NONBLOCK);
        (void) fcntl(out[0], F_SETFL, O_NONBLOCK);
        *ret_to_chrome = in[1];
        *ret_from_chrome = out[0];
        *ret_pid = pid;
        return 0;
}

/* Reads what fd has into p; 0 at EOF, 1 when something (or nothing yet) was read, -errno. */
static int pump_read(Pump *p, int fd) {
        ssize_t k;

        if (p->start == p->end)
                p->start = p->end = 0;
        else if (p->end == sizeof p->buf && p->start > 0) {
                memmove(p->buf, p->buf + p->start, p->end - p->start);
                p->end -= p->start;
                p->start = 0;
        }
        if (p->end == sizeof p->buf)
                return 1;       /* full: wait for the writer */
        k = read(fd, p->buf + p->end, sizeof p->buf - p->end);
        if (k < 0)
                return errno == EAGAIN || errno == EINTR ? 1 : -errno;
        if (k == 0)
                return 0;
        p->end += (size_t) k;
        return 1;
}

/* Writes what p holds, up to limit bytes from its start; -errno when fd is gone. */
static int pump_write(Pump *p, int fd, size_t limit) {
        size_t n = MIN(p->end - p->start, limit);
        ssize_t k;

        if (n == 0)
                return 0;
        k = send(fd, p->buf + p->start, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k < 0 && errno == ENOTSOCK)
                k = write(fd, p->buf + p->start, n);
        if (k < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        p->start += (size_t) k;
        return 0;
}

/* Bytes of p up to and including the last NUL: what may go to a client that came in mid-stream. */
static size_t pump_complete(const Pump *p) {
        for (size_t i = p->end; i > p->start; i--)
                if (p->buf[i - 1] == 0)
                        return i - p->start;
        return 0;
}

int chrome_sandbox_check(void) {
        pid_t pid;
        int status;

        /* in a child: the namespaces stay with it */
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                _exit(unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET) < 0 ? (errno & 0x7f) ?: 1 : 0);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (!WIFEXITED(status))
                return -EIO;
        return -WEXITSTATUS(status);
}

/* Drops bytes of down up to and including the next NUL while a message is being skipped. */
static void down_skip(Pump *down, bool *skipping) {
        char *nul;

        if (!*skipping || down->end == down->start)
                return;
        nul = memchr(down->buf + down->start, 0, down->end - down->start);
        if (nul) {
                down->start = (size_t) (nul - down->buf) + 1;
                *skipping = false;
        } else
                down->start = down->end;
}

int chrome_bridge_run(const ChromeBridge *b) {
        _cleanup_close_ int listen_fd = -EBADF, to_chrome = -EBADF, from_chrome = -EBADF, client = -EBADF;
        _cleanup_free_ Pump *up = NULL, *down = NULL;   /* up: client -> Chrome; down: Chrome -> client */
        bool down_at_boundary = true, skipping = false;
        pid_t pid = 0;
        int r = 0, status;

        up = calloc(1, sizeof *up);
        down = calloc(1, sizeof *down);
        if (!up || !down)
                return -ENOMEM;
        (void) signal(SIGPIPE, SIG_IGN);
        r = listen_at(b->socket_path, &listen_fd);
        if (r < 0)
                return log_error_errno(r, "Cannot listen on %s: %m", b->socket_path);
        r = chrome_sandbox_check();
        if (r < 0)
                return log_error_errno(r, "Chrome's sandbox cannot work in this container: a user namespace with its own "
                                       "PID and network namespaces is refused (%m). The engine's seccomp profile or the "
                                       "kernel (user.max_user_namespaces, an LSM) forbids it; refusing to start Chrome "
                                       "without its sandbox.");
        r = spawn_chrome(b->chrome_argv, &to_chrome, &from_chrome, &pid);
        if (r < 0)
                return log_error_errno(r, "Cannot start %s: %m", b->chrome_argv[0]);
        log_info("Chrome runs as pid %d; CDP on %s.", (int) pid, b->socket_path);

        for (;;) {
                size_t whole = pump_complete(up);
                struct pollfd p[4] = {
                        { .fd = listen_fd, .events = POLLIN },
                        { .fd = from_chrome, .events = down->end - down->start < sizeof down->buf ? POLLIN : 0 },
                        { .fd = client, .events = (up->end - up->start < sizeof up->buf ? POLLIN : 0) |
                                                  (down->end > down->start ? POLLOUT : 0) },
                        { .fd = to_chrome, .events = whole > 0 ? POLLOUT : 0 },
                };

                if (poll(p, ELEMENTSOF(p), -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                if (p[0].revents & POLLIN) {
                        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                        if (fd >= 0) {
                                if (client >= 0)
                                        log_info("A new CDP client replaces the previous one.");
                                safe_close(client);
                                client = fd;
                                /* the old client's unfinished request goes with it; Chrome's output
                                 * resumes for the new one at a message boundary */
                                up->end = up->start + pump_complete(up);
                                skipping = !down_at_boundary;
                                down_skip(down, &skipping);
                        }
                }
                if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                        r = pump_read(down, from_chrome);
                        if (r <= 0)
                                break;  /* Chrome is gone */
                        r = 0;
                        down_skip(down, &skipping);
                        if (client < 0 && down->end > down->start) {
                                /* nobody listens: what Chrome says now is lost */
                                down_at_boundary = down->buf[down->end - 1] == 0;
                                down->start = down->end;
                        }
                }
                if (client >= 0 && (p[2].revents & (POLLIN | POLLHUP | POLLERR))) {
                        r = pump_read(up, client);
                        if (r > 0 && up->end - up->start == sizeof up->buf && pump_complete(up) == 0) {
                                log_warning("A CDP message above %zu bytes from the client, dropping the client.",
                                            sizeof up->buf);
                                r = 0;
                        }
                        if (r <= 0) {
                                up->end = up->start + pump_complete(up);
                                client = safe_close(client);
                                if (down->end > down->start)
                                        down_at_boundary = down->buf[down->end - 1] == 0;
                                down->start = down->end;
                        }
                        r = 0;
                }
                if (client >= 0 && down->end > down->start) {
                        if (pump_write(down, client, SIZE_MAX) < 0) {
                                client = safe_close(client);
                                down->start = down->end;
                        }
                        if (down->start > 0)
                                down_at_boundary = down->buf[down->start - 1] == 0;
                }
                whole = pump_complete(up);
                if (whole > 0 && pump_write(up, to_chrome, whole) < 0)
                        break;          /* Chrome closed its input: it is going */
        }
        to_chrome = safe_close(to_chrome);
        from_chrome = safe_close(from_chrome);
        (void) unlink(b->socket_path);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return log_error_errno(errno, "Cannot wait for Chrome: %m");
        if (WIFSIGNALED(status)) {
                log_warning("Chrome was killed by signal %d.", WTERMSIG(status));
                return 128 + WTERMSIG(status);
        }
        log_info("Chrome exited with status %d.", WEXITSTATUS(status));
        return r < 0 ? r : WEXITSTATUS(status);
}
