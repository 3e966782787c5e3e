/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The browser tools against a real Chromium, driving the test site (test/browser/site): every tool and
 * every computer action, each checked by what the page shows afterwards (evaluate), the PNG written, the
 * logs kept, the tabs. One sequence, two ways in:
 *
 *   - on this host (site-netns.sh sets CHROME and SITE): chromium-headless-shell with
 *     --remote-debugging-pipe on fds 3/4, the site on 127.0.0.1 in a network namespace of its own, every
 *     call through browser_tool_call() in this process;
 *   - in the Chrome container (test-browser-engines.sh sets LOOP_MCP_BROWSER, BROWSER_SOCKET,
 *     BROWSER_TOKEN_FILE, SITE and SHOTS): every call through `loop mcp-browser` over stdio (mcp-stdio.h),
 *     to loop-browser and the container's Chrome, the site reached through the channel's egress gateway;
 *     SHOTS is loop-browser's screenshots directory. What only the host way can see (the policy's calls,
 *     the profile's files, Chrome's pid) is checked there only.
 *
 * Chrome keeps its sandbox: as root the driver runs it as nobody (Chrome refuses root with a sandbox).
 * Only if Chrome cannot start sandboxed here (the kernel refuses unprivileged user namespaces) is it run
 * with --no-sandbox, which the TAP output says: this host-level test is about the protocol; the sandbox
 * is the Chrome container's business (browser21's tests). */

#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "browser-tools.h"
#include "chrome-launch.h"
#include "dirent-util.h"
#include "fs-util.h"
#include "json-util.h"
#include "mcp-stdio.h"
#include "tap.h"

#define SEC 1000000ULL

static const char *base;        /* http://127.0.0.1:PORT */
static Browser *browser;
static McpStdio mcp;            /* .pid > 0: the calls go through `loop mcp-browser` */
static char *last_text;

/* Calls a tool with arguments given as JSON text; keeps the answer in last_text. */
static McpToolResult call(const char *tool, const char *args_json) {
        _cleanup_(json_object_putp) json_object *args = json_tokener_parse(args_json);
        McpToolResult r = {};
        int k;

        assert(args);
        k = mcp.pid > 0 ? mcp_stdio_tool_call(&mcp, tool, args, &r) : browser_tool_call(browser, tool, args, &r);
        if (k < 0) {
                printf("# %s failed: %s\n", tool, strerror(-k));
                r = (McpToolResult) { .text = strdup("(call failed)"), .is_error = true };
        }
        free(last_text);
        last_text = strdup(r.text ?: "");
        return r;
}

/* call() that must succeed and contain want (NULL: anything). */
static bool call_ok(const char *tool, const char *args_json, const char *want) {
        McpToolResult r = call(tool, args_json);
        bool good = !r.is_error && (!want || strstr(r.text, want));

        if (!good)
                printf("# %s %s answered%s: %.2000s\n", tool, args_json, r.is_error ? " (error)" : "", r.text);
        free(r.text);
        return good;
}

static bool call_refused(const char *tool, const char *args_json, const char *want) {
        McpToolResult r = call(tool, args_json);
        bool good = r.is_error && (!want || strstr(r.text, want));

        if (!good)
                printf("# %s %s answered%s: %.2000s\n", tool, args_json, r.is_error ? " (error)" : "", r.text);
        free(r.text);
        return good;
}

/* The value of a JS expression in the current tab, as evaluate answers it (JSON text). */
static bool eval_is(const char *expression, const char *want) {
        _cleanup_(json_object_putp) json_object *a = json_object_new_object();
        McpToolResult r;
        bool good;

        json_object_object_add(a, "expression", json_object_new_string(expression));
        r = call("evaluate", json_object_to_json_string(a));
        good = !r.is_error && streq(r.text, want);
        if (!good)
                printf("# %s is %s, want %s\n", expression, r.text, want);
        free(r.text);
        return good;
}

static int policy_refuses_denied(const char *url, char **ret_reason, void *userdata) {
        unsigned *calls = userdata;

        (*calls)++;
        if (strstr(url, "/denied.html")) {
                *ret_reason = strdup("the channel's egress policy refuses denied.html");
                return -EPERM;
        }
        return 0;
}

static bool file_is_png(const char *dir, unsigned want_w, unsigned want_h_min) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;
        bool found = false;

        while (d && (de = readdir(d))) {
                unsigned char h[24];
                char path[1024];
                int fd;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || read(fd, h, sizeof(h)) != (ssize_t) sizeof(h)) {
                        safe_close(fd);
                        continue;
                }
                safe_close(fd);
                unsigned w = (unsigned) h[16] << 24 | h[17] << 16 | h[18] << 8 | h[19];
                unsigned ht = (unsigned) h[20] << 24 | h[21] << 16 | h[22] << 8 | h[23];
                if (memcmp(h, "\x89PNG\r\n\x1a\n", 8) == 0 && (want_w == 0 || w == want_w) && ht >= want_h_min)
                        found = true;
                (void) unlink(path);
        }
        return found;
}

/* Whether a file named name, newer than the file since, exists anywhere below dir (/tmp may hold other
 * copies of the test site, older). */
static bool file_below(const char *dir, const char *name, const char *since) {
        char cmd[1024];

        snprintf(cmd, sizeof(cmd), "find '%s' -name '%s' -newer '%s' 2>/dev/null | grep -q .", dir, name, since);
        return system(cmd) == 0;
}

int main(void) {
        const char *chrome = getenv("CHROME"), *loop = getenv("LOOP_MCP_BROWSER");
        char profile[] = "/tmp/test-browser-profile-XXXXXX", shots_tmp[] = "/tmp/test-browser-shots-XXXXXX",
             since[] = "/tmp/test-browser-since-XXXXXX";
        const char *shots = shots_tmp;
        char args[1024];
        _cleanup_(cdp_freep) Cdp *cdp = NULL;
        _cleanup_close_ int to = -EBADF, from = -EBADF;
        unsigned policy_calls = 0;
        bool sandbox = false, host;
        BrowserOptions o = {
                .screenshots_dir = shots_tmp,
                .screenshots_dir_in_container = "/run/loop/screenshots",
                .url_check = policy_refuses_denied,
                .userdata = &policy_calls,
        };
        McpToolResult r;
        pid_t pid = -1;
        int k;

        base = getenv("SITE");
        if ((!chrome && !loop) || !base) {
                printf("1..0 # SKIP CHROME (or LOOP_MCP_BROWSER) and SITE are set by site-netns.sh (test-browser-engines.sh)\n");
                return 0;
        }
        host = !loop;
        signal(SIGPIPE, SIG_IGN);
        if (!host) {
                int tools = -1;

                shots = getenv("SHOTS");
                k = mcp_stdio_start(loop, getenv("BROWSER_SOCKET") ?: "", getenv("BROWSER_TOKEN_FILE") ?: "", &mcp, &tools);
                if (!ok(k >= 0 && shots, "loop mcp-browser starts and answers initialize"))
                        goto finish;
                ok(tools == 19, "tools/list offers the 19 tools");
        } else {
                if (!mkdtemp(profile) || !mkdtemp(shots_tmp))
                        return 1;
                if (getuid() == 0)
                        (void) chown(profile, NOBODY, NOBODY);  /* fails in a user namespace: Chrome runs as us there */

                /* Chrome sandboxed first; --no-sandbox only if this kernel refuses the sandbox */
                k = chrome_connect(chrome, profile, &pid, &cdp, &to, &from, &sandbox);
                if (!ok(k >= 0 && cdp, "Chromium answers CDP over --remote-debugging-pipe"))
                        goto finish;
                if (!sandbox)
                        diag("Chromium could not start with its sandbox here (unprivileged user namespaces refused, or "
                             "this test runs in a user namespace): it runs with --no-sandbox, for this host-level protocol test only");
                else
                        diag("Chromium runs with its sandbox, as nobody");
                ok(browser_new(cdp, &o, &browser) == 0, "the browser is set up (downloads denied, targets auto-attached)");
                if (!browser)
                        goto finish;
                ok(BROWSER_TOOLS_COUNT == 19, "19 tools are listed");
        }
        ok(call_ok("list_tabs", "{}", "\"tab_id\":1"), "list_tabs shows the first tab");

        /* refusals */
        ok(call_refused("navigate", "{\"url\":\"file:///etc/passwd\"}", "only http, https and about:blank"), "navigate refuses file://");
        ok(call_refused("navigate", "{\"url\":\"chrome://version\"}", "only http"), "navigate refuses chrome://");
        ok(call_refused("navigate", "{\"url\":\"javascript:alert(1)\"}", "only http"), "navigate refuses javascript:");
        ok(call_refused("navigate", "{\"url\":\"data:text/html,<b>x</b>\"}", "only http"), "navigate refuses data:");
        ok(call_refused("new_tab", "{\"url\":\"view-source:http://127.0.0.1/\"}", "only http"), "new_tab refuses view-source:");
        ok(call_refused("navigate", "{\"url\":\" file:///etc/passwd\"}", "blanks"), "a URL with a leading blank is refused");
        snprintf(args, sizeof(args), "{\"url\":\"%s/denied.html\"}", base);
        ok(call_refused("navigate", args, "egress policy refuses"), "the channel's policy refuses a denied URL, with its reason");
        ok(call_refused("new_tab", args, "egress policy refuses"), "the channel's policy refuses new_tab to a denied URL");
        ok(call_ok("list_tabs", "{}", NULL) && !strstr(last_text, "\"tab_id\":2"), "no tab was opened for a refused URL");
        ok(call_refused("navigate", "{}", "url is required"), "navigate without url is an argument error");
        ok(call_refused("navigate", "{\"url\":\"http://x/\",\"bogus\":1}", "unknown argument bogus"), "an unknown argument is refused");
        ok(call_refused("computer", "{\"action\":\"fly\"}", "action must be one of"), "an unknown computer action is refused");
        ok(call_refused("computer", "{\"action\":\"click\",\"coordinate\":[1]}", "wrong number of items"), "a coordinate that is not [x, y] is refused");
        ok(call_refused("resize_window", "{\"width\":5,\"height\":100}", "at least 100"), "a viewport below the minimum is refused");
        ok(call_refused("no_such_tool", "{}", host ? "Unknown browser tool" : "unknown tool"), "an unknown tool is an error result");

        /* navigate, read_page, find, get_page_text, page_info */
        snprintf(args, sizeof(args), "{\"url\":\"%s/index.html\"}", base);
        ok(call_ok("navigate", args, "Title: Loop test page"), "navigate opens the test page and answers its title");
        if (host)
                ok(policy_calls >= 1, "the channel's policy was asked about the URL");
        ok(call_ok("read_page", "{}", "button \"Click me\""), "read_page lists the button with its name");
        ok(strstr(last_text, "textbox \"Your name\"") && strstr(last_text, "heading \"Loop test page\"") &&
           strstr(last_text, "link \"Go to page two\""), "read_page lists the field by its label, the heading and the link");
        ok(call_ok("read_page", "{\"filter\":\"all\"}", "quick brown fox"), "read_page filter all includes text blocks");
        ok(call_ok("find", "{\"query\":\"click me\"}", "button \"Click me\""), "find finds the button by its text");
        ok(call_ok("find", "{\"query\":\"no such thing anywhere\"}", "No element matches"), "find says when nothing matches");
        ok(call_ok("get_page_text", "{}", "The quick brown fox jumps over the lazy dog."), "get_page_text answers the page's text");
        ok(call_ok("page_info", "{}", "\"title\":\"Loop test page\"") && strstr(last_text, "\"width\":1280"),
           "page_info answers the title and the 1280 px viewport");

        /* computer: clicks */
        ok(call_ok("computer", "{\"action\":\"click\",\"selector\":\"#btn\"}", "Done: click") &&
           eval_is("document.getElementById('out').textContent", "\"clicked 1\""), "computer click on a selector clicks the button");
        {
                /* the ref read_page gave the button */
                McpToolResult f = call("find", "{\"query\":\"Click me\"}");
                char ref[32] = "";
                const char *p = strstr(f.text ?: "", "ref_");
                if (p)
                        sscanf(p, "%31[a-z_0-9]", ref);
                snprintf(args, sizeof(args), "{\"action\":\"click\",\"ref\":\"%s\"}", ref);
                free(f.text);
                ok(call_ok("computer", args, NULL) && eval_is("document.getElementById('out').textContent", "\"clicked 2\""),
                   "computer click on a ref from find clicks the button");
        }
        {
                McpToolResult e = call("evaluate", "{\"expression\":\"(() => { const r = document.getElementById('btn').getBoundingClientRect(); "
                                                   "return [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)]; })()\"}");
                snprintf(args, sizeof(args), "{\"action\":\"click\",\"coordinate\":%s}", e.text);
                free(e.text);
                ok(call_ok("computer", args, NULL) && eval_is("document.getElementById('out').textContent", "\"clicked 3\""),
                   "computer click at a coordinate clicks what is there");
        }
        ok(call_ok("computer", "{\"action\":\"right_click\",\"selector\":\"#ctxbtn\"}", NULL) &&
           eval_is("document.getElementById('ctx').textContent", "\"right\""), "right_click fires contextmenu");
        ok(call_ok("computer", "{\"action\":\"double_click\",\"selector\":\"#dblbtn\"}", NULL) &&
           eval_is("document.getElementById('dbl').textContent", "\"double\""), "double_click fires dblclick");
        ok(call_ok("computer", "{\"action\":\"triple_click\",\"selector\":\"#para\"}", NULL) &&
           eval_is("window.getSelection().toString().trim()", "\"The quick brown fox jumps over the lazy dog.\""),
           "triple_click selects the paragraph");
        ok(call_ok("computer", "{\"action\":\"hover\",\"selector\":\"#hover\"}", NULL) &&
           eval_is("document.getElementById('hover').textContent", "\"hovered\""), "hover moves the mouse over the element");
        ok(call_ok("computer", "{\"action\":\"move\",\"coordinate\":[5,5]}", "Done: move"), "move moves the mouse to a coordinate");

        /* typing and keys */
        ok(call_ok("computer", "{\"action\":\"type\",\"selector\":\"#name\",\"text\":\"hello world\"}", NULL) &&
           eval_is("document.getElementById('name').value", "\"hello world\""), "type types into the clicked field");
        ok(call_ok("computer", "{\"action\":\"key\",\"text\":\"ctrl+a Backspace\"}", NULL) &&
           eval_is("document.getElementById('name').value", "\"\""), "key ctrl+a Backspace empties the field");
        ok(eval_is("document.getElementById('keys').textContent.includes('ctrl+a;') && "
                   "document.getElementById('keys').textContent.includes('Backspace;')", "true"), "the page saw ctrl+a and Backspace");
        ok(call_ok("computer", "{\"action\":\"key\",\"text\":\"shift+b Enter\"}", NULL) &&
           eval_is("document.getElementById('name').value", "\"B\"") &&
           eval_is("document.getElementById('keys').textContent.includes('Enter;')", "true"), "key shift+b types B, Enter is pressed");
        ok(call_refused("computer", "{\"action\":\"key\",\"text\":\"Enter ctrl+nosuchkey\"}", "Unknown key"), "an unknown key name is refused");
        ok(eval_is("document.getElementById('keys').textContent.split('Enter;').length", "2"), "a refused key sequence presses none of its keys");

        /* form_input */
        ok(call_ok("form_input", "{\"selector\":\"#name\",\"value\":\"Ada\"}", "Set ") &&
           eval_is("document.getElementById('name').value", "\"Ada\"") &&
           eval_is("document.getElementById('changes').textContent.includes('name;')", "true"), "form_input sets a text field and fires change");
        ok(call_ok("form_input", "{\"selector\":\"#color\",\"value\":\"Blue\"}", NULL) &&
           eval_is("document.getElementById('color').value", "\"b\""), "form_input picks a select option by its text");
        ok(call_ok("form_input", "{\"selector\":\"#agree\",\"value\":true}", NULL) &&
           eval_is("document.getElementById('agree').checked", "true"), "form_input checks a checkbox");
        ok(call_ok("form_input", "{\"selector\":\"#notes\",\"value\":\"line one\"}", NULL) &&
           eval_is("document.getElementById('notes').value", "\"line one\""), "form_input fills a textarea");
        ok(call_refused("form_input", "{\"selector\":\"#color\",\"value\":\"Purple\"}", "no option"), "form_input refuses an option the select has not");
        ok(call_refused("form_input", "{\"selector\":\"#nothing\",\"value\":\"x\"}", "No element matches"), "form_input says when no element matches");

        /* scrolling and dragging */
        ok(call_ok("computer", "{\"action\":\"scroll\",\"scroll_direction\":\"down\",\"scroll_amount\":5}", NULL) &&
           eval_is("window.scrollY > 0", "true"), "scroll down scrolls the page");
        ok(call_ok("computer", "{\"action\":\"scroll_to\",\"selector\":\"#bottom\"}", NULL) &&
           eval_is("(() => { const r = document.getElementById('bottom').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; })()", "true"),
           "scroll_to brings an element into view");
        ok(call_ok("computer", "{\"action\":\"scroll_to\",\"coordinate\":[0,0]}", NULL) && eval_is("window.scrollY", "0"),
           "scroll_to a coordinate scrolls there");
        {
                McpToolResult e = call("evaluate", "{\"expression\":\"(() => { const r = document.getElementById('drag').getBoundingClientRect(); "
                                                   "return [Math.round(r.x + 20), Math.round(r.y + 20), Math.round(r.x + 120), Math.round(r.y + 60)]; })()\"}");
                int x1 = 0, y1 = 0, x2 = 0, y2 = 0;
                char want[128];

                sscanf(e.text ?: "", "[%d,%d,%d,%d]", &x1, &y1, &x2, &y2);
                free(e.text);
                snprintf(args, sizeof(args), "{\"action\":\"left_click_drag\",\"start_coordinate\":[%d,%d],\"coordinate\":[%d,%d]}", x1, y1, x2, y2);
                snprintf(want, sizeof(want), "\"down %d,%d up %d,%d\"", x1, y1, x2, y2);
                ok(call_ok("computer", args, NULL) && eval_is("document.getElementById('drag').textContent", want),
                   "left_click_drag presses at the start and releases at the end");
        }

        /* waiting */
        snprintf(args, sizeof(args), "{\"url\":\"%s/index.html\",\"wait_for_selector\":\"#late\"}", base);
        ok(call_ok("navigate", args, "Navigated") && eval_is("!!document.getElementById('late')", "true"),
           "navigate with wait_for_selector waits for an element that comes later");
        snprintf(args, sizeof(args), "{\"url\":\"%s/index.html\"}", base);
        ok(call_ok("navigate", args, NULL) && call_ok("computer", "{\"action\":\"wait\",\"wait_for_text\":\"late arrival\"}", NULL) &&
           eval_is("!!document.getElementById('late')", "true"), "computer wait with wait_for_text waits for the text");
        ok(call_refused("computer", "{\"action\":\"wait\",\"wait_for_selector\":\"#never\",\"wait_timeout_ms\":600}", "Timed out after 600 ms"),
           "a wait that never comes times out with a clear error");
        ok(call_refused("computer", "{\"action\":\"wait\",\"wait_timeout_ms\":60001}", "at most 60000"), "wait_timeout_ms above 60 s is refused");
        ok(call_ok("computer", "{\"action\":\"wait\",\"duration\":0.2}", "Done: wait"), "computer wait sleeps for a duration");

        /* screenshots */
        ok(call_ok("screenshot", "{}", "Screenshot saved to /run/loop/screenshots/screenshot-") && strstr(last_text, "1280x800 PNG") &&
           file_is_png(shots, 1280, 800), "screenshot writes a 1280x800 PNG and answers its path as the agent sees it");
        ok(call_ok("screenshot", "{\"full_page\":true}", NULL) && file_is_png(shots, 0, 3000), "a full-page screenshot is taller than the viewport");
        ok(call_ok("computer", "{\"action\":\"screenshot\"}", "PNG") && file_is_png(shots, 1280, 800), "computer screenshot takes one too");

        /* logs */
        ok(call_ok("read_console_messages", "{}", "[log] hello from the page 42") && strstr(last_text, "[error] an error from the page"),
           "read_console_messages has the page's log and error messages");
        ok(call_ok("read_console_messages", "{\"only_errors\":true}", "an error") && !strstr(last_text, "hello from the page"),
           "only_errors leaves out the log messages");
        ok(call_ok("read_network_requests", "{\"url_pattern\":\"data.json\"}", "/data.json 200 [Fetch]"),
           "read_network_requests has the page's fetch with its status");
        ok(call_ok("read_network_requests", "{\"clear\":true}", "index.html 200 [Document]") &&
           call_ok("read_network_requests", "{}", "No network requests"), "clear forgets the tab's requests");
        ok(call_ok("evaluate", "{\"expression\":\"console.info('logged later'); 1 + 1\"}", "2") &&
           call_ok("read_console_messages", "{\"pattern\":\"later\"}", "[info] logged later"), "console messages logged by evaluate are kept too");
        ok(call_refused("evaluate", "{\"expression\":\"null.x\"}", "JavaScript error: TypeError"), "an exception in evaluate is an error result");
        ok(call_ok("evaluate", "{\"expression\":\"new Promise(r => setTimeout(() => r({a: [1, 'two']}), 50))\"}", "{\"a\":[1,\"two\"]}"),
           "evaluate awaits a promise and answers JSON");

        /* a dialog would block the page: it is accepted, and the agent can read it */
        ok(call_ok("computer", "{\"action\":\"click\",\"selector\":\"#confirm\"}", NULL) &&
           eval_is("document.getElementById('confirmed').textContent", "\"yes\""), "a confirm() the click opens is accepted, not left blocking");
        ok(call_ok("read_console_messages", "{}", "[dialog] confirm: Really? (accepted)"), "the dialog is kept with the console messages");

        /* history */
        ok(call_ok("computer", "{\"action\":\"click\",\"selector\":\"#next\",\"wait_for_text\":\"This is page two\"}", "Title: Second page"),
           "clicking a link navigates, and the answer says where");
        ok(call_ok("go_back", "{}", "Title: Loop test page"), "go_back returns to the test page");
        ok(call_ok("go_forward", "{}", "Title: Second page"), "go_forward goes to page two again");
        ok(call_refused("go_forward", "{}", "no next page"), "go_forward at the end of the history is an error");
        ok(call_ok("reload", "{}", "Reloaded") && call_ok("read_console_messages", "{}", "[warning] page two warns"),
           "reload loads the page again (its script logs again)");

        /* tabs */
        snprintf(args, sizeof(args), "{\"url\":\"%s/index.html\"}", base);
        ok(call_ok("new_tab", args, "Title: Loop test page") && call_ok("list_tabs", "{}", "\"tab_id\":2"),
           "new_tab opens a second tab at the URL");
        ok(strstr(last_text, "\"tab_id\":2,\"url\":\"http") && strstr(last_text, "\"active\":true"), "the new tab is the active one");
        ok(call_ok("switch_tab", "{\"tab_id\":1}", "Title: Second page") && eval_is("document.title", "\"Second page\""),
           "switch_tab makes tab 1 current again");
        ok(call_refused("switch_tab", "{\"tab_id\":99}", "no tab 99"), "switch_tab to a tab that does not exist is an error");
        ok(call_ok("close_tab", "{\"tab_id\":2}", "Closed tab 2") && call_ok("list_tabs", "{}", NULL) &&
           !strstr(last_text, "\"tab_id\":2"), "close_tab closes the tab");
        snprintf(args, sizeof(args), "{\"url\":\"%s/index.html\"}", base);
        ok(call_ok("navigate", args, NULL) && call_ok("computer", "{\"action\":\"click\",\"selector\":\"#popup\"}", NULL) &&
           call_ok("computer", "{\"action\":\"wait\",\"duration\":1}", NULL) &&
           call_ok("list_tabs", "{}", "Second page"), "a popup the page opens becomes a tab");
        ok(call_ok("read_console_messages", "{\"tab_id\":1}", "hello from the page"), "console messages are kept per tab");
        ok(call_ok("evaluate", "{\"expression\":\"window.w2 = window.open('page2.html?closed-by-opener'); 1\"}", NULL) &&
           call_ok("computer", "{\"action\":\"wait\",\"duration\":1}", NULL) &&
           call_ok("list_tabs", "{}", "closed-by-opener") &&
           call_ok("evaluate", "{\"expression\":\"window.w2.close(); 1\"}", NULL) &&
           call_ok("computer", "{\"action\":\"wait\",\"duration\":1}", NULL) &&
           call_ok("list_tabs", "{}", NULL) && !strstr(last_text, "closed-by-opener"),
           "a tab the page closes leaves the list");
        ok(call_ok("close_tab", "{}", "Closed tab 1") && call_ok("list_tabs", "{}", NULL) && !strstr(last_text, "\"tab_id\":1,"),
           "close_tab without tab_id closes the current tab");
        {
                /* close every tab: the browser keeps a blank one */
                for (int i = 0; i < 4; i++)
                        free(call("close_tab", "{}").text);
                ok(call_ok("list_tabs", "{}", "about:blank"), "closing the last tab leaves a blank one");
        }

        /* resize */
        snprintf(args, sizeof(args), "{\"url\":\"%s/index.html\"}", base);
        ok(call_ok("resize_window", "{\"width\":800,\"height\":600}", "800x600") && call_ok("navigate", args, NULL) &&
           eval_is("[innerWidth, innerHeight].join('x')", "\"800x600\""), "resize_window sets the viewport");
        ok(call_ok("screenshot", "{}", "800x600 PNG") && file_is_png(shots, 800, 600), "a screenshot after resize has the new size");

        /* failures Chrome reports, downloads */
        /* in the container the gateway answers for the server that is not there (its 502 page), not Chrome */
        if (host)
                ok(call_refused("navigate", "{\"url\":\"http://127.0.0.1:8766/\"}", "net::ERR_CONNECTION_REFUSED"),
                   "a navigation that fails answers Chrome's network error");
        k = mkstemp(since);
        assert(k >= 0);
        close(k);
        snprintf(args, sizeof(args), "{\"url\":\"%s/file.bin\"}", base);
        r = call("navigate", args);
        free(r.text);
        free(call("computer", "{\"action\":\"wait\",\"duration\":1}").text);
        snprintf(args, sizeof(args), "{\"url\":\"%s/index.html\"}", base);
        ok(call_ok("navigate", args, NULL) &&
           call_ok("evaluate", "{\"expression\":\"const a = document.createElement('a'); a.href = URL.createObjectURL(new Blob(['payload'])); "
                   "a.download = 'loot.txt'; document.body.appendChild(a); a.click(); 'clicked'\"}", "clicked"),
           "a page clicks an <a download> link");
        free(call("computer", "{\"action\":\"wait\",\"duration\":1}").text);
        /* Chrome's own record: headless Chrome may not save downloads anyway, so that no file appears proves
         * little; these events come only with the behaviour set by browser_new() (eventsEnabled, deny) */
        ok(call_ok("read_console_messages", "{\"pattern\":\"download\"}", "download of file.bin asked for") &&
           strstr(last_text, "download of loot.txt asked for") && strstr(last_text, "download canceled") &&
           !strstr(last_text, "download completed"),
           "Chrome reports both downloads (a navigation to a file, an <a download> click) asked for and canceled");
        /* Chrome's HOME is the profile: its Downloads directory is in there (in the container,
         * test-browser-service looks for the file there and on the host) */
        if (host)
                ok(!file_below(profile, "file.bin", since) && !file_below("/tmp", "file.bin", since) &&
           !file_below(profile, "loot.txt", since) && !file_below("/tmp", "loot.txt", since),
           "a download is denied: the file is nowhere (the profile and its Downloads, /tmp)");
        (void) unlink(since);
        if (!host)
                goto finish;    /* the engines test kills Chrome and loop-browser itself */

        /* base64 screenshots when there is no screenshots directory */
        browser = browser_free(browser);
        o.screenshots_dir = NULL;
        ok(browser_new(cdp, &o, &browser) == 0, "a second Browser takes over the same Chrome");
        r = call("screenshot", "{}");
        ok(!r.is_error && strstr(r.text, "PNG") && strlen(r.text) < 256 && r.image && startswith(r.image, "iVBORw0KGgo") &&
           streq_ptr(r.image_mime_type, "image/png"),
           "without a screenshots directory the screenshot is an image/png image with a short text");
        mcp_result_done(&r);

        /* Chrome goes away */
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        pid = -1;
        {
                _cleanup_(json_object_putp) json_object *a = json_tokener_parse("{}");
                McpToolResult x = {};
                k = browser_tool_call(browser, "page_info", a, &x);
                ok(k == -ECONNRESET || k == -EPIPE, "a call after Chrome died fails with -ECONNRESET/-EPIPE");
                free(x.text);
        }

finish:
        mcp_stdio_stop(&mcp);
        browser = browser_free(browser);
        free(last_text);
        if (pid > 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
        if (host) {
                (void) rm_rf_at(AT_FDCWD, profile);
                (void) rm_rf_at(AT_FDCWD, shots_tmp);
        }
        return done_testing();
}
