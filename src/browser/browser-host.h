/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The host side of a channel's browser (loop-browser@NAME): it answers the calls of `loop mcp-browser`
 * (browser-call.h) from the channel's containers, each authenticated by the container's token, and drives
 * the channel's Chrome over CDP through the bridge's socket (chrome-bridge.h), which only this service's
 * user can open. One Chrome, one CDP connection, one call at a time (the tools share the tabs).
 *
 * Chrome is not started here: loop-browser@NAME.service wants loop-chrome@NAME.service, so socket
 * activation (the first call) starts Chrome and the idle exit of this service stops it (BindsTo= on
 * Chrome's side). A Chrome that died is restarted by its unit; a call meanwhile waits for the bridge's
 * socket to come back (chrome_wait_usec), connects again and gets a fresh browser state.
 *
 * Every navigation's URL is checked against the channel's egress policy before Chrome sees it, so a
 * refused origin is a clear tool error and a journal record here (the gateway would refuse it anyway:
 * Chrome's only way out is the channel's relay and gateway). Every call is journaled
 * (LOOP_EVENT=browser-action, LOOP_TOOL=, LOOP_CONTAINER_NAME=). */

#include <stdint.h>

#include "egress-policy.h"
#include "macro.h"

#define BROWSER_HOST_CHROME_WAIT_USEC_DEFAULT (60ULL * 1000000ULL)
#define BROWSER_HOST_CONNECT_RETRY_USEC (100ULL * 1000ULL)

typedef struct BrowserHost BrowserHost;

typedef struct BrowserHostConfig {
        const char *channel;
        const char *cdp_socket;                         /* the bridge's socket on the host */
        const char *screenshots_dir;                    /* host dir for screenshot files; NULL: base64 only */
        const char *screenshots_dir_in_container;       /* where the agent sees it */
        EgressPolicy *policy;                           /* taken over; NULL: schemes only (no egress policy) */
        uint64_t chrome_wait_usec;                      /* 0: the default */
} BrowserHostConfig;

int browser_host_new(const BrowserHostConfig *c, BrowserHost **ret);
BrowserHost *browser_host_free(BrowserHost *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(BrowserHost *, browser_host_free);

/* The egress policy's verdict on url: 0 allowed, -EPERM with a reason (which rule refused what), -EINVAL
 * for a URL that cannot be parsed. Schemes other than http and https are refused here too. */
int browser_host_url_check(const EgressPolicy *policy, const char *url, char **ret_reason);

/* Serves one request line (browser-call.h) from a container: the answer line in *ret_answer. Returns 0,
 * or -ENOMEM. Thread-safe: calls are serialised. */
int browser_host_handle(BrowserHost *h, const char *line, size_t size, char **ret_answer);
