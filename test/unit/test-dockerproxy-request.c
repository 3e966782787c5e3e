/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* One connection of the Docker API proxy served end to end over a socket pair (src/dockerproxy/dockerproxy-request.h):
 * the answers the proxy gives itself before the engine is asked, and requests kept alive one after the
 * other. The engine's socket does not exist: a request the proxy lets through is answered 502. */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dockerproxy-conn.h"
#include "dockerproxy-policy.h"
#include "dockerproxy-request.h"
#include "macro.h"
#include "tap.h"

#define assert_se(x) do { if (!(x)) abort(); } while (0)

static DockerProxy proxy = {
        .channel = (char *) "demo",
        .engine_socket = (char *) "/nonexistent/loop-test/engine.sock",
        .gate_socket = (char *) "/nonexistent/loop-test/gate.sock",
        .containers_max = 16,
        .create_lock = PTHREAD_MUTEX_INITIALIZER,
        .start_lock = PTHREAD_MUTEX_INITIALIZER,
        .not_found_lock = PTHREAD_MUTEX_INITIALIZER,
        .refusal_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* Sends request (then ends the client's side), serves the connection, returns what the client read. */
static char *ask(const char *request, size_t size) {
        _cleanup_(proxy_conn_freep) ProxyConn *c = NULL;
        int fds[2];
        char *answer = malloc(65536);
        size_t n = 0;

        assert_se(answer);
        assert_se(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
        assert_se(write(fds[0], request, size) == (ssize_t) size);
        assert_se(shutdown(fds[0], SHUT_WR) == 0);
        assert_se(proxy_conn_new(&proxy, NULL, fds[1], &c) == 0);
        c->peer_known = true;           /* the caller is one of the channel's: the rest is tested here */
        proxy_conn_serve(c);
        close(fds[1]);
        for (ssize_t k; n < 65535 && (k = read(fds[0], answer + n, 65535 - n)) > 0;)
                n += (size_t) k;
        answer[n] = 0;
        close(fds[0]);
        return answer;
}

static void check(const char *request, const char *status, const char *says, const char *name) {
        _cleanup_free_ char *a = ask(request, strlen(request));
        bool good = startswith(a, status) && (!says || strstr(a, says));

        if (strlen(a) > 300)
                a[300] = 0;

        ok(good, "%s", name);
        if (!good)
                diag(a);
}

static void test_refused_before_the_engine(void) {
        check("GET /v1.12/_ping HTTP/1.1\r\nHost: d\r\n\r\n", "HTTP/1.1 403 ", "API version v1.12 is not served",
              "an API version before 1.24 is refused");
        check("GET /secrets HTTP/1.1\r\nHost: d\r\n\r\n", "HTTP/1.1 403 ", "not an endpoint the proxy serves",
              "an endpoint outside the allow-list is refused");
        check("POST /build HTTP/1.1\r\nHost: d\r\nContent-Length: 1\r\n\r\nx", "HTTP/1.1 403 ", "builds are off",
              "a build is refused when builds are off");
        check("POST /images/create?fromImage=busybox&fromSrc=x HTTP/1.1\r\nHost: d\r\n\r\n", "HTTP/1.1 403 ",
              "a pull takes the parameters fromImage, tag and platform only", "a pull with another parameter is refused");
        check("POST /images/create?fromSrc=http://x/y HTTP/1.1\r\nHost: d\r\n\r\n", "HTTP/1.1 403 ",
              "fromSrc=-", "an import from a URL is refused");
        check("GET /_ping HTTP/1.1\r\nHost: d\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
              "HTTP/1.1 400 ", NULL, "a head with both framings (smuggling) is refused");
        check("GET /_ping HTTP/1.1\r\nHost: d\r\n\r\n", "HTTP/1.1 502 ", "not reachable",
              "an allowed request goes to the engine (unreachable here: 502)");
        check("POST /containers/create HTTP/1.1\r\nHost: d\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"x\":1}{}",
              "HTTP/1.1 400 ", NULL, "a body that is not one JSON value is refused");
        check("GET /containers/json HTTP/1.1\r\nHost: d\r\nContent-Length: 2\r\n\r\n{}", "HTTP/1.1 502 ", NULL,
              "a list with an empty JSON body goes to the engine");
        check("GET /_ping HTTP/1.1\r\nHost: d\r\nContent-Length: 3\r\n\r\n{}", "", NULL,
              "a request whose body the client did not finish gets no answer");
}

static void test_head_too_large(void) {
        size_t size = PROXY_HEADER_SIZE_MAX + 1024;
        _cleanup_free_ char *req = malloc(size + 64), *a = NULL;
        int n;

        assert_se(req);
        n = snprintf(req, size + 64, "GET /_ping HTTP/1.1\r\nX-Big: ");
        memset(req + n, 'a', size - (size_t) n);
        memcpy(req + size, "\r\n\r\n", 5);
        a = ask(req, size + 4);
        ok(!!startswith(a, "HTTP/1.1 431 "), "a head over PROXY_HEADER_SIZE_MAX is refused with 431");
}

static unsigned count(const char *s, const char *what) {
        unsigned n = 0;

        for (const char *p = s; p && (p = strstr(p, what)); p++)
                n++;
        return n;
}

static void test_kept_alive(void) {
        static const char two[] = "GET /_ping HTTP/1.1\r\nHost: d\r\n\r\nGET /v1.41/version HTTP/1.1\r\nHost: d\r\n\r\n";
        static const char refused[] = "GET /v1.12/_ping HTTP/1.1\r\nHost: d\r\n\r\nGET /_ping HTTP/1.1\r\nHost: d\r\n\r\n";
        _cleanup_free_ char *a = ask(two, strlen(two)), *b = ask(refused, strlen(refused));

        is_int(count(a, "HTTP/1.1 502 "), 2, "two pipelined requests are each answered on the one connection");
        ok(count(a, "Connection: keep-alive") == 2, "...each answer keeps the connection");
        is_int(count(b, "HTTP/1.1 "), 1, "a request refused before its body was read ends the connection");
        ok(b && strstr(b, "Connection: close"), "...and its answer says so");
}

int main(void) {
        _cleanup_(json_object_putp) json_object *doc = NULL;
        _cleanup_free_ char *error = NULL;

        assert_se(proxy_policy_document(NULL, NULL, &doc) >= 0);
        assert_se(proxy_policy_compile(doc, &proxy.policy, &error) >= 0);
        test_refused_before_the_engine();
        test_head_too_large();
        test_kept_alive();
        proxy_policy_free(proxy.policy);
        return done_testing();
}
