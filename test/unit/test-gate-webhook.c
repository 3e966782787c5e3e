/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "gate-webhook.h"
#include "json-util.h"
#include "macro.h"
#include "tap.h"

static const char *field(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

int main(void) {
        GatePending p = {
                .id = 1042, .digest = "0123abcd", .container = (char *) "c1", .kind = (char *) "exec",
                .target = (char *) "rm -rf /\n\x1b[2J", .message = NULL, .rule = (char *) "cmd[3]",
        };
        _cleanup_free_ char *body = NULL, *small = NULL;
        _cleanup_(json_object_putp) json_object *o = NULL, *s = NULL;

        is_int(gate_webhook_body("proj", &p, 300, 1024, &body), 0, "a pending request gives a webhook body");
        o = body ? json_tokener_parse(body) : NULL;
        ok(o && json_object_is_type(o, json_type_object), "the body is one JSON object");
        is_str(field(o, "event"), "gate-pending", "its event is gate-pending");
        is_str(field(o, "id"), "proj/1042-0123abcd", "its id is CHANNEL/N-DIGEST, as `loop gate approve` takes it");
        ok(streq_ptr(field(o, "channel"), "proj") && streq_ptr(field(o, "container"), "c1") &&
           streq_ptr(field(o, "kind"), "exec") && streq_ptr(field(o, "rule"), "cmd[3]"),
           "channel, container, kind and rule are as pending");
        ok(field(o, "target") && !strchr(field(o, "target"), '\n') && !strchr(field(o, "target"), '\x1b'),
           "the container's target is escaped for display");
        is_str(field(o, "message"), "", "a missing message is empty");
        is_str(field(o, "timeout_sec"), "300", "timeout_sec is the approval timeout");
        ok(field(o, "text") && strstr(field(o, "text"), "loop gate approve proj/1042-0123abcd") &&
           strstr(field(o, "text"), "loop gate deny proj/1042-0123abcd"), "the text line says how to answer");

        p.target = (char *) "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
        is_int(gate_webhook_body("proj", &p, 300, 16, &small), 0, "a long target gives a body");
        s = small ? json_tokener_parse(small) : NULL;
        ok(field(s, "target") && strlen(field(s, "target")) <= 16 + 8, "the target is cut near display_max");
        return done_testing();
}
