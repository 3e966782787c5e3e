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
#include "../unit/scripted-chrome.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
        ScriptedChrome chrome = {};
        pthread_t thread;
        int sv[2];

        signal(SIGPIPE, SIG_IGN);
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return 0;
        chrome.fd = sv[1];
        if (pthread_create(&thread, NULL, scripted_chrome, &chrome) != 0)
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
