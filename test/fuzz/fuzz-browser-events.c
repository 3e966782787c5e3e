/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: the browser's CDP event handling (browser-tools.c), fed what Chrome (or a liar in its
 * place) sends: target, page, console, network and dialog events whose strings the page controls. A
 * Browser is set up over a socketpair against a scripted Chrome (a thread answering one page target, then
 * an error to every later call), the input is fed as NUL-separated messages, and tools are run on what it
 * left (tabs, console and network rings): no crash, every answer a string. */

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>

#include "browser-tools.h"
#include "io-util.h"
#include "json-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* browser_new(): setDownloadBehavior, setDiscoverTargets, getTargets, attachToTarget, then the tab's
 * Page/Runtime/Network/Log.enable and Emulation.setDeviceMetricsOverride. */
static const char * const ANSWERS[] = {
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

/* The scripted Chrome: answers each call by its id, ANSWERS then errors, until the client goes. */
static void *chrome(void *userdata) {
        int fd = *(int *) userdata;
        char buf[4096];
        size_t len = 0;

        for (;;) {
                ssize_t k = read(fd, buf + len, sizeof(buf) - 1 - len);
                char *nul;

                if (k <= 0)
                        return NULL;
                len += (size_t) k;
                while ((nul = memchr(buf, 0, len))) {
                        json_object *m = json_tokener_parse(buf), *id;
                        int64_t n = m && json_object_object_get_ex(m, "id", &id) ? json_object_get_int64(id) : 0;
                        char answer[256];

                        json_object_put(m);
                        if (n >= 1 && (size_t) n <= ELEMENTSOF(ANSWERS))
                                snprintf(answer, sizeof(answer), "%s", ANSWERS[n - 1]);
                        else
                                snprintf(answer, sizeof(answer), "{\"id\":%lld,\"error\":{\"code\":-32000,\"message\":\"scripted\"}}",
                                         (long long) n);
                        if (loop_write(fd, answer, strlen(answer) + 1) < 0)
                                return NULL;
                        len -= (size_t) (nul + 1 - buf);
                        memmove(buf, nul + 1, len);
                }
                if (len >= sizeof(buf) - 1)
                        return NULL;
        }
}

static void run_tool(Browser *b, const char *name, const char *args_json) {
        json_object *args = json_tokener_parse(args_json);
        McpToolResult r = {};

        if (browser_tool_call(b, name, args, &r) >= 0 && !r.text)
                abort();
        free(r.text);
        json_object_put(args);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Browser *b = NULL;
        Cdp *c = NULL;
        pthread_t thread;
        int sv[2];

        signal(SIGPIPE, SIG_IGN);
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return 0;
        if (pthread_create(&thread, NULL, chrome, &sv[1]) != 0)
                abort();
        if (cdp_new(sv[0], sv[0], &c) < 0 || browser_new(c, NULL, &b) < 0)
                abort();        /* the scripted answers set it up */

        /* the input, as messages from Chrome (events; answers nobody waits for are dropped) */
        /* (a NUL ends what the input left unfinished, else the next answer would be glued to it) */
        if (cdp_feed(c, data, size) >= 0 && cdp_feed(c, "", 1) >= 0) {
                run_tool(b, "read_console_messages", "{}");
                run_tool(b, "read_console_messages", "{\"only_errors\":true,\"pattern\":\"e\",\"limit\":3}");
                run_tool(b, "read_network_requests", "{\"url_pattern\":\"http\"}");
                run_tool(b, "read_network_requests", "{\"tab_id\":2,\"clear\":true}");
                run_tool(b, "list_tabs", "{}");
                run_tool(b, "switch_tab", "{\"tab_id\":2}");
        }
        browser_free(b);
        cdp_free(c);
        shutdown(sv[0], SHUT_RDWR);
        pthread_join(thread, NULL);
        close(sv[0]);
        close(sv[1]);
        return 0;
}
