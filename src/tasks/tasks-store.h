/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The scheduled tasks of a channel, one JSON file each under STATE/NAME/tasks/ (STATE =
 * /var/lib/loop): tasks/ID.json, 0600 root, written atomically (temp file, fsync, rename, fsync of the
 * directory). The files are the truth; the timers (tasks-timer.h) are made from them, at each change and
 * at boot (`loop task restore`).
 *
 * Every change takes an exclusive lock on the directory (flock), so the helper's workers and the
 * operator's `loop task` never lose an update or break the per-channel cap. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"
#include "tasks-schedule.h"

#define TASK_ID_LEN 8U                          /* lowercase hex */
#define TASKS_DIRNAME "tasks"
/* A task file larger than this is neither written nor read: the largest prompt with every byte a control
 * character, which JSON writes as \u00XX (six bytes), and room for the other fields. */
#define TASKS_FILE_MAX (6U * TASKS_PROMPT_MAX + 64U * 1024U)
#define TASKS_PER_CHANNEL_MAX 1000U             /* hard ceiling of the configurable tasks.max */
#define TASKS_PROMPT_MAX (1024U * 1024U)        /* hard ceiling of tasks.prompt_max */
#define TASKS_NAME_MAX 128U                     /* a task's optional name (a label for humans) */
#define TASKS_ACTOR_MAX 256U

typedef struct Task {
        char id[TASK_ID_LEN + 1];
        char *name;                     /* optional label */
        TaskType type;
        char *schedule;                 /* as given: cron expression, duration, RFC 3339 time; NULL for manual */
        char *oncalendar;               /* cron, once: the OnCalendar= value */
        uint64_t interval_sec;          /* interval */
        char *prompt;
        bool enabled;
        bool done;                      /* a once task that fired */
        char *created_by;               /* "container:NAME" or "operator:USER" */
        uint64_t created_usec;
        uint64_t updated_usec;
        uint64_t last_fired_usec;       /* 0: never */
        uint64_t fired_count;
} Task;

Task *task_free(Task *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Task *, task_free);
void task_list_free(Task **l, size_t n);

bool task_id_valid(const char *id);
int task_id_generate(char ret[static TASK_ID_LEN + 1]);

/* Sets type, schedule and the derived oncalendar/interval_sec; -EINVAL with a reason the caller shows.
 * min_interval_sec: the channel's minimum; now_usec: a once time must lie ahead of it. */
int task_set_schedule(Task *t, TaskType type, const char *schedule, uint64_t min_interval_sec, uint64_t now_usec,
                      const char **ret_reason);
/* A task read back from its file, as the writer of the timers (root) takes it: the helper that wrote the
 * file talks to the agent and may have been taken over, so its calendar event and interval must be what its
 * schedule says, and no shorter than min_interval_sec. 0, or -EINVAL with the reason (static text). */
int task_schedule_check(const Task *t, uint64_t min_interval_sec, const char **ret_reason);

int task_to_json(const Task *t, json_object **ret);
int task_from_json(json_object *o, Task **ret);

/* STATE/NAME/tasks, made 0700 when create. Refuses a directory writable by group or others (-EPERM). */
int tasks_dir_open(const char *state_dir, bool create, int *ret_fd);
/* flock(LOCK_EX) on the directory, released by closing the fd. */
int tasks_dir_lock(int dir_fd);

int task_load_at(int dir_fd, const char *id, Task **ret);         /* -ENOENT when there is no such task */
int task_save_at(int dir_fd, const Task *t);
int task_remove_at(int dir_fd, const char *id);                   /* -ENOENT when there is none */
/* Every readable task, oldest first (at most TASKS_PER_CHANNEL_MAX + a margin are looked at). */
int tasks_list_at(int dir_fd, Task ***ret, size_t *ret_n);
