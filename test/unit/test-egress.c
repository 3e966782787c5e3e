/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The egress gateway's pure logic: the policy (rule order, host patterns, ports, methods, paths,
 * credentials, defaults), the address check and the ClientHello's server name. */

#include <assert.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <openssl/ssl.h>

#include "egress-address.h"
#include "egress-ca.h"
#include "egress-handover.h"
#include "egress-policy.h"
#include "egress-rewrite.h"
#include "egress-token.h"
#include "io-util.h"
#include "json-util.h"
#include "string-util.h"
#include "tls-sni.h"
#include "tap.h"

static EgressPolicy *compile(const char *json, const char *api_host, char **ret_error) {
        _cleanup_(json_object_putp) json_object *o = json ? json_tokener_parse(json) : NULL;
        EgressPolicy *p = NULL;

        if (json && !o)
                return NULL;
        if (egress_policy_compile(o, api_host, &p, ret_error) < 0)
                return NULL;
        return p;
}

static const char *decide(const EgressPolicy *p, const char *host, uint16_t port, const char *method, const char *path) {
        static char buf[64];
        /* port 80 stands for a plain request, any other for a CONNECT tunnel */
        const EgressRule *r = egress_policy_match(p, port == 80 ? EGRESS_SCHEME_HTTP : EGRESS_SCHEME_HTTPS, host, port, method, path);
        snprintf(buf, sizeof buf, "%s %s", egress_decision_to_string(r->decision), r->id);
        return buf;
}

static void test_policy_defaults(void) {
        _cleanup_(egress_policy_freep) EgressPolicy *p = compile(NULL, NULL, NULL);

        ok(p != NULL, "no egress config compiles");
        if (!p)
                return;
        is_str(decide(p, "api.anthropic.com", 443, NULL, NULL), "allow api", "the model API host is allowed on 443 by default");
        is_str(decide(p, "api.anthropic.com", 80, NULL, NULL), "deny default", "the model API host on port 80 is not");
        is_str(decide(p, "example.com", 443, NULL, NULL), "deny default", "any other host is denied by default");
}

static void test_policy_rules(void) {
        _cleanup_(egress_policy_freep) EgressPolicy *p = NULL;
        _cleanup_free_ char *error = NULL;

        p = compile("{ \"registries\": [ \"registry.npmjs.org\", \"*.pythonhosted.org\" ],"
                    "  \"rules\": ["
                    "    { \"host\": \"evil.example.com\", \"decision\": \"deny\" },"
                    "    { \"host\": \"*.Example.COM.\", \"ports\": [443, 8443], \"decision\": \"allow\" },"
                    "    { \"host\": \"docs.test\", \"schemes\": [\"http\", \"https\"], \"methods\": [\"GET\", \"HEAD\"], \"paths\": [\"^/pub/\"], \"decision\": \"allow\" },"
                    "    { \"host\": \"api.github.com\", \"decision\": \"credential\","
                    "      \"credential\": { \"header\": \"Authorization\", \"dummy\": \"ghp_loopdummy0001\", \"secret\": \"Bearer ghp_realrealreal\" } },"
                    "    { \"host\": \"api.anthropic.com\", \"decision\": \"deny\" }"
                    "  ] }", "api.anthropic.com", &error);
        ok(p != NULL, "a policy with rules and registries compiles");
        if (!p) {
                diag(strna(error));
                return;
        }
        is_str(decide(p, "evil.example.com", 443, NULL, NULL), "deny rule[0]", "an earlier deny wins over a later wildcard allow");
        is_str(decide(p, "a.example.com", 443, NULL, NULL), "allow rule[1]", "*.example.com matches a name below it (pattern normalized)");
        is_str(decide(p, "a.b.example.com", 8443, NULL, NULL), "allow rule[1]", "*.example.com matches deeper names on a listed port");
        is_str(decide(p, "a.example.com", 80, NULL, NULL), "deny default", "a port the rule does not list falls through to deny");
        is_str(decide(p, "example.com", 443, NULL, NULL), "deny default", "*.example.com does not match example.com itself");
        is_str(decide(p, "badexample.com", 443, NULL, NULL), "deny default", "*.example.com does not match badexample.com");
        is_str(decide(p, "docs.test", 80, "GET", "/pub/x.tar"), "allow rule[2]", "a method and path rule matches a request that fits");
        is_str(decide(p, "docs.test", 80, "POST", "/pub/x.tar"), "deny default", "another method falls through");
        is_str(decide(p, "docs.test", 80, "GET", "/private"), "deny default", "another path falls through");
        is_str(decide(p, "docs.test", 443, NULL, NULL), "deny default", "an opaque tunnel never matches a method/path rule");
        is_str(decide(p, "api.github.com", 443, NULL, NULL), "credential rule[3]", "a credential rule matches its host");
        is_str(decide(p, "api.anthropic.com", 443, NULL, NULL), "deny rule[4]", "the operator's rules come before the API default");
        is_str(decide(p, "registry.npmjs.org", 443, NULL, NULL), "allow registry[0]", "a listed registry is allowed on 443");
        is_str(decide(p, "files.pythonhosted.org", 80, NULL, NULL), "allow registry[1]", "a *.suffix registry is allowed on 80");
        is_str(decide(p, "registry.npmjs.org", 22, NULL, NULL), "deny default", "registries are not allowed on other ports");
        ok(egress_policy_host_intercepted(p, "api.github.com", 443), "a credential host is one to intercept");
        ok(!egress_policy_host_intercepted(p, "a.example.com", 443), "an allowed host is not");
        ok(egress_policy_find_dummy(p, "ghp_loopdummy0001") == &p->rules[3], "the dummy finds its credential rule");
        ok(egress_policy_find_dummy(p, "ghp_unknown00000") == NULL, "an unknown dummy finds nothing");
}

static void test_policy_star(void) {
        _cleanup_(egress_policy_freep) EgressPolicy *p = compile("{ \"rules\": [ { \"host\": \"*\", \"decision\": \"allow\" } ] }", NULL, NULL);

        ok(p && streq(decide(p, "anything.test", 443, NULL, NULL), "allow rule[0]"), "a * rule opens everything else on 443");
}

static void test_policy_errors(void) {
        static const struct {
                const char *json, *why;
        } bad[] = {
                { "{ \"rules\": [ { \"host\": \"a b\", \"decision\": \"allow\" } ] }", "a host with a space" },
                { "{ \"rules\": [ { \"host\": \"*a.com\", \"decision\": \"allow\" } ] }", "a * not followed by a dot" },
                { "{ \"rules\": [ { \"host\": \"a.*.com\", \"decision\": \"allow\" } ] }", "a * in the middle" },
                { "{ \"rules\": [ { \"decision\": \"allow\" } ] }", "a rule without host" },
                { "{ \"rules\": [ { \"host\": \"a.com\", \"decision\": \"approve\" } ] }", "an unknown decision" },
                { "{ \"rules\": [ { \"host\": \"a.com\", \"ports\": [0], \"decision\": \"allow\" } ] }", "port 0" },
                { "{ \"rules\": [ { \"host\": \"a.com\", \"ports\": [65536], \"decision\": \"allow\" } ] }", "port 65536" },
                { "{ \"rules\": [ { \"host\": \"a.com\", \"methods\": [\"get\"], \"decision\": \"allow\" } ] }", "a lower-case method" },
                { "{ \"rules\": [ { \"host\": \"a.com\", \"paths\": [\"(\"], \"decision\": \"allow\" } ] }", "a bad regex" },
                { "{ \"rules\": [ { \"host\": \"a.com\", \"decision\": \"credential\" } ] }", "a credential rule without credential" },
                { "{ \"rules\": [ { \"host\": \"a.com\", \"decision\": \"credential\", \"credential\": { \"header\": \"X\", \"dummy\": \"short\", \"secret\": \"longenough1\" } } ] }", "a short dummy" },
                { "{ \"rules\": [ { \"host\": \"a.com\", \"decision\": \"credential\", \"credential\": { \"header\": \"X\", \"dummy\": \"dummy0000\", \"secret\": \"dummy0000\" } } ] }", "a secret equal to its dummy" },
                { "{ \"rules\": [ { \"host\": \"a.com\", \"decision\": \"allow\", \"credential\": {} } ] }", "a credential on an allow rule" },
                { "{ \"rules\": [ { \"host\": \"a.com\", \"decision\": \"allow\", \"hots\": 1 } ] }", "an unknown key" },
                { "{ \"registries\": [ \"*\" ] }", "a * registry" },
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *error = NULL;
                _cleanup_(egress_policy_freep) EgressPolicy *p = compile(bad[i].json, NULL, &error);
                ok(!p && error, "refused: %s (%s)", bad[i].why, strna(error));
        }
}

static void test_host_valid(void) {
        ok(egress_host_is_valid("a-b.example.com"), "a name is a valid host");
        ok(egress_host_is_valid("2001:db8::1"), "an IPv6 literal is a valid host");
        ok(!egress_host_is_valid("a..b"), "an empty label is not");
        ok(!egress_host_is_valid("a/b"), "a slash is not");
        ok(!egress_host_is_valid(""), "the empty string is not");
}

static EgressAddressClass classify(const char *s, const EgressOwnAddresses *own) {
        struct sockaddr_storage ss = {};

        if (strchr(s, ':')) {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *) &ss;
                a->sin6_family = AF_INET6;
                if (inet_pton(AF_INET6, s, &a->sin6_addr) != 1)
                        return _EGRESS_ADDRESS_CLASS_MAX;
        } else {
                struct sockaddr_in *a = (struct sockaddr_in *) &ss;
                a->sin_family = AF_INET;
                if (inet_pton(AF_INET, s, &a->sin_addr) != 1)
                        return _EGRESS_ADDRESS_CLASS_MAX;
        }
        return egress_address_classify((struct sockaddr *) &ss, own);
}

static const char *norm_host(const char *h) {
        static char buf[128];
        _cleanup_free_ char *n = NULL;
        int r = egress_host_normalize(h, &n);
        snprintf(buf, sizeof buf, "%s", r < 0 ? "REFUSED" : n);
        return buf;
}

/* Issue 18 item 5: every spelling of one host is one host, or refused. */
static void test_host_normalize(void) {
        is_str(norm_host("X.Internal.Test."), "x.internal.test", "a trailing dot and upper case are normalised away");
        is_str(norm_host("x.internal.test.."), "REFUSED", "...one trailing dot only");
        is_str(norm_host("203.0.113.2"), "203.0.113.2", "a dotted quad is its own canonical form");
        is_str(norm_host("3405803778"), "REFUSED", "a decimal IPv4 (3405803778) is refused");
        is_str(norm_host("0313.0.0161.02"), "REFUSED", "an octal IPv4 (0313.0.0161.02) is refused");
        is_str(norm_host("0xcb.0.0x71.2"), "REFUSED", "a hex IPv4 (0xcb.0.0x71.2) is refused");
        is_str(norm_host("203.0.113.02"), "REFUSED", "a leading zero (203.0.113.02) is refused");
        is_str(norm_host("203.0.29442"), "REFUSED", "a short form (203.0.29442) is refused");
        is_str(norm_host("203.0.113.256"), "REFUSED", "an octet over 255 is refused");
        is_str(norm_host("example.0x1"), "REFUSED", "a name whose last label is hex is refused");
        is_str(norm_host("[::ffff:203.0.113.2]"), "203.0.113.2", "an IPv4-mapped IPv6 literal is its IPv4 address");
        is_str(norm_host("::ffff:cb00:7102"), "203.0.113.2", "...also written in hex");
        is_str(norm_host("[2001:0db8::2]"), "2001:db8::2", "an IPv6 literal with leading zeros is canonical");
        is_str(norm_host("[2001:DB8::2]"), "2001:db8::2", "an IPv6 literal in upper case is canonical");
        is_str(norm_host("2001:db8:0:0:0:0:0:2"), "2001:db8::2", "an IPv6 literal written out is canonical");
        is_str(norm_host("2001:db8::2%eth0"), "REFUSED", "a zone id is refused");
        is_str(norm_host("xn--bcher-kva.example"), "xn--bcher-kva.example", "an IDNA A-label is a name");
        is_str(norm_host("b\xc3\xbc" "cher.example"), "REFUSED", "a U-label (not ASCII) is refused");
        is_str(norm_host("a..b"), "REFUSED", "an empty label is refused");
        is_str(norm_host(""), "REFUSED", "the empty host is refused");
        is_str(norm_host("1.2.3.4.example"), "1.2.3.4.example", "a name with numeric labels but a name last is a name");
}

static const char *norm_path(const char *p) {
        static char buf[256];
        _cleanup_free_ char *n = NULL;
        int r = egress_path_normalize(p, &n);
        snprintf(buf, sizeof buf, "%s", r < 0 ? "REFUSED" : n);
        return buf;
}

static void test_path_normalize(void) {
        is_str(norm_path("/pub/x"), "/pub/x", "a plain path stays");
        is_str(norm_path("/pub/../private/x"), "/private/x", "dot-segments are removed (RFC 3986 5.2.4)");
        is_str(norm_path("/pub/./a/./b/.."), "/pub/a/", "...\".\" too, and a trailing \"..\"");
        is_str(norm_path("/../../etc"), "/etc", "...never above the root");
        is_str(norm_path("/%70ub/%7Ex"), "/pub/~x", "escapes of unreserved characters are decoded");
        is_str(norm_path("/a%3fb%c3%bc"), "/a%3Fb%C3%BC", "other escapes stay, in upper case hex");
        is_str(norm_path("/pub%2f..%2fprivate"), "REFUSED", "an encoded / is refused");
        is_str(norm_path("/pub/%2e%2e/private"), "REFUSED", "an encoded .. is refused");
        is_str(norm_path("/pub/.%2e/private"), "REFUSED", "...partly encoded too");
        is_str(norm_path("/pub%5c..%5cprivate"), "REFUSED", "an encoded backslash is refused");
        is_str(norm_path("/a%zz"), "REFUSED", "a bad escape is refused");
        is_str(norm_path("/a%00b"), "REFUSED", "an encoded NUL is refused");
        is_str(norm_path("/a%4"), "REFUSED", "a cut escape is refused");
        is_str(norm_path("/pub/..\\private"), "REFUSED", "a backslash (a \"/\" to WHATWG URL parsers) is refused");
        is_str(norm_path("/pub/a|b"), "REFUSED", "...as is any byte RFC 3986 does not allow in a path");
        is_str(norm_path("/pub/..;/private"), "REFUSED", "a dot-segment with parameters (..;, a \"..\" to Tomcat) is refused");
        is_str(norm_path("/pub/.;x/private"), "REFUSED", "...\".;\" too");
        is_str(norm_path("/pub/..;"), "REFUSED", "...last in the path too");
        is_str(norm_path("/pub/%2e%2e;/private"), "REFUSED", "...encoded too");
        is_str(norm_path("/pub/a;v=1/b:c@d!$&'()*+,=~"), "/pub/a;v=1/b:c@d!$&'()*+,=~",
               "parameters of other segments and the other characters of a segment stay");
        is_str(norm_path("*"), "*", "the asterisk form stays");
}

static void test_policy_spellings(void) {
        _cleanup_(egress_policy_freep) EgressPolicy *p = compile(
                "{ \"rules\": [ { \"host\": \"x.internal.test\", \"decision\": \"deny\" },"
                "  { \"host\": \"203.0.113.2\", \"decision\": \"deny\" },"
                "  { \"host\": \"[2001:db8::2]\", \"decision\": \"deny\" },"
                "  { \"host\": \"files.test\", \"schemes\": [\"http\"], \"paths\": [\"^/pub/\"], \"decision\": \"allow\" },"
                "  { \"host\": \"web.test\", \"decision\": \"allow\" },"
                "  { \"host\": \"*\", \"schemes\": [\"http\", \"https\"], \"decision\": \"allow\" } ] }", NULL, NULL);
        static const char * const spellings[] = {
                "x.internal.test.", "X.INTERNAL.TEST", "[::ffff:203.0.113.2]", "[2001:0db8::2]", "[2001:DB8::2]",
        };

        ok(p != NULL, "a policy with deny rules before an allow-all compiles");
        if (!p)
                return;
        for (size_t i = 0; i < ELEMENTSOF(spellings); i++) {
                _cleanup_free_ char *h = NULL;
                char what[96];
                snprintf(what, sizeof what, "%s, normalised, meets its deny rule", spellings[i]);
                ok(egress_host_normalize(spellings[i], &h) >= 0 &&
                   egress_policy_match(p, EGRESS_SCHEME_HTTPS, h, 443, NULL, NULL)->decision == EGRESS_DENY, "%s", what);
        }
        ok(egress_policy_match(p, EGRESS_SCHEME_HTTP, "files.test", 80, "GET", "/pub/x")->decision == EGRESS_ALLOW,
           "a path rule allows its path");
        {
                _cleanup_free_ char *n = NULL;
                ok(egress_path_normalize("/pub/../private/x", &n) >= 0 &&
                   egress_policy_match(p, EGRESS_SCHEME_HTTP, "files.test", 80, "GET", n) != &p->rules[3],
                   "...and not /pub/../private/x, matched after dot-segment removal");
        }
        ok(streq(egress_policy_match(p, EGRESS_SCHEME_HTTP, "web.test", 443, NULL, NULL)->id, "default"),
           "http://web.test:443/ does not match an https rule on 443 (the scheme is part of the rule)");
        ok(streq(egress_policy_match(p, EGRESS_SCHEME_HTTPS, "web.test", 8443, NULL, NULL)->id, "default"),
           "a rule without ports covers 443 only for https (and 80 only for http)");
        ok(egress_policy_match(p, EGRESS_SCHEME_HTTPS, "web.test", 443, NULL, NULL) == &p->rules[4], "...which it does cover");
}

static void test_policy_schemes(void) {
        _cleanup_free_ char *error = NULL;
        _cleanup_(egress_policy_freep) EgressPolicy *p = compile(
                "{ \"rules\": [ { \"host\": \"gh.test\", \"schemes\": [\"http\", \"https\"], \"decision\": \"credential\","
                "  \"credential\": { \"header\": \"Authorization\", \"dummy\": \"ghp_dummy0001\", \"secret\": \"ghp_SECRET_1234\" } } ] }",
                NULL, &error);
        _cleanup_(egress_policy_freep) EgressPolicy *q = compile(
                "{ \"allow_api\": false, \"rules\": [ { \"host\": \"web.test\", \"intercept\": \"always\", \"decision\": \"allow\" } ] }",
                NULL, NULL);

        ok(!p && error && strstr(error, "https only"), "a credential rule for plain http does not compile");
        ok(q && q->rules[0].intercept && egress_policy_host_intercepted(q, "web.test", 443),
           "intercept: always makes an allowed host intercepted");
        ok(q && !q->allow_api && egress_policy_match(q, EGRESS_SCHEME_HTTPS, "api.anthropic.com", 443, NULL, NULL)->decision == EGRESS_DENY,
           "allow_api: false leaves no API rule (and the gateway refuses the pass-through)");
}

static void test_tokens(void) {
        uint8_t key[EGRESS_TOKEN_KEY_SIZE], other[EGRESS_TOKEN_KEY_SIZE];
        char t1[EGRESS_TOKEN_HEX_LEN + 1], t2[EGRESS_TOKEN_HEX_LEN + 1], d1[EGRESS_DUMMY_LEN + 1], d2[EGRESS_DUMMY_LEN + 1];
        char line[] = "loop-demo-1 0123456789012345678901234567890123456789012345678901234567890123\n";
        const char *name, *token;

        memset(key, 7, sizeof key);
        memset(other, 8, sizeof other);
        ok(egress_token_make(key, "loop-demo-1", t1) == 0 && egress_token_make(key, "loop-demo-2", t2) == 0 && !streq(t1, t2),
           "each container has its own token");
        ok(egress_token_check(key, "loop-demo-1", t1) && !egress_token_check(key, "loop-demo-2", t1),
           "a token is good for its container only");
        ok(egress_token_make(other, "loop-demo-1", t2) == 0 && !streq(t1, t2), "...and under its gateway's key only");
        ok(egress_dummy_make(key, "loop-demo-1", d1) == 0 && egress_dummy_make(key, "loop-demo-2", d2) == 0 &&
           !streq(d1, d2) && startswith(d1, EGRESS_DUMMY_PREFIX) && strlen(d1) == EGRESS_DUMMY_LEN,
           "each container has its own random-looking dummy");
        ok(!strstr(t1, d1 + strlen(EGRESS_DUMMY_PREFIX)), "...which says nothing of its token");
        ok(egress_token_make(key, "../x", t1) == -EINVAL, "a name that is no container name gets no token");
        ok(egress_credential_parse(line, &name, &token) == 0 && streq(name, "loop-demo-1") && strlen(token) == 64,
           "the relay's credential line parses");
}

/* Feeds the pieces (NULL-terminated) through one scrubber and returns all it let out. */
static char *scrub_pieces(EgressScrub *sc, const char * const *pieces) {
        static char all[512];
        size_t o = 0;

        for (size_t i = 0;; i++) {
                char *out = NULL;
                size_t n = 0;
                bool final = !pieces[i];
                if (egress_scrub(sc, pieces[i] ?: "", pieces[i] ? strlen(pieces[i]) : 0, final, 3, 2, &out, &n) < 0)
                        return NULL;
                memcpy(all + o, out + 3, n);
                o += n;
                free(out);
                if (final)
                        break;
        }
        all[o] = 0;
        return all;
}

static void test_scrub(void) {
        EgressScrub sc = {};
        char *out = NULL;
        size_t n = 0;

        ok(egress_scrub_add(&sc, "ghp_SECRET_1234", "ghp_dummy0001") == 0 && egress_scrub_add(&sc, "sk-REAL-long-key", "D") == 0,
           "two secrets with their dummies");
        ok(egress_scrub_add(&sc, "third-secret", "x") == -E2BIG, "...and no more");
        is_str(scrub_pieces(&sc, (const char * const[]) { "you sent: token ghp_SECRET_1234 and sk-REAL-long-key!", NULL }),
               "you sent: token ghp_dummy0001 and D!", "each secret in a response is replaced by its dummy");
        is_str(scrub_pieces(&sc, (const char * const[]) { "a ghp_SEC", "RET_12", "34 b", NULL }),
               "a ghp_dummy0001 b", "...also split across pieces (the start of one is held back)");
        ok(egress_scrub(&sc, "data: one\n\n", 11, false, 0, 0, &out, &n) == 0 && n == 11 && sc.held == 0,
           "a piece that cannot start a secret is let out whole at once (server-sent events are not delayed)");
        free(out);
        ok(egress_scrub(&sc, "x ghp_S", 7, false, 0, 0, &out, &n) == 0 && n == 2 && sc.held == 5,
           "a tail that may start a secret is held back");
        free(out);
        is_str(scrub_pieces(&sc, (const char * const[]) { NULL }), "ghp_S", "...and let out at the end when it was none");
        is_str(scrub_pieces(&sc, (const char * const[]) { "ghp_SECRET_123", NULL }), "ghp_SECRET_123",
               "a prefix of a secret alone is no secret");
        egress_scrub_reset(&sc);
        ok(sc.n == 0 && sc.held == 0, "a reset forgets the secrets");
}

static void test_addresses(void) {
        static const struct {
                const char *addr;
                EgressAddressClass want;
        } cases[] = {
                { "0.0.0.0", EGRESS_ADDRESS_UNSPECIFIED },
                { "127.0.0.1", EGRESS_ADDRESS_LOOPBACK },
                { "127.255.1.2", EGRESS_ADDRESS_LOOPBACK },
                { "10.1.2.3", EGRESS_ADDRESS_PRIVATE },
                { "172.16.0.1", EGRESS_ADDRESS_PRIVATE },
                { "172.31.255.255", EGRESS_ADDRESS_PRIVATE },
                { "192.168.1.1", EGRESS_ADDRESS_PRIVATE },
                { "169.254.169.254", EGRESS_ADDRESS_LINK_LOCAL },
                { "100.64.0.1", EGRESS_ADDRESS_CGNAT },
                { "100.100.100.200", EGRESS_ADDRESS_CGNAT },
                { "168.63.129.16", EGRESS_ADDRESS_METADATA },           /* Azure WireServer, in a public range */
                { "::ffff:168.63.129.16", EGRESS_ADDRESS_METADATA },
                { "224.0.0.1", EGRESS_ADDRESS_MULTICAST },
                { "255.255.255.255", EGRESS_ADDRESS_RESERVED },
                { "192.0.0.170", EGRESS_ADDRESS_RESERVED },
                { "198.18.0.1", EGRESS_ADDRESS_RESERVED },
                { "172.32.0.1", EGRESS_ADDRESS_PUBLIC },
                { "192.0.2.10", EGRESS_ADDRESS_PUBLIC },
                { "198.51.100.7", EGRESS_ADDRESS_PUBLIC },
                { "203.0.113.9", EGRESS_ADDRESS_PUBLIC },
                { "8.8.8.8", EGRESS_ADDRESS_PUBLIC },
                { "::", EGRESS_ADDRESS_UNSPECIFIED },
                { "::1", EGRESS_ADDRESS_LOOPBACK },
                { "::ffff:127.0.0.1", EGRESS_ADDRESS_LOOPBACK },
                { "::ffff:169.254.169.254", EGRESS_ADDRESS_LINK_LOCAL },
                { "::ffff:0:10.0.0.1", EGRESS_ADDRESS_PRIVATE },
                { "::10.0.0.1", EGRESS_ADDRESS_PRIVATE },
                { "64:ff9b::a9fe:a9fe", EGRESS_ADDRESS_LINK_LOCAL },
                { "64:ff9b::c000:20a", EGRESS_ADDRESS_PUBLIC },
                { "64:ff9b:1::1", EGRESS_ADDRESS_RESERVED },
                { "2002:7f00:1::1", EGRESS_ADDRESS_RESERVED },
                { "2001:0:4136:e378::1", EGRESS_ADDRESS_RESERVED },
                { "fd00:ec2::254", EGRESS_ADDRESS_PRIVATE },
                { "fe80::1", EGRESS_ADDRESS_LINK_LOCAL },
                { "fec0::1", EGRESS_ADDRESS_PRIVATE },
                { "ff02::1", EGRESS_ADDRESS_MULTICAST },
                { "100::1", EGRESS_ADDRESS_RESERVED },
                { "2001:db8::1", EGRESS_ADDRESS_PUBLIC },
                { "2606:4700::1111", EGRESS_ADDRESS_PUBLIC },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                is_str(egress_address_class_to_string(classify(cases[i].addr, NULL)),
                       egress_address_class_to_string(cases[i].want), "%s is %s", cases[i].addr,
                       egress_address_class_to_string(cases[i].want));
}

static void test_own_addresses(void) {
        EgressOwnAddresses own = {};
        struct sockaddr_in *a = (struct sockaddr_in *) &own.addrs[0];

        a->sin_family = AF_INET;
        (void) inet_pton(AF_INET, "203.0.113.5", &a->sin_addr);
        own.n = 1;
        ok(classify("203.0.113.5", &own) == EGRESS_ADDRESS_OWN, "the host's own public address is refused");
        ok(classify("::ffff:203.0.113.5", &own) == EGRESS_ADDRESS_OWN, "... also in its IPv4-mapped form");
        ok(classify("203.0.113.6", &own) == EGRESS_ADDRESS_PUBLIC, "a neighbour's address is not");
        ok(egress_own_addresses_load(&own) == 0 && own.n > 0, "the host's addresses can be listed");
}

/* A real ClientHello from OpenSSL, with or without a server name. */
static size_t client_hello(const char *sni, uint8_t *buf, size_t size) {
        SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
        SSL *ssl = SSL_new(ctx);
        BIO *rbio = BIO_new(BIO_s_mem()), *wbio = BIO_new(BIO_s_mem());
        int n;

        SSL_set_bio(ssl, rbio, wbio);
        if (sni)
                SSL_set_tlsext_host_name(ssl, sni);
        SSL_set_connect_state(ssl);
        (void) SSL_do_handshake(ssl);
        n = BIO_read(wbio, buf, (int) size);
        SSL_free(ssl);
        SSL_CTX_free(ctx);
        return n > 0 ? (size_t) n : 0;
}

/* A ClientHello made by hand around the extension block exts[0..n): TLS 1.2 record, one cipher suite. */
static size_t hello_around(const uint8_t *exts, size_t n, uint8_t *buf) {
        size_t body = 2 + 32 + 1 + 2 + 2 + 1 + 1 + 2 + n, o = 0;

        buf[o++] = 0x16, buf[o++] = 0x03, buf[o++] = 0x01;
        buf[o++] = (uint8_t) ((body + 4) >> 8), buf[o++] = (uint8_t) (body + 4);
        buf[o++] = 0x01, buf[o++] = 0, buf[o++] = (uint8_t) (body >> 8), buf[o++] = (uint8_t) body;
        buf[o++] = 0x03, buf[o++] = 0x03;
        memset(buf + o, 0x42, 32), o += 32;
        buf[o++] = 0;                                   /* session id */
        buf[o++] = 0, buf[o++] = 2, buf[o++] = 0x13, buf[o++] = 0x01;
        buf[o++] = 1, buf[o++] = 0;                     /* compression: null */
        buf[o++] = (uint8_t) (n >> 8), buf[o++] = (uint8_t) n;
        memcpy(buf + o, exts, n);
        return o + n;
}

/* One server_name extension of the host names given (each entry of type host_name). */
static size_t sni_ext(const char * const *names, size_t k, uint8_t *buf) {
        size_t list = 0, o = 0;

        for (size_t i = 0; i < k; i++)
                list += 3 + strlen(names[i]);
        buf[o++] = 0, buf[o++] = 0;                     /* server_name */
        buf[o++] = (uint8_t) ((list + 2) >> 8), buf[o++] = (uint8_t) (list + 2);
        buf[o++] = (uint8_t) (list >> 8), buf[o++] = (uint8_t) list;
        for (size_t i = 0; i < k; i++) {
                size_t l = strlen(names[i]);
                buf[o++] = 0, buf[o++] = (uint8_t) (l >> 8), buf[o++] = (uint8_t) l;
                memcpy(buf + o, names[i], l), o += l;
        }
        return o;
}

/* Where the gateway and the server could read two different names, the gateway reads none. */
static void test_sni_ambiguous(void) {
        static const char * const allowed[] = { "allowed.example" }, * const other[] = { "other.example" },
                * const both[] = { "allowed.example", "other.example" };
        uint8_t exts[256], hello[512];
        size_t n;
        char *sni = NULL;

        n = sni_ext(allowed, 1, exts);
        ok(tls_client_hello_sni(hello, hello_around(exts, n, hello), &sni) == 1 && streq_ptr(sni, "allowed.example"),
           "a hand-made ClientHello with one server name is read");
        sni = mfree(sni);
        n += sni_ext(other, 1, exts + n);
        ok(tls_client_hello_sni(hello, hello_around(exts, n, hello), &sni) == -EBADMSG && !sni,
           "two server_name extensions (a server may read the second) are refused");
        sni = mfree(sni);
        n = sni_ext(both, 2, exts);
        ok(tls_client_hello_sni(hello, hello_around(exts, n, hello), &sni) == -EBADMSG && !sni,
           "two host names in one server_name list are refused");
        sni = mfree(sni);
}

static void test_sni(void) {
        uint8_t hello[4096];
        size_t n;
        char *sni = NULL;
        int r;

        n = client_hello("Upstream.Example.", hello, sizeof hello);
        ok(n > 0, "OpenSSL made a ClientHello");
        r = tls_client_hello_sni(hello, n, &sni);
        ok(r == 1 && sni && streq(sni, "upstream.example"), "its server name is read, lower case, without the trailing dot");
        sni = mfree(sni);
        ok(tls_client_hello_sni(hello, n - 1, &sni) == -EAGAIN, "a ClientHello one byte short asks for more");
        ok(tls_client_hello_sni(hello, 3, &sni) == -EAGAIN, "a partial record header asks for more");
        n = client_hello(NULL, hello, sizeof hello);
        ok(tls_client_hello_sni(hello, n, &sni) == 0 && !sni, "a ClientHello without server name says so");
        ok(tls_client_hello_sni((const uint8_t *) "GET / HTTP/1.1\r\n", 16, &sni) == -EBADMSG, "plain HTTP is not a ClientHello");
        n = client_hello("a.example", hello, sizeof hello);
        hello[4] = (uint8_t) (hello[4] - 10);   /* the record ends inside the ClientHello */
        ok(tls_client_hello_sni(hello, n, &sni) == -EBADMSG, "a ClientHello longer than its record is refused");
}

#define API_DUMMY "sk-loop-0123456789abcdef0123456789abcdef0123456789abcdef"
static const EgressApiAuth proxied = { .dummy = API_DUMMY, .api_key = "sk-ant-REAL-KEY" };

static int head_of(const char *request, const EgressPolicy *p, const EgressApiAuth *api, char **ret_head,
                   const char **ret_reason) {
        HttpLimits l = { .proxy_forms = true, .head_only = true, .chunked = true };
        HttpRequest r = {};
        size_t consumed, size;
        const EgressRule *rule = NULL;
        int status, q;

        q = http_request_parse(request, strlen(request), &l, &r, &consumed, &status, NULL);
        if (q != 1)
                return -EBADMSG;
        /* as inside an intercepted tunnel: the head is built the same way */
        if (!api)
                rule = egress_policy_match(p, EGRESS_SCHEME_HTTPS, r.host, 443, r.method, r.path);
        q = egress_upstream_head(&r, p, rule, api ?: &proxied, api ? "api.test" : r.host, ret_head, &size, ret_reason);
        http_request_done(&r);
        return q;
}

/* What the agent reads in a 403: a missing model credential is the operator's to fix, not a bad key. */
static void test_refusal_text(void) {
        ok(strstr(egress_credential_refusal_text("no-credential"), "no credential for the model API") != NULL,
           "no-credential tells the agent that loop holds no model credential, not that its key is wrong");
        ok(strstr(egress_credential_refusal_text("unknown-dummy"), "not the one this container was given") != NULL,
           "unknown-dummy says the credential is not this container's");
        ok(streq(egress_credential_refusal_text("secret-in-request"), "the request carries a credential it may not send"),
           "another reason gets the generic text");
        ok(streq(egress_credential_refusal_text(NULL), "the request carries a credential it may not send"),
           "no reason gets the generic text");
}

static void test_rewrite(void) {
        _cleanup_(egress_policy_freep) EgressPolicy *p = compile(
                "{ \"rules\": [ { \"host\": \"gh.test\", \"decision\": \"credential\","
                "  \"credential\": { \"header\": \"Authorization\", \"dummy\": \"ghp_dummy0001\", \"secret\": \"ghp_SECRET_1234\" } },"
                "  { \"host\": \"*\", \"decision\": \"allow\" } ] }", NULL, NULL);
        EgressApiAuth api = { .pass_through = true, .dummy = API_DUMMY, .api_key = "sk-ant-REAL-KEY", .oauth_token = NULL };
        const char *reason = NULL;
        char *head = NULL;
        int q;

        ok(p != NULL, "a policy with a credential rule compiles");
        if (!p)
                return;
        q = head_of("GET http://gh.test/repos?page=2 HTTP/1.1\r\nHost: gh.test\r\nAuthorization: token ghp_dummy0001\r\n"
                    "Proxy-Authorization: Basic eDp5\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nAccept: */*\r\n\r\n",
                    p, NULL, &head, &reason);
        ok(q == 0 && head, "a request to a credential host is rewritten");
        ok(head && startswith(head, "GET /repos?page=2 HTTP/1.1\r\nHost: gh.test\r\n"), "the request line is origin-form, the Host first");
        ok(head && strstr(head, "Authorization: token ghp_SECRET_1234\r\n") && !strstr(head, "ghp_dummy0001"),
           "the dummy is replaced by the secret in the credential's header");
        ok(head && !strstr(head, "Proxy-Authorization") && !strstr(head, "X-Hop") && !strstr(head, "keep-alive"),
           "proxy and hop-by-hop headers (also those Connection names) are dropped");
        ok(head && strstr(head, "\r\nAccept: */*\r\n") && !strstr(head, "Connection"),
           "other headers pass; no Connection header: the upstream connection is kept for the next request");
        head = mfree(head);

        q = head_of("GET http://gh.test/user HTTP/1.1\r\nHost: gh.test\r\nAuthorization: token ghp_dummy0001\r\n"
                    "Accept-Encoding: gzip, deflate, br\r\naccept-encoding: zstd\r\n\r\n", p, NULL, &head, &reason);
        ok(q == 0 && head && !strstr(head, "gzip") && !strstr(head, "zstd") && endswith(head, "\r\nAccept-Encoding: identity\r\n\r\n"),
           "a request with an injected secret asks for no content coding (a compressed echo of the secret is not scrubbed)");
        head = mfree(head);
        q = head_of("GET http://up.test/x HTTP/1.1\r\nHost: up.test\r\nAccept-Encoding: gzip\r\n\r\n", p, NULL, &head, &reason);
        ok(q == 0 && head && strstr(head, "Accept-Encoding: gzip\r\n") && !strstr(head, "identity"),
           "...while one without keeps the agent's Accept-Encoding");
        head = mfree(head);

        q = head_of("POST http://up.test/upload HTTP/1.1\r\nHost: up.test\r\nTransfer-Encoding: chunked\r\n"
                    "Expect: 100-continue\r\n\r\n", p, NULL, &head, &reason);
        ok(q == 0 && head && endswith(head, "Host: up.test\r\nTransfer-Encoding: chunked\r\n\r\n"),
           "a body sent chunked goes on chunked (the gateway re-chunks it), with one Transfer-Encoding");
        ok(head && !strstr(head, "Expect"), "Expect is dropped: the gateway answers 100-continue itself");
        head = mfree(head);

        q = head_of("GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\nAuthorization: token ghp_dummy0001\r\n\r\n",
                    p, NULL, &head, &reason);
        ok(q == -EACCES && streq_ptr(reason, "dummy-unbound"), "a dummy sent to a host it is not bound to is refused");
        q = head_of("GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\nX-Token: abc-ghp_dummy0001\r\n\r\n",
                    p, NULL, &head, &reason);
        ok(q == -EACCES && streq_ptr(reason, "dummy-unbound"), "... also inside another header");
        q = head_of("GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\nx-api-key: " API_DUMMY "\r\n\r\n",
                    p, NULL, &head, &reason);
        ok(q == -EACCES && streq_ptr(reason, "dummy-unbound"), "the API dummy sent through the proxy is refused");
        q = head_of("GET http://gh.test/ HTTP/1.1\r\nHost: gh.test\r\nAuthorization: token ghp_MINE\r\n\r\n",
                    p, NULL, &head, &reason);
        ok(q == -EACCES && streq_ptr(reason, "unknown-dummy"), "a credential host gets no token of the agent's own");

        q = head_of("POST /v1/messages HTTP/1.1\r\nHost: localhost:2376\r\nx-api-key: " API_DUMMY "\r\nContent-Length: 2\r\n\r\n{}",
                    p, &api, &head, &reason);
        ok(q == 0 && head && strstr(head, "x-api-key: sk-ant-REAL-KEY\r\n") && strstr(head, "Host: api.test\r\n") &&
           !strstr(head, "localhost") && strstr(head, "Content-Length: 2\r\n"),
           "the API pass-through swaps the dummy key for the real one and the Host for the upstream's");
        head = mfree(head);
        q = head_of("POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: sk-ant-agents-own\r\n\r\n", p, &api, &head, &reason);
        ok(q == -EACCES && streq_ptr(reason, "unknown-dummy"), "the API pass-through refuses a key that is not the dummy");
        q = head_of("POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " API_DUMMY "\r\n\r\n", p, &api, &head, &reason);
        ok(q == -EACCES && streq_ptr(reason, "no-credential"), "the OAuth dummy without an OAuth token configured is refused");
        api.oauth_token = "oauth-REAL-TOKEN";
        q = head_of("POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " API_DUMMY "\r\n\r\n", p, &api, &head, &reason);
        ok(q == 0 && head && strstr(head, "Authorization: Bearer oauth-REAL-TOKEN\r\n"), "the OAuth dummy becomes the real token");
        head = mfree(head);
        q = head_of("POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: " API_DUMMY "\r\nAccept-Encoding: gzip, deflate, br\r\n\r\n",
                    p, &api, &head, &reason);
        ok(q == 0 && head && !strstr(head, "gzip") && strstr(head, "Accept-Encoding: identity\r\n"),
           "the API pass-through asks for no content coding either");
        head = mfree(head);
}

static int framing(const char *response, const char *method, EgressResponseFraming *ret) {
        return egress_response_framing(response, strlen(response), method, ret);
}

static void test_response_framing(void) {
        EgressResponseFraming f;
        char big[EGRESS_RESPONSE_HEAD_MAX + 16];

        ok(framing("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "GET", &f) == 1 && f.status == 200 &&
           f.length == 5 && !f.chunked && !f.until_close && f.reusable && f.head_size == 38,
           "Content-Length frames a response; the upstream connection is kept");
        ok(framing("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", "GET", &f) == 0, "an incomplete head asks for more");
        ok(framing("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", &f) == 1 && f.chunked && f.reusable,
           "a chunked response ends with its last chunk");
        ok(framing("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "GET", &f) == 1 && f.chunked,
           "...also after another coding");
        ok(framing("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", "GET", &f) == 1 && !f.chunked &&
           f.until_close && !f.reusable, "a final coding other than chunked: the body ends at the close");
        ok(framing("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", "GET", &f) == 1 &&
           f.chunked && !f.reusable && f.ambiguous,
           "chunked and Content-Length together: chunked wins, neither the upstream's nor the client's connection is kept");
        ok(framing("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", &f) == 1 && !f.ambiguous,
           "...one of them alone is no ambiguity");
        ok(framing("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n", "GET", &f) == 1 && f.until_close && !f.reusable,
           "no length: the body ends when the server closes");
        ok(framing("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n", "GET", &f) == 1 &&
           f.length == 5 && !f.reusable, "Connection: close: the upstream connection is not kept");
        ok(framing("HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\n", "GET", &f) == 1 && !f.reusable,
           "HTTP/1.0 without keep-alive is not kept");
        ok(framing("HTTP/1.0 200 OK\r\nContent-Length: 5\r\nConnection: Keep-Alive\r\n\r\n", "GET", &f) == 1 && f.reusable,
           "...with it, it is");
        ok(framing("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "HEAD", &f) == 1 && f.length == 0 && !f.until_close && f.reusable,
           "a response to HEAD has no body, whatever its Content-Length");
        ok(framing("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", "GET", &f) == 1 && f.length == 0 && f.reusable,
           "...nor has a 304");
        ok(framing("HTTP/1.1 204 No Content\r\n\r\n", "DELETE", &f) == 1 && f.length == 0 && !f.until_close,
           "...nor a 204");
        ok(framing("HTTP/1.1 100 Continue\r\n\r\n", "POST", &f) == 1 && f.interim && f.status == 100,
           "a 100 Continue is interim: the response's head follows");
        ok(framing("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", "GET", &f) == 1 && !f.interim && f.until_close &&
           !f.reusable, "a 101 is not interim: bytes until the close, never kept");
        ok(framing("HTTP/1.1 101 Switching Protocols\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", &f) == 1 && !f.chunked &&
           f.until_close, "...also when it claims chunks");
        ok(framing("HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", &f) == 1 && !f.chunked &&
           f.length == 0 && !f.until_close, "a 204 has no body, whatever its Transfer-Encoding");
        ok(framing("HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n", "GET", &f) == -EBADMSG, "a bad Content-Length is refused");
        ok(framing("SSH-2.0-OpenSSH\r\n\r\n", "GET", &f) == -EBADMSG, "what is not HTTP/1.x is refused");
        memset(big, 'a', sizeof big - 1);
        big[sizeof big - 1] = 0;
        memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
        ok(framing(big, "GET", &f) == -E2BIG, "a head larger than EGRESS_RESPONSE_HEAD_MAX is refused");
}

static bool leaf_verifies(const EgressCa *ca, X509 *leaf, const char *host) {
        X509_STORE *store = X509_STORE_new();
        X509_STORE_CTX *ctx = X509_STORE_CTX_new();
        bool good;

        X509_STORE_add_cert(store, ca->cert);
        X509_STORE_CTX_init(ctx, store, leaf, NULL);
        X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
        good = X509_verify_cert(ctx) == 1 && X509_check_host(leaf, host, 0, 0, NULL) == 1;
        X509_STORE_CTX_free(ctx);
        X509_STORE_free(store);
        return good;
}

static void test_ca(void) {
        char dir[] = "/tmp/test-egress-ca-XXXXXX";
        _cleanup_(egress_ca_freep) EgressCa *ca = NULL, *again = NULL;
        _cleanup_close_ int fd = -EBADF;
        X509 *leaf = NULL;
        EVP_PKEY *key = NULL;
        struct stat st;

        if (!mkdtemp(dir))
                abort();
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ok(egress_ca_load_or_create(fd, "loop egress CA test", &ca) == 0 && ca && ca->pem, "a sandbox CA is made at first start");
        ok(fstatat(fd, EGRESS_CA_KEY_FILE, &st, 0) == 0 && (st.st_mode & 07777) == 0600, "its key is readable by its owner only");
        ok(egress_ca_load_or_create(fd, "ignored", &again) == 0 && again && streq(again->pem, ca->pem),
           "the next start loads the same CA");
        {
                _cleanup_free_ char *pem = NULL, *why = NULL, *junk = NULL, *missing = NULL, *keyonly = NULL;
                assert(asprintf(&pem, "%s/%s", dir, EGRESS_CA_CERT_FILE) >= 0);
                assert(asprintf(&junk, "%s/junk.pem", dir) >= 0 && asprintf(&missing, "%s/missing.pem", dir) >= 0);
                assert(asprintf(&keyonly, "%s/%s", dir, EGRESS_CA_KEY_FILE) >= 0);
                ok(egress_ca_file_check(pem, &why) == 0 && !why, "egress.ca_file: a PEM certificate loads");
                ok(egress_ca_file_check(missing, &why) == -ENOENT && why && strstr(why, "No such file"),
                   "egress.ca_file: a missing file is -ENOENT, and says so");
                why = mfree(why);
                assert(write_file_atomic(junk, "not a certificate\n", 18, 0644) >= 0);
                ok(egress_ca_file_check(junk, &why) == -EBADMSG && why, "egress.ca_file: a file with no PEM in it is refused");
                why = mfree(why);
                ok(egress_ca_file_check(keyonly, &why) == -EBADMSG && why && strstr(why, "no certificate"),
                   "egress.ca_file: a PEM key with no certificate is refused");
                (void) unlink(junk);
        }
        ok(ca && egress_ca_issue(ca, "api.github.com", &leaf, &key) == 0, "a leaf is issued for a host");
        ok(leaf && leaf_verifies(ca, leaf, "api.github.com"), "the leaf verifies against the CA for that host");
        ok(leaf && !leaf_verifies(ca, leaf, "evil.example"), "...and for no other host");
        ok(key && EVP_PKEY_get_bits(key) == 256 && EVP_PKEY_is_a(key, "EC"), "the leaf's key is ECDSA P-256");
        X509_free(leaf);
        EVP_PKEY_free(key);
        leaf = NULL, key = NULL;
        ok(ca && egress_ca_issue(ca, "198.51.100.7", &leaf, &key) == 0 && X509_check_ip_asc(leaf, "198.51.100.7", 0) == 1,
           "a leaf for an IP literal names the address");
        X509_free(leaf);
        EVP_PKEY_free(key);
        (void) unlinkat(fd, EGRESS_CA_CERT_FILE, 0);
        egress_ca_free(again);
        again = NULL;
        ok(egress_ca_load_or_create(fd, "x", &again) == -EBADMSG, "a key without its certificate is refused, not replaced");
        (void) unlinkat(fd, EGRESS_CA_KEY_FILE, 0);
        (void) rmdir(dir);
}

typedef struct PumpRun {
        int a, b, r;
        FdPumpStats stats;
        bool no_splice;
        int half_closed_ms;
} PumpRun;

static void *pump_thread(void *userdata) {
        PumpRun *p = userdata;

        if (p->no_splice) {
                /* As loop's workload profile has it in the container: splice() is ENOSYS (this thread only). */
                scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

                if (!ctx || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
                    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(splice), 0) < 0 || seccomp_load(ctx) < 0)
                        abort();
                seccomp_release(ctx);
        }
        p->r = fd_pump(p->a, p->b, 10000, p->half_closed_ms, &p->stats);
        return NULL;
}

static void *write_big(void *userdata) {
        int fd = *(int *) userdata;
        static char chunk[64 * 1024];
        memset(chunk, 'x', sizeof chunk);
        for (int i = 0; i < 16; i++)
                if (loop_write(fd, chunk, sizeof chunk) < 0)
                        break;
        (void) shutdown(fd, SHUT_WR);
        return NULL;
}

/* The relay's and the tunnel's byte pump, over socket pairs: client <-> a | pump | b <-> server; also
 * where splice() is not to be had. */
static void test_pump(bool no_splice) {
        const char *how = no_splice ? " (splice ENOSYS: copied)" : "";
        int c[2], s2[2];
        PumpRun run = {};
        pthread_t pump, writer;
        char buf[64 * 1024];
        uint64_t got = 0;
        ssize_t k;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s2) < 0)
                abort();
        run = (PumpRun) { .a = c[1], .b = s2[0], .no_splice = no_splice, .half_closed_ms = -1 };
        pthread_create(&pump, NULL, pump_thread, &run);
        pthread_create(&writer, NULL, write_big, &c[0]);
        while ((k = read(s2[1], buf, sizeof buf)) > 0)
                got += (uint64_t) k;
        pthread_join(writer, NULL);
        is_int(got, 16 * 64 * 1024, "1 MiB from the client reaches the server, and then its end of sending%s", how);
        ok(loop_write(s2[1], "pong", 4) == 0 && shutdown(s2[1], SHUT_WR) == 0, "the server answers after the client's half-close%s", how);
        k = loop_read(c[0], buf, sizeof buf);
        ok(k == 4 && memcmp(buf, "pong", 4) == 0, "...and the answer reaches the client, then its end%s", how);
        pthread_join(pump, NULL);
        ok(run.r == 0 && run.stats.a_to_b == 16 * 64 * 1024 && run.stats.b_to_a == 4, "the pump ends cleanly and counts both directions%s", how);
        for (int i = 0; i < 2; i++) {
                safe_close(c[i]);
                safe_close(s2[i]);
        }
}

/* A connected TCP pair on loopback: *ret_client and *ret_server. */
static void tcp_pair(int *ret_client, int *ret_server) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof sa;
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (l < 0 || bind(l, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(l, 1) < 0 ||
            getsockname(l, (struct sockaddr *) &sa, &len) < 0)
                abort();
        *ret_client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (*ret_client < 0 || connect(*ret_client, (struct sockaddr *) &sa, sizeof sa) < 0)
                abort();
        *ret_server = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        if (*ret_server < 0)
                abort();
        safe_close(l);
}

#define CRED "loop-demo-abc123 0000000000000000000000000000000000000000000000000000000000000000\n"

static void test_handover(void) {
        int u[2], client, server, got = -EBADF, file;
        char buf[8], cred[EGRESS_HANDOVER_CREDENTIAL_MAX + 1];

        /* the relay's side passes the accepted connection; the gateway's side talks on it */
        tcp_pair(&client, &server);
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, u) < 0)
                abort();
        ok(egress_handover_send(u[0], server, CRED) == 0, "the relay hands an accepted TCP connection over");
        safe_close(server);
        safe_close(u[0]);       /* the relay is done with both before the gateway reads */
        ok(egress_handover_receive(u[1], &got, cred) == 1 && got >= 0, "the gateway receives it, after the relay closed its end");
        ok(streq(cred, CRED), "...with the container's credential");
        ok(got >= 0 && fcntl(got, F_GETFD) == FD_CLOEXEC, "...close-on-exec");
        ok(got >= 0 && write(client, "ping", 4) == 4 && read(got, buf, sizeof buf) == 4 && memcmp(buf, "ping", 4) == 0,
           "...and reads what the agent sent on its own connection");
        safe_close(got);
        safe_close(u[1]);
        safe_close(client);

        /* an HTTP client on the socket itself */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, u) < 0)
                abort();
        if (loop_write(u[0], "GET / HTTP/1.1\r\n", 16) < 0)
                abort();
        got = -EBADF;
        ok(egress_handover_receive(u[1], &got, cred) == 0 && got < 0, "an HTTP request is no hand-over");
        ok(recv(u[1], buf, 3, MSG_DONTWAIT) == 3 && memcmp(buf, "GET", 3) == 0, "...and nothing of it was consumed");
        safe_close(u[0]);
        safe_close(u[1]);

        /* what else a client could pass */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, u) < 0)
                abort();
        file = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
        if (file < 0)
                file = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ok(egress_handover_send(u[0], file, CRED) == 0 && egress_handover_receive(u[1], &got, cred) == -EPROTONOSUPPORT,
           "a file passed instead of a connection is refused (and closed)");
        safe_close(file);
        ok(egress_handover_send(u[0], u[0], CRED) == 0 && egress_handover_receive(u[1], &got, cred) == -EPROTONOSUPPORT,
           "...as is a unix socket");
        ok(write(u[0], "\0", 1) == 1 && egress_handover_receive(u[1], &got, cred) == -EBADMSG, "a marker without an fd is refused");
        ok(egress_handover_send(u[0], u[0], "no-newline") == 0 && egress_handover_receive(u[1], &got, cred) == -EBADMSG,
           "a hand-over without a credential line is refused");
        safe_close(u[0]);
        ok(egress_handover_receive(u[1], &got, cred) == -ECONNRESET, "a socket that ends before a byte says so");
        safe_close(u[1]);
}

static void *write_bulk(void *userdata) {
        int fd = *(int *) userdata;
        static char chunk[256 * 1024];
        memset(chunk, 'y', sizeof chunk);
        for (int i = 0; i < 32; i++)
                if (loop_write(fd, chunk, sizeof chunk) < 0)
                        break;
        (void) shutdown(fd, SHUT_WR);
        return NULL;
}

/* Request and answer, one after the other, over TCP as through a tunnel: each message is the last the
 * sender sends before it waits, so every read the pump makes comes back short (the socket ran dry) and
 * the next message must wake it again. Sizes below and above IO_PUMP_DRAINED_BELOW. */
static void test_pump_exchange(bool no_splice) {
        const char *how = no_splice ? " (splice ENOSYS: copied)" : "";
        static const size_t sizes[] = { 1, 100, 1500, IO_PUMP_DRAINED_BELOW - 1, IO_PUMP_DRAINED_BELOW, 40 * 1024 };
        struct timeval tv = { .tv_sec = 5 };    /* a lost wake-up fails the test instead of hanging it */
        static char out[40 * 1024], in[40 * 1024];
        int client, a, b, server;
        unsigned requests_ok = 0, answers_ok = 0, n = 0;
        PumpRun run;
        pthread_t pump;

        tcp_pair(&client, &a);
        tcp_pair(&b, &server);
        (void) setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        (void) setsockopt(server, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        run = (PumpRun) { .a = a, .b = b, .no_splice = no_splice, .half_closed_ms = -1 };
        pthread_create(&pump, NULL, pump_thread, &run);
        for (unsigned i = 0; i < 50; i++)
                for (size_t j = 0; j < ELEMENTSOF(sizes); j++, n++) {
                        size_t size = sizes[j], answer = sizes[ELEMENTSOF(sizes) - 1 - j];

                        memset(out, 'a' + (int) (n % 26), size);
                        if (loop_write(client, out, size) == 0 && loop_read(server, in, size) == (ssize_t) size &&
                            memcmp(in, out, size) == 0)
                                requests_ok++;
                        memset(out, 'A' + (int) (n % 26), answer);
                        if (loop_write(server, out, answer) == 0 && loop_read(client, in, answer) == (ssize_t) answer &&
                            memcmp(in, out, answer) == 0)
                                answers_ok++;
                }
        is_int(requests_ok, n, "%u requests of 1 byte to 40 KiB cross the pump one at a time, each complete%s", n, how);
        is_int(answers_ok, n, "...and so do their answers, each before the next request%s", how);
        (void) shutdown(client, SHUT_WR);
        (void) shutdown(server, SHUT_WR);
        pthread_join(pump, NULL);
        ok(run.r == 0, "the pump ends cleanly once both sides are done%s", how);
        safe_close(client);
        safe_close(a);
        safe_close(b);
        safe_close(server);
}

/* A download through a tunnel, over TCP as in the gateway: the bulk direction's pipe grows, so that one
 * splice() moves up to a megabyte, and the process's count of grown pipes goes back when it ends. */
static void test_pump_bulk(void) {
        int client, a, b, server;
        PumpRun run;
        pthread_t pump, writer;
        static char buf[256 * 1024];
        uint64_t got = 0;
        ssize_t k;

        tcp_pair(&client, &a);
        tcp_pair(&b, &server);
        run = (PumpRun) { .a = a, .b = b, .half_closed_ms = -1 };
        pthread_create(&pump, NULL, pump_thread, &run);
        pthread_create(&writer, NULL, write_bulk, &server);
        (void) shutdown(client, SHUT_WR);
        while ((k = read(client, buf, sizeof buf)) > 0)
                got += (uint64_t) k;
        pthread_join(writer, NULL);
        safe_close(server);
        pthread_join(pump, NULL);
        is_int(got, 8U * 1024U * 1024U, "8 MiB from the server reach the client through the pump");
        ok(run.r == 0 && run.stats.b_to_a == got, "...counted");
        is_int(run.stats.pipe_size_max, IO_PUMP_PIPE_SIZE_MAX, "the bulk direction's pipe grew to 1 MiB");
        is_int(fd_pump_pipes_grown(), 0, "...and counts as grown no more once the pump ended");
        safe_close(client);
        safe_close(a);
        safe_close(b);
}

typedef struct BulkLane {
        int client, a, b, server;
        PumpRun run;
        pthread_t pump, writer;
} BulkLane;

static void *write_bulk_open(void *userdata) {
        int fd = *(int *) userdata;
        static char chunk[256 * 1024];
        memset(chunk, 'z', sizeof chunk);
        for (int i = 0; i < 8; i++)
                if (loop_write(fd, chunk, sizeof chunk) < 0)
                        break;
        return NULL;           /* and stays open, so that the pump goes on holding its pipe */
}

/* More bulk tunnels at once than IO_PUMP_PIPES_GROWN_MAX: that many grow their pipe, the rest keep the
 * default, so the process stays below its user's pipe-user-pages-soft. */
static void test_pump_grown_cap(void) {
        enum { LANES = IO_PUMP_PIPES_GROWN_MAX + 1 };
        static BulkLane lanes[LANES];
        static char buf[256 * 1024];
        unsigned grown_while_open, big = 0, small = 0;
        bool all = true;

        for (size_t i = 0; i < LANES; i++) {
                BulkLane *l = &lanes[i];
                tcp_pair(&l->client, &l->a);
                tcp_pair(&l->b, &l->server);
                (void) shutdown(l->client, SHUT_WR);
                l->run = (PumpRun) { .a = l->a, .b = l->b, .half_closed_ms = -1 };
                pthread_create(&l->pump, NULL, pump_thread, &l->run);
                pthread_create(&l->writer, NULL, write_bulk_open, &l->server);
        }
        for (size_t i = 0; i < LANES; i++) {
                uint64_t got = 0;
                while (got < 2U * 1024U * 1024U) {
                        ssize_t k = read(lanes[i].client, buf, sizeof buf);
                        if (k <= 0)
                                break;
                        got += (uint64_t) k;
                }
                all = all && got == 2U * 1024U * 1024U;
                pthread_join(lanes[i].writer, NULL);
        }
        grown_while_open = fd_pump_pipes_grown();
        for (size_t i = 0; i < LANES; i++) {
                safe_close(lanes[i].server);
                while (read(lanes[i].client, buf, sizeof buf) > 0)
                        ;
                pthread_join(lanes[i].pump, NULL);
                big += lanes[i].run.stats.pipe_size_max == IO_PUMP_PIPE_SIZE_MAX;
                small += lanes[i].run.stats.pipe_size_max == IO_PUMP_BUFFER_SIZE;
                safe_close(lanes[i].client);
                safe_close(lanes[i].a);
                safe_close(lanes[i].b);
        }
        ok(all, "%u bulk tunnels at once each deliver their 2 MiB", (unsigned) LANES);
        is_int(grown_while_open, IO_PUMP_PIPES_GROWN_MAX, "...IO_PUMP_PIPES_GROWN_MAX of them with a grown pipe at once");
        ok(big == IO_PUMP_PIPES_GROWN_MAX && small == 1, "...the one more keeps the default pipe (%u grown, %u default)", big, small);
        is_int(fd_pump_pipes_grown(), 0, "...and none counts once they ended");
}

/* A client that closes while the server stays silent and open (a kept-alive server behind a tunnel). */
static void test_pump_half_closed(void) {
        int c[2], s2[2];
        PumpRun run;
        pthread_t pump;
        char buf[8];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s2) < 0)
                abort();
        run = (PumpRun) { .a = c[1], .b = s2[0], .half_closed_ms = 100 };
        pthread_create(&pump, NULL, pump_thread, &run);
        ok(loop_write(c[0], "bye", 3) == 0 && shutdown(c[0], SHUT_WR) == 0, "the client sends and closes its side");
        ok(loop_read(s2[1], buf, sizeof buf) == 3, "...the server gets it and the end of it, and says nothing");
        pthread_join(pump, NULL);
        ok(run.r == 0 && run.stats.a_to_b == 3 && run.stats.b_to_a == 0, "the pump ends on its own once the half-closed tunnel is silent");
        for (int i = 0; i < 2; i++) {
                safe_close(c[i]);
                safe_close(s2[i]);
        }
}

int main(void) {
        test_policy_defaults();
        test_policy_rules();
        test_policy_star();
        test_policy_errors();
        test_host_valid();
        test_host_normalize();
        test_path_normalize();
        test_policy_spellings();
        test_policy_schemes();
        test_tokens();
        test_scrub();
        test_addresses();
        test_own_addresses();
        test_sni();
        test_sni_ambiguous();
        test_rewrite();
        test_refusal_text();
        test_response_framing();
        test_ca();
        test_handover();
        test_pump(false);
        test_pump(true);
        test_pump_exchange(false);
        test_pump_exchange(true);
        test_pump_bulk();
        test_pump_grown_cap();
        test_pump_half_closed();
        return done_testing();
}
