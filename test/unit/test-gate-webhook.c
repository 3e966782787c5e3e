/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The gate's webhook notice of a pending request: its fields, and the container's text escaped for
 * display (a target is the container's to choose). */

#include "gate-webhook.h"
#include "macro.h"
#include "tap.h"
#include "json-util.h"

static const char *field(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

int main(void) {
        GatePending p = {
                .id = 7,
                .digest = "0123abcd",
                .container = (char *) "loop-demo-1",
                .kind = (char *) "execve",
                .target = (char *) "git push\x1b[31m",
                .message = (char *) "pushes need a human",
                .rule = (char *) "cmd[3]",
        };
        _cleanup_free_ char *body = NULL;
        _cleanup_(json_object_putp) json_object *o = NULL;

        ok(gate_webhook_body("demo", &p, 300ULL * 1000000ULL, &body) == 0, "a notice is made");
        o = json_tokener_parse(body);
        ok(o && json_object_is_type(o, json_type_object), "it is a JSON object");
        is_str(field(o, "event"), "gate-pending", "event");
        is_str(field(o, "id"), "demo/7-0123abcd", "the id `loop gate` answers, with the request's digest");
        is_str(field(o, "channel"), "demo", "channel");
        is_str(field(o, "container"), "loop-demo-1", "container");
        is_str(field(o, "kind"), "execve", "kind");
        ok(field(o, "target") && !strchr(field(o, "target"), '\x1b'), "the target is escaped for display");
        is_str(field(o, "message"), "pushes need a human", "message");
        is_str(field(o, "rule"), "cmd[3]", "rule");
        is_str(field(o, "timeout_sec"), "300", "timeout_sec");
        ok(field(o, "text") && strstr(field(o, "text"), "loop gate approve demo/7-0123abcd"),
           "text says how to answer");
        return done_testing();
}
