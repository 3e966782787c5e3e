/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The gate's webhook: a notice of each request pending a human's answer, POSTed as JSON to
 * gates.webhook_url (a chat's incoming webhook) by a child process, so that a slow or dead endpoint never
 * delays the gate's loop. The notice informs, it never decides: the answer comes through `loop gate`. */

#include <stdint.h>
#include <sys/types.h>

#include "gate-approval.h"

#define GATE_WEBHOOK_TIMEOUT_MS 5000L

/* The notice of p: {"event":"gate-pending","id":"CHANNEL/N-DIGEST","channel","container","kind","target",
 * "message","rule","timeout_sec","text"}, target and message escaped for display. */
int gate_webhook_body(const char *channel, const GatePending *p, uint64_t timeout_usec, char **ret);

/* POSTs body to url from a child process (http and https only, no redirects, GATE_WEBHOOK_TIMEOUT_MS):
 * *ret_pid exits 0 when the endpoint answered 2xx. The caller reaps it. */
int gate_webhook_spawn(const char *url, const char *body, pid_t *ret_pid);
