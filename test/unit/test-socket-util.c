/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* socket-util (unix_connect(), sockaddr_un_set_path()) and, on top of it, the token helpers' client
 * (helper_call()) against a server forked by the test that answers each way a helper may. */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helper-call.h"
#include "io-util.h"
#include "macro.h"
#include "socket-util.h"
#include "tap.h"

typedef enum Behaviour {
        ANSWER_OK,
        ANSWER_NOT_JSON,
        ANSWER_ARRAY,
        ANSWER_HUGE,
        ANSWER_NOTHING,
        ANSWER_NEVER,
} Behaviour;

/* Forks a server on path that reads one request line and answers as b; returns its pid. */
static pid_t server(const char *path, Behaviour b) {
        struct sockaddr_un sa;
        int fd, c;
        pid_t pid;

        if (sockaddr_un_set_path(&sa, path) < 0)
                abort();
        (void) unlink(path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(fd, 4) < 0)
                abort();
        pid = fork();
        if (pid < 0)
                abort();
        if (pid > 0) {
                close(fd);
                return pid;
        }
        c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
                _exit(1);
        char req[4096];
        ssize_t n = read(c, req, sizeof req - 1);
        if (n <= 0)
                _exit(1);
        req[n] = 0;
        switch (b) {
        case ANSWER_OK:
                /* echoes the request's op, so the test sees the request arrived whole */
                (void) loop_write(c, "{\"ok\": true, \"saw\": ", 20);
                (void) loop_write(c, req, strcspn(req, "\n"));
                (void) loop_write(c, "}\n", 2);
                break;
        case ANSWER_NOT_JSON:
                (void) loop_write(c, "hello\n", 6);
                break;
        case ANSWER_ARRAY:
                (void) loop_write(c, "[1, 2]\n", 7);
                break;
        case ANSWER_HUGE: {
                char big[2048];
                memset(big, 'x', sizeof big);
                (void) loop_write(c, big, sizeof big);
                break;
        }
        case ANSWER_NOTHING:
                break;
        case ANSWER_NEVER:
                pause();
                break;
        }
        _exit(0);
}

static void reap(pid_t pid) {
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
}

int main(void) {
        char dir[] = "/tmp/test-socket-util-XXXXXX", path[256], longpath[200];
        struct sockaddr_un sa;
        json_object *req, *answer = NULL, *v;
        const char *failure;
        pid_t pid;
        int fd, r;

        if (!mkdtemp(dir))
                return 1;
        snprintf(path, sizeof path, "%s/s.sock", dir);

        is_int(sockaddr_un_set_path(&sa, path), 0, "sockaddr_un_set_path() takes a path that fits");
        ok(sa.sun_family == AF_UNIX && streq(sa.sun_path, path), "...as an AF_UNIX address with that path");
        memset(longpath, 'a', sizeof longpath - 1);
        longpath[0] = '/';
        longpath[sizeof longpath - 1] = 0;
        is_int(sockaddr_un_set_path(&sa, longpath), -ENAMETOOLONG, "a path longer than sun_path is -ENAMETOOLONG");
        is_int(sockaddr_un_set_path(&sa, ""), -EINVAL, "an empty path is -EINVAL (no abstract names)");

        r = unix_connect(path, 0, 0);
        ok(r == -ENOENT, "unix_connect() to a missing socket is -ENOENT");

        req = json_object_new_object();
        json_object_object_add(req, "op", json_object_new_string("list"));

        pid = server(path, ANSWER_OK);
        r = helper_call(path, 5000000, req, 1024, 1024, &answer, &failure);
        is_int(r, 0, "helper_call() returns the helper's answer");
        ok(answer && json_object_object_get_ex(answer, "saw", &v) && json_object_object_get_ex(v, "op", &v) &&
           streq(json_object_get_string(v), "list"), "...which saw the request as one JSON line");
        json_object_put(answer);
        answer = NULL;
        reap(pid);

        is_int(helper_call(path, 5000000, req, 5, 1024, &answer, &failure), -EMSGSIZE,
               "a request above its cap is -EMSGSIZE, nothing sent");

        pid = server(path, ANSWER_NOT_JSON);
        r = helper_call(path, 5000000, req, 1024, 1024, &answer, &failure);
        ok(r == -EBADMSG && failure && strstr(failure, "cannot be read") && !answer, "an answer that is not JSON is -EBADMSG");
        reap(pid);

        pid = server(path, ANSWER_ARRAY);
        r = helper_call(path, 5000000, req, 1024, 1024, &answer, &failure);
        ok(r == -EBADMSG && !answer, "an answer that is JSON but no object is -EBADMSG");
        reap(pid);

        pid = server(path, ANSWER_HUGE);
        r = helper_call(path, 5000000, req, 1024, 1024, &answer, &failure);
        ok(r == -E2BIG && failure && strstr(failure, "too large"), "an answer above its cap is -E2BIG");
        reap(pid);

        pid = server(path, ANSWER_NOTHING);
        r = helper_call(path, 5000000, req, 1024, 1024, &answer, &failure);
        ok(r == -ECONNRESET && failure && strstr(failure, "without an answer"), "a helper that closes without a word is said so");
        reap(pid);

        pid = server(path, ANSWER_NEVER);
        r = helper_call(path, 200000, req, 1024, 1024, &answer, &failure);
        ok(r == -EAGAIN && failure && strstr(failure, "did not answer"), "a helper that never answers times out (-EAGAIN)");
        reap(pid);

        fd = unix_connect(path, 0, 0);
        ok(fd == -ECONNREFUSED, "a socket nobody listens on any more is -ECONNREFUSED");
        r = helper_call(path, 5000000, req, 1024, 1024, &answer, &failure);
        ok(r == -ECONNREFUSED && failure && strstr(failure, "cannot be reached"), "...and a call to it cannot reach the helper");

        json_object_put(req);
        (void) unlink(path);
        (void) rmdir(dir);
        return done_testing();
}
