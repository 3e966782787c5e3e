/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One channel's browser as the host side (loop-browser@) holds it, over a CDP connection to its Chrome,
 * and the 19 MCP tools of seed 001 on it: navigate, read_page, computer, form_input, screenshot, go_back,
 * go_forward, reload, evaluate, list_tabs, new_tab, switch_tab, close_tab, page_info, get_page_text, find,
 * read_console_messages, read_network_requests, resize_window.
 *
 * Tabs are Chrome's page targets, attached in flat mode (auto-attach, so pages the page opens are tabs
 * too), each given a small number (tab_id) for the agent. Console messages and network requests are kept
 * from CDP events in bounded rings. Downloads are denied when the browser is set up.
 *
 * Every navigation the agent asks for (navigate, new_tab with a url, go_back/go_forward to an entry) is
 * checked first: the URL must be http(s) or exactly about:blank (browser_url_check(); file:, chrome:,
 * data:, javascript:, view-source: ... are refused), then the channel's policy (BrowserOptions.url_check)
 * decides. Navigations the page makes itself are Chrome's own business: it does not let web content open
 * file:, chrome: or top-level data: URLs, and its network goes through the channel's egress gateway. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "cdp.h"
#include "mcp-server.h"

#define BROWSER_TABS_MAX 32U                    /* more tabs are refused (new_tab) or closed (popups) */
#define BROWSER_CONSOLE_MAX 500U                /* console messages kept, all tabs */
#define BROWSER_NETWORK_MAX 500U                /* network requests kept, all tabs */
#define BROWSER_LOG_TEXT_MAX 2000U              /* one console message, one URL as kept */
#define BROWSER_URL_MAX 8192U
#define BROWSER_TEXT_MAX (200U * 1024U)         /* get_page_text, read_page, find, evaluate answers */
#define BROWSER_TYPE_TEXT_MAX (64U * 1024U)     /* computer type */
#define BROWSER_KEYS_MAX 64U                    /* key combinations in one computer key */
#define BROWSER_WAIT_DEFAULT_MS 10000U
#define BROWSER_WAIT_MAX_MS 60000U
#define BROWSER_WAIT_POLL_MS 250U
#define BROWSER_SLEEP_MAX_S 60U                 /* computer wait's duration */
#define BROWSER_CALL_TIMEOUT_USEC (30U * 1000000ULL)
#define BROWSER_LOAD_TIMEOUT_USEC (30U * 1000000ULL)
#define BROWSER_VIEWPORT_MIN 100U
#define BROWSER_VIEWPORT_MAX 4096U
#define BROWSER_VIEWPORT_WIDTH_DEFAULT 1280U
#define BROWSER_VIEWPORT_HEIGHT_DEFAULT 800U
#define BROWSER_COORDINATE_MAX 100000U
#define BROWSER_SCREENSHOT_HEIGHT_MAX 16384U    /* a full-page screenshot is cut here */
/* screenshot files kept on the host's disk: the oldest go beyond either cap (the newest always stays) */
#define BROWSER_SCREENSHOTS_KEEP 100U
#define BROWSER_SCREENSHOTS_BYTES_MAX (256U * 1024U * 1024U)
#define BROWSER_SCREENSHOTS_SCAN_MAX 4096U      /* files of the directory looked at for that */

typedef struct BrowserOptions {
        /* where screenshot files go on the host, created 0644 with O_EXCL|O_NOFOLLOW by the process that
         * calls browser_tool_call() (it must be able to write there, the agent to read); the oldest are
         * removed beyond BROWSER_SCREENSHOTS_KEEP files or BROWSER_SCREENSHOTS_BYTES_MAX bytes; NULL: screenshots are answered as MCP image content (McpToolResult.image, PNG) */
        const char *screenshots_dir;
        /* the same directory as the agent sees it (answers name this path); NULL: screenshots_dir */
        const char *screenshots_dir_in_container;
        /* the channel's policy on a URL already normalised by browser_url_check(): 0 allowed, -EPERM
         * refused with *ret_reason (owned by the caller, may stay NULL); any other error refuses too */
        int (*url_check)(const char *url, char **ret_reason, void *userdata);
        void *userdata;
} BrowserOptions;

typedef struct Browser Browser;

/* Sets up the browser on a connected CDP client (Downloads denied, page targets auto-attached; a blank
 * tab opened when there is none). cdp stays the caller's and must outlive the Browser; the Browser sets
 * itself as cdp's event handler. */
int browser_new(Cdp *cdp, const BrowserOptions *o, Browser **ret);
Browser *browser_free(Browser *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(Browser *, browser_free);

/* Runs one tool. 0 with *ret filled (owned by the caller: mcp_result_done(); a refusal or a failed action
 * is is_error with a clear text); < 0 when it could not answer at all: -ECONNRESET/-EPIPE when Chrome went
 * away (the caller frees the Browser and the Cdp, starts a new Chrome, makes new ones), -ENOMEM. An
 * unknown tool is an is_error result. Arguments are checked against the tool's schema here, so callers
 * may forward them unchecked. Every wait is bounded: a CDP call and a load at 30 s, an agent's wait at
 * 60 s (a page in an endless loop makes calls time out, error results). Only refusals are logged here
 * (info, "Browser: ..."); one record per call is the caller's. */
int browser_tool_call(Browser *b, const char *tool, json_object *args, McpToolResult *ret);

/* name, description and input_schema of the 19 tools; .call is NULL (loop mcp-browser forwards). */
extern const McpTool BROWSER_TOOLS[];
extern const size_t BROWSER_TOOLS_COUNT;

/* The scheme allow-list: url must be http:// or https:// with a host, or exactly about:blank; no blanks,
 * control characters or backslashes anywhere (Chrome would strip or reinterpret them after our check).
 * 0 and the URL with its scheme lower-cased in *ret_normalized; -EPERM with a reason in *ret_reason
 * (either out parameter may be NULL). */
int browser_url_check(const char *url, char **ret_normalized, char **ret_reason);

/* Checks a tool's arguments against its input schema (the subset our schemas use: type object,
 * properties with type string/integer/number/boolean/array, enum, minimum/maximum, maxLength, required,
 * additionalProperties false). 0, or -EINVAL with what is wrong in *ret_reason. */
int browser_args_check(const char *schema, json_object *args, char **ret_reason);

/* One key as CDP's Input.dispatchKeyEvent wants it. */
typedef struct BrowserKey {
        char key[16];           /* DOM KeyboardEvent.key ("Enter", "a") */
        char code[16];          /* DOM KeyboardEvent.code ("Enter", "KeyA") */
        int key_code;           /* windowsVirtualKeyCode */
        char text[4];           /* what it types, "" for none */
} BrowserKey;

#define BROWSER_MODIFIER_ALT 1U
#define BROWSER_MODIFIER_CTRL 2U
#define BROWSER_MODIFIER_META 4U
#define BROWSER_MODIFIER_SHIFT 8U

/* Parses one combination, "Enter", "ctrl+a", "shift+Tab", "ctrl+shift+ArrowLeft" (names case-insensitive,
 * xdotool's names accepted too: Return, Escape/esc, Page_Down, ...). 0 with the key (letters
 * upper-cased when shift is held) and the modifier bits, or -EINVAL. */
int browser_key_parse(const char *combo, BrowserKey *ret_key, unsigned *ret_modifiers);
