/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The journal record of a Docker API proxy request (src/dockerproxy/dockerproxy-record.h): what it says,
 * and what it never says. */

#include <stdlib.h>
#include <string.h>

#include "dockerproxy-record.h"
#include "macro.h"
#include "strv.h"
#include "tap.h"

static bool has(const ProxyRecord *r, const char *field) {
        for (size_t i = 0; r->extra[i]; i++)
                if (streq(r->extra[i], field))
                        return true;
        return false;
}

static bool has_name(const ProxyRecord *r, const char *name) {
        for (size_t i = 0; r->extra[i]; i++)
                if (startswith(r->extra[i], name))
                        return true;
        return false;
}

static void test_allowed(void) {
        DockerProxy p = { .channel = (char *) "demo" };
        ProxyConn c = { .proxy = &p, .peer_pid = 42, .peer_uid = 1000, .start_usec = 1000, .status = 200,
                        .decision = "allow", .rule = "builtin-list", .fields = (char *) "Image,Cmd" };
        _cleanup_(proxy_record_done) ProxyRecord r = {};

        c.head.method = (char *) "GET";
        c.head.path = (char *) "/v1.41/containers/json?filters=secret";
        c.target.path = (char *) "/v1.41/containers/json";
        ok(proxy_record_build(&c, 3000, &r) == 0, "an allowed request's record is built");
        ok(has(&r, "LOOP_KIND=docker") && has(&r, "LOOP_METHOD=GET") && has(&r, "LOOP_DECISION=allow") &&
           has(&r, "LOOP_RULE=builtin-list") && has(&r, "LOOP_STATUS=200"), "it names the method, decision, rule and status");
        ok(has(&r, "LOOP_PATH=/v1.41/containers/json"), "it names the path as the proxy read it, without the query");
        ok(has(&r, "LOOP_LATENCY_NS=2000000"), "the latency is from the request's start, in ns");
        ok(has(&r, "LOOP_PEER_PID=42") && has(&r, "LOOP_PEER_UID=1000") && has(&r, "LOOP_ACTOR=policy"),
           "it names the caller, and the policy as the one who decided");
        ok(has(&r, "LOOP_FIELDS=Image,Cmd"), "it names the body's fields");
        ok(!has_name(&r, "LOOP_REASON=") && !has_name(&r, "LOOP_FROZEN"), "no reason and no freeze when there was none");
        ok(!r.deny, "it is journaled as an allow");
}

static void test_denied(void) {
        DockerProxy p = { .channel = (char *) "demo" };
        ProxyConn c = { .proxy = &p, .status = 403, .rule = "api-version",
                        .reason = (char *) "bad\nline", .froze = true, .n_frozen = 3, .frozen_usec = 55 };
        _cleanup_(proxy_record_done) ProxyRecord r = {};

        c.head.method = (char *) "POST";
        c.head.path = (char *) "/v1.12/containers/x/start";
        c.actor = "root";
        ok(proxy_record_build(&c, c.start_usec, &r) == 0, "a refused request's record is built");
        ok(has(&r, "LOOP_DECISION=deny") && r.deny, "a request without a decision is journaled as a deny");
        ok(has_name(&r, "LOOP_REASON=bad") && !strchr(r.reason, '\n'), "the reason is there, a control escaped");
        ok(has(&r, "LOOP_FROZEN=3") && has(&r, "LOOP_FROZEN_US=55"), "a frozen start says how many and how long");
        ok(has(&r, "LOOP_ACTOR=root"), "a human who decided is named");
        ok(has(&r, "LOOP_PATH=/v1.12/containers/x/start"), "without a parsed target the head's path is shown");
}

static void test_unparsed(void) {
        DockerProxy p = { .channel = (char *) "demo" };
        char in[] = "BREW /pot\x01 HTTP/1.1\r\nHost: d\r\n\r\n";
        ProxyConn c = { .proxy = &p, .status = 400, .decision = "deny", .rule = "parse", .in = in, .in_size = sizeof in - 1 };
        _cleanup_(proxy_record_done) ProxyRecord r = {};

        ok(proxy_record_build(&c, 0, &r) == 0, "an unparsed request's record is built");
        ok(has(&r, "LOOP_METHOD=-") && r.deny, "it has no method and is a deny");
        ok(r.path && startswith(r.path, "BREW /pot") && !strchr(r.path, '\x01') && !strstr(r.path, "Host"),
           "it shows the first line only, escaped");
}

/* the fields of fixed form as printf() would write them: signed, and a long rule cut to the field */
static void test_numbers(void) {
        DockerProxy p = { .channel = (char *) "demo" };
        char rule[300];
        ProxyConn c = { .proxy = &p, .peer_pid = 0, .peer_uid = (uid_t) -1, .status = 0, .rule = rule, .start_usec = 5 };
        _cleanup_(proxy_record_done) ProxyRecord r = {};

        memset(rule, 'r', sizeof(rule) - 1);
        rule[sizeof(rule) - 1] = 0;
        c.head.method = (char *) "GET";
        c.head.path = (char *) "/_ping";
        ok(proxy_record_build(&c, 5 + 18446744073709ULL, &r) == 0, "a record with edge values is built");
        ok(has(&r, "LOOP_PEER_PID=0") && has(&r, "LOOP_PEER_UID=-1") && has(&r, "LOOP_STATUS=0"),
           "a peer without credentials is uid -1, pid 0; no status is 0");
        ok(has(&r, "LOOP_LATENCY_NS=18446744073709000"), "a long latency is written whole");
        ok(has_name(&r, "LOOP_RULE=rrr") && strlen(r.f_rule) == PROXY_RECORD_FIELD_MAX - 1,
           "a rule longer than the field is cut to it");
}

/* A path and an actor fit the record's fixed fields mostly; longer ones are whole all the same. */
static void test_long_fields(void) {
        DockerProxy p = { .channel = (char *) "demo" };
        char path[401], actor[201], want_path[sizeof("LOOP_PATH=") + sizeof(path)],
                want_actor[sizeof("LOOP_ACTOR=") + sizeof(actor)];
        ProxyConn c = { .proxy = &p, .status = 200, .decision = "allow", .rule = "default" };
        _cleanup_(proxy_record_done) ProxyRecord r = {};

        path[0] = '/';
        memset(path + 1, 'p', sizeof(path) - 2);
        path[sizeof(path) - 1] = 0;
        memset(actor, 'a', sizeof(actor) - 1);
        actor[sizeof(actor) - 1] = 0;
        c.head.method = (char *) "GET";
        c.target.path = path;
        c.actor = actor;
        snprintf(want_path, sizeof(want_path), "LOOP_PATH=%s", path);
        snprintf(want_actor, sizeof(want_actor), "LOOP_ACTOR=%s", actor);
        ok(proxy_record_build(&c, 0, &r) == 0 && has(&r, want_path) && has(&r, want_actor),
           "a path and an actor longer than a fixed field are journaled whole");
}

/* The message as audit_log()'s format made it before it was written without printf */
static char *message_printf(const ProxyConn *c, const ProxyRecord *r) {
        char *s = NULL;

        if (asprintf(&s, "Docker API %s: %s %s -> %d (rule %s%s%s)", r->deny ? "deny" : "allow", r->method, r->path,
                     c->status, c->rule ?: "n/a", isempty(c->reason) ? "" : ": ", strempty(r->reason)) < 0)
                return NULL;
        return s;
}

static void test_message(void) {
        DockerProxy p = { .channel = (char *) "demo" };
        char rule[2000];
        ProxyConn cases[] = {
                { .proxy = &p, .status = 200, .decision = "allow", .rule = "default" },
                { .proxy = &p, .status = 403, .rule = "api-version", .reason = (char *) "bad\nline" },
                { .proxy = &p, .status = -1, .decision = "allow" },
                { .proxy = &p, .status = 502, .decision = "deny", .rule = rule, .reason = (char *) "long rule" },
        };
        bool same = true, long_allocated = false;

        memset(rule, 'r', sizeof(rule) - 1);
        rule[sizeof(rule) - 1] = 0;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(proxy_record_done) ProxyRecord r = {};
                _cleanup_free_ char *allocated = NULL, *want = NULL;
                char buf[PROXY_RECORD_MESSAGE_STACK];
                const char *m = NULL;

                cases[i].head.method = (char *) "GET";
                cases[i].target.path = (char *) "/v1.41/containers/json";
                if (proxy_record_build(&cases[i], 0, &r) < 0 ||
                    !(m = proxy_record_message(&cases[i], &r, buf, sizeof(buf), &allocated)) ||
                    !(want = message_printf(&cases[i], &r)) || !streq(m, want)) {
                        diag(want ?: "out of memory");
                        same = false;
                }
                if (cases[i].rule == rule)
                        long_allocated = allocated && m == allocated;
        }
        ok(same, "the record's message is the one its printf format made: allow, deny with a reason, no rule, "
                 "a negative status, a rule too long for the stack");
        ok(long_allocated, "a message beyond the stack buffer is allocated");
}

int main(void) {
        test_message();
        test_long_fields();
        test_allowed();
        test_numbers();
        test_denied();
        test_unparsed();
        return done_testing();
}
