/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <curl/curl.h>
#include <inttypes.h>
#include <signal.h>

#include "gate-record.h"
#include "gate-webhook.h"
#include "macro.h"
#include "text-escape.h"
#include "json-util.h"

int gate_webhook_body(const char *channel, const GatePending *p, uint64_t timeout_usec, char **ret) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *target = NULL, *message = NULL, *id = NULL, *text = NULL;
        char *body;

        target = text_escape_display(p->target, GATE_DISPLAY_MAX);
        message = text_escape_display(strempty(p->message), GATE_DISPLAY_MAX);
        o = json_object_new_object();
        if (!target || !message || !o || asprintf(&id, "%s/%" PRIu64 "-%s", channel, p->id, p->digest) < 0 ||
            asprintf(&text, "loop: %s asks to %s %s. Answer with: loop gate approve %s [--session] / loop gate deny %s",
                     p->container, p->kind, target, id, id) < 0)
                return -ENOMEM;
        if (json_add(o, "event", json_object_new_string("gate-pending")) < 0 ||
            json_add(o, "id", json_object_new_string(id)) < 0 ||
            json_add(o, "channel", json_object_new_string(channel)) < 0 ||
            json_add(o, "container", json_object_new_string(p->container)) < 0 ||
            json_add(o, "kind", json_object_new_string(p->kind)) < 0 ||
            json_add(o, "target", json_object_new_string(target)) < 0 ||
            json_add(o, "message", json_object_new_string(message)) < 0 ||
            json_add(o, "rule", json_object_new_string(strempty(p->rule))) < 0)
                return -ENOMEM;
        if (json_add(o, "timeout_sec", json_object_new_uint64(timeout_usec / 1000000ULL)) < 0 ||
            json_add(o, "text", json_object_new_string(text)) < 0)
                return -ENOMEM;
        body = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        if (!body)
                return -ENOMEM;
        *ret = body;
        return 0;
}

_noreturn_ static void webhook_child(const char *url, const char *body) {
        CURL *curl;
        struct curl_slist *headers = NULL;
        long code = 0;
        CURLcode cr;
        sigset_t none;

        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);

        curl = curl_easy_init();
        if (!curl)
                _exit(EXIT_FAILURE);
        headers = curl_slist_append(headers, "Content-Type: application/json");
        curl_easy_setopt(curl, CURLOPT_URL, url);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, GATE_WEBHOOK_TIMEOUT_MS);
        curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
        cr = curl_easy_perform(curl);
        if (cr == CURLE_OK)
                curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
        _exit(cr == CURLE_OK && code >= 200 && code < 300 ? EXIT_SUCCESS : EXIT_FAILURE);
}

int gate_webhook_spawn(const char *url, const char *body, pid_t *ret_pid) {
        pid_t pid;

        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                webhook_child(url, body);
        *ret_pid = pid;
        return 0;
}
