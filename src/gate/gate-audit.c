/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gate-audit.h"

/* ---- the report ---- */

typedef enum Charset {
        CHARSET_ANY,            /* any bytes but NUL */
        CHARSET_NAME,           /* [a-z0-9_-]: syscall and operation names */
        CHARSET_WORD,           /* printable ASCII without blanks: rule ids, channel names */
} Charset;

static bool charset_ok(const char *s, Charset cs) {
        if (cs == CHARSET_ANY)
                return true;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                switch (cs) {
                case CHARSET_NAME:
                        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
                                return false;
                        break;
                case CHARSET_WORD:
                        if (*p <= ' ' || *p >= 0x7f)
                                return false;
                        break;
                default:
                        return true;
                }
        return true;
}

/* 1 and the value when key is a string of at most max bytes in charset, 0 when absent or null, -EBADMSG
 * otherwise. An embedded NUL is refused: what is journaled must be all of what was sent. */
static int get_string(json_object *o, const char *key, size_t max, Charset cs, const char **ret) {
        json_object *v;
        const char *s;
        int len;

        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_string))
                return -EBADMSG;
        s = json_object_get_string(v);
        len = json_object_get_string_len(v);
        if (len < 0 || (size_t) len > max || strlen(s) != (size_t) len || !charset_ok(s, cs))
                return -EBADMSG;
        *ret = s;
        return 1;
}

/* The same for an integer between min and max; doubles, strings and booleans are refused. */
static int get_int(json_object *o, const char *key, int64_t min, int64_t max, int64_t *ret) {
        json_object *v;
        int64_t n;

        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_int))
                return -EBADMSG;
        /* json-c clamps numbers above INT64_MAX to it, so every max below it refuses them */
        n = json_object_get_int64(v);
        if (n < min || n > max)
                return -EBADMSG;
        *ret = n;
        return 1;
}

int gate_audit_report_parse(json_object *o, GateAuditReport *ret, const char **ret_bad_field) {
        GateAuditReport rep = { .channel = "", .syscall = "", .message = "" };
        const char *bad = NULL, *decision = NULL, *event = NULL, *actor = NULL;
        int64_t pid = -1, latency = -1, error = -1, ts = 0;

        if (!o || !json_object_is_type(o, json_type_object)) {
                bad = "(body)";
                goto fail;
        }

#define REQUIRE(expr, key) do { if ((expr) <= 0) { bad = key; goto fail; } } while (0)
#define OPTIONAL(expr, key) do { if ((expr) < 0) { bad = key; goto fail; } } while (0)
        OPTIONAL(get_int(o, "ts", 0, INT64_MAX - 1, &ts), "ts");
        OPTIONAL(get_string(o, "channel", GATE_AUDIT_CHANNEL_MAX, CHARSET_WORD, &rep.channel), "channel");
        REQUIRE(get_int(o, "pid", 0, INT32_MAX, &pid), "pid");
        REQUIRE(get_string(o, "kind", GATE_AUDIT_NAME_MAX, CHARSET_NAME, &rep.kind), "kind");
        OPTIONAL(get_string(o, "syscall", GATE_AUDIT_NAME_MAX, CHARSET_NAME, &rep.syscall), "syscall");
        OPTIONAL(get_string(o, "op", GATE_AUDIT_NAME_MAX, CHARSET_NAME, &rep.op), "op");
        REQUIRE(get_string(o, "target", GATE_AUDIT_TARGET_MAX, CHARSET_ANY, &rep.target), "target");
        REQUIRE(get_string(o, "rule_id", GATE_AUDIT_RULE_MAX, CHARSET_WORD, &rep.rule), "rule_id");
        REQUIRE(get_string(o, "decision", GATE_AUDIT_NAME_MAX, CHARSET_NAME, &decision), "decision");
        REQUIRE(get_string(o, "event", GATE_AUDIT_NAME_MAX, CHARSET_NAME, &event), "event");
        OPTIONAL(get_string(o, "prompted_who", GATE_AUDIT_ACTOR_MAX, CHARSET_ANY, &actor), "prompted_who");
        REQUIRE(get_int(o, "latency_ns", 0, INT64_MAX - 1, &latency), "latency_ns");
        REQUIRE(get_int(o, "errno", 0, GATE_AUDIT_ERRNO_MAX, &error), "errno");
        OPTIONAL(get_string(o, "message", GATE_AUDIT_MESSAGE_MAX, CHARSET_ANY, &rep.message), "message");
#undef REQUIRE
#undef OPTIONAL

        if (!streq(rep.kind, "connect") && !streq(rep.kind, "execve") && !streq(rep.kind, "file")) {
                bad = "kind";
                goto fail;
        }
        if (streq(decision, "allow"))
                rep.allow = true;
        else if (!streq(decision, "deny")) {
                bad = "decision";
                goto fail;
        }
        /* Decisions that went through an approval were journaled when they were made. */
        if (!streq(event, "local")) {
                bad = "event";
                goto fail;
        }
        if (rep.rule[0] == 0) {
                bad = "rule_id";
                goto fail;
        }

        rep.ts_ns = ts;
        rep.pid = (pid_t) pid;
        rep.latency_ns = (uint64_t) latency;
        rep.error = (int) error;
        *ret = rep;
        return 0;

fail:
        if (ret_bad_field)
                *ret_bad_field = bad;
        return -EBADMSG;
}
