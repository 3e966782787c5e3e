/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The gateway's upstream URLs (egress.api_upstream, the host's proxy) and the authority it writes into
 * Host headers. */

#include "egress-upstream.h"
#include "macro.h"
#include "tap.h"

static void test_parse(void) {
        EgressUpstream u = {};

        ok(egress_upstream_parse("https://api.anthropic.com", &u) == 0 && u.tls && streq(u.host, "api.anthropic.com") &&
           u.port == 443 && streq(u.base_path, "") && !u.authorization, "https://HOST: TLS on 443, no path");
        egress_upstream_done(&u);
        ok(egress_upstream_parse("http://Proxy.Example.:3128/", &u) == 0 && !u.tls && streq(u.host, "proxy.example") &&
           u.port == 3128 && streq(u.base_path, ""), "http://HOST:PORT/: the host normalised, the slash dropped");
        egress_upstream_done(&u);
        ok(egress_upstream_parse("https://gw.example/v1/anthropic/", &u) == 0 && streq(u.base_path, "/v1/anthropic"),
           "a base path keeps its segments without the trailing slash");
        egress_upstream_done(&u);
        ok(egress_upstream_parse("https://gw.example/a/../b", &u) == 0 && streq(u.base_path, "/a/../b"),
           "the path is taken as written (no dot-segment removal behind the operator's back)");
        egress_upstream_done(&u);
        ok(egress_upstream_parse("http://[2001:db8::1]:8080", &u) == 0 && streq(u.host, "2001:db8::1") && u.port == 8080,
           "an IPv6 literal loses its brackets");
        {
                EgressUpstream v = {};
                ok(egress_upstream_parse("http://proxy.example:+3128", &v) < 0, "a signed port is refused");
                egress_upstream_done(&v);
        }
        egress_upstream_done(&u);
        ok(egress_upstream_parse("http://user:p%40ss@proxy:3128", &u) == 0 && streq_ptr(u.authorization, "Basic dXNlcjpwQHNz"),
           "user:password@ becomes Basic base64(user:password), percent-decoded");
        egress_upstream_done(&u);
        ok(egress_upstream_parse("http://user:@proxy:3128", &u) == 0 && streq_ptr(u.authorization, "Basic dXNlcjo="),
           "an empty password is still a credential");
        egress_upstream_done(&u);
}

static void test_parse_refused(void) {
        static const char * const bad[] = {
                "ftp://host",                   /* not http(s) */
                "HTTP://host",                  /* the scheme as written */
                "http:/host",
                "host:3128",
                "http://host:0",
                "http://host:65536",
                "http://host:+80",
                "http://host?query",
                "http://host/#fragment",
                "http://user@proxy:3128",       /* no password */
                "http://user:p%00w@proxy",      /* a NUL in the password */
                "http://user:p%zzw@proxy",      /* a malformed escape */
                "http://ho st/",
                "http://",
                "",
        };
        EgressUpstream u = {};

        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ok(egress_upstream_parse(bad[i], &u) == -EINVAL && !u.host, "\"%s\" is refused", bad[i]);
}

static void test_authority(void) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;

        ok(egress_authority_format("example.com", 443, 443, &a) == 0 && streq(a, "example.com"), "the default port is left out");
        ok(egress_authority_format("example.com", 8443, 443, &b) == 0 && streq(b, "example.com:8443"), "another port is written");
        ok(egress_authority_format("2001:db8::1", 443, 443, &c) == 0 && streq(c, "[2001:db8::1]"), "IPv6 in brackets");
        ok(egress_authority_format("2001:db8::1", 80, 443, &d) == 0 && streq(d, "[2001:db8::1]:80"), "IPv6 in brackets with a port");
}

int main(void) {
        test_parse();
        test_parse_refused();
        test_authority();
        return done_testing();
}
