/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Whether what an agent's request says about its target agrees with itself: the Host header against the
 * target, the TLS server name against the CONNECT target. */

#include "egress-target.h"
#include "macro.h"
#include "tap.h"

static bool agrees(const char *host_header, const char *host, uint16_t port, unsigned minor, uint16_t default_port) {
        HttpHeader h = { .name = (char *) "Host", .value = (char *) host_header };
        HttpRequest r = {
                .host = (char *) host,
                .port = port,
                .version_minor = minor,
                .headers = host_header ? &h : NULL,
                .n_headers = host_header ? 1 : 0,
        };
        return egress_host_header_agrees(&r, default_port);
}

static void test_host_header(void) {
        ok(agrees("example.com", "example.com", 80, 1, 80), "Host without a port names the default port");
        ok(agrees("example.com:80", "example.com", 80, 1, 80), "Host with the default port");
        ok(agrees("EXAMPLE.com.", "example.com", 80, 1, 80), "case and a trailing dot do not matter");
        ok(agrees("example.com:8443", "example.com", 8443, 1, 443), "Host with the target's own port");
        ok(!agrees("example.com", "example.com", 8443, 1, 443), "Host without the port names another port");
        ok(!agrees("example.com:8080", "example.com", 80, 1, 80), "another port is another target");
        ok(!agrees("other.example", "example.com", 80, 1, 80), "another host is another target");
        ok(!agrees("example.com.evil", "example.com", 80, 1, 80), "a longer name is another host");
        ok(agrees("[2001:db8::1]:443", "2001:db8::1", 443, 1, 443), "an IPv6 literal in brackets");
        ok(!agrees("[2001:db8::1", "2001:db8::1", 443, 1, 443), "an unclosed bracket disagrees");
        ok(!agrees("[2001:db8::1]x", "2001:db8::1", 443, 1, 443), "bytes after the bracket disagree");
        ok(!agrees("2001:db8::1", "2001:db8::1", 443, 1, 443), "an IPv6 literal without brackets disagrees");
        ok(!agrees("example.com:", "example.com", 80, 1, 80), "an empty port disagrees");
        ok(!agrees("example.com:0", "example.com", 80, 1, 80), "port 0 disagrees");
        ok(!agrees("example.com:65616", "example.com", 80, 1, 80), "a port beyond 65535 disagrees (no wrapping to 80)");
        ok(!agrees("example.com:+80", "example.com", 80, 1, 80), "a signed port disagrees (one port parser, parse_port())");
        ok(!agrees("example.com: 80", "example.com", 80, 1, 80), "a port with a blank disagrees");
        ok(!agrees("example.com:000080", "example.com", 80, 1, 80), "a port of more than 5 digits disagrees");
        ok(!agrees(NULL, "example.com", 80, 1, 80), "HTTP/1.1 without Host disagrees");
        ok(agrees(NULL, "example.com", 80, 0, 80), "HTTP/1.0 without Host agrees");
}

static void test_sni(void) {
        ok(egress_sni_agrees("example.com", "example.com"), "the server name of the target agrees");
        ok(egress_sni_agrees("Example.COM.", "example.com"), "normalised as hosts are");
        ok(!egress_sni_agrees("evil.example", "example.com"), "another name disagrees");
        ok(!egress_sni_agrees(NULL, "example.com"), "no server name disagrees");
        ok(!egress_sni_agrees("exa mple.com", "example.com"), "a name that is no host disagrees");
}

static bool unambiguous(const char *method, const char *name, const char *value) {
        HttpHeader h = { .name = (char *) name, .value = (char *) value };
        HttpRequest r = { .method = (char *) method, .headers = name ? &h : NULL, .n_headers = name ? 1 : 0 };
        return egress_method_is_unambiguous(&r);
}

static void test_method(void) {
        ok(unambiguous("GET", NULL, NULL), "GET is one method");
        ok(unambiguous("M-SEARCH", "Accept", "*/*"), "an upper case method with a dash, and other headers");
        ok(!unambiguous("delete", NULL, NULL), "\"delete\" (DELETE to some frameworks) is refused");
        ok(!unambiguous("DeLETE", NULL, NULL), "...any lower case letter");
        ok(!unambiguous("POST", "X-HTTP-Method-Override", "DELETE"), "POST overridden to DELETE is refused");
        ok(!unambiguous("POST", "x-http-method", "PUT"), "...by X-HTTP-Method in any case");
        ok(!unambiguous("POST", "X-Method-Override", "post"), "...by X-Method-Override, also in another spelling");
        ok(unambiguous("POST", "X-HTTP-Method-Override", "POST"), "an override naming the method itself is no other");
}

int main(void) {
        test_host_header();
        test_sni();
        test_method();
        return done_testing();
}
