/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The rules of scheduled tasks, in one place for both callers: loop-tasks@NAME (the agent's `loop mcp`,
 * authenticated by its container's token) and `loop task` (the operator, root). Each request acts on the
 * channel of its context only; it validates (type, schedule, prompt size, the channel's cap and minimum
 * interval), records the task file, makes the timer again, journals the change (LOOP_EVENT=task-*,
 * LOOP_TASK=, LOOP_ACTOR=) and answers:
 *
 *   {"ok": true, "task": {...}} | {"ok": true, "tasks": [...]} | {"ok": false, "error": "why"}
 *
 * Operations (args is a JSON object):
 *   schedule  type, schedule (not for manual), prompt, name?, enabled? (default true)
 *   list      -
 *   show      id
 *   cancel    id
 *   edit      id, and any of type, schedule, prompt, name
 *   toggle    id, enabled? (absent: flipped)
 *   run       id (operator only): queue the prompt now, whatever the type
 *   fire      id (the task's timer, operator only): queue the prompt if the task is enabled; a once task
 *             is then done */

#include <json-c/json.h>
#include <stdbool.h>
#include <time.h>
#include <systemd/sd-bus.h>

#include "config.h"

#define TASKS_REQUEST_MAX (TASKS_PROMPT_MAX_HARD + 64U * 1024U)
#define TASKS_PROMPT_MAX_HARD (1024U * 1024U)
#define TASKS_SYNC_PASSES_MAX 100U             /* of tasks_restore(), while the files keep changing */

typedef struct TasksContext {
        const char *channel;
        const char *state_dir;          /* the channel's: STATE/NAME (tasks/ and the queue below it) */
        TasksConfig limits;
        const char *actor;              /* "container:NAME" or "operator:USER": who, in every record */
        bool operator;                  /* may run and fire */
        sd_bus *bus;                    /* the system bus; NULL: no timers are made (no systemd) */
} TasksContext;

/* Answers op; returns 0 with *ret_answer, or -ENOMEM. */
int tasks_request(const TasksContext *ctx, const char *op, json_object *args, json_object **ret_answer);

/* Makes the channel's timers agree with its task files (tasks_timers_sync()): at boot, and whenever the
 * helper changed a file (loop-tasks-sync@NAME.path). Returns the number of timers changed. */
int tasks_restore(const TasksContext *ctx);
/* The modification time of the channel's tasks directory (a write of the helper, a rename into it,
 * moves it); all zero when there is none yet. */
int tasks_stamp(const char *state_dir, struct timespec *ret);
