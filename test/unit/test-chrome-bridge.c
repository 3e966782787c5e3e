/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The bridge in the Chrome container, with a stand-in for Chrome that echoes its CDP pipe (reads fd 3,
 * writes fd 4): bytes go both ways between the pipe and the socket's client, a new client replaces the
 * old one without a half message of either spliced in, the bridge ends with "Chrome" and its status, and
 * it refuses to start Chrome where no user namespace can be made (a seccomp filter refuses unshare). */

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chrome-bridge.h"
#include "io-util.h"
#include "tap.h"

static char dir[] = "/tmp/test-chrome-bridge.XXXXXX";
static char sock[256], marker[256];

static pid_t bridge_start(char **argv) {
        pid_t pid = fork();

        assert(pid >= 0);
        if (pid == 0) {
                int r = chrome_bridge_run(&(ChromeBridge) { .socket_path = sock, .chrome_argv = argv });
                _exit(r < 0 ? 100 : r);
        }
        return pid;
}

static int client(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        strcpy(sa.sun_path, sock);
        for (int i = 0; i < 100; i++) {
                if (connect(fd, (struct sockaddr *) &sa, sizeof sa) == 0)
                        return fd;
                usleep(20000);
        }
        close(fd);
        return -1;
}

/* Reads until n bytes came or nothing more comes within a second. */
static size_t read_some(int fd, char *buf, size_t n) {
        size_t got = 0;
        while (got < n) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t k;
                if (poll(&p, 1, 1000) <= 0)
                        break;
                k = read(fd, buf + got, n - got);
                if (k <= 0)
                        break;
                got += (size_t) k;
        }
        return got;
}

static int exit_status(pid_t pid) {
        int status;
        assert(waitpid(pid, &status, 0) == pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_relay(void) {
        char *echo[] = { (char *) "/bin/sh", (char *) "-c", (char *) "exec cat <&3 >&4", NULL };
        char buf[64] = {};
        struct stat st;
        pid_t pid;
        int a, b;

        pid = bridge_start(echo);
        a = client();
        ok(a >= 0, "the bridge listens on its socket");
        ok(stat(sock, &st) == 0 && (st.st_mode & 0777) == 0600, "the socket is 0600");
        assert(loop_write(a, "{\"id\":1}\0", 9) == 0);
        ok(read_some(a, buf, 9) == 9 && memcmp(buf, "{\"id\":1}\0", 9) == 0, "a message goes to Chrome's pipe and back");

        /* half a message, then another client comes */
        assert(loop_write(a, "{\"id\":2,\"half", 13) == 0);
        usleep(100000);
        b = client();
        ok(b >= 0, "a second client connects");
        memset(buf, 0, sizeof buf);
        ok(read_some(a, buf, sizeof buf) == 0, "...and replaces the first, whose connection ends");
        assert(loop_write(b, "{\"id\":3}\0", 9) == 0);
        memset(buf, 0, sizeof buf);
        ok(read_some(b, buf, sizeof buf) == 9 && memcmp(buf, "{\"id\":3}\0", 9) == 0,
           "the new client's message arrives whole, without the old client's half message");
        close(a);
        close(b);
        kill(pid, SIGTERM);     /* the bridge has no handler: it goes, and "Chrome" with its pipe */
        (void) exit_status(pid);
}

static void test_exit_status(void) {
        char *chrome[] = { (char *) "/bin/sh", (char *) "-c", (char *) "exit 7", NULL };
        pid_t pid = bridge_start(chrome);

        is_int(exit_status(pid), 7, "the bridge ends with Chrome, with Chrome's status");
        ok(access(sock, F_OK) < 0, "...and removes its socket");
}

static void test_no_userns(void) {
        char cmd[300];
        char *chrome[] = { (char *) "/bin/sh", (char *) "-c", cmd, NULL };
        pid_t pid;

        snprintf(cmd, sizeof cmd, "touch %s", marker);
        pid = fork();
        assert(pid >= 0);
        if (pid == 0) {
                scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
                if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0) < 0 ||
                    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1) < 0 || seccomp_load(ctx) < 0)
                        _exit(99);
                _exit(chrome_bridge_run(&(ChromeBridge) { .socket_path = sock, .chrome_argv = chrome }) < 0 ? 100 : 0);
        }
        is_int(exit_status(pid), 100, "where no user namespace can be made, the bridge refuses");
        ok(access(marker, F_OK) < 0, "...and never starts Chrome");
}

int main(void) {
        assert(mkdtemp(dir));
        snprintf(sock, sizeof sock, "%s/cdp.sock", dir);
        snprintf(marker, sizeof marker, "%s/chrome-ran", dir);

        if (chrome_sandbox_check() < 0)
                skip("the bridge's relay", "this host cannot make a user namespace (the bridge would refuse)");
        else {
                test_relay();
                test_exit_status();
        }
        test_no_userns();
        (void) unlink(sock);
        (void) rmdir(dir);
        return done_testing();
}
