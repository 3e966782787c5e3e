/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A scripted Chrome for tests of browser-tools over a socketpair (test-browser-tools, fuzz-browser-events):
 * a thread that answers browser_new()'s calls one page target (T1, session S1), then an error to every
 * later call, until the client goes; it keeps the first message the client sent. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "io-util.h"
#include "macro.h"

/* browser_new(): setDownloadBehavior, setDiscoverTargets, getTargets, attachToTarget, then the tab's
 * Page/Runtime/Network/Log.enable and Emulation.setDeviceMetricsOverride. */
static const char * const SCRIPTED_CHROME_ANSWERS[] = {
        "{\"id\":1,\"result\":{}}",
        "{\"id\":2,\"result\":{}}",
        "{\"id\":3,\"result\":{\"targetInfos\":[{\"targetId\":\"T1\",\"type\":\"page\",\"url\":\"about:blank\",\"title\":\"\"}]}}",
        "{\"id\":4,\"result\":{\"sessionId\":\"S1\"}}",
        "{\"id\":5,\"result\":{}}",
        "{\"id\":6,\"result\":{}}",
        "{\"id\":7,\"result\":{}}",
        "{\"id\":8,\"result\":{}}",
        "{\"id\":9,\"result\":{}}",
};

typedef struct ScriptedChrome {
        int fd;                 /* Chrome's end */
        char first[1024];       /* the first message received (cut at 1000 bytes) */
        const char *screenshot; /* non-NULL: Page.captureScreenshot answers this base64 PNG */
} ScriptedChrome;

/* The thread: answers each call by its id, SCRIPTED_CHROME_ANSWERS then errors. */
static inline void *scripted_chrome(void *userdata) {
        ScriptedChrome *s = userdata;
        char buf[4096];
        size_t len = 0;

        for (;;) {
                ssize_t k = read(s->fd, buf + len, sizeof(buf) - 1 - len);
                char *nul;

                if (k <= 0)
                        return NULL;
                len += (size_t) k;
                while ((nul = memchr(buf, 0, len))) {
                        json_object *m = json_tokener_parse(buf), *id, *method;
                        int64_t n = m && json_object_object_get_ex(m, "id", &id) ? json_object_get_int64(id) : 0;
                        bool shot = s->screenshot && m && json_object_object_get_ex(m, "method", &method) &&
                                    streq(json_object_get_string(method), "Page.captureScreenshot");
                        char answer[256];

                        json_object_put(m);
                        if (s->first[0] == 0)
                                snprintf(s->first, sizeof(s->first), "%.1000s", buf);
                        if (shot)
                                snprintf(answer, sizeof(answer), "{\"id\":%lld,\"result\":{\"data\":\"%.180s\"}}",
                                         (long long) n, s->screenshot);
                        else if (n >= 1 && (size_t) n <= ELEMENTSOF(SCRIPTED_CHROME_ANSWERS))
                                snprintf(answer, sizeof(answer), "%s", SCRIPTED_CHROME_ANSWERS[n - 1]);
                        else
                                snprintf(answer, sizeof(answer), "{\"id\":%lld,\"error\":{\"code\":-32000,\"message\":\"scripted\"}}",
                                         (long long) n);
                        if (loop_write(s->fd, answer, strlen(answer) + 1) < 0)
                                return NULL;
                        len -= (size_t) (nul + 1 - buf);
                        memmove(buf, nul + 1, len);
                }
                if (len >= sizeof(buf) - 1)
                        return NULL;
        }
}
