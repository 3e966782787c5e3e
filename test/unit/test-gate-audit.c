/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The host's reading of the supervisor's audit reports (gate-audit.c): what a well-formed report is, what
 * is refused, and the per-container cap with its summaries. */

#include <stdlib.h>

#include "gate-audit.h"
#include "macro.h"
#include "tap.h"

#define SEC 1000000ULL
#define VALID "{\"ts\":1700000000000000000,\"channel\":\"demo\",\"pid\":42,\"kind\":\"file\",\"syscall\":\"openat\"," \
              "\"op\":\"read\",\"target\":\"/etc/shadow\",\"rule_id\":\"default\",\"decision\":\"deny\"," \
              "\"event\":\"local\",\"prompted_who\":\"\",\"latency_ns\":4200,\"errno\":13," \
              "\"message\":\"secrets of the host\"}"

/* Parses text, the valid report with one key replaced (value NULL: removed). Returns parse()'s result. */
static int parse_with(const char *key, const char *value, GateAuditReport *ret, const char **ret_bad,
                      json_object **ret_object) {
        json_object *o = json_tokener_parse(VALID);
        int r;

        if (!o)
                abort();
        if (key) {
                json_object_object_del(o, key);
                if (value) {
                        json_object *v = json_tokener_parse(value);
                        if (!v && !streq(value, "null"))
                                abort();
                        json_object_object_add(o, key, v);
                }
        }
        r = gate_audit_report_parse(o, ret, ret_bad);
        if (ret_object)
                *ret_object = o;
        else
                json_object_put(o);
        return r;
}

static void refused(const char *key, const char *value, const char *why) {
        GateAuditReport rep;
        const char *bad = NULL;
        int r = parse_with(key, value, &rep, &bad, NULL);

        ok(r == -EBADMSG && bad && streq(bad, key), "%s is refused, naming %s (%s)", why, key, bad ?: "(none)");
}

static void test_valid(void) {
        GateAuditReport rep = {};
        json_object *o = NULL;
        const char *bad = NULL;

        is_int(parse_with(NULL, NULL, &rep, &bad, &o), 0, "the supervisor's record of a default-rule deny parses");
        is_str(rep.kind, "file", "kind is read");
        is_str(rep.target, "/etc/shadow", "target is read");
        is_str(rep.rule, "default", "rule_id is read as the rule");
        is_str(rep.syscall, "openat", "syscall is read");
        is_str(rep.op, "read", "op is read");
        is_str(rep.channel, "demo", "the claimed channel is read (informational)");
        is_str(rep.message, "secrets of the host", "message is read");
        ok(!rep.allow && rep.pid == 42 && rep.error == 13 && rep.latency_ns == 4200 &&
           rep.ts_ns == 1700000000000000000LL, "decision, pid, errno, latency and ts are read");
        json_object_put(o);

        is_int(parse_with("decision", "\"allow\"", &rep, &bad, NULL), 0, "decision allow parses");
        ok(rep.allow, "... as an allow");
        is_int(parse_with("op", NULL, &rep, &bad, NULL), 0, "a record without op (connect, execve) parses");
        ok(rep.op == NULL, "... with op NULL");
        is_int(parse_with("channel", NULL, &rep, &bad, NULL), 0, "a record without channel parses");
        is_str(rep.channel, "", "... with the claimed channel empty");
        is_int(parse_with("message", "null", &rep, &bad, NULL), 0, "message null parses");
        is_str(rep.message, "", "... as an empty message");
        is_int(parse_with("future_field", "[1,2]", &rep, &bad, NULL), 0, "an unknown key is ignored");
        is_int(parse_with("target", "\"/tmp/a\\u001b[2Jb\\u202e\"", &rep, &bad, &o), 0,
               "a target with control and bidi characters parses (escaping is the display's job)");
        is_str(rep.target, "/tmp/a\033[2Jb\xe2\x80\xae", "... and is kept byte for byte");
        json_object_put(o);
}

static void test_refused(void) {
        GateAuditReport rep;
        const char *bad = NULL;
        json_object *arr = json_object_new_array();
        char big[GATE_AUDIT_TARGET_MAX + 16];

        ok(gate_audit_report_parse(arr, &rep, &bad) == -EBADMSG && streq(bad, "(body)"), "a body that is not an object is refused");
        json_object_put(arr);

        refused("kind", "\"docker\"", "kind docker (not the supervisor's)");
        refused("kind", "\"Connect\"", "kind in capitals");
        refused("kind", NULL, "a missing kind");
        refused("kind", "7", "a numeric kind");
        refused("decision", "\"approve\"", "decision approve");
        refused("decision", NULL, "a missing decision");
        refused("event", "\"approval\"", "an approval's record (the host journaled it already)");
        refused("event", NULL, "a missing event");
        refused("pid", "-1", "a negative pid");
        refused("pid", "4294967296", "a pid beyond 32 bits");
        refused("pid", "\"42\"", "a pid as a string");
        refused("pid", "4.2", "a pid as a double");
        refused("pid", NULL, "a missing pid");
        refused("errno", "4096", "an errno over GATE_AUDIT_ERRNO_MAX");
        refused("errno", "-13", "a negative errno");
        refused("latency_ns", "-1", "a negative latency");
        refused("latency_ns", "18446744073709551615", "a latency beyond int64");
        refused("latency_ns", "true", "a boolean latency");
        refused("ts", "\"yesterday\"", "a ts as a string");
        refused("target", NULL, "a missing target");
        refused("target", "{\"a\":1}", "a target that is an object");
        refused("target", "\"/etc/sha\\u0000dow\"", "a target with an embedded NUL");
        memset(big, 'a', sizeof(big));
        big[0] = '"';
        big[GATE_AUDIT_TARGET_MAX + 2] = '"';
        big[GATE_AUDIT_TARGET_MAX + 3] = 0;
        refused("target", big, "a target over GATE_AUDIT_TARGET_MAX");
        refused("rule_id", "\"\"", "an empty rule_id");
        refused("rule_id", "\"file[2] \\n forged\"", "a rule_id with blanks or control characters");
        refused("syscall", "\"open at\"", "a syscall name outside [a-z0-9_-]");
        refused("op", "\"READ\\u001b\"", "an op outside [a-z0-9_-]");
        refused("channel", "\"de mo\"", "a claimed channel with a blank");
        refused("message", "42", "a numeric message");
}

typedef struct Summary {
        char container[64];
        uint64_t suppressed;
} Summary;

static Summary summaries[8];
static size_t n_summaries;

static void on_summary(const char *container, uint64_t suppressed, void *userdata) {
        if (n_summaries >= ELEMENTSOF(summaries))
                return;
        snprintf(summaries[n_summaries].container, sizeof(summaries[0].container), "%s", container ?: "(overflow)");
        summaries[n_summaries++].suppressed = suppressed;
}

static void test_limiter(void) {
        _cleanup_(audit_limiter_freep) AuditLimiter *l = NULL;
        unsigned admitted = 0;
        char name[32];
        int r;

        is_int(audit_limiter_new(GATE_AUDIT_RATE_PER_WINDOW, GATE_AUDIT_WINDOW_USEC, &l), 0, "a limiter is made");
        ok(audit_limiter_next_deadline(l) == UINT64_MAX && audit_limiter_n_keys(l) == 0,
           "an empty limiter has no deadline");

        n_summaries = 0;
        for (unsigned i = 0; i < 1000; i++)
                if (audit_limiter_admit(l, "loop-demo-a", 10 * SEC + i, on_summary, NULL) == 1)
                        admitted++;
        is_int(admitted, GATE_AUDIT_RATE_PER_WINDOW, "a flood of 1000 reports in a window admits GATE_AUDIT_RATE_PER_WINDOW");
        is_int(n_summaries, 0, "no summary while the window lasts");
        is_int(audit_limiter_admit(l, "loop-demo-b", 10 * SEC + 500, on_summary, NULL), 1,
               "another container has a window of its own");
        is_int(audit_limiter_next_deadline(l), 11 * SEC, "the next deadline is the end of the first window");

        audit_limiter_expire(l, 11 * SEC - 1, on_summary, NULL);
        ok(n_summaries == 0 && audit_limiter_n_keys(l) == 2, "nothing ends before the deadline");
        audit_limiter_expire(l, 11 * SEC, on_summary, NULL);
        ok(n_summaries == 1 && streq(summaries[0].container, "loop-demo-a") && summaries[0].suppressed == 800,
           "at the window's end one summary says 800 reports of loop-demo-a were held back");
        is_int(audit_limiter_n_keys(l), 1, "... and loop-demo-a is forgotten");
        audit_limiter_expire(l, 12 * SEC, on_summary, NULL);
        ok(n_summaries == 1 && audit_limiter_n_keys(l) == 0, "a window that held nothing back ends without a summary");

        /* a window that ends on the container's next report, before the timer */
        n_summaries = 0;
        for (unsigned i = 0; i < GATE_AUDIT_RATE_PER_WINDOW + 5; i++)
                (void) audit_limiter_admit(l, "loop-demo-a", 20 * SEC, on_summary, NULL);
        r = audit_limiter_admit(l, "loop-demo-a", 21 * SEC, on_summary, NULL);
        ok(r == 1 && n_summaries == 1 && summaries[0].suppressed == 5,
           "the next window's first report is admitted after the summary of the last one");
        audit_limiter_expire(l, UINT64_MAX, on_summary, NULL);
        ok(n_summaries == 1 && audit_limiter_n_keys(l) == 0, "expire(UINT64_MAX) ends every window");

        /* the table of containers is capped */
        for (unsigned i = 0; i < AUDIT_LIMITER_KEYS_MAX; i++) {
                snprintf(name, sizeof(name), "c-%u", i);
                (void) audit_limiter_admit(l, name, 30 * SEC, on_summary, NULL);
        }
        is_int(audit_limiter_admit(l, "one-too-many", 30 * SEC, on_summary, NULL), 0,
               "a container beyond AUDIT_LIMITER_KEYS_MAX is held back");
        n_summaries = 0;
        audit_limiter_expire(l, 31 * SEC, on_summary, NULL);
        ok(n_summaries == 1 && streq(summaries[0].container, "(overflow)") && summaries[0].suppressed == 1,
           "... and reported in a summary without a container");
        is_int(audit_limiter_n_keys(l), 0, "all windows ended");
}

int main(void) {
        test_valid();
        test_refused();
        test_limiter();
        return done_testing();
}
