/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The helper skeleton, run for real: each case forks a child that serves a listening AF_UNIX socket the
 * test made, through socket_service_run(), and talks to it as a client would. */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "macro.h"
#include "socket-service.h"
#include "tap.h"

typedef enum Mode {
        MODE_HOLD,              /* "hi", then wait for the client to close */
        MODE_HEAD,              /* "reading", then a request head read a byte at a time under the head deadline */
        MODE_WORK,              /* one byte, "started", work, "done", then report to the test */
} Mode;

static Mode mode;
static int report_fd = -EBADF;  /* MODE_WORK: the worker writes "joined" here just before it returns */
static char socket_path[sizeof ((struct sockaddr_un *) NULL)->sun_path];

static void run_connection(SocketConnection *c, void *userdata) {
        int fd = socket_connection_fd(c);
        char b;

        switch (mode) {
        case MODE_HOLD:
                (void) write(fd, "hi\n", 3);
                while (read(fd, &b, 1) > 0)
                        ;
                break;
        case MODE_HEAD:
                if (socket_connection_head_begin(c) < 0)
                        break;
                (void) write(fd, "reading\n", 8);
                while (read(fd, &b, 1) > 0)
                        ;
                if (socket_connection_head_end(c) == -ETIMEDOUT)
                        (void) write(fd, "expired\n", 8);
                else
                        (void) write(fd, "complete\n", 9);
                break;
        case MODE_WORK:
                if (read(fd, &b, 1) != 1)
                        break;
                (void) write(fd, "started\n", 8);
                usleep(300 * 1000);
                (void) write(fd, "done\n", 5);
                usleep(200 * 1000);
                (void) write(report_fd, "joined", 6);
                break;
        }
}

/* An accept helper: answers with its listener's name and closes; keeps the service alive until its first
 * connection; says "stopped" to the test when stopped. */
static bool released;

static void on_accept_test(SocketService *s, int fd, const char *listener, void *userdata) {
        (void) write(fd, listener, strlen(listener));
        (void) write(fd, "\n", 1);
        close(fd);
        released = true;
}

static bool on_keeps_alive(SocketService *s, void *userdata) {
        return !released;
}

static void on_stop(SocketService *s, void *userdata) {
        (void) write(report_fd, "stopped", 7);
}

static void on_busy(SocketService *s, int fd, void *userdata) {
        (void) write(fd, "busy\n", 5);
}

/* Tells the test the pool's state each time connections were freed. */
static void on_released_report(SocketService *s, void *userdata) {
        SocketServiceStats st;
        char line[128];
        int n;

        socket_service_get_stats(s, &st);
        n = snprintf(line, sizeof line, "%u %u %u %u\n", st.connections, st.workers, st.workers_idle, st.workers_started);
        (void) write(report_fd, line, n);
}

/* The threads of this process, from /proc/self/status; 0 if unknown. */
static unsigned count_threads(void) {
        char line[256];
        unsigned n = 0;
        FILE *f = fopen("/proc/self/status", "re");

        if (!f)
                return 0;
        while (fgets(line, sizeof line, f))
                if (sscanf(line, "Threads: %u", &n) == 1)
                        break;
        fclose(f);
        return n;
}

static int make_listener(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        (void) unlink(socket_path);
        memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(fd, 16) < 0)
                abort();
        return fd;
}

/* The child serving with config; returns its pid. */
static pid_t serve(SocketServiceConfig config) {
        int fd = make_listener();
        pid_t pid = fork();

        if (pid < 0)
                abort();
        if (pid == 0) {
                SocketService *s = NULL;
                int r;

                if (!config.accept)
                        config.run = run_connection;
                r = socket_service_new(&config, &s);
                if (r >= 0)
                        r = socket_service_add_listener(s, fd, "test");
                if (r >= 0)
                        r = socket_service_run(s);
                socket_service_free(s);
                /* no worker, busy or idle, outlives socket_service_run() */
                _exit(r < 0 ? 2 : count_threads() != 1 ? 3 : 0);
        }
        close(fd);
        return pid;
}

static int client(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                printf("Bail out! cannot connect to the service: %m\n");
                abort();
        }
        return fd;
}

/* Reads up to size - 1 bytes until the peer closes or a newline came; NUL-terminates. */
static void read_line(int fd, char *buf, size_t size) {
        size_t n = 0;

        while (n + 1 < size) {
                ssize_t k = read(fd, buf + n, 1);
                if (k <= 0)
                        break;
                if (buf[n++] == '\n')
                        break;
        }
        buf[n] = 0;
}

static bool exited_cleanly(pid_t pid) {
        int status;

        return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static bool still_running(pid_t pid) {
        int status;

        return waitpid(pid, &status, WNOHANG) == 0;
}

static void test_idle(void) {
        char line[16];
        pid_t pid;
        int fd;

        mode = MODE_HOLD;
        pid = serve((SocketServiceConfig) { .idle_usec = 200 * 1000 });
        ok(exited_cleanly(pid), "without connections the service exits after its idle time");

        /* a service started with no connection pending (or before its first one is accepted) waits its idle
         * time: it once exited on its first turn of the loop, and a client connecting then was refused */
        pid = serve((SocketServiceConfig) { .idle_usec = 5 * 1000 * 1000 });
        usleep(300 * 1000);
        ok(still_running(pid), "the service does not exit before its idle time has passed");
        fd = client();
        read_line(fd, line, sizeof line);
        is_str(line, "hi\n", "...and serves a client that comes later");
        close(fd);
        kill(pid, SIGTERM);
        ok(exited_cleanly(pid), "...and stops on SIGTERM");

        pid = serve((SocketServiceConfig) { .idle_usec = 500 * 1000 });
        fd = client();
        read_line(fd, line, sizeof line);
        is_str(line, "hi\n", "a connection is served");
        usleep(1200 * 1000);
        ok(still_running(pid), "an open connection keeps the service beyond its idle time");
        close(fd);
        ok(exited_cleanly(pid), "the idle timer is armed again when the last connection closes, and the service exits");
}

static void test_head_deadline(void) {
        char line[16];
        bool cut = false;
        pid_t pid;
        int fd;

        mode = MODE_HEAD;
        pid = serve((SocketServiceConfig) { .head_usec = 500 * 1000 });
        fd = client();
        read_line(fd, line, sizeof line);
        is_str(line, "reading\n", "the worker reads a head under its deadline");
        /* a byte every 100 ms: no single read waits long, the head as a whole takes 5 s. Cut means the
         * worker's answer is there, or the service shut its read side before the worker answered (a send
         * then fails with EPIPE); the next point checks the answer either way. */
        for (unsigned i = 0; i < 50; i++) {
                if (send(fd, "x", 1, MSG_NOSIGNAL) != 1) {
                        cut = errno == EPIPE;
                        break;
                }
                usleep(100 * 1000);
                {
                        char b;
                        ssize_t k = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
                        if (k > 0) {
                                cut = true;
                                break;
                        }
                }
        }
        ok(cut, "a head trickling in a byte at a time is cut before it is complete");
        read_line(fd, line, sizeof line);
        is_str(line, "expired\n", "the worker is told the head's deadline passed, and can still answer");
        close(fd);
        kill(pid, SIGTERM);
        ok(exited_cleanly(pid), "the service stops after the slow client was cut");

        pid = serve((SocketServiceConfig) { .head_usec = 60 * 1000 * 1000 });
        fd = client();
        read_line(fd, line, sizeof line);
        (void) send(fd, "xyz", 3, MSG_NOSIGNAL);
        (void) shutdown(fd, SHUT_WR);
        read_line(fd, line, sizeof line);
        is_str(line, "complete\n", "a head within its deadline is not cut");
        close(fd);
        kill(pid, SIGTERM);
        ok(exited_cleanly(pid), "SIGTERM stops an idle service");
}

static void test_sigterm(void) {
        char line[16], report[16] = {};
        int pipe_fds[2], fd;
        pid_t pid;
        ssize_t k;

        if (pipe2(pipe_fds, O_CLOEXEC) < 0)
                abort();
        report_fd = pipe_fds[1];
        mode = MODE_WORK;
        pid = serve((SocketServiceConfig) {});
        close(pipe_fds[1]);
        fd = client();
        (void) send(fd, "x", 1, MSG_NOSIGNAL);
        read_line(fd, line, sizeof line);
        is_str(line, "started\n", "a request is under way");
        kill(pid, SIGTERM);
        read_line(fd, line, sizeof line);
        is_str(line, "done\n", "SIGTERM lets the request under way finish");
        ok(exited_cleanly(pid), "the service exits after SIGTERM");
        k = read(pipe_fds[0], report, sizeof report - 1);
        ok(k == 6 && streq(report, "joined"), "the worker ran to its end before the process exited (joined, not abandoned)");
        close(fd);
        close(pipe_fds[0]);

        mode = MODE_HEAD;
        pid = serve((SocketServiceConfig) { .head_usec = 60 * 1000 * 1000 });
        fd = client();
        read_line(fd, line, sizeof line);
        is_str(line, "reading\n", "a worker waits for a request head");
        (void) send(fd, "x", 1, MSG_NOSIGNAL);
        kill(pid, SIGTERM);
        read_line(fd, line, sizeof line);
        is_str(line, "complete\n", "SIGTERM ends a connection waiting for a head, without calling it a timeout");
        ok(exited_cleanly(pid), "and the service exits without waiting for the head's deadline");
        close(fd);
}

static void test_busy(void) {
        char line[16];
        int a, b;
        pid_t pid;

        mode = MODE_HOLD;
        pid = serve((SocketServiceConfig) { .connections_max = 1, .busy = on_busy });
        a = client();
        read_line(a, line, sizeof line);
        is_str(line, "hi\n", "the first connection is served");
        b = client();
        read_line(b, line, sizeof line);
        is_str(line, "busy\n", "a connection beyond connections_max goes to the busy callback");
        close(a);
        close(b);
        kill(pid, SIGTERM);
        ok(exited_cleanly(pid), "the service stops with its connections closed");
}

/* Reads the pool reports until one says no connection is left; the numbers of that one. */
static bool read_pool_drained(int fd, unsigned *ret_workers, unsigned *ret_idle, unsigned *ret_started) {
        char line[128];
        unsigned c;

        for (;;) {
                read_line(fd, line, sizeof line);
                if (!line[0] || sscanf(line, "%u %u %u %u", &c, ret_workers, ret_idle, ret_started) != 4)
                        return false;
                if (c == 0)
                        return true;
        }
}

static void test_pool(void) {
        unsigned workers = 0, idle = 0, started = 0;
        int pipe_fds[2], a, b, c, d;
        char line[16];
        pid_t pid;
        bool drained;

        if (pipe2(pipe_fds, O_CLOEXEC) < 0)
                abort();
        report_fd = pipe_fds[1];
        mode = MODE_HOLD;
        pid = serve((SocketServiceConfig) { .released = on_released_report });
        a = client();
        read_line(a, line, sizeof line);
        close(a);
        drained = read_pool_drained(pipe_fds[0], &workers, &idle, &started);
        ok(drained && workers == 1 && idle == 1, "a worker whose connection ended is kept, idle");
        a = client();
        read_line(a, line, sizeof line);
        is_str(line, "hi\n", "the next connection is served");
        close(a);
        drained = read_pool_drained(pipe_fds[0], &workers, &idle, &started);
        ok(drained && started == 1 && workers == 1, "...by the idle worker: no thread was started for it");
        a = client();
        read_line(a, line, sizeof line);
        b = client();
        read_line(b, line, sizeof line);
        is_str(line, "hi\n", "a second connection at once is served beside the first");
        close(a);
        close(b);
        drained = read_pool_drained(pipe_fds[0], &workers, &idle, &started);
        ok(drained && started == 2 && workers == 2 && idle == 2, "...by a worker started for it, kept idle too");
        kill(pid, SIGTERM);
        ok(exited_cleanly(pid), "SIGTERM ends the idle workers and joins them before the service exits");

        /* the bound: connections_max at work, workers_idle_max kept */
        pid = serve((SocketServiceConfig) { .connections_max = 3, .workers_idle_max = 1, .busy = on_busy,
                                            .released = on_released_report });
        a = client();
        read_line(a, line, sizeof line);
        b = client();
        read_line(b, line, sizeof line);
        c = client();
        read_line(c, line, sizeof line);
        is_str(line, "hi\n", "three connections at once get three workers");
        d = client();
        read_line(d, line, sizeof line);
        is_str(line, "busy\n", "a fourth beyond connections_max gets no worker");
        close(d);
        close(a);
        close(b);
        close(c);
        drained = read_pool_drained(pipe_fds[0], &workers, &idle, &started);
        ok(drained && started == 3, "no more workers were started than connections_max");
        ok(drained && workers == 1 && idle == 1, "beyond workers_idle_max, workers whose connection ended exit and are joined");
        kill(pid, SIGTERM);
        ok(exited_cleanly(pid), "the service stops with its one idle worker joined");

        /* idle exit with an idle worker */
        pid = serve((SocketServiceConfig) { .idle_usec = 300 * 1000, .released = on_released_report });
        a = client();
        read_line(a, line, sizeof line);
        close(a);
        drained = read_pool_drained(pipe_fds[0], &workers, &idle, &started);
        ok(drained && idle == 1, "an idle worker waits after its connection");
        ok(exited_cleanly(pid), "it does not hold the idle exit, and is joined before the service exits");

        /* drain: one idle worker, one connection held past SIGTERM */
        pid = serve((SocketServiceConfig) { .drain_usec = 300 * 1000, .released = on_released_report });
        a = client();
        read_line(a, line, sizeof line);
        close(a);
        (void) read_pool_drained(pipe_fds[0], &workers, &idle, &started);
        b = client();
        read_line(b, line, sizeof line);
        kill(pid, SIGTERM);
        ok(read(b, line, 1) == 0, "after SIGTERM and the drain time a connection held open is shut down");
        ok(exited_cleanly(pid), "...and the service exits with every worker, busy or idle, joined");
        close(b);

        close(pipe_fds[0]);
        close(pipe_fds[1]);
        report_fd = -EBADF;
}

static void test_accept_helper(void) {
        char line[16], report[16] = {};
        int pipe_fds[2], fd;
        pid_t pid;

        pid = serve((SocketServiceConfig) { .accept = on_accept_test, .keeps_alive = on_keeps_alive, .idle_usec = 200 * 1000 });
        usleep(700 * 1000);
        ok(still_running(pid), "keeps_alive holds the idle exit while the helper has work");
        fd = client();
        read_line(fd, line, sizeof line);
        is_str(line, "test\n", "an accept helper gets the connection with its listener's name");
        close(fd);
        ok(exited_cleanly(pid), "once keeps_alive says no more, the service idles out");

        if (pipe2(pipe_fds, O_CLOEXEC) < 0)
                abort();
        report_fd = pipe_fds[1];
        pid = serve((SocketServiceConfig) { .accept = on_accept_test, .stop = on_stop });
        close(pipe_fds[1]);
        fd = client();
        read_line(fd, line, sizeof line);       /* serving */
        close(fd);
        kill(pid, SIGTERM);
        ok(exited_cleanly(pid), "SIGTERM stops an accept helper");
        ok(read(pipe_fds[0], report, sizeof report - 1) == 7 && streq(report, "stopped"), "its stop callback ran first");
        close(pipe_fds[0]);
}

static void test_listeners(void) {
        SocketService *s = NULL;
        int pair[2];

        ok(socket_service_new(&(SocketServiceConfig) { .run = run_connection }, &s) >= 0, "a service is made");
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                abort();
        ok(socket_service_add_listener(s, pair[0], NULL) == -ENOTSOCK, "a connected socket is not taken as a listener");
        close(pair[1]);
        if (pipe2(pair, O_CLOEXEC) < 0)
                abort();
        ok(socket_service_add_listener(s, pair[0], NULL) == -ENOTSOCK, "a pipe is not taken as a listener");
        close(pair[1]);
        (void) unsetenv("LISTEN_FDS");
        ok(socket_service_listen_systemd(s) == -EBADF, "without sockets from systemd the service refuses to start");
        socket_service_free(s);
}

static void test_argv(void) {
        const char *config = NULL;
        char *positional[1] = {};
        SocketServiceOption options[] = { { "config", &config } };
        int r, saved;

        {
                char *argv[] = { (char *) "helper", (char *) "demo", (char *) "--config", (char *) "/x.json", NULL };
                r = socket_service_parse_argv(4, argv, "CHANNEL [--config FILE]", NULL, options, 1, 1, positional);
                ok(r == 1 && streq(positional[0], "demo") && streq_ptr(config, "/x.json"), "CHANNEL --config FILE is parsed");
        }
        {
                char *argv[] = { (char *) "helper", (char *) "--config=/y.json", (char *) "demo", NULL };
                config = NULL;
                r = socket_service_parse_argv(3, argv, "CHANNEL [--config FILE]", NULL, options, 1, 1, positional);
                ok(r == 1 && streq(positional[0], "demo") && streq_ptr(config, "/y.json"), "--config=FILE before CHANNEL is parsed");
        }

        /* --help and --version print to stdout, which is the TAP stream: away with them */
        fflush(stdout);
        saved = dup(STDOUT_FILENO);
        {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                (void) dup2(null, STDOUT_FILENO);
                close(null);
        }
        {
                char *argv[] = { (char *) "helper", (char *) "--help", NULL };
                positional[0] = NULL;
                r = socket_service_parse_argv(2, argv, "CHANNEL", NULL, NULL, 0, 1, positional);
        }
        fflush(stdout);
        {
                char *argv[] = { (char *) "helper", (char *) "--version", NULL };
                int v = socket_service_parse_argv(2, argv, "CHANNEL", NULL, NULL, 0, 1, positional);
                fflush(stdout);
                (void) dup2(saved, STDOUT_FILENO);
                close(saved);
                ok(r == 0 && !positional[0], "--help is answered, never taken for a channel name");
                ok(v == 0, "--version is answered");
        }
        {
                char *argv[] = { (char *) "helper", (char *) "--bogus", (char *) "demo", NULL };
                ok(socket_service_parse_argv(3, argv, "CHANNEL", NULL, options, 1, 1, positional) == -EINVAL,
                   "an unknown option is a usage error");
        }
        {
                char *argv[] = { (char *) "helper", (char *) "demo", (char *) "--config", NULL };
                ok(socket_service_parse_argv(3, argv, "CHANNEL", NULL, options, 1, 1, positional) == -EINVAL,
                   "an option without its value is a usage error");
        }
        {
                char *argv[] = { (char *) "helper", (char *) "demo", (char *) "other", NULL };
                ok(socket_service_parse_argv(3, argv, "CHANNEL", NULL, options, 1, 1, positional) == -EINVAL,
                   "a second positional argument is a usage error");
        }
        {
                char *argv[] = { (char *) "helper", NULL };
                ok(socket_service_parse_argv(1, argv, "CHANNEL", NULL, options, 1, 1, positional) == -EINVAL,
                   "a missing positional argument is a usage error");
        }
}

int main(void) {
        char dir[] = "/tmp/test-socket-service-XXXXXX";

        alarm(120);     /* a hang is a failure, not a stuck suite */
        if (!mkdtemp(dir))
                abort();
        (void) snprintf(socket_path, sizeof socket_path, "%s/sock", dir);

        test_argv();
        test_listeners();
        test_idle();
        test_head_deadline();
        test_sigterm();
        test_busy();
        test_pool();
        test_accept_helper();

        (void) unlink(socket_path);
        (void) rmdir(dir);
        printf("1..%u\n", tap_count);
        return tap_failed ? 1 : 0;
}
