/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What loop-gate@ tells the channel's webhook about a request that waits for a human: one JSON object
 * (event "gate-pending", the id to answer with, channel, container, kind, target, message, rule,
 * timeout_sec, and a "text" line for chat webhooks that show only that). Target and message are escaped
 * for display and cut at display_max bytes: they come from the container. */

#include <stddef.h>
#include <stdint.h>

#include "gate-approval.h"

/* *ret is the body, NUL-terminated; -ENOMEM when any part of it cannot be made (never a body with a
 * field missing). */
int gate_webhook_body(const char *channel, const GatePending *p, uint64_t timeout_sec, size_t display_max,
                      char **ret);
