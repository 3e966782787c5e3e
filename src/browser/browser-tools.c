/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "browser-tools.h"
#include "dirent-util.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "string-util.h"
#include "time-util.h"

#define USEC_PER_MSEC 1000ULL
#define SCROLL_TICK_PX 100              /* one scroll_amount unit */
#define SCROLL_AMOUNT_DEFAULT 3
#define DRAG_STEPS 10
#define LIST_DEFAULT 100U               /* console/network lines answered by default */
#define READ_PAGE_ELEMENTS_MAX 1000U
#define FIND_RESULTS_DEFAULT 20U
#define SCREENSHOT_FILE_MAX (64U * 1024U * 1024U)

typedef struct Tab {
        unsigned id;                    /* what the agent calls it: 1, 2, ... */
        char *target_id, *session_id;
        char *url, *title;
        bool ready;                     /* domains enabled, viewport set */
        bool loaded;                    /* a load (or bfcache restore, same-document navigation) was seen */
        bool navigating;                /* the main frame started loading, and has not finished */
        bool gone;                      /* closed: kept (strings valid) until browser_sync() compacts */
} Tab;

typedef struct ConsoleEntry {
        unsigned tab;
        char *level, *text, *source;
} ConsoleEntry;

typedef struct NetworkEntry {
        unsigned tab;
        char *request_id, *method, *url, *type, *error;
        int status;                     /* 0 until a response came */
} NetworkEntry;

struct Browser {
        Cdp *cdp;
        char *screenshots_dir, *screenshots_dir_in_container;
        int (*url_check)(const char *url, char **ret_reason, void *userdata);
        void *userdata;

        Tab tabs[BROWSER_TABS_MAX];
        size_t n_tabs;
        unsigned current;               /* tab id, 0: none */
        unsigned next_tab_id;
        char *attach_targets[BROWSER_TABS_MAX]; /* pages Chrome opened (popups), to attach */
        size_t n_attach_targets;
        char *close_targets[BROWSER_TABS_MAX];  /* popups beyond BROWSER_TABS_MAX, to close */
        size_t n_close_targets;

        ConsoleEntry console[BROWSER_CONSOLE_MAX];
        size_t console_next, console_count;
        NetworkEntry network[BROWSER_NETWORK_MAX];
        size_t network_next, network_count;

        unsigned width, height;
        unsigned screenshot_seq;
};

/* ---- tabs ---- */

static void tab_done(Tab *t) {
        free(t->target_id);
        free(t->session_id);
        free(t->url);
        free(t->title);
        *t = (Tab) {};
}

static Tab *tab_by_id(Browser *b, unsigned id) {
        for (size_t i = 0; i < b->n_tabs; i++)
                if (b->tabs[i].id == id && !b->tabs[i].gone)
                        return &b->tabs[i];
        return NULL;
}

static Tab *tab_by_session(Browser *b, const char *session_id) {
        if (!session_id)
                return NULL;
        for (size_t i = 0; i < b->n_tabs; i++)
                if (streq_ptr(b->tabs[i].session_id, session_id) && !b->tabs[i].gone)
                        return &b->tabs[i];
        return NULL;
}

static Tab *tab_by_target(Browser *b, const char *target_id) {
        if (!target_id)
                return NULL;
        for (size_t i = 0; i < b->n_tabs; i++)
                if (streq(b->tabs[i].target_id, target_id) && !b->tabs[i].gone)
                        return &b->tabs[i];
        return NULL;
}

static Tab *tab_current(Browser *b) {
        return tab_by_id(b, b->current);
}

/* A tab is closed: marked only, so that a tool holding a pointer to it (events come in the middle of its
 * calls) finds its strings valid and its calls failing cleanly; browser_sync() compacts. */
static void tab_remove(Browser *b, Tab *t) {
        t->gone = true;
        if (b->current == t->id) {
                b->current = 0;
                for (size_t i = b->n_tabs; i-- > 0;)
                        if (!b->tabs[i].gone) {
                                b->current = b->tabs[i].id;
                                break;
                        }
        }
}

static void tabs_compact(Browser *b) {
        size_t j = 0;

        for (size_t i = 0; i < b->n_tabs; i++) {
                if (b->tabs[i].gone) {
                        tab_done(&b->tabs[i]);
                        continue;
                }
                if (j != i) {
                        b->tabs[j] = b->tabs[i];
                        b->tabs[i] = (Tab) {};
                }
                j++;
        }
        b->n_tabs = j;
}

static const char *json_str(json_object *o, const char *key) {
        json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static char *strdup_cut(const char *s, size_t max) {
        return strndup(strempty(s), max);
}

/* Builds a params object from key/value pairs: params_new("url", json_object_new_string(u), NULL). A
 * NULL value is JSON null (json-c's null is the NULL pointer): the page scripts read it as absent. */
static json_object *params_new(const char *key, ...) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        va_list ap;
        int r = o ? 0 : -ENOMEM;

        va_start(ap, key);
        for (const char *k = key; k; k = va_arg(ap, const char *)) {
                json_object *v = va_arg(ap, json_object *);
                if (r >= 0)
                        r = v ? json_add(o, k, v) : (json_object_object_add(o, k, NULL) < 0 ? -ENOMEM : 0);
                else
                        json_object_put(v);
        }
        va_end(ap);
        return r < 0 ? NULL : TAKE_PTR(o);
}

/* A page target we are attached to (our own Target.attachToTarget, or its event). */
static void tab_attached(Browser *b, const char *session_id, json_object *info) {
        const char *target_id = json_str(info, "targetId"), *type = json_str(info, "type");
        Tab *t;

        if (!session_id || !target_id || !streq_ptr(type, "page"))
                return;
        t = tab_by_target(b, target_id);
        if (t) {
                if (!t->session_id)
                        t->session_id = strdup(session_id);
                return;
        }
        if (b->n_tabs >= BROWSER_TABS_MAX)
                return;
        t = &b->tabs[b->n_tabs];
        *t = (Tab) {
                .id = ++b->next_tab_id,
                .target_id = strdup(target_id),
                .session_id = strdup(session_id),
                .url = strdup_cut(json_str(info, "url"), BROWSER_LOG_TEXT_MAX),
                .title = strdup_cut(json_str(info, "title"), BROWSER_LOG_TEXT_MAX),
        };
        if (!t->target_id || !t->session_id) {
                tab_done(t);
                return;
        }
        b->n_tabs++;
        if (b->current == 0)
                b->current = t->id;
}

/* A page Chrome opened (a popup, window.open, or our own Target.createTarget): attached by the next
 * browser_sync(), or closed there when there are too many. Attaching is not done from the event (the
 * handler may not call), and not by auto-attach: with Target.setAutoAttach a click that opens a popup
 * never gets its Input.dispatchMouseEvent answered. */
static void tab_created(Browser *b, json_object *info) {
        const char *target_id = json_str(info, "targetId");
        char *id;

        if (!target_id || !streq_ptr(json_str(info, "type"), "page") || tab_by_target(b, target_id))
                return;
        for (size_t i = 0; i < b->n_attach_targets; i++)
                if (streq(b->attach_targets[i], target_id))
                        return;
        id = strdup(target_id);
        if (!id)
                return;
        if (b->n_tabs + b->n_attach_targets < BROWSER_TABS_MAX)
                b->attach_targets[b->n_attach_targets++] = id;
        else if (b->n_close_targets < BROWSER_TABS_MAX)
                b->close_targets[b->n_close_targets++] = id;
        else
                free(id);
}

/* ---- the rings ---- */

static void console_entry_done(ConsoleEntry *e) {
        free(e->level);
        free(e->text);
        free(e->source);
        *e = (ConsoleEntry) {};
}

static void network_entry_done(NetworkEntry *e) {
        free(e->request_id);
        free(e->method);
        free(e->url);
        free(e->type);
        free(e->error);
        *e = (NetworkEntry) {};
}

static void console_push(Browser *b, unsigned tab, const char *level, const char *text, const char *source) {
        ConsoleEntry *e = &b->console[b->console_next];

        console_entry_done(e);
        *e = (ConsoleEntry) {
                .tab = tab,
                .level = strdup_cut(level, 32),
                .text = strdup_cut(text, BROWSER_LOG_TEXT_MAX),
                .source = source ? strdup_cut(source, BROWSER_LOG_TEXT_MAX) : NULL,
        };
        b->console_next = (b->console_next + 1) % BROWSER_CONSOLE_MAX;
        b->console_count = MIN(b->console_count + 1, (size_t) BROWSER_CONSOLE_MAX);
}

static NetworkEntry *network_find(Browser *b, const char *request_id) {
        if (!request_id)
                return NULL;
        for (size_t k = 0; k < b->network_count; k++) {
                NetworkEntry *e = &b->network[(b->network_next + BROWSER_NETWORK_MAX - 1 - k) % BROWSER_NETWORK_MAX];
                if (streq_ptr(e->request_id, request_id))
                        return e;
        }
        return NULL;
}

/* Runtime.consoleAPICalled: the arguments as the console would print them, separated by blanks. */
static void console_api_called(Browser *b, Tab *t, json_object *params) {
        _cleanup_free_ char *text = NULL;
        json_object *args, *a, *v;
        size_t n = 0, len = 0;
        FILE *f;

        f = open_memstream(&text, &len);
        if (!f)
                return;
        if (json_object_object_get_ex(params, "args", &args) && json_object_is_type(args, json_type_array))
                for (size_t i = 0; i < json_object_array_length(args) && len < BROWSER_LOG_TEXT_MAX; i++) {
                        a = json_object_array_get_idx(args, i);
                        if (n++ > 0)
                                fputc(' ', f);
                        if (json_object_object_get_ex(a, "value", &v))
                                fputs(json_object_is_type(v, json_type_string) ? json_object_get_string(v) :
                                      json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), f);
                        else
                                fputs(json_str(a, "unserializableValue") ?: json_str(a, "description") ?:
                                      json_str(a, "type") ?: "?", f);
                        fflush(f);
                }
        if (fclose(f) != 0)
                return;
        console_push(b, t->id, json_str(params, "type") ?: "log", text, NULL);
}

static void exception_thrown(Browser *b, Tab *t, json_object *params) {
        json_object *d, *ex;
        const char *text = NULL;

        if (!json_object_object_get_ex(params, "exceptionDetails", &d))
                return;
        if (json_object_object_get_ex(d, "exception", &ex))
                text = json_str(ex, "description");
        console_push(b, t->id, "exception", text ?: json_str(d, "text"), json_str(d, "url"));
}

static void log_entry_added(Browser *b, Tab *t, json_object *params) {
        json_object *e;

        if (!json_object_object_get_ex(params, "entry", &e))
                return;
        console_push(b, t->id, json_str(e, "level") ?: "info", json_str(e, "text"), json_str(e, "url"));
}

static void request_will_be_sent(Browser *b, Tab *t, json_object *params) {
        const char *request_id = json_str(params, "requestId");
        NetworkEntry *e;
        json_object *req;

        if (!request_id || !json_object_object_get_ex(params, "request", &req))
                return;
        e = network_find(b, request_id);
        if (e && e->status == 0 && !e->error)
                return;         /* a redirect hop of one request: keep the first URL */
        e = &b->network[b->network_next];
        network_entry_done(e);
        *e = (NetworkEntry) {
                .tab = t->id,
                .request_id = strdup_cut(request_id, 128),
                .method = strdup_cut(json_str(req, "method") ?: "GET", 16),
                .url = strdup_cut(json_str(req, "url"), BROWSER_LOG_TEXT_MAX),
                .type = strdup_cut(json_str(params, "type") ?: "Other", 32),
        };
        b->network_next = (b->network_next + 1) % BROWSER_NETWORK_MAX;
        b->network_count = MIN(b->network_count + 1, (size_t) BROWSER_NETWORK_MAX);
}

static void response_received(Browser *b, json_object *params) {
        NetworkEntry *e = network_find(b, json_str(params, "requestId"));
        json_object *resp, *status;

        if (!e || !json_object_object_get_ex(params, "response", &resp) ||
            !json_object_object_get_ex(resp, "status", &status))
                return;
        e->status = (int) MAX(MIN(json_object_get_int(status), 999), 0);
}

static void loading_failed(Browser *b, json_object *params) {
        NetworkEntry *e = network_find(b, json_str(params, "requestId"));

        if (!e || e->error)
                return;
        e->error = strdup_cut(json_str(params, "blockedReason") ?: json_str(params, "errorText") ?: "failed", 128);
}

/* alert(), confirm(), prompt() and beforeunload block the page, and with it the call we wait for (a click,
 * an evaluate): each is accepted at once (a prompt with its default text), and kept with the console
 * messages so the agent can read what it said. */
static void dialog_opening(Browser *b, Tab *t, json_object *params) {
        _cleanup_(json_object_putp) json_object *p = NULL;
        _cleanup_free_ char *text = NULL;
        const char *type = json_str(params, "type") ?: "alert";

        p = params_new("accept", json_object_new_boolean(true),
                       "promptText", json_object_new_string(json_str(params, "defaultPrompt") ?: ""), NULL);
        if (!p || cdp_send(b->cdp, t->session_id, "Page.handleJavaScriptDialog", p) < 0)
                log_debug("Browser: could not accept a JavaScript dialog");
        if (strprintf(&text, "%s: %s (accepted)", type, strempty(json_str(params, "message"))) >= 0)
                console_push(b, t->id, "dialog", text, json_str(params, "url"));
}

/* Downloads are denied (browser_new()); Chrome reports each one asked for (Browser.downloadWillBegin) and
 * its end (Browser.downloadProgress, state canceled under deny): both are kept with the console messages
 * of the tab whose page asked, so the agent (and a test) reads that it was refused. */
static void download_event(Browser *b, const char *method, json_object *params) {
        _cleanup_free_ char *text = NULL;
        const char *state = json_str(params, "state");
        Tab *t = tab_by_target(b, json_str(params, "frameId")) ?: tab_current(b);
        int r;

        if (!t)
                return;
        if (streq(method, "Browser.downloadWillBegin"))
                r = strprintf(&text, "download of %s asked for (downloads are denied)",
                              strempty(json_str(params, "suggestedFilename")));
        else if (streq_ptr(state, "canceled") || streq_ptr(state, "completed"))
                r = strprintf(&text, "download %s", state);
        else
                return;         /* inProgress */
        if (r >= 0)
                console_push(b, t->id, "download", text, json_str(params, "url"));
}

static void browser_on_event(const char *session_id, const char *method, json_object *params, void *userdata) {
        Browser *b = userdata;
        json_object *info;
        Tab *t;

        if (!session_id && (streq(method, "Browser.downloadWillBegin") || streq(method, "Browser.downloadProgress"))) {
                download_event(b, method, params);
                return;
        }

        if (streq(method, "Target.targetCreated")) {
                if (json_object_object_get_ex(params, "targetInfo", &info))
                        tab_created(b, info);
                return;
        }
        if (streq(method, "Target.attachedToTarget")) {
                if (json_object_object_get_ex(params, "targetInfo", &info))
                        tab_attached(b, json_str(params, "sessionId"), info);
                return;
        }
        if (streq(method, "Target.detachedFromTarget")) {
                t = tab_by_session(b, json_str(params, "sessionId"));
                if (t)
                        tab_remove(b, t);
                return;
        }
        if (streq(method, "Target.targetDestroyed")) {
                t = tab_by_target(b, json_str(params, "targetId"));
                if (t)
                        tab_remove(b, t);
                return;
        }
        if (streq(method, "Target.targetInfoChanged")) {
                if (!json_object_object_get_ex(params, "targetInfo", &info))
                        return;
                t = tab_by_target(b, json_str(info, "targetId"));
                if (t) {
                        char *url = strdup_cut(json_str(info, "url"), BROWSER_LOG_TEXT_MAX),
                             *title = strdup_cut(json_str(info, "title"), BROWSER_LOG_TEXT_MAX);
                        if (url && title) {
                                free(t->url);
                                free(t->title);
                                t->url = url;
                                t->title = title;
                        } else {
                                free(url);
                                free(title);
                        }
                }
                return;
        }

        t = tab_by_session(b, session_id);
        if (!t)
                return;
        if (streq(method, "Page.loadEventFired") || streq(method, "Page.navigatedWithinDocument")) {
                t->loaded = true;
                t->navigating = false;
        } else if (streq(method, "Page.frameRequestedNavigation") || streq(method, "Page.frameStartedLoading") ||
                   streq(method, "Page.frameStoppedLoading")) {
                /* the main frame's id is its target's */
                if (streq_ptr(json_str(params, "frameId"), t->target_id)) {
                        t->navigating = !streq(method, "Page.frameStoppedLoading");
                        if (!t->navigating)
                                t->loaded = true;       /* also a navigation that ended without load (aborted) */
                }
        } else if (streq(method, "Page.frameNavigated")) {
                json_object *frame;
                if (json_object_object_get_ex(params, "frame", &frame) && !json_str(frame, "parentId") &&
                    streq_ptr(json_str(params, "type"), "BackForwardCacheRestore"))
                        t->loaded = true;
        } else if (streq(method, "Page.javascriptDialogOpening"))
                dialog_opening(b, t, params);
        else if (streq(method, "Runtime.consoleAPICalled"))
                console_api_called(b, t, params);
        else if (streq(method, "Runtime.exceptionThrown"))
                exception_thrown(b, t, params);
        else if (streq(method, "Log.entryAdded"))
                log_entry_added(b, t, params);
        else if (streq(method, "Network.requestWillBeSent"))
                request_will_be_sent(b, t, params);
        else if (streq(method, "Network.responseReceived"))
                response_received(b, params);
        else if (streq(method, "Network.loadingFailed"))
                loading_failed(b, params);
}

/* ---- CDP helpers ---- */

/* A CDP call whose failure the agent reads: < 0 only for a connection gone (or out of memory); a CDP
 * error or a timeout is 1 with ret->text set. */
static int call_or_fail(Browser *b, const char *session_id, const char *method, json_object *params,
                        json_object **ret_result, McpToolResult *ret) {
        _cleanup_free_ char *error = NULL;
        int r;

        r = cdp_call(b->cdp, session_id, method, params, BROWSER_CALL_TIMEOUT_USEC, ret_result, &error);
        if (r == -EPROTO) {
                r = mcp_result_printf(ret, true, "%s failed: %s", method, strna(error));
                return r < 0 ? r : 1;
        }
        if (r == -ETIMEDOUT || r == -EMSGSIZE) {
                r = mcp_result_printf(ret, true, "%s failed: %s", method,
                                      r == -ETIMEDOUT ? "the browser did not answer in time" :
                                      "the browser's answer was too large");
                return r < 0 ? r : 1;
        }
        return r;
}

static int tab_apply_viewport(Browser *b, Tab *t) {
        _cleanup_(json_object_putp) json_object *p = params_new(
                "width", json_object_new_int((int) b->width),
                "height", json_object_new_int((int) b->height),
                "deviceScaleFactor", json_object_new_int(1),
                "mobile", json_object_new_boolean(false), NULL);

        if (!p)
                return -ENOMEM;
        return cdp_call(b->cdp, t->session_id, "Emulation.setDeviceMetricsOverride", p, BROWSER_CALL_TIMEOUT_USEC,
                        NULL, NULL);
}

static int tab_setup(Browser *b, Tab *t) {
        static const char * const domains[] = { "Page.enable", "Runtime.enable", "Network.enable", "Log.enable" };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(domains); i++) {
                r = cdp_call(b->cdp, t->session_id, domains[i], NULL, BROWSER_CALL_TIMEOUT_USEC, NULL, NULL);
                if (r < 0)
                        return r;
        }
        r = tab_apply_viewport(b, t);
        if (r < 0)
                return r;
        t->ready = true;
        return 0;
}

/* Attaches to a page target (flat mode) and adds it as a tab. 0 (also when it went away meanwhile,
 * -EPROTO from Chrome), or -errno. */
static int tab_attach(Browser *b, const char *target_id) {
        _cleanup_(json_object_putp) json_object *a = NULL, *res = NULL, *info = NULL;

        if (tab_by_target(b, target_id))
                return 0;
        a = params_new("targetId", json_object_new_string(target_id), "flatten", json_object_new_boolean(true), NULL);
        info = params_new("targetId", json_object_new_string(target_id), "type", json_object_new_string("page"), NULL);
        if (!a || !info)
                return -ENOMEM;
        int r = cdp_call(b->cdp, NULL, "Target.attachToTarget", a, BROWSER_CALL_TIMEOUT_USEC, &res, NULL);
        if (r == -EPROTO)
                return 0;
        if (r < 0)
                return r;
        tab_attached(b, json_str(res, "sessionId"), info);
        return 0;
}

/* Brings the tab list up to date: events read, popups attached (or closed beyond the cap), new tabs set
 * up. */
static int browser_sync(Browser *b) {
        int r;

        r = cdp_pump(b->cdp, 0);
        if (r < 0)
                return r;
        tabs_compact(b);
        while (b->n_close_targets > 0) {
                _cleanup_free_ char *id = b->close_targets[--b->n_close_targets];
                _cleanup_(json_object_putp) json_object *p = params_new("targetId", json_object_new_string(strempty(id)), NULL);

                if (!p)
                        return -ENOMEM;
                r = cdp_call(b->cdp, NULL, "Target.closeTarget", p, BROWSER_CALL_TIMEOUT_USEC, NULL, NULL);
                if (r < 0 && r != -EPROTO)
                        return r;
        }
        while (b->n_attach_targets > 0) {
                _cleanup_free_ char *id = b->attach_targets[--b->n_attach_targets];

                r = tab_attach(b, id);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < b->n_tabs; i++) {
                Tab *t = &b->tabs[i];

                if (t->ready || t->gone)
                        continue;
                r = tab_setup(b, t);
                if (r == -EPROTO)               /* closed meanwhile */
                        tab_remove(b, t);
                else if (r < 0)
                        return r;
        }
        tabs_compact(b);
        return 0;
}

/* Creates a page target at about:blank and waits until it is an attached tab; its id in *ret_id. */
static int tab_create(Browser *b, unsigned *ret_id, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *p = params_new("url", json_object_new_string("about:blank"), NULL);
        _cleanup_(json_object_putp) json_object *res = NULL;
        const char *target_id;
        Tab *t;
        int r;

        if (!p)
                return -ENOMEM;
        r = call_or_fail(b, NULL, "Target.createTarget", p, &res, ret);
        if (r != 0)
                return r;
        target_id = json_str(res, "targetId");
        if (!target_id)
                return mcp_result_printf(ret, true, "Target.createTarget answered no targetId") ?: 1;
        r = tab_attach(b, target_id);
        if (r < 0)
                return r;
        t = tab_by_target(b, target_id);
        if (!t)
                return mcp_result_printf(ret, true, "The new tab could not be attached (%s)",
                                         b->n_tabs >= BROWSER_TABS_MAX ? "too many tabs" : "it went away") ?: 1;
        if (!t->ready) {
                unsigned id = t->id;
                r = tab_setup(b, t);
                if (r < 0)
                        return r == -EPROTO ? (mcp_result_printf(ret, true, "The new tab went away") ?: 1) : r;
                t = tab_by_id(b, id);
        }
        *ret_id = t->id;
        return 0;
}

/* Runtime.evaluate of expression in the tab, by value, awaiting a promise. 0 with the value (NULL for
 * undefined) in *ret_value; 1 with ret->text set for an exception or a CDP failure. */
static int tab_evaluate(Browser *b, Tab *t, const char *expression, json_object **ret_value, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *p = params_new(
                "expression", json_object_new_string(expression),
                "returnByValue", json_object_new_boolean(true),
                "awaitPromise", json_object_new_boolean(true),
                "userGesture", json_object_new_boolean(true), NULL);
        _cleanup_(json_object_putp) json_object *res = NULL;
        json_object *result, *details, *value;
        int r;

        if (!p)
                return -ENOMEM;
        r = call_or_fail(b, t->session_id, "Runtime.evaluate", p, &res, ret);
        if (r != 0)
                return r;
        if (json_object_object_get_ex(res, "exceptionDetails", &details)) {
                json_object *ex;
                const char *text = NULL;

                if (json_object_object_get_ex(details, "exception", &ex))
                        text = json_str(ex, "description");
                r = mcp_result_printf(ret, true, "JavaScript error: %.*s", (int) BROWSER_LOG_TEXT_MAX,
                                      text ?: json_str(details, "text") ?: "(no description)");
                return r < 0 ? r : 1;
        }
        if (!json_object_object_get_ex(res, "result", &result))
                return mcp_result_printf(ret, true, "Runtime.evaluate answered no result") ?: 1;
        if (json_object_object_get_ex(result, "value", &value))
                *ret_value = json_object_get(value);
        else if (json_str(result, "unserializableValue"))
                *ret_value = json_object_new_string(json_str(result, "unserializableValue"));
        else
                *ret_value = NULL;
        return 0;
}

/* The helpers every page script of ours starts with. Element refs (ref_N) live in the page (a Map of
 * WeakRefs): they last until the page navigates. */
#define JS_PRELUDE \
        "const L = window.__loopRefs || (Object.defineProperty(window, '__loopRefs', " \
        "  {value: {n: 0, byRef: new Map(), byEl: new WeakMap()}, enumerable: false}), window.__loopRefs);\n" \
        "const refOf = e => { let r = L.byEl.get(e); if (!r) { r = 'ref_' + (++L.n); L.byEl.set(e, r); " \
        "  L.byRef.set(r, new WeakRef(e)); } return r; };\n" \
        "const findEl = a => { if (a.ref) { const w = L.byRef.get(a.ref); const e = w && w.deref(); " \
        "  return e && e.isConnected ? e : null; } return a.selector ? document.querySelector(a.selector) : null; };\n" \
        "const visible = e => { const r = e.getBoundingClientRect(); if (r.width <= 0 || r.height <= 0) return false; " \
        "  const s = getComputedStyle(e); return s.visibility !== 'hidden' && s.display !== 'none'; };\n" \
        "const interactive = e => e.matches('a[href],button,input,select,textarea,summary,[role=button],[role=link]," \
        "[role=checkbox],[role=radio],[role=tab],[role=menuitem],[role=textbox],[role=combobox],[onclick]," \
        "[contenteditable=\"\"],[contenteditable=true],[tabindex]:not([tabindex=\"-1\"])');\n" \
        "const clip = (s, n) => String(s ?? '').trim().replace(/\\s+/g, ' ').slice(0, n);\n" \
        "const nameOf = e => clip(e.getAttribute('aria-label') || (e.labels && e.labels[0] && e.labels[0].innerText) || " \
        "  e.getAttribute('placeholder') || e.getAttribute('alt') || e.getAttribute('title') || e.innerText || " \
        "  (e.type !== 'password' && e.value) || e.getAttribute('name') || '', 100);\n" \
        "const roleOf = e => e.getAttribute('role') || ({A: 'link', BUTTON: 'button', SELECT: 'combobox', " \
        "  TEXTAREA: 'textbox', SUMMARY: 'button', IMG: 'img'})[e.tagName] || (e.tagName === 'INPUT' ? " \
        "  ({checkbox: 'checkbox', radio: 'radio', submit: 'button', button: 'button', reset: 'button', range: 'slider'})[e.type] || 'textbox' : " \
        "  /^H[1-6]$/.test(e.tagName) ? 'heading' : e.tagName.toLowerCase());\n" \
        "const describe = e => { const r = e.getBoundingClientRect(); let s = refOf(e) + ' ' + roleOf(e) + ' \"' + nameOf(e) + '\"';\n" \
        "  if (e.tagName === 'INPUT' && (e.type === 'checkbox' || e.type === 'radio')) s += e.checked ? ' checked' : ' unchecked';\n" \
        "  else if ((e.tagName === 'INPUT' || e.tagName === 'TEXTAREA' || e.tagName === 'SELECT') && e.type !== 'password') s += ' value=\"' + clip(e.value, 100) + '\"';\n" \
        "  if (e.tagName === 'A') s += ' href=\"' + clip(e.getAttribute('href'), 200) + '\"';\n" \
        "  if (e.disabled) s += ' disabled';\n" \
        "  return s + ' at (' + Math.round(r.x + r.width / 2) + ',' + Math.round(r.y + r.height / 2) + ')'; };\n"

/* Runs (body)(args) with the prelude in the tab: body is a JS function expression, args a JSON object. */
static int tab_run(Browser *b, Tab *t, const char *body, json_object *args, json_object **ret_value, McpToolResult *ret) {
        _cleanup_free_ char *expression = NULL;
        int r;

        r = strprintf(&expression, "(() => {\n" JS_PRELUDE "return (%s)(%s);\n})()", body,
                      args ? json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN) : "{}");
        if (r < 0)
                return r;
        return tab_evaluate(b, t, expression, ret_value, ret);
}

/* ---- waiting ---- */

typedef struct LoadWait {
        Browser *b;
        unsigned tab_id;
} LoadWait;

/* The tab's load flag is set (by the event handler), or the tab is gone. */
static bool tab_load_done(void *userdata) {
        LoadWait *l = userdata;
        Tab *t = tab_by_id(l->b, l->tab_id);

        return !t || t->loaded;
}

/* Waits for the tab's load (or bfcache restore, or same-document navigation) flag, pumping events, and
 * returns on the event that set it; a page that never finishes loading is not an error: *ret_loaded says. */
static int tab_wait_loaded(Browser *b, unsigned tab_id, uint64_t timeout_usec, bool *ret_loaded) {
        LoadWait l = { .b = b, .tab_id = tab_id };
        Tab *t;
        int r;

        r = cdp_pump_until(b->cdp, tab_load_done, &l, timeout_usec);
        if (r < 0)
                return r;
        t = tab_by_id(b, tab_id);
        *ret_loaded = t && t->loaded;
        return 0;
}

typedef struct WaitArgs {
        const char *selector, *text;
        unsigned timeout_ms;
} WaitArgs;

static void wait_args_get(json_object *args, WaitArgs *ret) {
        json_object *v;

        *ret = (WaitArgs) {
                .selector = mcp_arg_string(args, "wait_for_selector"),
                .text = mcp_arg_string(args, "wait_for_text"),
                .timeout_ms = BROWSER_WAIT_DEFAULT_MS,
        };
        if (json_object_object_get_ex(args, "wait_timeout_ms", &v))
                ret->timeout_ms = (unsigned) MIN(MAX(json_object_get_int64(v), (int64_t) 0), (int64_t) BROWSER_WAIT_MAX_MS);
}

/* Polls every BROWSER_WAIT_POLL_MS until the selector matches / the text shows in the current tab.
 * 0 when it did (or nothing was asked), 1 with ret->text set when it timed out or the check failed. */
static int wait_for(Browser *b, const WaitArgs *w, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *a = NULL;
        uint64_t deadline;
        int r;

        if (!w->selector && !w->text)
                return 0;
        a = params_new("selector", w->selector ? json_object_new_string(w->selector) : NULL,
                       "text", w->text ? json_object_new_string(w->text) : NULL, NULL);
        if (!a)
                return -ENOMEM;
        deadline = clock_usec(CLOCK_MONOTONIC) + w->timeout_ms * USEC_PER_MSEC;
        for (;;) {
                _cleanup_(json_object_putp) json_object *v = NULL;
                Tab *t = tab_current(b);
                uint64_t now;

                if (!t)
                        return mcp_result_printf(ret, true, "No tab is open") ?: 1;
                r = tab_run(b, t, "(a) => (!a.selector || !!document.querySelector(a.selector)) && "
                            "(!a.text || (!!document.body && document.body.innerText.includes(a.text)))", a, &v, ret);
                if (r != 0)
                        return r;
                if (json_object_get_boolean(v))
                        return 0;
                now = clock_usec(CLOCK_MONOTONIC);
                if (now >= deadline)
                        break;
                r = cdp_pump(b->cdp, MIN(deadline - now, BROWSER_WAIT_POLL_MS * USEC_PER_MSEC));
                if (r < 0)
                        return r;
        }
        if (w->selector && w->text)
                r = mcp_result_printf(ret, true, "Timed out after %u ms waiting for selector %s with text \"%s\"",
                                      w->timeout_ms, w->selector, w->text);
        else if (w->selector)
                r = mcp_result_printf(ret, true, "Timed out after %u ms waiting for selector %s", w->timeout_ms, w->selector);
        else
                r = mcp_result_printf(ret, true, "Timed out after %u ms waiting for text \"%s\"", w->timeout_ms, w->text);
        return r < 0 ? r : 1;
}

/* ---- answers ---- */

/* The current tab's URL and title, for answers. */
static int tab_location(Browser *b, Tab *t, char **ret_url, char **ret_title, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *v = NULL;
        int r;

        r = tab_run(b, t, "() => ({url: location.href, title: document.title})", NULL, &v, ret);
        if (r != 0)
                return r;
        *ret_url = strdup_cut(json_str(v, "url"), BROWSER_LOG_TEXT_MAX);
        *ret_title = strdup_cut(json_str(v, "title"), BROWSER_LOG_TEXT_MAX);
        if (!*ret_url || !*ret_title) {
                *ret_url = mfree(*ret_url);
                *ret_title = mfree(*ret_title);
                return -ENOMEM;
        }
        return 0;
}

/* Finishes an action: waits for a load the action started (a click on a link, when Chrome reported the
 * navigation by now), waits as asked, then answers what, and where the tab is (URL and title) when
 * with_location or the page navigated: computer actions that stay on the page skip that round trip. */
static int answer_after(Browser *b, const char *what, const WaitArgs *w, bool loaded, bool with_location,
                        McpToolResult *ret) {
        _cleanup_free_ char *url = NULL, *title = NULL;
        Tab *t;
        int r;

        r = cdp_pump(b->cdp, 0);
        if (r < 0)
                return r;
        t = tab_current(b);
        if (t && t->navigating) {
                with_location = true;
                r = tab_wait_loaded(b, t->id, BROWSER_LOAD_TIMEOUT_USEC, &loaded);
                if (r < 0)
                        return r;
        }
        r = wait_for(b, w, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        t = tab_current(b);
        if (!t)
                return mcp_result_printf(ret, false, "%s (no tab is open now)", what);
        if (!with_location && !w->selector && !w->text)
                return mcp_result_printf(ret, false, "%s\nTab %u", what, t->id);
        r = tab_location(b, t, &url, &title, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        return mcp_result_printf(ret, false, "%s%s\nTab %u: %s\nTitle: %s", what,
                                 loaded ? "" : " (the page is still loading)", t->id, url, title);
}

/* ---- URL policy ---- */

int browser_url_check(const char *url, char **ret_normalized, char **ret_reason) {
        _cleanup_free_ char *n = NULL;
        const char *reason = NULL;
        size_t len, scheme_len = 0;

        if (isempty(url))
                reason = "url is empty";
        else if ((len = strnlen(url, BROWSER_URL_MAX + 1)) > BROWSER_URL_MAX)
                reason = "the URL is too long";
        else {
                for (size_t i = 0; i < len; i++)
                        if ((unsigned char) url[i] <= ' ' || url[i] == 0x7f || url[i] == '\\') {
                                reason = "the URL contains blanks, control characters or backslashes";
                                break;
                        }
                while (!reason && (isalnum((unsigned char) url[scheme_len]) || strchr("+.-", url[scheme_len])) &&
                       url[scheme_len])
                        scheme_len++;
                if (reason)
                        ;
                else if (streq(url, "about:blank"))
                        ;
                else if (scheme_len == 0 || url[scheme_len] != ':' || !isalpha((unsigned char) url[0]))
                        reason = "the URL has no scheme: give a full http:// or https:// URL";
                else if (!((scheme_len == 4 && strncasecmp(url, "http", 4) == 0) ||
                           (scheme_len == 5 && strncasecmp(url, "https", 5) == 0)))
                        reason = "only http, https and about:blank URLs may be opened";
                else if (!startswith(url + scheme_len + 1, "//") || strchr("/?#", url[scheme_len + 3]))
                        reason = "an http(s) URL needs a host (http://host/...)";
        }
        if (reason) {
                if (ret_reason) {
                        char *s = strdup(reason);
                        if (!s)
                                return -ENOMEM;
                        *ret_reason = s;
                }
                return -EPERM;
        }
        if (ret_normalized) {
                n = strdup(url);
                if (!n)
                        return -ENOMEM;
                for (size_t i = 0; i < scheme_len; i++)
                        n[i] = (char) tolower((unsigned char) n[i]);
                *ret_normalized = TAKE_PTR(n);
        }
        return 0;
}

/* The scheme allow-list, then the channel's policy. 0 with the URL to open in *ret_url; 1 with the
 * refusal in ret. */
static int url_allowed(Browser *b, const char *url, char **ret_url, McpToolResult *ret) {
        _cleanup_free_ char *normalized = NULL, *reason = NULL;
        int r;

        r = browser_url_check(url, &normalized, &reason);
        if (r == -EPERM) {
                log_info("Browser: refused to open %.200s: %s", strna(url), reason);
                return mcp_result_printf(ret, true, "Refused to open %.200s: %s", strna(url), reason) ?: 1;
        }
        if (r < 0)
                return r;
        if (b->url_check && !streq(normalized, "about:blank")) {
                r = b->url_check(normalized, &reason, b->userdata);
                if (r < 0) {
                        log_info("Browser: the channel's policy refused %.200s: %s", normalized, strna(reason));
                        return mcp_result_printf(ret, true, "Refused to open %.200s: %s", normalized,
                                                 r == -EPERM ? (reason ?: "the channel's policy does not allow it") :
                                                 "the channel's policy could not be checked") ?: 1;
                }
        }
        *ret_url = TAKE_PTR(normalized);
        return 0;
}

/* ---- argument checking against the schema ---- */

static bool json_is_number(json_object *v) {
        return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
}

static int args_fail(char **ret_reason, const char *format, ...) _printf_(2, 3);
static int args_fail(char **ret_reason, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = ret_reason ? strprintf_va(ret_reason, format, ap) : 0;
        va_end(ap);
        return r < 0 ? r : -EINVAL;
}

int browser_args_check(const char *schema_text, json_object *args, char **ret_reason) {
        _cleanup_(json_object_putp) json_object *schema = json_tokener_parse(schema_text);
        json_object *props = NULL, *required, *additional;

        if (!schema || !json_object_object_get_ex(schema, "properties", &props))
                return args_fail(ret_reason, "the tool's schema is broken");
        if (!args || !json_object_is_type(args, json_type_object))
                return args_fail(ret_reason, "arguments must be an object");

        if (json_object_object_get_ex(schema, "required", &required))
                for (size_t i = 0; i < json_object_array_length(required); i++) {
                        const char *k = json_object_get_string(json_object_array_get_idx(required, i));
                        if (!json_object_object_get_ex(args, k, NULL))
                                return args_fail(ret_reason, "%s is required", k);
                }

        json_object_object_foreach(args, key, v) {
                json_object *p, *t, *lim, *en;
                const char *type;

                if (!json_object_object_get_ex(props, key, &p)) {
                        if (json_object_object_get_ex(schema, "additionalProperties", &additional) &&
                            !json_object_get_boolean(additional))
                                return args_fail(ret_reason, "unknown argument %.64s", key);
                        continue;
                }
                type = json_object_object_get_ex(p, "type", &t) ? json_object_get_string(t) : NULL;
                if (streq_ptr(type, "string")) {
                        if (!json_object_is_type(v, json_type_string))
                                return args_fail(ret_reason, "%s must be a string", key);
                        if (json_object_object_get_ex(p, "maxLength", &lim) &&
                            (size_t) json_object_get_string_len(v) > (size_t) json_object_get_int64(lim))
                                return args_fail(ret_reason, "%s is longer than %" PRId64 " characters", key,
                                                 json_object_get_int64(lim));
                        if (json_object_object_get_ex(p, "enum", &en)) {
                                bool found = false;
                                for (size_t i = 0; i < json_object_array_length(en) && !found; i++)
                                        found = streq(json_object_get_string(json_object_array_get_idx(en, i)),
                                                      json_object_get_string(v));
                                if (!found)
                                        return args_fail(ret_reason, "%s must be one of %s", key,
                                                         json_object_to_json_string_ext(en, JSON_C_TO_STRING_PLAIN));
                        }
                } else if (streq_ptr(type, "integer") || streq_ptr(type, "number")) {
                        double d;

                        if (!json_is_number(v))
                                return args_fail(ret_reason, "%s must be a number", key);
                        d = json_object_get_double(v);
                        if (!isfinite(d) || (streq(type, "integer") && d != floor(d)))
                                return args_fail(ret_reason, "%s must be %s", key,
                                                 streq(type, "integer") ? "an integer" : "a finite number");
                        if (json_object_object_get_ex(p, "minimum", &lim) && d < json_object_get_double(lim))
                                return args_fail(ret_reason, "%s must be at least %g", key, json_object_get_double(lim));
                        if (json_object_object_get_ex(p, "maximum", &lim) && d > json_object_get_double(lim))
                                return args_fail(ret_reason, "%s must be at most %g", key, json_object_get_double(lim));
                } else if (streq_ptr(type, "boolean")) {
                        if (!json_object_is_type(v, json_type_boolean))
                                return args_fail(ret_reason, "%s must be true or false", key);
                } else if (streq_ptr(type, "array")) {
                        json_object *items, *it;
                        size_t n;

                        if (!json_object_is_type(v, json_type_array))
                                return args_fail(ret_reason, "%s must be an array", key);
                        n = json_object_array_length(v);
                        if ((json_object_object_get_ex(p, "minItems", &lim) && n < (size_t) json_object_get_int64(lim)) ||
                            (json_object_object_get_ex(p, "maxItems", &lim) && n > (size_t) json_object_get_int64(lim)))
                                return args_fail(ret_reason, "%s has the wrong number of items", key);
                        if (json_object_object_get_ex(p, "items", &items) &&
                            json_object_object_get_ex(items, "type", &it) &&
                            streq(json_object_get_string(it), "number"))
                                for (size_t i = 0; i < n; i++) {
                                        json_object *e = json_object_array_get_idx(v, i);
                                        if (!json_is_number(e) || !isfinite(json_object_get_double(e)))
                                                return args_fail(ret_reason, "%s must hold numbers", key);
                                        if ((json_object_object_get_ex(items, "minimum", &lim) &&
                                             json_object_get_double(e) < json_object_get_double(lim)) ||
                                            (json_object_object_get_ex(items, "maximum", &lim) &&
                                             json_object_get_double(e) > json_object_get_double(lim)))
                                                return args_fail(ret_reason, "%s is out of range", key);
                                }
                }
                /* a property without a type (form_input's value) takes any JSON value */
        }
        return 0;
}

/* ---- keys ---- */

typedef struct KeyName {
        const char *name;       /* as the agent writes it, matched case-insensitively */
        const char *key, *code;
        int key_code;
        const char *text;
} KeyName;

static const KeyName KEY_NAMES[] = {
        { "Enter", "Enter", "Enter", 13, "\r" },
        { "Return", "Enter", "Enter", 13, "\r" },
        { "Tab", "Tab", "Tab", 9, NULL },
        { "Backspace", "Backspace", "Backspace", 8, NULL },
        { "BackSpace", "Backspace", "Backspace", 8, NULL },
        { "Delete", "Delete", "Delete", 46, NULL },
        { "Del", "Delete", "Delete", 46, NULL },
        { "Escape", "Escape", "Escape", 27, NULL },
        { "Esc", "Escape", "Escape", 27, NULL },
        { "Space", " ", "Space", 32, " " },
        { "ArrowUp", "ArrowUp", "ArrowUp", 38, NULL },
        { "Up", "ArrowUp", "ArrowUp", 38, NULL },
        { "ArrowDown", "ArrowDown", "ArrowDown", 40, NULL },
        { "Down", "ArrowDown", "ArrowDown", 40, NULL },
        { "ArrowLeft", "ArrowLeft", "ArrowLeft", 37, NULL },
        { "Left", "ArrowLeft", "ArrowLeft", 37, NULL },
        { "ArrowRight", "ArrowRight", "ArrowRight", 39, NULL },
        { "Right", "ArrowRight", "ArrowRight", 39, NULL },
        { "Home", "Home", "Home", 36, NULL },
        { "End", "End", "End", 35, NULL },
        { "PageUp", "PageUp", "PageUp", 33, NULL },
        { "Page_Up", "PageUp", "PageUp", 33, NULL },
        { "PageDown", "PageDown", "PageDown", 34, NULL },
        { "Page_Down", "PageDown", "PageDown", 34, NULL },
        { "Insert", "Insert", "Insert", 45, NULL },
        { "F1", "F1", "F1", 112, NULL }, { "F2", "F2", "F2", 113, NULL }, { "F3", "F3", "F3", 114, NULL },
        { "F4", "F4", "F4", 115, NULL }, { "F5", "F5", "F5", 116, NULL }, { "F6", "F6", "F6", 117, NULL },
        { "F7", "F7", "F7", 118, NULL }, { "F8", "F8", "F8", 119, NULL }, { "F9", "F9", "F9", 120, NULL },
        { "F10", "F10", "F10", 121, NULL }, { "F11", "F11", "F11", 122, NULL }, { "F12", "F12", "F12", 123, NULL },
};

static const struct {
        const char *name;
        unsigned bit;
} MODIFIER_NAMES[] = {
        { "ctrl", BROWSER_MODIFIER_CTRL }, { "control", BROWSER_MODIFIER_CTRL },
        { "shift", BROWSER_MODIFIER_SHIFT },
        { "alt", BROWSER_MODIFIER_ALT }, { "option", BROWSER_MODIFIER_ALT },
        { "meta", BROWSER_MODIFIER_META }, { "cmd", BROWSER_MODIFIER_META }, { "command", BROWSER_MODIFIER_META },
        { "super", BROWSER_MODIFIER_META }, { "win", BROWSER_MODIFIER_META },
};

/* Punctuation on a US keyboard: the character, its code, its virtual key code. */
static const struct {
        char c;
        const char *code;
        int key_code;
} PUNCTUATION[] = {
        { '-', "Minus", 189 }, { '=', "Equal", 187 }, { '[', "BracketLeft", 219 }, { ']', "BracketRight", 221 },
        { '\\', "Backslash", 220 }, { ';', "Semicolon", 186 }, { '\'', "Quote", 222 }, { ',', "Comma", 188 },
        { '.', "Period", 190 }, { '/', "Slash", 191 }, { '`', "Backquote", 192 },
};

static int key_from_name(const char *name, size_t n, unsigned modifiers, BrowserKey *ret) {
        BrowserKey k = {};

        if (n == 1) {
                char c = name[0];

                if (isalpha((unsigned char) c)) {
                        char lower = (char) tolower((unsigned char) c), upper = (char) toupper((unsigned char) c);
                        k.key[0] = (modifiers & BROWSER_MODIFIER_SHIFT) ? upper : lower;
                        snprintf(k.code, sizeof(k.code), "Key%c", upper);
                        k.key_code = upper;
                } else if (isdigit((unsigned char) c)) {
                        k.key[0] = c;
                        snprintf(k.code, sizeof(k.code), "Digit%c", c);
                        k.key_code = c;
                } else {
                        size_t i;
                        for (i = 0; i < ELEMENTSOF(PUNCTUATION); i++)
                                if (PUNCTUATION[i].c == c)
                                        break;
                        if (i >= ELEMENTSOF(PUNCTUATION))
                                return -EINVAL;
                        k.key[0] = c;
                        snprintf(k.code, sizeof(k.code), "%s", PUNCTUATION[i].code);
                        k.key_code = PUNCTUATION[i].key_code;
                }
                if (!(modifiers & (BROWSER_MODIFIER_CTRL | BROWSER_MODIFIER_ALT | BROWSER_MODIFIER_META)))
                        k.text[0] = k.key[0];
                *ret = k;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(KEY_NAMES); i++)
                if (strlen(KEY_NAMES[i].name) == n && strncasecmp(KEY_NAMES[i].name, name, n) == 0) {
                        snprintf(k.key, sizeof(k.key), "%s", KEY_NAMES[i].key);
                        snprintf(k.code, sizeof(k.code), "%s", KEY_NAMES[i].code);
                        k.key_code = KEY_NAMES[i].key_code;
                        if (KEY_NAMES[i].text && !(modifiers & (BROWSER_MODIFIER_CTRL | BROWSER_MODIFIER_ALT | BROWSER_MODIFIER_META)))
                                snprintf(k.text, sizeof(k.text), "%s", KEY_NAMES[i].text);
                        *ret = k;
                        return 0;
                }
        return -EINVAL;
}

int browser_key_parse(const char *combo, BrowserKey *ret_key, unsigned *ret_modifiers) {
        unsigned modifiers = 0;
        const char *p = combo;

        if (isempty(combo))
                return -EINVAL;
        for (;;) {
                /* modifiers, then the key: "ctrl+shift+a" ("+" itself is shift+= on a US keyboard) */
                const char *plus = strchr(p, '+');
                size_t n = plus ? (size_t) (plus - p) : strlen(p);
                bool found = false;

                if (n == 0)
                        return -EINVAL;
                if (!plus)
                        return key_from_name(p, n, modifiers, ret_key) < 0 ? -EINVAL :
                               (*ret_modifiers = modifiers, 0);
                for (size_t i = 0; i < ELEMENTSOF(MODIFIER_NAMES); i++)
                        if (strlen(MODIFIER_NAMES[i].name) == n && strncasecmp(MODIFIER_NAMES[i].name, p, n) == 0) {
                                modifiers |= MODIFIER_NAMES[i].bit;
                                found = true;
                        }
                if (!found)
                        return -EINVAL;
                p = plus + 1;
        }
}

/* ---- input ---- */

static int mouse_event(Browser *b, Tab *t, const char *type, double x, double y, const char *button,
                       int click_count, int buttons, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *p = params_new(
                "type", json_object_new_string(type),
                "x", json_object_new_double(x),
                "y", json_object_new_double(y),
                "button", json_object_new_string(button),
                "clickCount", json_object_new_int(click_count),
                "buttons", json_object_new_int(buttons), NULL);

        if (!p)
                return -ENOMEM;
        return call_or_fail(b, t->session_id, "Input.dispatchMouseEvent", p, NULL, ret);
}

static int mouse_click(Browser *b, Tab *t, double x, double y, const char *button, int clicks, McpToolResult *ret) {
        int buttons = streq(button, "right") ? 2 : 1, r;

        r = mouse_event(b, t, "mouseMoved", x, y, "none", 0, 0, ret);
        for (int i = 1; r == 0 && i <= clicks; i++) {
                r = mouse_event(b, t, "mousePressed", x, y, button, i, buttons, ret);
                if (r == 0)
                        r = mouse_event(b, t, "mouseReleased", x, y, button, i, 0, ret);
        }
        return r;
}

static int key_event(Browser *b, Tab *t, const char *type, const BrowserKey *k, unsigned modifiers, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *p = params_new(
                "type", json_object_new_string(type),
                "key", json_object_new_string(k->key),
                "code", json_object_new_string(k->code),
                "windowsVirtualKeyCode", json_object_new_int(k->key_code),
                "modifiers", json_object_new_int((int) modifiers), NULL);
        int r;

        if (!p)
                return -ENOMEM;
        if (!isempty(k->text) && streq(type, "keyDown")) {
                r = json_add(p, "text", json_object_new_string(k->text));
                if (r < 0)
                        return r;
        }
        return call_or_fail(b, t->session_id, "Input.dispatchKeyEvent", p, NULL, ret);
}

static const BrowserKey MODIFIER_KEYS[] = {
        { "Alt", "AltLeft", 18, "" },
        { "Control", "ControlLeft", 17, "" },
        { "Meta", "MetaLeft", 91, "" },
        { "Shift", "ShiftLeft", 16, "" },
};

static int key_press(Browser *b, Tab *t, const BrowserKey *k, unsigned modifiers, McpToolResult *ret) {
        unsigned held = 0;
        int r = 0;

        for (size_t i = 0; r == 0 && i < ELEMENTSOF(MODIFIER_KEYS); i++)
                if (modifiers & (1U << i)) {
                        held |= 1U << i;
                        r = key_event(b, t, "rawKeyDown", &MODIFIER_KEYS[i], held, ret);
                }
        if (r == 0)
                r = key_event(b, t, isempty(k->text) ? "rawKeyDown" : "keyDown", k, modifiers, ret);
        if (r == 0)
                r = key_event(b, t, "keyUp", k, modifiers, ret);
        for (size_t i = ELEMENTSOF(MODIFIER_KEYS); r == 0 && i > 0; i--)
                if (held & (1U << (i - 1))) {
                        held &= ~(1U << (i - 1));
                        r = key_event(b, t, "keyUp", &MODIFIER_KEYS[i - 1], held, ret);
                }
        return r;
}

/* The point to act on: an element (ref or selector, scrolled into view, its centre) or coordinate.
 * 0 with the point; 1 with ret->text set when there is none. */
static int target_point(Browser *b, Tab *t, json_object *args, const char *coordinate_key, double *ret_x,
                        double *ret_y, McpToolResult *ret) {
        const char *ref = mcp_arg_string(args, "ref"), *selector = mcp_arg_string(args, "selector");
        json_object *c;
        int r;

        if (ref || selector) {
                _cleanup_(json_object_putp) json_object *a = params_new(
                        "ref", ref ? json_object_new_string(ref) : NULL,
                        "selector", selector ? json_object_new_string(selector) : NULL, NULL);
                _cleanup_(json_object_putp) json_object *v = NULL;

                if (!a)
                        return -ENOMEM;
                r = tab_run(b, t, "(a) => { const e = findEl(a); if (!e) return null; "
                            "e.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'}); "
                            "const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }",
                            a, &v, ret);
                if (r != 0)
                        return r;
                if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) != 2)
                        return mcp_result_printf(ret, true, "No element matches %s %s", ref ? "ref" : "selector",
                                                 ref ?: selector) ?: 1;
                *ret_x = json_object_get_double(json_object_array_get_idx(v, 0));
                *ret_y = json_object_get_double(json_object_array_get_idx(v, 1));
                return 0;
        }
        if (json_object_object_get_ex(args, coordinate_key, &c)) {
                *ret_x = json_object_get_double(json_object_array_get_idx(c, 0));
                *ret_y = json_object_get_double(json_object_array_get_idx(c, 1));
                return 0;
        }
        return mcp_result_printf(ret, true, "This action needs %s [x, y], a ref or a selector", coordinate_key) ?: 1;
}

/* ---- screenshots ---- */

/* PNG width and height from its IHDR chunk. */
static bool png_size(const unsigned char *p, size_t n, unsigned *ret_w, unsigned *ret_h) {
        static const unsigned char magic[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

        if (n < 24 || memcmp(p, magic, 8) != 0 || memcmp(p + 12, "IHDR", 4) != 0)
                return false;
        *ret_w = (unsigned) p[16] << 24 | (unsigned) p[17] << 16 | (unsigned) p[18] << 8 | p[19];
        *ret_h = (unsigned) p[20] << 24 | (unsigned) p[21] << 16 | (unsigned) p[22] << 8 | p[23];
        return true;
}

/* Decodes Chrome's base64 PNG: 0 with the PNG and its size, 1 with ret->text set when it is not one. */
static int screenshot_decode(const char *base64, unsigned char **ret_png, size_t *ret_size, unsigned *ret_w,
                             unsigned *ret_h, McpToolResult *ret) {
        _cleanup_free_ unsigned char *png = NULL;
        size_t len = strlen(base64), n;
        int k;

        if (len == 0 || len % 4 != 0 || len / 4 * 3 > SCREENSHOT_FILE_MAX)
                return mcp_result_printf(ret, true, "The browser sent a screenshot that is not base64") ?: 1;
        png = malloc(len / 4 * 3 + 1);
        if (!png)
                return -ENOMEM;
        k = EVP_DecodeBlock(png, (const unsigned char *) base64, (int) len);
        if (k < 0)
                return mcp_result_printf(ret, true, "The browser sent a screenshot that is not base64") ?: 1;
        n = (size_t) k - (base64[len - 1] == '=') - (base64[len - 2] == '=');
        if (!png_size(png, n, ret_w, ret_h))
                return mcp_result_printf(ret, true, "The browser sent a screenshot that is not a PNG") ?: 1;
        *ret_png = TAKE_PTR(png);
        *ret_size = n;
        return 0;
}

/* Without a screenshots directory: the PNG as MCP image content, which the agent's model sees. */
static int screenshot_image(const char *base64, McpToolResult *ret) {
        _cleanup_free_ unsigned char *png = NULL;
        unsigned w, h;
        size_t n;
        int r;

        r = screenshot_decode(base64, &png, &n, &w, &h, ret);
        if (r != 0)
                return r;
        if (strlen(base64) > MCP_TOOL_IMAGE_MAX)
                return mcp_result_printf(ret, true, "The screenshot (%ux%u PNG, %zu bytes) is above the %u bytes an image "
                                         "may have: take the viewport, or make it smaller with resize_window",
                                         w, h, n, MCP_TOOL_IMAGE_MAX) ?: 1;
        r = mcp_result_printf(ret, false, "Screenshot (%ux%u PNG, %zu bytes)", w, h, n);
        if (r < 0)
                return r;
        ret->image = strdup(base64);
        if (!ret->image)
                return -ENOMEM;
        ret->image_mime_type = "image/png";
        return 0;
}

typedef struct ScreenshotFile {
        unsigned long long ms;
        unsigned seq;
        uint64_t size;
        char name[64];
} ScreenshotFile;

static int screenshot_file_compare(const void *a, const void *b) {
        const ScreenshotFile *x = a, *y = b;

        if (x->ms != y->ms)
                return x->ms < y->ms ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The directory's screenshots (names screenshot_save() makes), oldest first, at most
 * BROWSER_SCREENSHOTS_SCAN_MAX of them. */
static int screenshots_list(int dir_fd, ScreenshotFile **ret, size_t *ret_n) {
        _cleanup_free_ ScreenshotFile *files = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        size_t n = 0;
        int r;

        r = opendir_at(dir_fd, ".", 0, &d);
        if (r < 0)
                return r;
        for (struct dirent *de; (de = readdir(d)) && n < BROWSER_SCREENSHOTS_SCAN_MAX;) {
                ScreenshotFile f = {};
                struct stat st;
                int end = 0;

                if (sscanf(de->d_name, "screenshot-%llu-%u.png%n", &f.ms, &f.seq, &end) != 2 ||
                    de->d_name[end] != 0 || strlen(de->d_name) >= sizeof(f.name) ||
                    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                f.size = (uint64_t) st.st_size;
                strcpy(f.name, de->d_name);
                if (n % 64 == 0) {
                        ScreenshotFile *m = reallocarray(files, n + 64, sizeof(ScreenshotFile));
                        if (!m)
                                return -ENOMEM;
                        files = m;
                }
                files[n++] = f;
        }
        if (n > 0)
                qsort(files, n, sizeof(ScreenshotFile), screenshot_file_compare);
        *ret = TAKE_PTR(files);
        *ret_n = n;
        return 0;
}

/* The screenshots directory is on the host's disk: the oldest files go once there are more than
 * BROWSER_SCREENSHOTS_KEEP or they take more than BROWSER_SCREENSHOTS_BYTES_MAX; the newest one stays. */
static void screenshots_prune(int dir_fd) {
        _cleanup_free_ ScreenshotFile *files = NULL;
        uint64_t total = 0;
        size_t n = 0, gone = 0;
        int r;

        r = screenshots_list(dir_fd, &files, &n);
        if (r < 0)
                return (void) log_warning_errno(r, "Browser: cannot list the screenshots directory: %m");
        for (size_t i = 0; i < n; i++)
                total += files[i].size;
        for (size_t i = 0; i + 1 < n && (n - i > BROWSER_SCREENSHOTS_KEEP || total > BROWSER_SCREENSHOTS_BYTES_MAX); i++) {
                if (unlinkat(dir_fd, files[i].name, 0) < 0 && errno != ENOENT) {
                        log_warning_errno(errno, "Browser: cannot remove the old screenshot %s: %m", files[i].name);
                        continue;
                }
                total -= files[i].size;
                gone++;
        }
        if (gone > 0)
                log_debug("Browser: removed the %zu oldest screenshots (at most %u files and %u MiB are kept).", gone,
                         BROWSER_SCREENSHOTS_KEEP, BROWSER_SCREENSHOTS_BYTES_MAX / (1024U * 1024U));
}

static int screenshot_save(Browser *b, const char *base64, McpToolResult *ret) {
        _cleanup_free_ unsigned char *png = NULL;
        _cleanup_close_ int dir_fd = -EBADF, fd = -EBADF;
        char name[64];
        unsigned w, h;
        size_t n;
        int r;

        r = screenshot_decode(base64, &png, &n, &w, &h, ret);
        if (r != 0)
                return r;

        dir_fd = open(b->screenshots_dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (dir_fd < 0) {
                r = -errno;
                log_warning_errno(r, "Browser: cannot open the screenshots directory %s: %m", b->screenshots_dir);
                return mcp_result_printf(ret, true, "The screenshots directory cannot be opened") ?: 1;
        }
        for (unsigned attempt = 0; fd < 0 && attempt < 16; attempt++) {
                snprintf(name, sizeof(name), "screenshot-%llu-%u.png",
                         (unsigned long long) (clock_usec(CLOCK_REALTIME) / 1000), ++b->screenshot_seq);
                fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0 && errno != EEXIST)
                        break;
        }
        if (fd < 0)
                return mcp_result_printf(ret, true, "The screenshot file cannot be created") ?: 1;
        r = loop_write(fd, png, n);
        if (r < 0) {
                (void) unlinkat(dir_fd, name, 0);
                return mcp_result_printf(ret, true, "The screenshot file cannot be written") ?: 1;
        }
        screenshots_prune(dir_fd);
        return mcp_result_printf(ret, false, "Screenshot saved to %s/%s (%ux%u PNG, %zu bytes)",
                                 b->screenshots_dir_in_container ?: b->screenshots_dir, name, w, h, n);
}

static int do_screenshot(Browser *b, Tab *t, bool full_page, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *p = NULL, *res = NULL;
        const char *data;
        int r;

        p = params_new("format", json_object_new_string("png"), NULL);
        if (!p)
                return -ENOMEM;
        if (full_page) {
                _cleanup_(json_object_putp) json_object *m = NULL, *clip = NULL;
                json_object *size, *v;
                double w = b->width, h = b->height;

                r = call_or_fail(b, t->session_id, "Page.getLayoutMetrics", NULL, &m, ret);
                if (r != 0)
                        return r < 0 ? r : 0;
                if (json_object_object_get_ex(m, "cssContentSize", &size)) {
                        if (json_object_object_get_ex(size, "width", &v))
                                w = json_object_get_double(v);
                        if (json_object_object_get_ex(size, "height", &v))
                                h = json_object_get_double(v);
                }
                clip = params_new("x", json_object_new_int(0), "y", json_object_new_int(0),
                                  "width", json_object_new_double(MIN(MAX(w, 1.0), (double) BROWSER_VIEWPORT_MAX)),
                                  "height", json_object_new_double(MIN(MAX(h, 1.0), (double) BROWSER_SCREENSHOT_HEIGHT_MAX)),
                                  "scale", json_object_new_int(1), NULL);
                r = json_add(p, "clip", TAKE_PTR(clip));
                r = r < 0 ? r : json_add(p, "captureBeyondViewport", json_object_new_boolean(true));
                if (r < 0)
                        return r;
        }
        r = call_or_fail(b, t->session_id, "Page.captureScreenshot", p, &res, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        data = json_str(res, "data");
        if (!data)
                return mcp_result_printf(ret, true, "The browser sent no screenshot");
        r = b->screenshots_dir ? screenshot_save(b, data, ret) : screenshot_image(data, ret);
        return r < 0 ? r : 0;
}

/* ---- the tools ---- */

typedef int (*ToolFunc)(Browser *b, json_object *args, McpToolResult *ret);

/* Navigates the current tab to url (already allowed) and answers. */
static int navigate_to(Browser *b, Tab *t, const char *url, const WaitArgs *w, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *p = params_new("url", json_object_new_string(url), NULL);
        _cleanup_(json_object_putp) json_object *res = NULL;
        unsigned id = t->id;
        bool loaded = true;
        const char *error;
        int r;

        if (!p)
                return -ENOMEM;
        t->loaded = false;
        r = call_or_fail(b, t->session_id, "Page.navigate", p, &res, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        error = json_str(res, "errorText");
        if (error)
                return mcp_result_printf(ret, true, "Navigation to %s failed: %s", url, error);
        if (json_str(res, "loaderId")) {
                r = tab_wait_loaded(b, id, BROWSER_LOAD_TIMEOUT_USEC, &loaded);
                if (r < 0)
                        return r;
        }
        return answer_after(b, "Navigated", w, loaded, true, ret);
}

static int tool_navigate(Browser *b, json_object *args, McpToolResult *ret) {
        _cleanup_free_ char *url = NULL;
        Tab *t = tab_current(b);
        WaitArgs w;
        int r;

        r = url_allowed(b, mcp_arg_string(args, "url"), &url, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        wait_args_get(args, &w);
        return navigate_to(b, t, url, &w, ret);
}

static int history_go(Browser *b, json_object *args, int delta, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *h = NULL, *p = NULL;
        _cleanup_free_ char *url = NULL;
        json_object *entries, *idx, *entry, *id;
        Tab *t = tab_current(b);
        unsigned tab_id = t->id;
        bool loaded;
        int64_t i;
        WaitArgs w;
        int r;

        r = call_or_fail(b, t->session_id, "Page.getNavigationHistory", NULL, &h, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        if (!json_object_object_get_ex(h, "currentIndex", &idx) || !json_object_object_get_ex(h, "entries", &entries) ||
            !json_object_is_type(entries, json_type_array))
                return mcp_result_printf(ret, true, "The browser sent no navigation history");
        i = json_object_get_int64(idx) + delta;
        if (i < 0 || (size_t) i >= json_object_array_length(entries))
                return mcp_result_printf(ret, true, "There is no %s page in this tab's history",
                                         delta < 0 ? "previous" : "next");
        entry = json_object_array_get_idx(entries, (size_t) i);
        r = url_allowed(b, json_str(entry, "url"), &url, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        if (!json_object_object_get_ex(entry, "id", &id))
                return mcp_result_printf(ret, true, "The browser sent a history entry without id");
        p = params_new("entryId", json_object_get(id), NULL);
        if (!p)
                return -ENOMEM;
        t->loaded = false;
        r = call_or_fail(b, t->session_id, "Page.navigateToHistoryEntry", p, NULL, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        r = tab_wait_loaded(b, tab_id, BROWSER_LOAD_TIMEOUT_USEC, &loaded);
        if (r < 0)
                return r;
        wait_args_get(args, &w);
        return answer_after(b, delta < 0 ? "Went back" : "Went forward", &w, loaded, true, ret);
}

static int tool_go_back(Browser *b, json_object *args, McpToolResult *ret) {
        return history_go(b, args, -1, ret);
}

static int tool_go_forward(Browser *b, json_object *args, McpToolResult *ret) {
        return history_go(b, args, +1, ret);
}

static int tool_reload(Browser *b, json_object *args, McpToolResult *ret) {
        json_object *v;
        _cleanup_(json_object_putp) json_object *p = params_new(
                "ignoreCache", json_object_new_boolean(json_object_object_get_ex(args, "ignore_cache", &v) &&
                                                       json_object_get_boolean(v)), NULL);
        Tab *t = tab_current(b);
        unsigned id = t->id;
        bool loaded;
        WaitArgs w;
        int r;

        if (!p)
                return -ENOMEM;
        t->loaded = false;
        r = call_or_fail(b, t->session_id, "Page.reload", p, NULL, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        r = tab_wait_loaded(b, id, BROWSER_LOAD_TIMEOUT_USEC, &loaded);
        if (r < 0)
                return r;
        wait_args_get(args, &w);
        return answer_after(b, "Reloaded", &w, loaded, true, ret);
}

/* Answers a JS result that is {lines: [...]} plus a header, cut at BROWSER_TEXT_MAX. */
static int answer_lines(const char *header, json_object *lines, const char *none, McpToolResult *ret) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0, n = json_object_is_type(lines, json_type_array) ? json_object_array_length(lines) : 0;
        bool cut = false;
        FILE *f;

        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        fputs(strempty(header), f);
        if (n == 0)
                fputs(none, f);
        for (size_t i = 0; i < n; i++) {
                fflush(f);
                if (len >= BROWSER_TEXT_MAX) {
                        cut = true;
                        break;
                }
                fprintf(f, "%s\n", json_object_get_string(json_object_array_get_idx(lines, i)));
        }
        if (cut)
                fprintf(f, "(cut: the answer reached %u bytes)\n", BROWSER_TEXT_MAX);
        if (fclose(f) != 0)
                return -ENOMEM;
        free(ret->text);
        ret->text = TAKE_PTR(text);
        ret->is_error = false;
        return 0;
}

static int tool_read_page(Browser *b, json_object *args, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *a = NULL, *v = NULL;
        _cleanup_free_ char *header = NULL;
        const char *filter = mcp_arg_string(args, "filter") ?: "interactive";
        json_object *lines;
        int r;

        a = params_new("filter", json_object_new_string(filter), "max", json_object_new_int(READ_PAGE_ELEMENTS_MAX), NULL);
        if (!a)
                return -ENOMEM;
        r = tab_run(b, tab_current(b),
                    "(a) => { const out = []; const all = a.filter === 'all';\n"
                    "  for (const e of document.body ? document.body.querySelectorAll('*') : []) {\n"
                    "    if (out.length >= a.max) break;\n"
                    "    const key = interactive(e) || /^H[1-6]$/.test(e.tagName) || (e.tagName === 'IMG' && e.alt);\n"
                    "    if (!key && !all) continue;\n"
                    "    if (!visible(e)) continue;\n"
                    "    if (key) out.push(describe(e));\n"
                    "    else if ([...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))\n"
                    "      out.push('text \"' + clip(e.innerText, 200) + '\"');\n"
                    "  }\n"
                    "  return {url: location.href, title: document.title, lines: out}; }",
                    a, &v, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        r = strprintf(&header, "Page: %s\nURL: %s\n", strna(json_str(v, "title")), strna(json_str(v, "url")));
        if (r < 0)
                return r;
        json_object_object_get_ex(v, "lines", &lines);
        return answer_lines(header, lines, "(no interactive elements)\n", ret);
}

static int tool_find(Browser *b, json_object *args, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *a = NULL, *v = NULL;
        json_object *m;
        int r;

        a = params_new("query", json_object_new_string(mcp_arg_string(args, "query")),
                       "max", json_object_new_int(json_object_object_get_ex(args, "max_results", &m) ?
                                                  json_object_get_int(m) : (int) FIND_RESULTS_DEFAULT), NULL);
        if (!a)
                return -ENOMEM;
        r = tab_run(b, tab_current(b),
                    "(a) => { const words = a.query.toLowerCase().split(/\\s+/).filter(Boolean); const out = [];\n"
                    "  const hay = e => [nameOf(e), e.id, e.getAttribute('name'), e.getAttribute('placeholder'),\n"
                    "    typeof e.className === 'string' ? e.className : '', e.tagName.toLowerCase(), roleOf(e)].join(' ').toLowerCase();\n"
                    "  const all = document.body ? [...document.body.querySelectorAll('*')] : [];\n"
                    "  for (const e of all) { if (out.length >= a.max) break;\n"
                    "    if (!(interactive(e) || /^H[1-6]$/.test(e.tagName) || e.tagName === 'IMG' || e.tagName === 'LABEL')) continue;\n"
                    "    if (visible(e) && words.every(w => hay(e).includes(w))) out.push(describe(e)); }\n"
                    "  if (out.length === 0) for (const e of all) { if (out.length >= a.max) break;\n"
                    "    if (![...e.childNodes].some(n => n.nodeType === 3 && words.every(w => n.textContent.toLowerCase().includes(w)))) continue;\n"
                    "    if (visible(e)) out.push(describe(e)); }\n"
                    "  return out; }",
                    a, &v, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        return answer_lines(NULL, v, "No element matches\n", ret);
}

static int tool_get_page_text(Browser *b, json_object *args, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *v = NULL;
        json_object *m;
        size_t max = json_object_object_get_ex(args, "max_chars", &m) ? (size_t) json_object_get_int64(m) : BROWSER_TEXT_MAX;
        const char *text;
        int r;

        r = tab_run(b, tab_current(b), "() => ({url: location.href, title: document.title, "
                    "text: document.body ? document.body.innerText : ''})", NULL, &v, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        text = json_str(v, "text") ?: "";
        return mcp_result_printf(ret, false, "Page: %s\nURL: %s\n\n%.*s%s", strna(json_str(v, "title")),
                                 strna(json_str(v, "url")), (int) MIN(max, (size_t) BROWSER_TEXT_MAX), text,
                                 strlen(text) > max ? "\n(cut)" : "");
}

static int tool_form_input(Browser *b, json_object *args, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *a = NULL, *v = NULL;
        const char *ref = mcp_arg_string(args, "ref"), *selector = mcp_arg_string(args, "selector");
        json_object *value;
        int r;

        if (!ref == !selector)
                return mcp_result_printf(ret, true, "Give either ref or selector");
        json_object_object_get_ex(args, "value", &value);
        a = params_new("ref", ref ? json_object_new_string(ref) : NULL,
                       "selector", selector ? json_object_new_string(selector) : NULL,
                       "value", json_object_get(value), NULL);
        if (!a)
                return -ENOMEM;
        r = tab_run(b, tab_current(b),
                    "(a) => { const e = findEl(a); if (!e) return {error: 'No element matches ' + (a.ref ? 'ref ' + a.ref : 'selector ' + a.selector)};\n"
                    "  const v = a.value; e.scrollIntoView({block: 'center', behavior: 'instant'});\n"
                    "  if (e.tagName === 'SELECT') { const o = [...e.options].find(o => o.value === String(v) || o.text.trim() === String(v));\n"
                    "    if (!o) return {error: 'The select has no option ' + JSON.stringify(String(v))}; e.value = o.value; }\n"
                    "  else if (e.tagName === 'INPUT' && (e.type === 'checkbox' || e.type === 'radio'))\n"
                    "    e.checked = v === true || v === 'true' || v === 'on' || v === 1;\n"
                    "  else if (e.tagName === 'INPUT' || e.tagName === 'TEXTAREA') {\n"
                    "    const d = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(e), 'value');\n"
                    "    if (d && d.set) d.set.call(e, String(v ?? '')); else e.value = String(v ?? ''); }\n"
                    "  else if (e.isContentEditable) e.textContent = String(v ?? '');\n"
                    "  else return {error: 'The element is not a form field: ' + e.tagName.toLowerCase()};\n"
                    "  e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true}));\n"
                    "  return {ok: describe(e)}; }",
                    a, &v, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        if (json_str(v, "error"))
                return mcp_result_printf(ret, true, "%s", json_str(v, "error"));
        return mcp_result_printf(ret, false, "Set %s", strna(json_str(v, "ok")));
}

static int tool_evaluate(Browser *b, json_object *args, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *v = NULL;
        const char *s;
        int r;

        r = tab_evaluate(b, tab_current(b), mcp_arg_string(args, "expression"), &v, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        s = v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : "undefined";
        return mcp_result_printf(ret, false, "%.*s%s", (int) BROWSER_TEXT_MAX, s,
                                 strlen(s) > BROWSER_TEXT_MAX ? "\n(cut)" : "");
}

static int tab_json(Browser *b, Tab *t, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = params_new(
                "tab_id", json_object_new_int((int) t->id),
                "url", json_object_new_string(strempty(t->url)),
                "title", json_object_new_string(strempty(t->title)),
                "active", json_object_new_boolean(t->id == b->current), NULL);
        if (!o)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

/* URLs and titles as Chrome has them now (Target.targetInfoChanged does not come for every change). */
static int tabs_refresh(Browser *b, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *targets = NULL;
        json_object *infos;
        int r;

        r = call_or_fail(b, NULL, "Target.getTargets", NULL, &targets, ret);
        if (r != 0)
                return r;
        if (!json_object_object_get_ex(targets, "targetInfos", &infos) || !json_object_is_type(infos, json_type_array))
                return 0;
        for (size_t i = 0; i < json_object_array_length(infos); i++) {
                json_object *info = json_object_array_get_idx(infos, i);
                Tab *t = tab_by_target(b, json_str(info, "targetId"));
                char *url, *title;

                if (!t)
                        continue;
                url = strdup_cut(json_str(info, "url"), BROWSER_LOG_TEXT_MAX);
                title = strdup_cut(json_str(info, "title"), BROWSER_LOG_TEXT_MAX);
                if (!url || !title) {
                        free(url);
                        free(title);
                        return -ENOMEM;
                }
                free(t->url);
                free(t->title);
                t->url = url;
                t->title = title;
        }
        return 0;
}

static int tool_list_tabs(Browser *b, json_object *args _unused_, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *a = json_object_new_array();
        int r;

        if (!a)
                return -ENOMEM;
        r = tabs_refresh(b, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        for (size_t i = 0; i < b->n_tabs; i++) {
                json_object *o;
                if (b->tabs[i].gone)
                        continue;
                r = tab_json(b, &b->tabs[i], &o);
                if (r < 0)
                        return r;
                r = json_push(a, o);
                if (r < 0)
                        return r;
        }
        return mcp_result_printf(ret, false, "%s", json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN |
                                                                                      JSON_C_TO_STRING_NOSLASHESCAPE));
}

static int tab_activate(Browser *b, Tab *t, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *p = params_new("targetId", json_object_new_string(t->target_id), NULL);
        int r;

        if (!p)
                return -ENOMEM;
        r = call_or_fail(b, NULL, "Target.activateTarget", p, NULL, ret);
        if (r != 0)
                return r;
        b->current = t->id;
        return 0;
}

static int tool_new_tab(Browser *b, json_object *args, McpToolResult *ret) {
        _cleanup_free_ char *url = NULL, *what = NULL;
        const char *u = mcp_arg_string(args, "url");
        unsigned id;
        WaitArgs w;
        int r;

        if (u) {
                r = url_allowed(b, u, &url, ret);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        if (b->n_tabs >= BROWSER_TABS_MAX)
                return mcp_result_printf(ret, true, "Too many tabs are open (at most %u): close one first", BROWSER_TABS_MAX);
        r = tab_create(b, &id, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        r = tab_activate(b, tab_by_id(b, id), ret);
        if (r != 0)
                return r < 0 ? r : 0;
        wait_args_get(args, &w);
        if (url && !streq(url, "about:blank"))
                return navigate_to(b, tab_by_id(b, id), url, &w, ret);
        r = strprintf(&what, "Opened tab %u", id);
        if (r < 0)
                return r;
        return answer_after(b, what, &w, true, true, ret);
}

static int tab_arg(Browser *b, json_object *args, bool required, Tab **ret_tab, McpToolResult *ret) {
        json_object *v;
        Tab *t;

        if (!json_object_object_get_ex(args, "tab_id", &v)) {
                if (required)
                        return mcp_result_printf(ret, true, "tab_id is required") ?: 1;
                t = tab_current(b);
        } else
                t = tab_by_id(b, (unsigned) json_object_get_int64(v));
        if (!t)
                return mcp_result_printf(ret, true, "There is no tab %" PRId64 " (list_tabs shows the open ones)",
                                         v ? json_object_get_int64(v) : (int64_t) 0) ?: 1;
        *ret_tab = t;
        return 0;
}

static int tool_switch_tab(Browser *b, json_object *args, McpToolResult *ret) {
        _cleanup_free_ char *what = NULL;
        WaitArgs w = {};
        Tab *t;
        int r;

        r = tab_arg(b, args, true, &t, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        r = tab_activate(b, t, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        r = strprintf(&what, "Switched to tab %u", t->id);
        if (r < 0)
                return r;
        return answer_after(b, what, &w, true, true, ret);
}

static int tool_close_tab(Browser *b, json_object *args, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *p = NULL;
        unsigned id, now_id;
        Tab *t;
        int r;

        r = tab_arg(b, args, false, &t, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        id = t->id;
        if (b->n_tabs == 1) {
                /* the browser keeps one tab: a blank one replaces the last */
                r = tab_create(b, &now_id, ret);
                if (r != 0)
                        return r < 0 ? r : 0;
                t = tab_by_id(b, id);
        }
        p = params_new("targetId", json_object_new_string(t->target_id), NULL);
        if (!p)
                return -ENOMEM;
        r = call_or_fail(b, NULL, "Target.closeTarget", p, NULL, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        t = tab_by_id(b, id);
        if (t)
                tab_remove(b, t);
        t = tab_current(b);
        if (t) {
                r = tab_activate(b, t, ret);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        return mcp_result_printf(ret, false, "Closed tab %u; the current tab is %u", id, b->current);
}

static int tool_page_info(Browser *b, json_object *args _unused_, McpToolResult *ret) {
        _cleanup_(json_object_putp) json_object *v = NULL;
        Tab *t = tab_current(b);
        int r;

        r = tab_run(b, t, "() => ({url: location.href, title: document.title, ready_state: document.readyState, "
                    "viewport: {width: innerWidth, height: innerHeight}, scroll: {x: scrollX, y: scrollY}, "
                    "document: {width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight}})",
                    NULL, &v, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        if (!json_object_is_type(v, json_type_object))
                return mcp_result_printf(ret, true, "The page answered no information");
        r = json_add(v, "tab_id", json_object_new_int((int) t->id));
        if (r < 0)
                return r;
        return mcp_result_printf(ret, false, "%s", json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
                                                                                      JSON_C_TO_STRING_NOSLASHESCAPE));
}

static int tool_resize_window(Browser *b, json_object *args, McpToolResult *ret) {
        json_object *w, *h;
        unsigned ow = b->width, oh = b->height;
        int r;

        json_object_object_get_ex(args, "width", &w);
        json_object_object_get_ex(args, "height", &h);
        b->width = (unsigned) json_object_get_int(w);
        b->height = (unsigned) json_object_get_int(h);
        for (size_t i = 0; i < b->n_tabs; i++) {
                if (b->tabs[i].gone)
                        continue;
                r = tab_apply_viewport(b, &b->tabs[i]);
                if (r < 0 && r != -EPROTO) {
                        b->width = ow;
                        b->height = oh;
                        return r;
                }
        }
        return mcp_result_printf(ret, false, "Viewport resized to %ux%u", b->width, b->height);
}

static int tool_screenshot(Browser *b, json_object *args, McpToolResult *ret) {
        json_object *v;

        return do_screenshot(b, tab_current(b), json_object_object_get_ex(args, "full_page", &v) &&
                             json_object_get_boolean(v), ret);
}

static bool matches(const char *s, const char *pattern) {
        return !pattern || (s && strcasestr(s, pattern));
}

static int list_limit(json_object *args) {
        json_object *v;
        return json_object_object_get_ex(args, "limit", &v) ? json_object_get_int(v) : (int) LIST_DEFAULT;
}

/* Ends a listing written to f, the memstream of *text: "No WHAT in tab N" when it showed nothing; the text
 * becomes the tool's answer. */
static int listing_answer(FILE *f, char **text, size_t shown, const char *what, unsigned tab, McpToolResult *ret) {
        if (shown == 0)
                fprintf(f, "No %s in tab %u\n", what, tab);
        if (fclose(f) != 0)
                return -ENOMEM;
        free(ret->text);
        ret->text = TAKE_PTR(*text);
        ret->is_error = false;
        return 0;
}

/* Whether read_console_messages lists e: of tab, matching pattern, and an error when only errors are asked. */
static bool console_entry_listed(const ConsoleEntry *e, unsigned tab, const char *pattern, bool only_errors) {
        return e->tab == tab && matches(e->text, pattern) &&
               (!only_errors || streq_ptr(e->level, "error") || streq_ptr(e->level, "exception"));
}

static int tool_read_console_messages(Browser *b, json_object *args, McpToolResult *ret) {
        _cleanup_free_ char *text = NULL;
        const char *pattern = mcp_arg_string(args, "pattern");
        size_t len = 0, shown = 0, limit = (size_t) list_limit(args);
        json_object *v;
        bool only_errors = json_object_object_get_ex(args, "only_errors", &v) && json_object_get_boolean(v),
             clear = json_object_object_get_ex(args, "clear", &v) && json_object_get_boolean(v);
        Tab *t;
        FILE *f;
        int r;

        r = tab_arg(b, args, false, &t, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        /* the newest `limit` matching, printed oldest first */
        size_t start = b->console_count;
        for (size_t k = 0, n = 0; k < b->console_count && n < limit; k++) {
                ConsoleEntry *e = &b->console[(b->console_next + BROWSER_CONSOLE_MAX - 1 - k) % BROWSER_CONSOLE_MAX];
                if (console_entry_listed(e, t->id, pattern, only_errors)) {
                        n++;
                        start = k;
                }
        }
        for (size_t k = start + 1; k-- > 0;) {
                ConsoleEntry *e;
                if (k >= b->console_count)
                        continue;
                e = &b->console[(b->console_next + BROWSER_CONSOLE_MAX - 1 - k) % BROWSER_CONSOLE_MAX];
                if (console_entry_listed(e, t->id, pattern, only_errors)) {
                        fprintf(f, "[%s] %s%s%s%s\n", strna(e->level), strempty(e->text), e->source ? " (" : "",
                                strempty(e->source), e->source ? ")" : "");
                        shown++;
                }
        }
        r = listing_answer(f, &text, shown, "console messages", t->id, ret);
        if (r >= 0 && clear)
                for (size_t i = 0; i < BROWSER_CONSOLE_MAX; i++)
                        if (b->console[i].tab == t->id)
                                console_entry_done(&b->console[i]);
        return r;
}

static int tool_read_network_requests(Browser *b, json_object *args, McpToolResult *ret) {
        _cleanup_free_ char *text = NULL;
        const char *pattern = mcp_arg_string(args, "url_pattern");
        size_t len = 0, shown = 0, limit = (size_t) list_limit(args), start;
        json_object *v;
        bool clear = json_object_object_get_ex(args, "clear", &v) && json_object_get_boolean(v);
        Tab *t;
        FILE *f;
        int r;

        r = tab_arg(b, args, false, &t, ret);
        if (r != 0)
                return r < 0 ? r : 0;
        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        start = b->network_count;
        for (size_t k = 0, n = 0; k < b->network_count && n < limit; k++) {
                NetworkEntry *e = &b->network[(b->network_next + BROWSER_NETWORK_MAX - 1 - k) % BROWSER_NETWORK_MAX];
                if (e->tab == t->id && matches(e->url, pattern)) {
                        n++;
                        start = k;
                }
        }
        for (size_t k = start + 1; k-- > 0;) {
                NetworkEntry *e;
                if (k >= b->network_count)
                        continue;
                e = &b->network[(b->network_next + BROWSER_NETWORK_MAX - 1 - k) % BROWSER_NETWORK_MAX];
                if (e->tab != t->id || !matches(e->url, pattern))
                        continue;
                if (e->error)
                        fprintf(f, "%s %s failed (%s) [%s]\n", strna(e->method), strna(e->url), e->error, strna(e->type));
                else if (e->status > 0)
                        fprintf(f, "%s %s %d [%s]\n", strna(e->method), strna(e->url), e->status, strna(e->type));
                else
                        fprintf(f, "%s %s pending [%s]\n", strna(e->method), strna(e->url), strna(e->type));
                shown++;
        }
        r = listing_answer(f, &text, shown, "network requests", t->id, ret);
        if (r >= 0 && clear)
                for (size_t i = 0; i < BROWSER_NETWORK_MAX; i++)
                        if (b->network[i].tab == t->id)
                                network_entry_done(&b->network[i]);
        return r;
}

static int tool_computer(Browser *b, json_object *args, McpToolResult *ret) {
        const char *action = mcp_arg_string(args, "action"), *text = mcp_arg_string(args, "text");
        _cleanup_free_ char *what = NULL;
        Tab *t = tab_current(b);
        double x = 0, y = 0;
        json_object *v;
        WaitArgs w;
        int r;

        wait_args_get(args, &w);
        if (streq(action, "screenshot"))
                return do_screenshot(b, t, false, ret);

        if (streq(action, "click") || streq(action, "left_click") || streq(action, "right_click") ||
            streq(action, "double_click") || streq(action, "triple_click")) {
                int clicks = streq(action, "double_click") ? 2 : streq(action, "triple_click") ? 3 : 1;
                const char *button = streq(action, "right_click") ? "right" : "left";

                r = target_point(b, t, args, "coordinate", &x, &y, ret);
                if (r == 0)
                        r = mouse_click(b, t, x, y, button, clicks, ret);
        } else if (streq(action, "move") || streq(action, "hover")) {
                r = target_point(b, t, args, "coordinate", &x, &y, ret);
                if (r == 0)
                        r = mouse_event(b, t, "mouseMoved", x, y, "none", 0, 0, ret);
        } else if (streq(action, "left_click_drag")) {
                double sx, sy;
                json_object *s;

                if (!json_object_object_get_ex(args, "start_coordinate", &s) ||
                    !json_object_object_get_ex(args, "coordinate", &v))
                        return mcp_result_printf(ret, true, "left_click_drag needs start_coordinate and coordinate");
                sx = json_object_get_double(json_object_array_get_idx(s, 0));
                sy = json_object_get_double(json_object_array_get_idx(s, 1));
                x = json_object_get_double(json_object_array_get_idx(v, 0));
                y = json_object_get_double(json_object_array_get_idx(v, 1));
                r = mouse_event(b, t, "mouseMoved", sx, sy, "none", 0, 0, ret);
                if (r == 0)
                        r = mouse_event(b, t, "mousePressed", sx, sy, "left", 1, 1, ret);
                for (int i = 1; r == 0 && i <= DRAG_STEPS; i++)
                        r = mouse_event(b, t, "mouseMoved", sx + (x - sx) * i / DRAG_STEPS, sy + (y - sy) * i / DRAG_STEPS,
                                        "left", 0, 1, ret);
                if (r == 0)
                        r = mouse_event(b, t, "mouseReleased", x, y, "left", 1, 0, ret);
        } else if (streq(action, "type")) {
                _cleanup_(json_object_putp) json_object *p = NULL;

                if (!text)
                        return mcp_result_printf(ret, true, "type needs text");
                if (strlen(text) > BROWSER_TYPE_TEXT_MAX)
                        return mcp_result_printf(ret, true, "text is longer than %u bytes", BROWSER_TYPE_TEXT_MAX);
                if (mcp_arg_string(args, "ref") || mcp_arg_string(args, "selector")) {
                        /* focus the element first, by clicking it as a user would */
                        r = target_point(b, t, args, "coordinate", &x, &y, ret);
                        if (r == 0)
                                r = mouse_click(b, t, x, y, "left", 1, ret);
                        if (r != 0)
                                return r < 0 ? r : 0;
                }
                p = params_new("text", json_object_new_string(text), NULL);
                if (!p)
                        return -ENOMEM;
                r = call_or_fail(b, t->session_id, "Input.insertText", p, NULL, ret);
        } else if (streq(action, "key")) {
                _cleanup_free_ char *copy = NULL;
                BrowserKey keys[BROWSER_KEYS_MAX];
                unsigned mods[BROWSER_KEYS_MAX];
                char *saveptr = NULL;
                size_t n = 0;

                if (!text)
                        return mcp_result_printf(ret, true, "key needs text (\"Enter\", \"ctrl+a\", \"Tab Tab\")");
                copy = strdup(text);
                if (!copy)
                        return -ENOMEM;
                /* every combination is parsed before any is pressed */
                for (char *k = strtok_r(copy, " ", &saveptr); k; k = strtok_r(NULL, " ", &saveptr)) {
                        if (n >= BROWSER_KEYS_MAX)
                                return mcp_result_printf(ret, true, "At most %u keys at once", BROWSER_KEYS_MAX);
                        if (browser_key_parse(k, &keys[n], &mods[n]) < 0)
                                return mcp_result_printf(ret, true, "Unknown key \"%.64s\" (use names like Enter, Tab, "
                                                         "Escape, ArrowDown, ctrl+a, shift+Tab)", k);
                        n++;
                }
                r = 0;
                for (size_t i = 0; i < n && r == 0; i++)
                        r = key_press(b, t, &keys[i], mods[i], ret);
        } else if (streq(action, "scroll")) {
                const char *dir = mcp_arg_string(args, "scroll_direction") ?: "down";
                int amount = json_object_object_get_ex(args, "scroll_amount", &v) ? json_object_get_int(v) : SCROLL_AMOUNT_DEFAULT;
                double dx = 0, dy = 0;
                _cleanup_(json_object_putp) json_object *p = NULL;

                if (json_object_object_get_ex(args, "coordinate", &v) || mcp_arg_string(args, "ref") || mcp_arg_string(args, "selector")) {
                        r = target_point(b, t, args, "coordinate", &x, &y, ret);
                        if (r != 0)
                                return r < 0 ? r : 0;
                } else {
                        x = b->width / 2.0;
                        y = b->height / 2.0;
                }
                if (streq(dir, "up"))
                        dy = -amount * SCROLL_TICK_PX;
                else if (streq(dir, "down"))
                        dy = amount * SCROLL_TICK_PX;
                else if (streq(dir, "left"))
                        dx = -amount * SCROLL_TICK_PX;
                else
                        dx = amount * SCROLL_TICK_PX;
                p = params_new("type", json_object_new_string("mouseWheel"), "x", json_object_new_double(x),
                               "y", json_object_new_double(y), "deltaX", json_object_new_double(dx),
                               "deltaY", json_object_new_double(dy), NULL);
                if (!p)
                        return -ENOMEM;
                r = call_or_fail(b, t->session_id, "Input.dispatchMouseEvent", p, NULL, ret);
                if (r == 0) {
                        /* the wheel scrolls asynchronously: let a frame pass so the answer shows it */
                        _cleanup_(json_object_putp) json_object *ignored = NULL;
                        r = tab_evaluate(b, t, "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))", &ignored, ret);
                }
        } else if (streq(action, "scroll_to")) {
                _cleanup_(json_object_putp) json_object *a = NULL, *res = NULL;

                if (mcp_arg_string(args, "ref") || mcp_arg_string(args, "selector"))
                        r = target_point(b, t, args, "coordinate", &x, &y, ret);
                else if (json_object_object_get_ex(args, "coordinate", &v)) {
                        a = params_new("x", json_object_get(json_object_array_get_idx(v, 0)),
                                       "y", json_object_get(json_object_array_get_idx(v, 1)), NULL);
                        if (!a)
                                return -ENOMEM;
                        r = tab_run(b, t, "(a) => { window.scrollTo(a.x, a.y); return true; }", a, &res, ret);
                } else
                        return mcp_result_printf(ret, true, "scroll_to needs a ref, a selector or coordinate [x, y]");
        } else if (streq(action, "wait")) {
                if (!w.selector && !w.text) {
                        unsigned s = json_object_object_get_ex(args, "duration", &v) ? (unsigned) json_object_get_double(v) : 1;
                        r = cdp_pump(b->cdp, (uint64_t) MIN(s, BROWSER_SLEEP_MAX_S) * 1000000ULL);
                        if (r < 0)
                                return r;
                }
                r = 0;
        } else
                return mcp_result_printf(ret, true, "Unknown action %.64s", action);

        if (r != 0)
                return r < 0 ? r : 0;
        r = browser_sync(b);            /* a click may have opened or closed a tab */
        if (r < 0)
                return r;
        r = strprintf(&what, "Done: %s", action);
        if (r < 0)
                return r;
        return answer_after(b, what, &w, true, false, ret);
}

/* ---- the table ---- */

#define WAIT_PROPERTIES \
        "\"wait_for_selector\":{\"type\":\"string\",\"maxLength\":1000,\"description\":\"Afterwards, wait until a CSS selector matches\"}," \
        "\"wait_for_text\":{\"type\":\"string\",\"maxLength\":1000,\"description\":\"Afterwards, wait until the page shows this text\"}," \
        "\"wait_timeout_ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":60000,\"description\":\"How long to wait (default 10000, at most 60000), polled every 250 ms\"}"
#define TAB_ID_PROPERTY \
        "\"tab_id\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"The tab (list_tabs); default the current one\"}"
#define ELEMENT_PROPERTIES \
        "\"ref\":{\"type\":\"string\",\"maxLength\":64,\"description\":\"An element reference from read_page or find (ref_N)\"}," \
        "\"selector\":{\"type\":\"string\",\"maxLength\":1000,\"description\":\"A CSS selector (the first match)\"}"
#define COORDINATE(name, what) \
        "\"" name "\":{\"type\":\"array\",\"items\":{\"type\":\"number\",\"minimum\":0,\"maximum\":100000},\"minItems\":2,\"maxItems\":2,\"description\":\"" what "\"}"
#define SCHEMA(props, required) \
        "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" required "],\"additionalProperties\":false}"

const McpTool BROWSER_TOOLS[] = {
        { "navigate", "Open a URL (http or https) in the current tab and wait for it to load.",
          SCHEMA("\"url\":{\"type\":\"string\",\"maxLength\":8192,\"description\":\"The http(s) URL to open\"}," WAIT_PROPERTIES, "\"url\"") },
        { "read_page", "List the page's interactive elements (links, buttons, fields) and headings with a ref_N "
          "for each, their role, name, value and centre coordinates; filter all adds text blocks.",
          SCHEMA("\"filter\":{\"type\":\"string\",\"enum\":[\"interactive\",\"all\"],\"description\":\"interactive (default) or all\"}", "") },
        { "computer", "Use the mouse and keyboard on the current tab: click, right_click, double_click, triple_click, "
          "type, key, scroll, move, hover, screenshot, wait, left_click_drag, scroll_to. A point is coordinate [x, y] "
          "in CSS pixels of the viewport, or an element by ref or selector.",
          SCHEMA("\"action\":{\"type\":\"string\",\"enum\":[\"click\",\"left_click\",\"right_click\",\"double_click\",\"triple_click\","
                 "\"type\",\"key\",\"scroll\",\"move\",\"hover\",\"screenshot\",\"wait\",\"left_click_drag\",\"scroll_to\"]},"
                 COORDINATE("coordinate", "[x, y] to act on (drag: where to drop)") ","
                 COORDINATE("start_coordinate", "left_click_drag: [x, y] to start from") ","
                 ELEMENT_PROPERTIES ","
                 "\"text\":{\"type\":\"string\",\"maxLength\":65536,\"description\":\"type: the text; key: key names separated by blanks, e.g. Enter, ctrl+a, shift+Tab\"},"
                 "\"scroll_direction\":{\"type\":\"string\",\"enum\":[\"up\",\"down\",\"left\",\"right\"]},"
                 "\"scroll_amount\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"description\":\"Wheel ticks of 100 px (default 3)\"},"
                 "\"duration\":{\"type\":\"number\",\"minimum\":0,\"maximum\":60,\"description\":\"wait: seconds (default 1)\"},"
                 WAIT_PROPERTIES, "\"action\"") },
        { "form_input", "Set a form field's value (text, textarea, select option by value or text, checkbox or radio "
          "by true/false) and fire its input and change events.",
          SCHEMA(ELEMENT_PROPERTIES ",\"value\":{\"description\":\"The value: a string, or true/false for a checkbox\"}", "\"value\"") },
        { "screenshot", "Take a PNG screenshot of the current tab (the viewport, or the whole page).",
          SCHEMA("\"full_page\":{\"type\":\"boolean\",\"description\":\"The whole page instead of the viewport\"}", "") },
        { "go_back", "Go back one page in the current tab's history.", SCHEMA(WAIT_PROPERTIES, "") },
        { "go_forward", "Go forward one page in the current tab's history.", SCHEMA(WAIT_PROPERTIES, "") },
        { "reload", "Reload the current tab.",
          SCHEMA("\"ignore_cache\":{\"type\":\"boolean\"}," WAIT_PROPERTIES, "") },
        { "evaluate", "Run a JavaScript expression in the current tab and answer its value as JSON (promises are awaited).",
          SCHEMA("\"expression\":{\"type\":\"string\",\"maxLength\":1048576,\"description\":\"The JavaScript expression\"}", "\"expression\"") },
        { "list_tabs", "List the open tabs: tab_id, url, title and which one is active.", SCHEMA("", "") },
        { "new_tab", "Open a new tab (optionally at a URL) and make it the current one.",
          SCHEMA("\"url\":{\"type\":\"string\",\"maxLength\":8192}," WAIT_PROPERTIES, "") },
        { "switch_tab", "Make another tab the current one.",
          SCHEMA(TAB_ID_PROPERTY, "\"tab_id\"") },
        { "close_tab", "Close a tab (default the current one); the last tab is replaced by a blank one.",
          SCHEMA(TAB_ID_PROPERTY, "") },
        { "page_info", "The current tab's URL, title, load state, viewport and scroll position, as JSON.", SCHEMA("", "") },
        { "get_page_text", "The text of the current page as a reader sees it (innerText).",
          SCHEMA("\"max_chars\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":204800}", "") },
        { "find", "Find elements by words of their text, label, placeholder, name or id; answers refs as read_page does.",
          SCHEMA("\"query\":{\"type\":\"string\",\"maxLength\":1000},\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":200}", "\"query\"") },
        { "read_console_messages", "The console messages and uncaught exceptions of a tab, oldest first.",
          SCHEMA(TAB_ID_PROPERTY ",\"pattern\":{\"type\":\"string\",\"maxLength\":1000,\"description\":\"Only messages containing this\"},"
                 "\"only_errors\":{\"type\":\"boolean\"},\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":500},"
                 "\"clear\":{\"type\":\"boolean\",\"description\":\"Forget the tab's messages after answering\"}", "") },
        { "read_network_requests", "The network requests of a tab: method, URL, status or error, resource type.",
          SCHEMA(TAB_ID_PROPERTY ",\"url_pattern\":{\"type\":\"string\",\"maxLength\":1000,\"description\":\"Only URLs containing this\"},"
                 "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":500},"
                 "\"clear\":{\"type\":\"boolean\",\"description\":\"Forget the tab's requests after answering\"}", "") },
        { "resize_window", "Set the viewport size of every tab, in CSS pixels.",
          SCHEMA("\"width\":{\"type\":\"integer\",\"minimum\":100,\"maximum\":4096},"
                 "\"height\":{\"type\":\"integer\",\"minimum\":100,\"maximum\":4096}", "\"width\",\"height\"") },
};
const size_t BROWSER_TOOLS_COUNT = ELEMENTSOF(BROWSER_TOOLS);

_Static_assert(ELEMENTSOF(BROWSER_TOOLS) == 19, "the 19 tools of seed 001");

static const ToolFunc TOOL_FUNCS[] = {
        tool_navigate, tool_read_page, tool_computer, tool_form_input, tool_screenshot, tool_go_back,
        tool_go_forward, tool_reload, tool_evaluate, tool_list_tabs, tool_new_tab, tool_switch_tab,
        tool_close_tab, tool_page_info, tool_get_page_text, tool_find, tool_read_console_messages,
        tool_read_network_requests, tool_resize_window,
};
_Static_assert(ELEMENTSOF(TOOL_FUNCS) == ELEMENTSOF(BROWSER_TOOLS), "one function per tool, in the table's order");

/* ---- the browser ---- */

int browser_tool_call(Browser *b, const char *tool, json_object *args, McpToolResult *ret) {
        _cleanup_free_ char *reason = NULL;
        McpToolResult res = {};
        size_t i;
        int r;

        assert(b);
        assert(ret);

        for (i = 0; i < BROWSER_TOOLS_COUNT; i++)
                if (streq_ptr(BROWSER_TOOLS[i].name, tool))
                        break;
        if (i >= BROWSER_TOOLS_COUNT)
                r = mcp_result_printf(&res, true, "Unknown browser tool %.64s", strna(tool));
        else if (browser_args_check(BROWSER_TOOLS[i].input_schema, args, &reason) < 0)
                r = mcp_result_printf(&res, true, "Invalid arguments for %s: %s", tool, strna(reason));
        else {
                r = browser_sync(b);
                if (r >= 0 && !tab_current(b)) {
                        unsigned id;
                        r = tab_create(b, &id, &res);
                        if (r == 0)
                                b->current = id;
                }
                if (r == 0) {
                        log_debug("Browser: %s", tool);
                        r = TOOL_FUNCS[i](b, args, &res);
                }
                if (r > 0)
                        r = 0;
        }
        if (r >= 0 && !res.text)
                r = -ENOMEM;
        if (r < 0) {
                mcp_result_done(&res);
                return r;
        }
        *ret = res;
        return 0;
}

int browser_new(Cdp *cdp, const BrowserOptions *o, Browser **ret) {
        _cleanup_(browser_freep) Browser *b = NULL;
        _cleanup_(json_object_putp) json_object *p = NULL, *targets = NULL;
        json_object *infos;
        int r;

        assert(cdp);
        assert(ret);
        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->cdp = cdp;
        b->width = BROWSER_VIEWPORT_WIDTH_DEFAULT;
        b->height = BROWSER_VIEWPORT_HEIGHT_DEFAULT;
        if (o) {
                if (o->screenshots_dir) {
                        b->screenshots_dir = strdup(o->screenshots_dir);
                        if (!b->screenshots_dir)
                                return -ENOMEM;
                }
                if (o->screenshots_dir_in_container) {
                        b->screenshots_dir_in_container = strdup(o->screenshots_dir_in_container);
                        if (!b->screenshots_dir_in_container)
                                return -ENOMEM;
                }
                b->url_check = o->url_check;
                b->userdata = o->userdata;
        }
        cdp_set_event_handler(cdp, browser_on_event, b);

        /* with its events: Chrome's own record that a download was asked for and cancelled */
        p = params_new("behavior", json_object_new_string("deny"), "eventsEnabled", json_object_new_boolean(true), NULL);
        if (!p)
                return -ENOMEM;
        r = cdp_call(cdp, NULL, "Browser.setDownloadBehavior", p, BROWSER_CALL_TIMEOUT_USEC, NULL, NULL);
        if (r < 0)
                return log_debug_errno(r, "Browser.setDownloadBehavior failed: %m");
        json_object_put(TAKE_PTR(p));

        p = params_new("discover", json_object_new_boolean(true), NULL);
        if (!p)
                return -ENOMEM;
        r = cdp_call(cdp, NULL, "Target.setDiscoverTargets", p, BROWSER_CALL_TIMEOUT_USEC, NULL, NULL);
        if (r < 0)
                return r;

        /* the pages open now; later ones come as Target.targetCreated */
        r = cdp_call(cdp, NULL, "Target.getTargets", NULL, BROWSER_CALL_TIMEOUT_USEC, &targets, NULL);
        if (r < 0)
                return r;
        if (json_object_object_get_ex(targets, "targetInfos", &infos) && json_object_is_type(infos, json_type_array))
                for (size_t i = 0; i < json_object_array_length(infos); i++) {
                        json_object *info = json_object_array_get_idx(infos, i);

                        if (streq_ptr(json_str(info, "type"), "page") && json_str(info, "targetId")) {
                                r = tab_attach(b, json_str(info, "targetId"));
                                if (r < 0)
                                        return r;
                        }
                }
        r = browser_sync(b);
        if (r < 0)
                return r;
        if (b->n_tabs == 0) {
                McpToolResult res = {};
                unsigned id;

                r = tab_create(b, &id, &res);
                free(res.text);
                if (r != 0)
                        return r < 0 ? r : -EIO;
                b->current = id;
        }
        *ret = TAKE_PTR(b);
        return 0;
}

Browser *browser_free(Browser *b) {
        if (!b)
                return NULL;
        if (b->cdp)
                cdp_set_event_handler(b->cdp, NULL, NULL);
        for (size_t i = 0; i < b->n_tabs; i++) {
                /* our sessions go, the tabs stay (a Browser made again on the same Chrome finds them) */
                _cleanup_(json_object_putp) json_object *p = NULL;

                if (b->cdp && b->tabs[i].session_id && !cdp_is_closed(b->cdp)) {
                        p = params_new("sessionId", json_object_new_string(b->tabs[i].session_id), NULL);
                        if (p)
                                (void) cdp_send(b->cdp, NULL, "Target.detachFromTarget", p);
                }
                tab_done(&b->tabs[i]);
        }
        for (size_t i = 0; i < b->n_close_targets; i++)
                free(b->close_targets[i]);
        for (size_t i = 0; i < b->n_attach_targets; i++)
                free(b->attach_targets[i]);
        for (size_t i = 0; i < BROWSER_CONSOLE_MAX; i++)
                console_entry_done(&b->console[i]);
        for (size_t i = 0; i < BROWSER_NETWORK_MAX; i++)
                network_entry_done(&b->network[i]);
        free(b->screenshots_dir);
        free(b->screenshots_dir_in_container);
        return mfree(b);
}
