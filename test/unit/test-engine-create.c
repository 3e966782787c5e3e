/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* engine_container_create() and engine_exec_create() both take the "Id" of what the engine created from its
 * answer (one helper, call_for_id()): what they make of the answers an engine, or something in its place,
 * gives. A thread here plays the socket's other end. */

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "engine.h"
#include "json-util.h"
#include "io-util.h"
#include "macro.h"
#include "tap.h"

typedef struct Peer {
        int listen_fd;
        const char *body;               /* the JSON answered with 201 */
} Peer;

/* Reads the whole request (head and Content-Length body) before answering, so that closing does not reset. */
static void read_request(int fd) {
        char buf[16384];
        size_t n = 0;

        for (;;) {
                ssize_t k = read(fd, buf + n, sizeof buf - 1 - n);
                if (k <= 0)
                        return;
                n += (size_t) k;
                buf[n] = 0;
                const char *end = strstr(buf, "\r\n\r\n"), *cl = strcasestr(buf, "Content-Length:");
                if (!end)
                        continue;
                if (!cl || cl > end || (size_t) (end + 4 - buf) + strtoul(cl + 15, NULL, 10) <= n)
                        return;
        }
}

static void *peer_run(void *userdata) {
        Peer *p = userdata;
        char head[256];
        int fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);

        if (fd < 0)
                return NULL;
        read_request(fd);
        snprintf(head, sizeof head, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                 strlen(p->body));
        (void) loop_write(fd, head, strlen(head));
        (void) loop_write(fd, p->body, strlen(p->body));
        close(fd);
        return NULL;
}

/* exec: engine_exec_create() in container "abc123", else engine_container_create() named "web". */
static int create(const char *socket_path, int listen_fd, bool exec, const char *answer, char **ret_id,
                  char **ret_error) {
        _cleanup_(engine_freep) Engine *e = NULL;
        _cleanup_(json_object_putp) json_object *body = json_object_new_object();
        char *argv[] = { (char *) "true", NULL };
        Peer p = { .listen_fd = listen_fd, .body = answer };
        pthread_t t;
        int r;

        if (!body || engine_new(socket_path, &e) < 0 || pthread_create(&t, NULL, peer_run, &p) != 0)
                return -ENOMEM;
        r = exec ? engine_exec_create(e, "abc123", argv, NULL, NULL, ret_id) : engine_container_create(e, "web", body, ret_id);
        pthread_join(t, NULL);
        *ret_error = engine_last_error(e) ? strdup(engine_last_error(e)) : NULL;
        return r;
}

int main(void) {
        char dir[] = "/tmp/test-engine-create-XXXXXX", path[PATH_MAX];
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int listen_fd = -EBADF;
        int r;

        if (!mkdtemp(dir))
                return 1;
        snprintf(path, sizeof path, "%s/engine.sock", dir);
        if (strlen(path) >= sizeof sa.sun_path)
                return 1;
        memcpy(sa.sun_path, path, strlen(path));
        listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(listen_fd, 4) < 0)
                return 1;

        {
                _cleanup_free_ char *id = NULL, *error = NULL;
                r = create(path, listen_fd, false, "{\"Id\":\"c0ffee\",\"Warnings\":[]}", &id, &error);
                ok(r == 0 && id && streq(id, "c0ffee"), "a container's Id is taken from the answer");
        }
        {
                _cleanup_free_ char *id = NULL, *error = NULL;
                r = create(path, listen_fd, true, "{\"Id\":\"e7ec\"}", &id, &error);
                ok(r == 0 && id && streq(id, "e7ec"), "an exec instance's Id is taken from the answer");
        }
        {
                _cleanup_free_ char *id = NULL, *error = NULL;
                r = create(path, listen_fd, false, "{\"Warnings\":[]}", &id, &error);
                is_int(r, -EBADMSG, "an answer without an Id is -EBADMSG");
                ok(!id, "and no id is returned");
                is_str(error, "POST /containers/create: the engine's answer has no valid \"Id\"",
                       "the error names the call without its query");
        }
        {
                _cleanup_free_ char *id = NULL, *error = NULL;
                r = create(path, listen_fd, true, "{\"Id\":\"../../etc\"}", &id, &error);
                is_int(r, -EBADMSG, "an Id that is no container reference is refused");
                is_str(error, "POST /containers/abc123/exec: the engine's answer has no valid \"Id\"",
                       "the error names the exec call with its container");
        }
        {
                _cleanup_free_ char *id = NULL, *error = NULL;
                r = create(path, listen_fd, false, "{\"Id\":42}", &id, &error);
                is_int(r, -EBADMSG, "an Id that is not a string is refused");
        }

        unlink(path);
        rmdir(dir);
        return done_testing();
}
