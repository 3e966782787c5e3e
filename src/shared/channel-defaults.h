/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* The defaults of the channel settings that loop-generator hands to a helper service in a drop-in
 * (Environment=): one table for the three places that must agree on them. The config schema fills a key
 * the channel leaves out with these (config-schema.c); the service takes them when its variable is unset
 * (services/loop-gate.c, loop-tasks.c, loop-browser.c); and the generator writes no drop-in for a service
 * whose settings are all these (generator.c), which is what keeps a default channel to a handful of
 * files. A value changed here changes all three. */

/* gates.approval_timeout_sec, gates.rate_limits.*, gates.audit.verbose: loop-gate@.service */
#define CHANNEL_GATE_APPROVAL_TIMEOUT_SEC_DEFAULT 300U
#define CHANNEL_GATE_RATE_TOTAL_DEFAULT 500U
#define CHANNEL_GATE_RATE_PENDING_DEFAULT 30U
#define CHANNEL_GATE_RATE_PER_MINUTE_DEFAULT 60U
#define CHANNEL_GATE_AUDIT_VERBOSE_DEFAULT false

/* tasks.*: loop-tasks@.service (and `loop task`, which checks as the helper does) */
#define CHANNEL_TASKS_MAX_DEFAULT 50U
#define CHANNEL_TASKS_MIN_INTERVAL_SEC_DEFAULT 60U
#define CHANNEL_TASKS_PROMPT_MAX_DEFAULT (16U * 1024U)

/* browser.idle_timeout_sec: loop-browser@.service */
#define CHANNEL_BROWSER_IDLE_SEC_DEFAULT 300U
