/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The pure logic of the browser tools: the URL scheme allow-list, argument checking against each tool's
 * schema, the tool table, key names. (The tools against a real Chromium: test/browser.) */

#include <assert.h>
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include "browser-tools.h"
#include "json-util.h"
#include "scripted-chrome.h"
#include "tap.h"

/* browser_new() against a scripted Chrome: downloads are denied before anything else, with events on,
 * and the download events Chrome sends become console records of the tab. */
static void test_downloads(void) {
        _cleanup_(json_object_putp) json_object *first = NULL, *args = json_tokener_parse("{\"pattern\":\"download\"}");
        static const char events[] =
                "{\"method\":\"Browser.downloadWillBegin\",\"params\":{\"frameId\":\"T1\",\"guid\":\"g\","
                "\"url\":\"http://127.0.0.1/file.bin\",\"suggestedFilename\":\"file.bin\"}}\0"
                "{\"method\":\"Browser.downloadProgress\",\"params\":{\"guid\":\"g\",\"totalBytes\":0,"
                "\"receivedBytes\":0,\"state\":\"canceled\"}}";
        ScriptedChrome chrome = {};
        McpToolResult r = {};
        Browser *b = NULL;
        Cdp *c = NULL;
        json_object *m, *p, *v;
        pthread_t thread;
        int sv[2];

        signal(SIGPIPE, SIG_IGN);
        assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        chrome.fd = sv[1];
        assert(pthread_create(&thread, NULL, scripted_chrome, &chrome) == 0);
        ok(cdp_new(sv[0], sv[0], &c) == 0 && browser_new(c, NULL, &b) == 0, "a Browser is set up against a scripted Chrome");
        first = json_tokener_parse(chrome.first);
        ok(first && json_object_object_get_ex(first, "method", &m) &&
           streq(json_object_get_string(m), "Browser.setDownloadBehavior") &&
           json_object_object_get_ex(first, "params", &p) &&
           json_object_object_get_ex(p, "behavior", &v) && streq(json_object_get_string(v), "deny") &&
           json_object_object_get_ex(p, "eventsEnabled", &v) && json_object_get_boolean(v),
           "the first call denies downloads (Browser.setDownloadBehavior deny, with its events)");
        ok(b && cdp_feed(c, events, sizeof(events)) == 0 && browser_tool_call(b, "read_console_messages", args, &r) == 0 &&
           r.text && strstr(r.text, "download of file.bin asked for (downloads are denied)") &&
           strstr(r.text, "download canceled"),
           "Chrome's download events are kept with the tab's console messages");
        if (r.text)
                printf("# %s\n", r.text);
        mcp_result_done(&r);
        browser_free(b);
        cdp_free(c);
        shutdown(sv[0], SHUT_RDWR);
        pthread_join(thread, NULL);
        close(sv[0]);
        close(sv[1]);
}

/* Screenshots are files on the host's disk (loop-browser@'s StateDirectory=): an agent taking one after
 * another must not fill it. The oldest go beyond BROWSER_SCREENSHOTS_KEEP; the newest is what the answer
 * names. (Before, every file stayed.) */
static void test_screenshots_bounded(void) {
        /* a 1x1 PNG's signature and IHDR chunk: what the tool checks of it */
        static const char png[] = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        _cleanup_(json_object_putp) json_object *args = json_object_new_object();
        char dir[] = "/tmp/test-browser-shots.XXXXXX", cmd[128], last[256] = "";
        ScriptedChrome chrome = { .screenshot = png };
        BrowserOptions o = {};
        unsigned files = 0, failed = 0;
        Browser *b = NULL;
        Cdp *c = NULL;
        pthread_t thread;
        DIR *d;
        int sv[2];

        assert(mkdtemp(dir));
        o.screenshots_dir = dir;
        assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        chrome.fd = sv[1];
        assert(pthread_create(&thread, NULL, scripted_chrome, &chrome) == 0);
        assert(cdp_new(sv[0], sv[0], &c) == 0 && browser_new(c, &o, &b) == 0);
        for (unsigned i = 0; i < BROWSER_SCREENSHOTS_KEEP + 20; i++) {
                McpToolResult r = {};
                const char *p;

                if (browser_tool_call(b, "screenshot", args, &r) < 0 || r.is_error || !r.text ||
                    !(p = strstr(r.text, "Screenshot saved to "))) {
                        if (failed++ == 0)
                                printf("# %s\n", strna(r.text));
                } else
                        snprintf(last, sizeof last, "%.*s", (int) strcspn(p + 20, " "), p + 20);
                mcp_result_done(&r);
        }
        ok(failed == 0, "%u screenshots in a row are taken", BROWSER_SCREENSHOTS_KEEP + 20);
        assert((d = opendir(dir)));
        for (struct dirent *de; (de = readdir(d));)
                files += startswith(de->d_name, "screenshot-") != NULL;
        closedir(d);
        ok(files == BROWSER_SCREENSHOTS_KEEP, "the screenshots directory keeps the newest %u of them (has %u)",
           BROWSER_SCREENSHOTS_KEEP, files);
        ok(last[0] && access(last, F_OK) == 0, "the file the last answer names is there (%s)", last);

        browser_free(b);
        cdp_free(c);
        shutdown(sv[0], SHUT_RDWR);
        pthread_join(thread, NULL);
        close(sv[0]);
        close(sv[1]);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        (void) !system(cmd);
}

static bool url_ok(const char *url, const char *want_normalized) {
        _cleanup_free_ char *n = NULL, *reason = NULL;
        int r = browser_url_check(url, &n, &reason);

        if (r != 0 || !streq_ptr(n, want_normalized)) {
                printf("# %s: r=%d normalized=%s reason=%s\n", url, r, strna(n), strna(reason));
                return false;
        }
        return true;
}

static bool url_refused(const char *url, const char *want_reason) {
        _cleanup_free_ char *n = NULL, *reason = NULL;
        int r = browser_url_check(url, &n, &reason);

        if (r != -EPERM || n || !reason || !strstr(reason, want_reason)) {
                printf("# %s: r=%d normalized=%s reason=%s\n", strna(url), r, strna(n), strna(reason));
                return false;
        }
        return true;
}

static const McpTool *tool(const char *name) {
        for (size_t i = 0; i < BROWSER_TOOLS_COUNT; i++)
                if (streq(BROWSER_TOOLS[i].name, name))
                        return &BROWSER_TOOLS[i];
        return NULL;
}

/* browser_args_check() of tool's schema on args (JSON text); the reason, or NULL when accepted. */
static char *args_reason(const char *name, const char *args_json) {
        _cleanup_(json_object_putp) json_object *args = json_tokener_parse(args_json);
        char *reason = NULL;

        if (browser_args_check(tool(name)->input_schema, args, &reason) == 0)
                return NULL;
        return reason ?: strdup("(no reason)");
}

static bool args_ok(const char *name, const char *args_json) {
        _cleanup_free_ char *reason = args_reason(name, args_json);

        if (reason)
                printf("# %s %s: %s\n", name, args_json, reason);
        return !reason;
}

static bool args_refused(const char *name, const char *args_json, const char *want) {
        _cleanup_free_ char *reason = args_reason(name, args_json);

        if (!reason || !strstr(reason, want))
                printf("# %s %s: %s\n", name, args_json, strna(reason));
        return reason && strstr(reason, want);
}

static bool key_is(const char *combo, const char *key, const char *code, int key_code, const char *text, unsigned mods) {
        BrowserKey k;
        unsigned m;

        if (browser_key_parse(combo, &k, &m) < 0) {
                printf("# %s: refused\n", combo);
                return false;
        }
        if (!streq(k.key, key) || !streq(k.code, code) || k.key_code != key_code || !streq(k.text, text) || m != mods) {
                printf("# %s: key=%s code=%s key_code=%d text=%s mods=%u\n", combo, k.key, k.code, k.key_code, k.text, m);
                return false;
        }
        return true;
}

static int forward(json_object *arguments, void *userdata, McpToolResult *result) {
        return mcp_result_printf(result, false, "forwarded");
}

int main(void) {
        static const char * const names[] = {
                "navigate", "read_page", "computer", "form_input", "screenshot", "go_back", "go_forward", "reload",
                "evaluate", "list_tabs", "new_tab", "switch_tab", "close_tab", "page_info", "get_page_text", "find",
                "read_console_messages", "read_network_requests", "resize_window",
        };
        static const char * const actions[] = {
                "click", "right_click", "double_click", "triple_click", "type", "key", "scroll", "move", "hover",
                "screenshot", "wait", "left_click_drag", "scroll_to",
        };
        McpTool table[19];
        McpStdioServer s = { .name = "test", .version = "0", .tools = table, .n_tools = ELEMENTSOF(table) };
        bool all = true;

        /* loop mcp-browser's table: ours with .call filled in (it forwards to loop-browser@) */
        assert(BROWSER_TOOLS_COUNT == ELEMENTSOF(table));
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                table[i] = BROWSER_TOOLS[i];
                table[i].call = forward;
        }

        /* the table */
        is_int(BROWSER_TOOLS_COUNT, 19, "there are 19 tools");
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                all = all && tool(names[i]);
        ok(all, "the 19 tools of seed 001 are there by name");
        ok(mcp_server_check(&s) == 0, "the table, calls filled in, passes the MCP server's check (unique names, schemas are JSON objects)");
        all = true;
        for (size_t i = 0; i < BROWSER_TOOLS_COUNT; i++) {
                _cleanup_(json_object_putp) json_object *o = json_tokener_parse(BROWSER_TOOLS[i].input_schema);
                json_object *props;
                all = all && o && json_object_object_get_ex(o, "properties", &props) &&
                      json_object_is_type(props, json_type_object) && !isempty(BROWSER_TOOLS[i].description);
        }
        ok(all, "every schema is a JSON object with properties, every tool has a description");
        all = true;
        for (size_t i = 0; i < ELEMENTSOF(actions); i++) {
                char a[128];
                snprintf(a, sizeof(a), "{\"action\":\"%s\"}", actions[i]);
                all = all && args_ok("computer", a);
        }
        ok(all, "computer takes the 13 actions of seed 001");

        /* the URL allow-list */
        ok(url_ok("http://example.com/", "http://example.com/"), "http is allowed");
        ok(url_ok("HTTPS://example.com/a?b#c", "https://example.com/a?b#c"), "https is allowed and its scheme lower-cased");
        ok(url_ok("about:blank", "about:blank"), "about:blank is allowed");
        ok(url_refused("file:///etc/passwd", "only http, https"), "file: is refused");
        ok(url_refused("FILE:///etc/passwd", "only http, https"), "FILE: in capitals is refused");
        ok(url_refused("chrome://settings", "only http, https"), "chrome: is refused");
        ok(url_refused("javascript:alert(1)", "only http, https"), "javascript: is refused");
        ok(url_refused("data:text/html,hi", "only http, https"), "data: is refused");
        ok(url_refused("about:config", "only http, https"), "about: other than about:blank is refused");
        ok(url_refused("view-source:http://x/", "only http, https"), "view-source: is refused");
        ok(url_refused("blob:http://x/1", "only http, https"), "blob: is refused");
        ok(url_refused("ftp://x/", "only http, https"), "ftp: is refused");
        ok(url_refused("example.com", "no scheme"), "a URL without a scheme is refused");
        ok(url_refused("//example.com/", "no scheme"), "a scheme-relative URL is refused");
        ok(url_refused("http:example.com", "needs a host"), "http: without // is refused");
        ok(url_refused("http:///etc/passwd", "needs a host"), "http: without a host is refused");
        ok(url_refused(" file:///etc/passwd", "blanks"), "a leading blank is refused (Chrome would strip it)");
        ok(url_refused("fi\tle:///etc/passwd", "blanks"), "a tab inside is refused (Chrome would drop it)");
        ok(url_refused("http://x/\n", "blanks"), "a newline is refused");
        ok(url_refused("http:\\\\evil/", "backslashes"), "backslashes are refused (Chrome reads them as slashes)");
        ok(url_refused("", "empty"), "an empty URL is refused");
        /* the other non-network schemes and spellings of about:blank Chrome would take */
        ok(url_refused("about:srcdoc", "only http"), "about:srcdoc is refused");
        ok(url_refused("about:blank#x", "only http"), "about:blank with a fragment is refused (exactly about:blank)");
        ok(url_refused("ABOUT:BLANK", "only http"), "about:blank in capitals is refused (exactly about:blank)");
        ok(url_refused("filesystem:http://x/temporary/a", "only http"), "filesystem: is refused");
        ok(url_refused("chrome-extension://abc/x.html", "only http"), "chrome-extension: is refused");
        ok(url_refused("devtools://devtools/bundled/inspector.html", "only http"), "devtools: is refused");
        ok(url_refused("chrome-untrusted://x/", "only http"), "chrome-untrusted: is refused");
        ok(url_refused("https\x00://x/", "no scheme"), "a NUL cuts the URL where the check reads it");
        ok(url_refused(NULL, "empty"), "no URL is refused");
        {
                _cleanup_free_ char *big = malloc(BROWSER_URL_MAX + 16);
                memcpy(big, "http://x/", 9);
                memset(big + 9, 'a', BROWSER_URL_MAX);
                big[BROWSER_URL_MAX + 9] = 0;
                ok(url_refused(big, "too long"), "a URL above BROWSER_URL_MAX is refused");
        }

        /* arguments against the schemas */
        ok(args_ok("navigate", "{\"url\":\"http://x/\",\"wait_for_selector\":\"#a\",\"wait_timeout_ms\":60000}"),
           "navigate takes url and the wait arguments");
        ok(args_refused("navigate", "{}", "url is required"), "navigate requires url");
        ok(args_refused("navigate", "{\"url\":5}", "url must be a string"), "a url that is not a string is refused");
        ok(args_refused("navigate", "{\"url\":\"http://x/\",\"wait_timeout_ms\":60001}", "at most 60000"),
           "wait_timeout_ms above 60 s is refused");
        ok(args_refused("navigate", "{\"url\":\"http://x/\",\"wait_timeout_ms\":1.5}", "an integer"), "a fractional integer is refused");
        ok(args_refused("navigate", "{\"url\":\"http://x/\",\"extra\":true}", "unknown argument extra"), "an unknown argument is refused");
        ok(args_refused("computer", "{\"action\":\"explode\"}", "action must be one of"), "an unknown computer action is refused");
        ok(args_refused("computer", "{\"action\":\"click\",\"coordinate\":[1,2,3]}", "wrong number of items"),
           "a coordinate of three numbers is refused");
        ok(args_refused("computer", "{\"action\":\"click\",\"coordinate\":[1,\"2\"]}", "must hold numbers"),
           "a coordinate with a string is refused");
        ok(args_refused("computer", "{\"action\":\"click\",\"coordinate\":[-1,2]}", "out of range"), "a negative coordinate is refused");
        ok(args_ok("computer", "{\"action\":\"click\",\"coordinate\":[10.5,20]}"), "a coordinate of two numbers is taken");
        ok(args_refused("computer", "{\"action\":\"scroll\",\"scroll_direction\":\"sideways\"}", "scroll_direction must be one of"),
           "an unknown scroll direction is refused");
        ok(args_ok("form_input", "{\"selector\":\"#a\",\"value\":true}") && args_ok("form_input", "{\"ref\":\"ref_1\",\"value\":\"x\"}"),
           "form_input takes any JSON value");
        ok(args_refused("form_input", "{\"selector\":\"#a\"}", "value is required"), "form_input requires value");
        ok(args_refused("resize_window", "{\"width\":100000,\"height\":600}", "at most 4096"), "a viewport above the maximum is refused");
        ok(args_refused("switch_tab", "{}", "tab_id is required"), "switch_tab requires tab_id");
        ok(args_refused("list_tabs", "[]", "must be an object"), "arguments that are not an object are refused");
        ok(args_refused("screenshot", "{\"full_page\":\"yes\"}", "true or false"), "a boolean given as a string is refused");
        ok(args_refused("evaluate", "{\"expression\":null}", "must be a string"), "a null expression is refused");

        /* keys */
        ok(key_is("Enter", "Enter", "Enter", 13, "\r", 0), "Enter types a carriage return");
        ok(key_is("return", "Enter", "Enter", 13, "\r", 0), "return is Enter, case-insensitively");
        ok(key_is("a", "a", "KeyA", 65, "a", 0), "a letter types itself");
        ok(key_is("shift+a", "A", "KeyA", 65, "A", BROWSER_MODIFIER_SHIFT), "shift upper-cases a letter");
        ok(key_is("ctrl+a", "a", "KeyA", 65, "", BROWSER_MODIFIER_CTRL), "ctrl+a types nothing, with the ctrl bit");
        ok(key_is("Control+Shift+ArrowLeft", "ArrowLeft", "ArrowLeft", 37,
                  "", BROWSER_MODIFIER_CTRL | BROWSER_MODIFIER_SHIFT), "modifiers combine");
        ok(key_is("cmd+Page_Down", "PageDown", "PageDown", 34, "", BROWSER_MODIFIER_META), "xdotool names and cmd are understood");
        ok(key_is("7", "7", "Digit7", 55, "7", 0), "a digit types itself");
        ok(key_is("/", "/", "Slash", 191, "/", 0), "punctuation has its US key code");
        ok(key_is("space", " ", "Space", 32, " ", 0), "space types a blank");
        ok(key_is("F5", "F5", "F5", 116, "", 0), "function keys are known");
        {
                BrowserKey k;
                unsigned m;
                ok(browser_key_parse("hyper+a", &k, &m) == -EINVAL, "an unknown modifier is refused");
                ok(browser_key_parse("ctrl+", &k, &m) == -EINVAL, "a combination without key is refused");
                ok(browser_key_parse("NoSuchKey", &k, &m) == -EINVAL, "an unknown key name is refused");
                ok(browser_key_parse("", &k, &m) == -EINVAL, "an empty key is refused");
                ok(browser_key_parse("é", &k, &m) == -EINVAL, "a non-ASCII key is refused");
        }

        test_downloads();
        test_screenshots_bounded();
        return done_testing();
}
