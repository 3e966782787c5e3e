/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What the browser tools add over bare CDP, in one run on one Chrome: navigate to a local page, click,
 * screenshot, through browser_tool_call() against the same actions as a bare CDP client does them
 * (puppeteer's way: Page.navigate then the load event; mouseMoved/Pressed/Released; captureScreenshot),
 * alternating round by round. Prints the medians, their ratio per action, and the SUMMARY lines (goal of
 * issue 21: at most 1.2x per action). The MCP hop (`loop mcp-browser` to `loop-browser@`) comes on top:
 * test/bench/browser measures the whole path. Run by site-netns.sh (a network namespace of its own).
 * LOOP_BENCH_RUNS rounds (default 20). */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "browser-tools.h"
#include "chrome-launch.h"
#include "fs-util.h"
#include "json-util.h"
#include "time-util.h"

#define SEC 1000000ULL
#define RUNS_MAX 1000
#define GOAL 1.20

typedef struct Bare {
        Cdp *cdp;
        char *session_id;
        bool loaded;
} Bare;

static void bare_on_event(const char *session_id, const char *method, json_object *params, void *userdata) {
        Bare *b = userdata;

        if (streq_ptr(session_id, b->session_id) && streq(method, "Page.loadEventFired"))
                b->loaded = true;
}

static int bare_call(Bare *b, const char *method, const char *params_json) {
        _cleanup_(json_object_putp) json_object *p = params_json ? json_tokener_parse(params_json) : NULL;
        _cleanup_(json_object_putp) json_object *res = NULL;

        return cdp_call(b->cdp, b->session_id, method, p, 30 * SEC, &res, NULL);
}

static bool bare_loaded(void *userdata) {
        return ((Bare *) userdata)->loaded;
}

static int bare_navigate(Bare *b, const char *url) {
        char p[512];
        int r;

        b->loaded = false;
        snprintf(p, sizeof(p), "{\"url\":\"%s\"}", url);
        r = bare_call(b, "Page.navigate", p);
        if (r >= 0)
                r = cdp_pump_until(b->cdp, bare_loaded, b, 30 * SEC);
        return r < 0 ? r : r == 0 ? -ETIMEDOUT : 0;
}

static int bare_click(Bare *b, int x, int y) {
        static const char * const types[] = { "mouseMoved", "mousePressed", "mouseReleased" };
        char p[256];
        int r = 0;

        for (size_t i = 0; i < ELEMENTSOF(types) && r >= 0; i++) {
                snprintf(p, sizeof(p), "{\"type\":\"%s\",\"x\":%d,\"y\":%d,\"button\":\"%s\",\"clickCount\":%d}",
                         types[i], x, y, i == 0 ? "none" : "left", i == 0 ? 0 : 1);
                r = bare_call(b, "Input.dispatchMouseEvent", p);
        }
        return r;
}

static int tool(Browser *browser, const char *name, const char *args_json) {
        _cleanup_(json_object_putp) json_object *a = json_tokener_parse(args_json);
        McpToolResult res = {};
        int r = browser_tool_call(browser, name, a, &res);

        if (r >= 0 && res.is_error) {
                fprintf(stderr, "%s: %s\n", name, res.text);
                r = -EIO;
        }
        free(res.text);
        return r;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static double median_ms(uint64_t *v, size_t n) {
        qsort(v, n, sizeof(*v), cmp_u64);
        return (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) / 1000.0;
}

int main(void) {
        const char *chrome = getenv("CHROME"), *site = getenv("SITE"), *runs_env = getenv("LOOP_BENCH_RUNS");
        char profile[] = "/tmp/bench-browser-profile-XXXXXX", shots[] = "/tmp/bench-browser-shots-XXXXXX";
        static uint64_t t_bare[3][RUNS_MAX], t_tool[3][RUNS_MAX];
        static const char * const actions[] = { "navigate", "click", "screenshot" };
        _cleanup_(json_object_putp) json_object *targets = NULL, *att = NULL;
        char url[256], click_args[128];
        Bare bare = {};
        pid_t pid = -1;
        int to = -EBADF, from = -EBADF, runs = runs_env ? atoi(runs_env) : 20, x = 0, y = 0, r;
        bool sandbox = false, all_met = true;
        json_object *infos, *sid;

        if (!chrome || !site) {
                fprintf(stderr, "Run by test/browser/site-netns.sh, which sets CHROME and SITE.\n");
                return 77;
        }
        runs = MIN(MAX(runs, 3), RUNS_MAX);
        signal(SIGPIPE, SIG_IGN);
        if (!mkdtemp(profile) || !mkdtemp(shots))
                return 1;
        if (getuid() == 0)
                (void) chown(profile, NOBODY, NOBODY);  /* fails in a user namespace: Chrome runs as us there */
        r = chrome_connect(chrome, profile, &pid, &bare.cdp, &to, &from, &sandbox);
        if (r < 0) {
                fprintf(stderr, "Chrome did not start: %s\n", strerror(-r));
                goto finish;
        }
        printf("Chrome %s; %d rounds; screenshots written as files, as loop-browser@ does\n",
               sandbox ? "sandboxed" : "with --no-sandbox (this host refuses its sandbox)", runs);
        snprintf(url, sizeof(url), "%s/index.html", site);

        /* the bare client's own session on the first page */
        r = cdp_call(bare.cdp, NULL, "Target.getTargets", NULL, 30 * SEC, &targets, NULL);
        if (r < 0 || !json_object_object_get_ex(targets, "targetInfos", &infos))
                goto finish;
        for (size_t i = 0; i < json_object_array_length(infos); i++) {
                json_object *info = json_object_array_get_idx(infos, i), *type, *id;
                if (json_object_object_get_ex(info, "type", &type) && streq(json_object_get_string(type), "page") &&
                    json_object_object_get_ex(info, "targetId", &id)) {
                        _cleanup_(json_object_putp) json_object *p = json_object_new_object();
                        json_object_object_add(p, "targetId", json_object_get(id));
                        json_object_object_add(p, "flatten", json_object_new_boolean(true));
                        r = cdp_call(bare.cdp, NULL, "Target.attachToTarget", p, 30 * SEC, &att, NULL);
                        break;
                }
        }
        if (r < 0 || !att || !json_object_object_get_ex(att, "sessionId", &sid))
                goto finish;
        bare.session_id = strdup(json_object_get_string(sid));
        cdp_set_event_handler(bare.cdp, bare_on_event, &bare);
        r = bare_call(&bare, "Page.enable", NULL);
        r = r < 0 ? r : bare_navigate(&bare, url);
        if (r < 0)
                goto finish;
        {
                /* the button's centre, once */
                _cleanup_(json_object_putp) json_object *p = json_tokener_parse(
                        "{\"expression\":\"(() => { const r = document.getElementById('btn').getBoundingClientRect(); "
                        "return [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)]; })()\",\"returnByValue\":true}");
                _cleanup_(json_object_putp) json_object *res = NULL;
                json_object *result, *value;

                r = cdp_call(bare.cdp, bare.session_id, "Runtime.evaluate", p, 30 * SEC, &res, NULL);
                if (r < 0 || !json_object_object_get_ex(res, "result", &result) ||
                    !json_object_object_get_ex(result, "value", &value))
                        goto finish;
                x = json_object_get_int(json_object_array_get_idx(value, 0));
                y = json_object_get_int(json_object_array_get_idx(value, 1));
                snprintf(click_args, sizeof(click_args), "{\"action\":\"click\",\"coordinate\":[%d,%d]}", x, y);
        }

        for (int i = 0; i < runs; i++) {
                BrowserOptions o = { .screenshots_dir = shots, .screenshots_dir_in_container = "/run/loop/screenshots" };
                _cleanup_(browser_freep) Browser *browser = NULL;
                uint64_t t;
                char nav_args[320];

                /* bare */
                cdp_set_event_handler(bare.cdp, bare_on_event, &bare);
                t = clock_usec(CLOCK_MONOTONIC);
                r = bare_navigate(&bare, url);
                t_bare[0][i] = clock_usec(CLOCK_MONOTONIC) - t;
                t = clock_usec(CLOCK_MONOTONIC);
                r = r < 0 ? r : bare_click(&bare, x, y);
                t_bare[1][i] = clock_usec(CLOCK_MONOTONIC) - t;
                t = clock_usec(CLOCK_MONOTONIC);
                r = r < 0 ? r : bare_call(&bare, "Page.captureScreenshot", "{\"format\":\"png\"}");
                t_bare[2][i] = clock_usec(CLOCK_MONOTONIC) - t;
                if (r < 0)
                        goto finish;

                /* the tools, on a Browser set up outside the timing */
                r = browser_new(bare.cdp, &o, &browser);
                if (r < 0)
                        goto finish;
                snprintf(nav_args, sizeof(nav_args), "{\"url\":\"%s\"}", url);
                t = clock_usec(CLOCK_MONOTONIC);
                r = tool(browser, "navigate", nav_args);
                t_tool[0][i] = clock_usec(CLOCK_MONOTONIC) - t;
                t = clock_usec(CLOCK_MONOTONIC);
                r = r < 0 ? r : tool(browser, "computer", click_args);
                t_tool[1][i] = clock_usec(CLOCK_MONOTONIC) - t;
                t = clock_usec(CLOCK_MONOTONIC);
                r = r < 0 ? r : tool(browser, "screenshot", "{}");
                t_tool[2][i] = clock_usec(CLOCK_MONOTONIC) - t;
                if (r < 0)
                        goto finish;
        }

        for (size_t a = 0; a < ELEMENTSOF(actions); a++) {
                double bare_ms = median_ms(t_bare[a], (size_t) runs), tool_ms = median_ms(t_tool[a], (size_t) runs);
                double ratio = tool_ms / bare_ms;
                bool met = ratio <= GOAL;

                all_met = all_met && met;
                printf("%-10s  tools %8.2f ms  bare CDP %8.2f ms  (medians)  %.2fx\n", actions[a], tool_ms, bare_ms, ratio);
                printf("SUMMARY\tbrowser tools %s over bare CDP\t%.2fx\t<=%.2fx\t%s\n", actions[a], ratio, GOAL,
                       met ? "met" : "missed");
        }
        r = 0;

finish:
        if (r < 0)
                fprintf(stderr, "The benchmark failed: %s\n", strerror(-r));
        cdp_free(bare.cdp);
        free(bare.session_id);
        safe_close(to);
        safe_close(from);
        if (pid > 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
        (void) rm_rf_at(AT_FDCWD, profile);
        (void) rm_rf_at(AT_FDCWD, shots);
        return r < 0 ? 1 : 0;
}
