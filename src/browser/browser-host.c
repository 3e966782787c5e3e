/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "browser-call.h"
#include "browser-host.h"
#include "browser-tools.h"
#include "cdp.h"
#include "gate-token.h"
#include "log.h"
#include "parse-util.h"
#include "socket-util.h"
#include "string-util.h"
#include "time-util.h"

struct BrowserHost {
        char *channel;
        char *cdp_socket;
        char *screenshots_dir, *screenshots_dir_in_container;
        EgressPolicy *policy;
        uint64_t chrome_wait_usec;

        pthread_mutex_t lock;           /* one call at a time: the tools share Chrome's tabs */
        const char *caller;             /* under lock: the container of the call under way */
        int cdp_fd;
        Cdp *cdp;
        Browser *browser;
};

static void host_disconnect(BrowserHost *h) {
        h->browser = browser_free(h->browser);
        h->cdp = cdp_free(h->cdp);
        h->cdp_fd = safe_close(h->cdp_fd);
}

BrowserHost *browser_host_free(BrowserHost *h) {
        if (!h)
                return NULL;
        host_disconnect(h);
        pthread_mutex_destroy(&h->lock);
        egress_policy_free(h->policy);
        free(h->channel);
        free(h->cdp_socket);
        free(h->screenshots_dir);
        free(h->screenshots_dir_in_container);
        return mfree(h);
}

int browser_host_new(const BrowserHostConfig *c, BrowserHost **ret) {
        _cleanup_(browser_host_freep) BrowserHost *h = NULL;

        h = calloc(1, sizeof *h);
        if (!h)
                return -ENOMEM;
        h->cdp_fd = -EBADF;
        pthread_mutex_init(&h->lock, NULL);
        h->chrome_wait_usec = c->chrome_wait_usec ?: BROWSER_HOST_CHROME_WAIT_USEC_DEFAULT;
        if (!(h->channel = strdup(c->channel)) || !(h->cdp_socket = strdup(c->cdp_socket)) ||
            (c->screenshots_dir && !(h->screenshots_dir = strdup(c->screenshots_dir))) ||
            (c->screenshots_dir_in_container && !(h->screenshots_dir_in_container = strdup(c->screenshots_dir_in_container))))
                return -ENOMEM;
        h->policy = c->policy;
        *ret = TAKE_PTR(h);
        return 0;
}

int browser_host_url_check(const EgressPolicy *policy, const char *url, char **ret_reason) {
        _cleanup_free_ char *host = NULL, *normal = NULL, *port_text = NULL, *scheme = NULL, *path = NULL;
        const EgressRule *rule;
        EgressScheme s;
        CURLU *u;
        uint16_t port;
        int r;

        u = curl_url();
        if (!u)
                return -ENOMEM;
        if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
                curl_url_cleanup(u);
                return asprintf(ret_reason, "\"%s\" is not a URL", url) < 0 ? -ENOMEM : -EINVAL;
        }
        if (!streq(scheme, "http") && !streq(scheme, "https")) {
                curl_url_cleanup(u);
                return asprintf(ret_reason, "%s: URLs are refused (only http and https reach the web, through the "
                                "channel's egress gateway)", scheme) < 0 ? -ENOMEM : -EPERM;
        }
        s = streq(scheme, "https") ? EGRESS_SCHEME_HTTPS : EGRESS_SCHEME_HTTP;
        if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_PORT, &port_text, CURLU_DEFAULT_PORT) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
                curl_url_cleanup(u);
                return asprintf(ret_reason, "\"%s\" has no host", url) < 0 ? -ENOMEM : -EINVAL;
        }
        curl_url_cleanup(u);
        if (!policy)
                return 0;
        r = egress_host_normalize(host, &normal);
        if (r < 0)
                return asprintf(ret_reason, "the host of \"%s\" is not one the egress gateway accepts", url) < 0 ? -ENOMEM : -EPERM;
        if (parse_port(port_text, &port) < 0)
                return asprintf(ret_reason, "the port of \"%s\" is invalid", url) < 0 ? -ENOMEM : -EINVAL;
        /* what the gateway sees: a plain request's method and path, or an opaque tunnel */
        rule = egress_policy_match(policy, s, normal, port, s == EGRESS_SCHEME_HTTP ? "GET" : NULL,
                                   s == EGRESS_SCHEME_HTTP ? path : NULL);
        if (rule->decision == EGRESS_DENY)
                return asprintf(ret_reason, "the channel's egress policy refuses %s://%s:%u (rule %s)",
                                scheme, normal, (unsigned) port, rule->id) < 0 ? -ENOMEM : -EPERM;
        return 0;
}

/* BrowserOptions.url_check, called during a tool call (under h->lock). */
static int host_url_check(const char *url, char **ret_reason, void *userdata) {
        BrowserHost *h = userdata;
        _cleanup_free_ char *reason = NULL, *field = NULL;
        int r;

        r = browser_host_url_check(h->policy, url, &reason);
        if (r >= 0)
                return 0;
        if (r == -ENOMEM)
                return r;
        if (asprintf(&field, "LOOP_URL=%s", url) >= 0) {
                char *extra[] = { (char *) "LOOP_DECISION=deny", field, NULL };
                AuditFields f = { .channel = h->channel, .container_name = h->caller, .extra = extra };
                (void) audit_log(AUDIT_BROWSER_REFUSED, LOG_WARNING, &f, "Browser of channel %s: %s refused: %s.",
                                 h->channel, url, reason);
        }
        *ret_reason = TAKE_PTR(reason);
        return -EPERM;
}

static int host_connect_once(BrowserHost *h) {
        return unix_connect(h->cdp_socket, 0, 0);
}

/* A live browser: the one we have, or a new connection to Chrome (waiting for its unit to bring the
 * bridge up, after a start or a restart). */
static int host_connect(BrowserHost *h) {
        uint64_t deadline = clock_usec(CLOCK_MONOTONIC) + h->chrome_wait_usec;
        int fd, r;

        /* what Chrome said while nobody asked (console, network) first, so the pipe never fills */
        if (h->browser && !cdp_is_closed(h->cdp) && cdp_pump(h->cdp, 0) >= 0)
                return 0;
        if (h->browser)
                log_notice("Chrome of channel %s went away; connecting again.", h->channel);
        host_disconnect(h);
        for (;;) {
                fd = host_connect_once(h);
                if (fd >= 0)
                        break;
                if ((fd != -ENOENT && fd != -ECONNREFUSED) || clock_usec(CLOCK_MONOTONIC) >= deadline)
                        return log_warning_errno(fd, "Cannot reach Chrome of channel %s at %s: %m", h->channel, h->cdp_socket);
                (void) usleep(BROWSER_HOST_CONNECT_RETRY_USEC);
        }
        h->cdp_fd = fd;
        r = cdp_new(fd, fd, &h->cdp);
        if (r < 0)
                return r;
        BrowserOptions o = {
                .screenshots_dir = h->screenshots_dir,
                .screenshots_dir_in_container = h->screenshots_dir_in_container,
                .url_check = host_url_check,
                .userdata = h,
        };
        r = browser_new(h->cdp, &o, &h->browser);
        if (r < 0) {
                log_warning_errno(r, "Cannot set up the browser of channel %s over CDP: %m", h->channel);
                host_disconnect(h);
                return r;
        }
        log_info("Connected to Chrome of channel %s.", h->channel);
        return 0;
}

static int host_call(BrowserHost *h, const char *container, const char *tool, json_object *args, McpToolResult *result) {
        int r;

        pthread_mutex_lock(&h->lock);
        h->caller = container;
        for (int attempt = 0; attempt < 2; attempt++) {
                r = host_connect(h);
                if (r < 0) {
                        r = mcp_result_printf(result, true, "The browser is not available: Chrome of channel %s does not "
                                              "answer (%s); see journalctl -u loop-chrome@%s.", h->channel, strerror(-r), h->channel);
                        break;
                }
                r = browser_tool_call(h->browser, tool, args, result);
                /* a Chrome that died since the last call: once more, against the restarted one */
                if (!cdp_is_closed(h->cdp) || attempt > 0)
                        break;
                mcp_result_done(result);
        }
        if (r >= 0 && !result->text)
                r = mcp_result_printf(result, true, "The browser gave no answer.");
        h->caller = NULL;
        pthread_mutex_unlock(&h->lock);
        return r;
}

int browser_host_handle(BrowserHost *h, const char *line, size_t size, char **ret_answer) {
        _cleanup_(browser_request_done) BrowserRequest req = {};
        _cleanup_free_ char *container = NULL, *tool_field = NULL;
        _cleanup_close_ int dir_fd = -EBADF;
        McpToolResult result = {};
        const char *reason;
        bool known = false;
        int r;

        r = browser_request_parse(line, size, &req, &reason);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return browser_answer_format_refusal(reason, ret_answer);

        r = loop_token_dir_open(h->channel, BROWSER_TOKENS_DIRNAME, &dir_fd);
        if (r < 0)
                log_error_errno(r, "Cannot open the browser token directory of channel %s: %m", h->channel);
        if (r < 0 || gate_token_find_at(dir_fd, req.token, &container) < 0) {
                char *extra[] = { (char *) "LOOP_REASON=token", (char *) "LOOP_DECISION=deny", NULL };
                AuditFields f = { .channel = h->channel, .extra = extra };
                (void) audit_log(AUDIT_BROWSER_REFUSED, LOG_WARNING, &f,
                                 "Browser call for channel %s without a valid container token, refused.", h->channel);
                return browser_answer_format_refusal("no valid token of this channel: only the channel's own containers "
                                                     "may use its browser", ret_answer);
        }
        for (size_t i = 0; i < BROWSER_TOOLS_COUNT; i++)
                known = known || streq(BROWSER_TOOLS[i].name, req.tool);
        if (!known)
                return browser_answer_format_refusal("unknown tool", ret_answer);

        r = host_call(h, container, req.tool, req.args, &result);
        if (r < 0) {
                mcp_result_done(&result);
                result.is_error = true;
                if (r == -ENOMEM || !(result.text = strdup("internal error")))
                        return -ENOMEM;
        }
        if (asprintf(&tool_field, "LOOP_TOOL=%s", req.tool) >= 0) {
                char *extra[] = { tool_field, result.is_error ? (char *) "LOOP_RESULT=error" : (char *) "LOOP_RESULT=ok", NULL };
                AuditFields f = { .channel = h->channel, .container_name = container, .container_type = "agent", .extra = extra };
                (void) audit_log(AUDIT_BROWSER_ACTION, result.is_error ? LOG_NOTICE : LOG_INFO, &f,
                                 "Browser of channel %s: %s by %s%s.", h->channel, req.tool, container,
                                 result.is_error ? " failed" : "");
        }
        r = browser_answer_format(&result, ret_answer);
        mcp_result_done(&result);
        return r;
}
