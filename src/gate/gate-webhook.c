/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <inttypes.h>
#include <stdio.h>

#include "gate-webhook.h"
#include "json-util.h"
#include "text-escape.h"

int gate_webhook_body(const char *channel, const GatePending *p, uint64_t timeout_sec, size_t display_max,
                      char **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *target = NULL, *message = NULL, *id = NULL, *text = NULL;
        const char *body;
        char *b;

        target = text_escape_display(p->target, display_max);
        message = text_escape_display(strempty(p->message), display_max);
        o = json_object_new_object();
        if (!target || !message || !o || asprintf(&id, "%s/%" PRIu64 "-%s", channel, p->id, p->digest) < 0)
                return -ENOMEM;
        if (asprintf(&text, "loop: %s asks to %s %s. Answer with: loop gate approve %s [--session] / loop gate deny %s",
                     p->container, p->kind, target, id, id) < 0) {
                text = NULL;
                return -ENOMEM;
        }
        if (json_add(o, "event", json_object_new_string("gate-pending")) < 0 ||
            json_add(o, "id", json_object_new_string(id)) < 0 ||
            json_add(o, "channel", json_object_new_string(channel)) < 0 ||
            json_add(o, "container", json_object_new_string(p->container)) < 0 ||
            json_add(o, "kind", json_object_new_string(p->kind)) < 0 ||
            json_add(o, "target", json_object_new_string(target)) < 0 ||
            json_add(o, "message", json_object_new_string(message)) < 0 ||
            json_add(o, "rule", json_object_new_string(strempty(p->rule))) < 0 ||
            json_add(o, "timeout_sec", json_object_new_uint64(timeout_sec)) < 0 ||
            json_add(o, "text", json_object_new_string(text)) < 0)
                return -ENOMEM;
        body = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        if (!body || !(b = strdup(body)))
                return -ENOMEM;
        *ret = b;
        return 0;
}
