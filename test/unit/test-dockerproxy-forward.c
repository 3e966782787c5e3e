/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What the Docker API proxy sends on to the engine and back to the client (src/dockerproxy/dockerproxy-forward.h),
 * and which object a path names (src/dockerproxy/dockerproxy-access.h). */

#include <stdlib.h>
#include <string.h>

#include "dockerproxy-access.h"
#include "dockerproxy-forward.h"
#include "http-server.h"
#include "macro.h"
#include "tap.h"

static void test_hop_by_hop(void) {
        static const char req[] = "GET /_ping HTTP/1.1\r\nHost: d\r\nConnection: keep-alive, X-Mine\r\n"
                "Proxy-Authorization: Basic eA==\r\nX-Registry-Auth: e30=\r\n\r\n";
        HttpLimits limits = { .header_size_max = 16384, .headers_max = 64, .chunked = true };
        _cleanup_(http_request_done) HttpRequest h = {};
        size_t head_size;
        uint64_t length;
        int status = 0;

        ok(http_request_parse_head(req, strlen(req), &limits, &h, &head_size, &length, &status) == 1, "the request parses");
        static const char * const hop[] = { "Host", "content-length", "Transfer-Encoding", "Connection", "Keep-Alive",
                "Upgrade", "Proxy-Connection", "Proxy-Authorization", "proxy-authenticate", "TE", "Trailer", "Expect" };
        for (size_t i = 0; i < ELEMENTSOF(hop); i++)
                ok(proxy_header_is_hop_by_hop(&h, hop[i]), "%s is not sent to the engine", hop[i]);
        ok(proxy_header_is_hop_by_hop(&h, "x-mine"), "a header the client's Connection names is not sent to the engine");
        ok(!proxy_header_is_hop_by_hop(&h, "X-Registry-Auth"), "X-Registry-Auth is sent to the engine");
        ok(!proxy_header_is_hop_by_hop(&h, "Content-Type"), "Content-Type is sent to the engine");
        ok(!proxy_header_is_hop_by_hop(&h, "X-Min"), "a prefix of a name Connection names is sent to the engine");

        static const char two[] = "GET /_ping HTTP/1.1\r\nHost: d\r\nConnection: keep-alive\r\nConnection: X-Second\r\n\r\n";
        _cleanup_(http_request_done) HttpRequest h2 = {};
        if (http_request_parse_head(two, strlen(two), &limits, &h2, &head_size, &length, &status) == 1)
                ok(proxy_header_is_hop_by_hop(&h2, "X-Second"), "a header the client's second Connection header names is not sent");
        else
                ok(status >= 400, "a request with two Connection headers is refused by the parser");
}

static void test_hijack(void) {
        ok(proxy_path_is_hijack("POST", "/containers/abc/attach"), "POST /containers/ID/attach becomes a stream");
        ok(proxy_path_is_hijack("POST", "/exec/abc/start"), "POST /exec/ID/start becomes a stream");
        ok(!proxy_path_is_hijack("POST", "/containers/abc/start"), "POST /containers/ID/start does not");
        ok(!proxy_path_is_hijack("POST", "/exec/abc/attach"), "POST /exec/ID/attach does not");
        ok(!proxy_path_is_hijack("GET", "/containers/abc/attach"), "GET /containers/ID/attach does not");
        ok(!proxy_path_is_hijack("POST", "/containers//attach"), "an attach without an id does not");
}

static void test_response_head(void) {
        static const char head[] = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\nKeep-Alive: timeout=5\r\n"
                "Proxy-Connection: close\r\nApi-Version: 1.43\r\n\r\n";
        _cleanup_free_ char *kept = NULL, *closed = NULL;
        size_t size;

        ok(proxy_response_head_for_client(head, strlen(head), true, &kept, &size) == 0, "the engine's head is rewritten");
        is_str(kept, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nApi-Version: 1.43\r\nConnection: keep-alive\r\n\r\n",
               "the engine's connection headers give way to the client's keep-alive");
        ok(kept && size == strlen(kept), "its size is what was written");
        ok(proxy_response_head_for_client(head, strlen(head), false, &closed, &size) == 0 &&
           closed && strstr(closed, "\r\nConnection: close\r\n\r\n") && !strstr(closed, "Keep-Alive"),
           "a connection that ends says close");
}

static void test_path_ref(void) {
        static const struct {
                const char *method, *path;
                ProxyRefKind kind;
                const char *ref;
        } t[] = {
                { "GET", "/containers/abc/json", PROXY_REF_CONTAINER, "abc" },
                { "POST", "/containers/abc", PROXY_REF_CONTAINER, "abc" },
                { "GET", "/containers/json", PROXY_REF_NONE, NULL },
                { "POST", "/containers/create", PROXY_REF_NONE, NULL },
                { "POST", "/containers/prune", PROXY_REF_NONE, NULL },
                { "GET", "/volumes/create", PROXY_REF_VOLUME, "create" },
                { "DELETE", "/volumes/v1", PROXY_REF_VOLUME, "v1" },
                { "POST", "/exec/e1/start", PROXY_REF_EXEC, "e1" },
                { "POST", "/exec/create", PROXY_REF_EXEC, "create" },
                { "GET", "/networks/n1", PROXY_REF_NETWORK, "n1" },
                { "POST", "/networks/create", PROXY_REF_NONE, NULL },
                { "GET", "/images/x/json", PROXY_REF_NONE, NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_free_ char *ref = NULL;
                ProxyRefKind kind = proxy_path_ref(t[i].method, t[i].path, &ref);
                ok(kind == t[i].kind && (t[i].ref ? ref && streq(ref, t[i].ref) : !ref),
                   "%s %s names %s", t[i].method, t[i].path, t[i].ref ?: "no object");
        }
}

int main(void) {
        test_hop_by_hop();
        test_hijack();
        test_response_head();
        test_path_ref();
        return done_testing();
}
