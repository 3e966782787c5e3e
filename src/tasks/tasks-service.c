/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "audit.h"
#include "log.h"
#include "queue.h"
#include "tasks-service.h"
#include "tasks-store.h"
#include "tasks-timer.h"
#include "time-util.h"
#include "string-util.h"

/* ---- answers ---- */

static int answer_error(json_object **ret, const char *format, ...) _printf_(2, 3);
static int answer_error(json_object **ret, const char *format, ...) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        _cleanup_free_ char *text = NULL;
        va_list ap;
        int k;

        va_start(ap, format);
        k = vasprintf(&text, format, ap);
        va_end(ap);
        if (k < 0 || !o ||
            json_object_object_add(o, "ok", json_object_new_boolean(false)) < 0 ||
            json_object_object_add(o, "error", json_object_new_string(text)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int answer_task(json_object **ret, const Task *t, const char *extra_key, const char *extra_value) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        json_object *j;

        if (!o || task_to_json(t, &j) < 0)
                return -ENOMEM;
        if (json_object_object_add(o, "ok", json_object_new_boolean(true)) < 0 ||
            json_object_object_add(o, "task", j) < 0)
                return -ENOMEM;
        if (extra_key && json_object_object_add(o, extra_key, json_object_new_string(extra_value)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

/* ---- records ---- */

static void task_journal(const TasksContext *ctx, AuditEvent e, int priority, const char *id, const Task *t,
                         const char *change, const char *format, ...) _printf_(7, 8);
static void task_journal(const TasksContext *ctx, AuditEvent e, int priority, const char *id, const Task *t,
                         const char *change, const char *format, ...) {
        _cleanup_free_ char *message = NULL, *f_task = NULL, *f_actor = NULL, *f_type = NULL, *f_schedule = NULL,
                           *f_change = NULL;
        char *extra[6] = {};
        size_t n = 0;
        va_list ap;
        int k;

        va_start(ap, format);
        k = vasprintf(&message, format, ap);
        va_end(ap);
        if (k < 0)
                return;
        if (id && asprintf(&f_task, "LOOP_TASK=%s", id) >= 0)
                extra[n++] = f_task;
        if (asprintf(&f_actor, "LOOP_ACTOR=%s", ctx->actor) >= 0)
                extra[n++] = f_actor;
        if (t && asprintf(&f_type, "LOOP_TASK_TYPE=%s", task_type_to_string(t->type)) >= 0)
                extra[n++] = f_type;
        if (t && t->schedule && asprintf(&f_schedule, "LOOP_TASK_SCHEDULE=%s", t->schedule) >= 0)
                extra[n++] = f_schedule;
        if (change && asprintf(&f_change, e == AUDIT_TASK_REFUSED ? "LOOP_REASON=%s" : "LOOP_CHANGE=%s", change) >= 0)
                extra[n++] = f_change;
        AuditFields f = { .channel = ctx->channel, .extra = extra };
        (void) audit_log(e, priority, &f, "%s", message);
}

/* A refusal: journaled, and the same reason to the caller. */
static int refuse(const TasksContext *ctx, json_object **ret, const char *id, const char *reason) {
        task_journal(ctx, AUDIT_TASK_REFUSED, LOG_NOTICE, id, NULL, reason, "Task request of %s for channel %s refused: %s",
                     ctx->actor, ctx->channel, reason);
        return answer_error(ret, "%s", reason);
}

/* ---- arguments ---- */

/* The string member key: 1 and *ret when present, 0 when absent, -EINVAL when not a string. */
static int arg_string(json_object *args, const char *key, const char **ret) {
        json_object *v;

        if (!json_object_object_get_ex(args, key, &v) || json_object_is_type(v, json_type_null)) {
                *ret = NULL;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return -EINVAL;
        *ret = json_object_get_string(v);
        /* an embedded NUL would cut the text short where we look and not where the agent meant */
        if (strlen(*ret) != (size_t) json_object_get_string_len(v))
                return -EINVAL;
        return 1;
}

static int arg_bool(json_object *args, const char *key, bool *ret) {
        json_object *v;

        if (!json_object_object_get_ex(args, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_boolean))
                return -EINVAL;
        *ret = json_object_get_boolean(v);
        return 1;
}

static const char *prompt_check(const TasksContext *ctx, const char *prompt) {
        if (isempty(prompt))
                return "the prompt is empty";
        if (strlen(prompt) > MIN(ctx->limits.prompt_max, (uint64_t) TASKS_PROMPT_MAX))
                return "the prompt is larger than this channel allows (tasks.prompt_max)";
        return NULL;
}

static const char *name_check(const char *name) {
        if (!name)
                return NULL;
        if (strlen(name) > TASKS_NAME_MAX)
                return "the name is longer than 128 bytes";
        for (const char *p = name; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return "the name contains control characters";
        return NULL;
}

/* ---- timers ---- */

/* Makes the timer of t again; a failure is told to the caller (the record stays: the next restore tries
 * again). */
static int timer_apply(const TasksContext *ctx, const Task *t, char **ret_warning) {
        _cleanup_free_ char *error = NULL;
        int r;

        if (!ctx->bus)
                return 0;
        r = task_timer_apply(ctx->bus, ctx->channel, t, &error);
        if (r < 0) {
                log_warning("Cannot make the timer of task %s of channel %s: %s", t->id, ctx->channel, strna(error));
                if (ret_warning)
                        (void) asprintf(ret_warning, "the task is recorded, but its timer could not be made: %s", strna(error));
        }
        return r;
}

/* ---- operations ---- */

static int load_or_refuse(const TasksContext *ctx, int dir_fd, json_object *args, Task **ret_task, json_object **ret) {
        const char *id;
        int r;

        if (arg_string(args, "id", &id) <= 0)
                return answer_error(ret, "id (a task id, 8 hexadecimal digits) is required"), 0;
        r = task_load_at(dir_fd, id, ret_task);
        if (r == -ENOENT)
                /* another channel's id is just as unknown here: its files are in another directory */
                return answer_error(ret, "no task %s in this channel", task_id_valid(id) ? id : "with that id"), 0;
        if (r < 0)
                return answer_error(ret, "task %s cannot be read: %s", id, strerror(-r)), 0;
        return 1;
}

static int op_schedule(const TasksContext *ctx, int dir_fd, json_object *args, json_object **ret) {
        _cleanup_(task_freep) Task *t = NULL;
        _cleanup_free_ char *warning = NULL;
        const char *type_s, *schedule, *prompt, *name, *reason;
        Task **all = NULL;
        size_t n = 0;
        bool enabled = true;
        TaskType type;
        int r;

        if (arg_string(args, "type", &type_s) <= 0 || (type = task_type_from_string(type_s)) < 0)
                return refuse(ctx, ret, NULL, "type must be one of cron, interval, once, manual");
        if (arg_string(args, "schedule", &schedule) < 0 || arg_string(args, "prompt", &prompt) < 0 ||
            arg_string(args, "name", &name) < 0 || arg_bool(args, "enabled", &enabled) < 0)
                return refuse(ctx, ret, NULL, "schedule, prompt and name are strings, enabled a boolean");
        if ((reason = prompt_check(ctx, prompt)) || (reason = name_check(name)))
                return refuse(ctx, ret, NULL, reason);
        if (type != TASK_MANUAL && isempty(schedule))
                return refuse(ctx, ret, NULL, "schedule is required: a cron expression, a duration such as 5m, or an RFC 3339 time");

        r = tasks_list_at(dir_fd, &all, &n);
        if (r < 0)
                return answer_error(ret, "the channel's tasks cannot be read: %s", strerror(-r));
        task_list_free(all, n);
        if (n >= MIN(ctx->limits.max, (uint64_t) TASKS_PER_CHANNEL_MAX))
                return refuse(ctx, ret, NULL, "this channel has as many tasks as it may have (tasks.max): cancel one first");

        t = calloc(1, sizeof(Task));
        if (!t)
                return -ENOMEM;
        r = task_set_schedule(t, type, schedule, ctx->limits.min_interval_sec, clock_usec(CLOCK_REALTIME), &reason);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return refuse(ctx, ret, NULL, reason ?: "the schedule is not valid");
        for (unsigned i = 0;; i++) {
                Task *other;
                r = task_id_generate(t->id);
                if (r < 0)
                        return answer_error(ret, "no task id can be made: %s", strerror(-r));
                if (task_load_at(dir_fd, t->id, &other) < 0)
                        break;
                task_free(other);
                if (i > 16)
                        return answer_error(ret, "no free task id");
        }
        t->prompt = strdup(prompt);
        t->name = name ? strdup(name) : NULL;
        t->created_by = strdup(ctx->actor);
        if (!t->prompt || (name && !t->name) || !t->created_by)
                return -ENOMEM;
        t->enabled = enabled;
        t->created_usec = t->updated_usec = clock_usec(CLOCK_REALTIME);

        r = task_save_at(dir_fd, t);
        if (r < 0)
                return answer_error(ret, "the task cannot be recorded: %s", strerror(-r));
        (void) timer_apply(ctx, t, &warning);
        task_journal(ctx, AUDIT_TASK_CREATED, LOG_INFO, t->id, t, NULL, "Task %s (%s %s) of channel %s scheduled by %s.",
                     t->id, task_type_to_string(t->type), strempty(t->schedule), ctx->channel, ctx->actor);
        return answer_task(ret, t, warning ? "warning" : NULL, warning);
}

static int op_list(const TasksContext *ctx, int dir_fd, json_object **ret) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object(), *a = json_object_new_array();
        Task **all = NULL;
        size_t n = 0;
        int r;

        if (!o || !a)
                return -ENOMEM;
        r = tasks_list_at(dir_fd, &all, &n);
        if (r < 0)
                return answer_error(ret, "the channel's tasks cannot be read: %s", strerror(-r));
        for (size_t i = 0; i < n; i++) {
                json_object *j;
                if (task_to_json(all[i], &j) < 0 || json_object_array_add(a, j) < 0) {
                        task_list_free(all, n);
                        return -ENOMEM;
                }
        }
        task_list_free(all, n);
        if (json_object_object_add(o, "ok", json_object_new_boolean(true)) < 0 ||
            json_object_object_add(o, "tasks", TAKE_PTR(a)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int op_cancel(const TasksContext *ctx, int dir_fd, json_object *args, json_object **ret) {
        _cleanup_(task_freep) Task *t = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = load_or_refuse(ctx, dir_fd, args, &t, ret);
        if (r <= 0)
                return r;
        /* the timer first: a task whose file is gone must not fire again */
        if (ctx->bus && (r = task_timer_remove(ctx->bus, ctx->channel, t->id, &error)) < 0)
                return answer_error(ret, "the timer of task %s cannot be stopped: %s", t->id, strna(error));
        r = task_remove_at(dir_fd, t->id);
        if (r < 0 && r != -ENOENT)
                return answer_error(ret, "task %s cannot be removed: %s", t->id, strerror(-r));
        task_journal(ctx, AUDIT_TASK_REMOVED, LOG_INFO, t->id, t, NULL, "Task %s of channel %s cancelled by %s.",
                     t->id, ctx->channel, ctx->actor);
        return answer_task(ret, t, "status", "cancelled");
}

static int op_edit(const TasksContext *ctx, int dir_fd, json_object *args, json_object **ret) {
        _cleanup_(task_freep) Task *t = NULL;
        _cleanup_free_ char *warning = NULL, *change = NULL;
        const char *type_s, *schedule, *prompt, *name, *reason;
        TaskType type;
        int r;

        r = load_or_refuse(ctx, dir_fd, args, &t, ret);
        if (r <= 0)
                return r;
        if (arg_string(args, "type", &type_s) < 0 || arg_string(args, "schedule", &schedule) < 0 ||
            arg_string(args, "prompt", &prompt) < 0 || arg_string(args, "name", &name) < 0)
                return refuse(ctx, ret, t->id, "type, schedule, prompt and name are strings");
        if (!type_s && !schedule && !prompt && !name)
                return refuse(ctx, ret, t->id, "nothing to change: give type, schedule, prompt or name");
        type = type_s ? task_type_from_string(type_s) : t->type;
        if (type < 0)
                return refuse(ctx, ret, t->id, "type must be one of cron, interval, once, manual");
        if (prompt && (reason = prompt_check(ctx, prompt)))
                return refuse(ctx, ret, t->id, reason);
        if ((reason = name_check(name)))
                return refuse(ctx, ret, t->id, reason);
        if (type_s || schedule) {
                if (type != TASK_MANUAL && !schedule && type != t->type)
                        return refuse(ctx, ret, t->id, "a new type needs its schedule");
                r = task_set_schedule(t, type, type == TASK_MANUAL ? NULL : (schedule ?: t->schedule),
                                      ctx->limits.min_interval_sec, clock_usec(CLOCK_REALTIME), &reason);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return refuse(ctx, ret, t->id, reason ?: "the schedule is not valid");
        }
        if (prompt && free_and_strdup(&t->prompt, prompt) < 0)
                return -ENOMEM;
        if (name && free_and_strdup(&t->name, name) < 0)
                return -ENOMEM;
        t->updated_usec = clock_usec(CLOCK_REALTIME);
        r = task_save_at(dir_fd, t);
        if (r < 0)
                return answer_error(ret, "the task cannot be recorded: %s", strerror(-r));
        (void) timer_apply(ctx, t, &warning);
        if (asprintf(&change, "edited%s%s%s%s", type_s ? " type" : "", schedule ? " schedule" : "",
                     prompt ? " prompt" : "", name ? " name" : "") < 0)
                return -ENOMEM;
        task_journal(ctx, AUDIT_TASK_CHANGED, LOG_INFO, t->id, t, change, "Task %s of channel %s %s by %s.",
                     t->id, ctx->channel, change, ctx->actor);
        return answer_task(ret, t, warning ? "warning" : NULL, warning);
}

static int op_toggle(const TasksContext *ctx, int dir_fd, json_object *args, json_object **ret) {
        _cleanup_(task_freep) Task *t = NULL;
        _cleanup_free_ char *warning = NULL;
        bool enabled;
        int r;

        r = load_or_refuse(ctx, dir_fd, args, &t, ret);
        if (r <= 0)
                return r;
        enabled = !t->enabled;
        if (arg_bool(args, "enabled", &enabled) < 0)
                return refuse(ctx, ret, t->id, "enabled is a boolean");
        if (t->done && enabled)
                return refuse(ctx, ret, t->id, "the task ran once already; give it a new time with edit");
        t->enabled = enabled;
        t->updated_usec = clock_usec(CLOCK_REALTIME);
        r = task_save_at(dir_fd, t);
        if (r < 0)
                return answer_error(ret, "the task cannot be recorded: %s", strerror(-r));
        (void) timer_apply(ctx, t, &warning);
        task_journal(ctx, AUDIT_TASK_CHANGED, LOG_INFO, t->id, t, enabled ? "enabled" : "disabled",
                     "Task %s of channel %s %s by %s.", t->id, ctx->channel, enabled ? "enabled" : "disabled", ctx->actor);
        return answer_task(ret, t, warning ? "warning" : NULL, warning);
}

/* run (by hand) and fire (by the timer): the prompt into the channel's queue, as `loop send` would. */
static int op_fire(const TasksContext *ctx, int dir_fd, json_object *args, bool by_timer, json_object **ret) {
        _cleanup_(task_freep) Task *t = NULL;
        _cleanup_(queue_freep) Queue *q = NULL;
        _cleanup_free_ char *queue_id = NULL, *f_task = NULL, *f_actor = NULL;
        int r;

        r = load_or_refuse(ctx, dir_fd, args, &t, ret);
        if (r <= 0)
                return r;
        if (by_timer && (!t->enabled || t->done))
                return answer_error(ret, "task %s is %s: not queued", t->id, t->done ? "done" : "disabled");

        r = queue_open(ctx->state_dir, true, &q);
        if (r >= 0)
                r = queue_push_task(q, t->prompt, NULL, t->id, &queue_id);
        if (r < 0) {
                log_error_errno(r, "Cannot queue the prompt of task %s of channel %s: %m", t->id, ctx->channel);
                return answer_error(ret, "the prompt cannot be queued: %s", strerror(-r));
        }
        t->last_fired_usec = clock_usec(CLOCK_REALTIME);
        t->fired_count++;
        if (by_timer && t->type == TASK_ONCE) {
                t->done = true;
                t->enabled = false;
        }
        r = task_save_at(dir_fd, t);
        if (r < 0)
                log_warning_errno(r, "Cannot record the firing of task %s, ignoring: %m", t->id);

        if (asprintf(&f_task, "LOOP_TASK=%s", t->id) >= 0 && asprintf(&f_actor, "LOOP_ACTOR=%s", ctx->actor) >= 0) {
                char *extra[] = { f_task, f_actor, NULL };
                AuditFields f = { .channel = ctx->channel, .message_id = queue_id, .extra = extra };
                (void) audit_log(AUDIT_TASK_FIRED, LOG_INFO, &f, "Task %s of channel %s %s: message %s queued.", t->id,
                                 ctx->channel, by_timer ? "fired" : "run by hand", queue_id);
        }
        return answer_task(ret, t, "queue_id", queue_id);
}

int tasks_request(const TasksContext *ctx, const char *op, json_object *args, json_object **ret_answer) {
        _cleanup_(json_object_putp) json_object *empty = NULL;
        _cleanup_close_ int dir_fd = -EBADF;
        int r;

        if (!args) {
                args = empty = json_object_new_object();
                if (!args)
                        return -ENOMEM;
        }
        if (!json_object_is_type(args, json_type_object))
                return answer_error(ret_answer, "args must be an object");

        r = tasks_dir_open(ctx->state_dir, true, &dir_fd);
        if (r < 0) {
                log_error_errno(r, "Cannot open the tasks directory of channel %s: %m", ctx->channel);
                return answer_error(ret_answer, "the channel's tasks cannot be opened: %s", strerror(-r));
        }
        /* one change at a time per channel: the cap and every read-modify-write hold */
        r = tasks_dir_lock(dir_fd);
        if (r < 0)
                return answer_error(ret_answer, "the channel's tasks cannot be locked: %s", strerror(-r));

        if (streq_ptr(op, "schedule"))
                return op_schedule(ctx, dir_fd, args, ret_answer);
        if (streq_ptr(op, "list"))
                return op_list(ctx, dir_fd, ret_answer);
        if (streq_ptr(op, "show")) {
                _cleanup_(task_freep) Task *t = NULL;
                r = load_or_refuse(ctx, dir_fd, args, &t, ret_answer);
                return r <= 0 ? r : answer_task(ret_answer, t, NULL, NULL);
        }
        if (streq_ptr(op, "cancel"))
                return op_cancel(ctx, dir_fd, args, ret_answer);
        if (streq_ptr(op, "edit"))
                return op_edit(ctx, dir_fd, args, ret_answer);
        if (streq_ptr(op, "toggle"))
                return op_toggle(ctx, dir_fd, args, ret_answer);
        if (streq_ptr(op, "run") || streq_ptr(op, "fire")) {
                if (!ctx->operator)
                        return refuse(ctx, ret_answer, NULL, "only the operator runs tasks by hand");
                return op_fire(ctx, dir_fd, args, streq(op, "fire"), ret_answer);
        }
        return answer_error(ret_answer, "unknown operation; one of schedule, list, show, cancel, edit, toggle");
}

/* The directory's change time: a helper's write (a rename into it) moves it. */
static int dir_stamp(int dir_fd, struct timespec *ret) {
        struct stat st;

        if (fstat(dir_fd, &st) < 0)
                return -errno;
        *ret = st.st_mtim;
        return 0;
}

int tasks_stamp(const char *state_dir, struct timespec *ret) {
        _cleanup_close_ int dir_fd = -EBADF;
        int r;

        r = tasks_dir_open(state_dir, false, &dir_fd);
        if (r == -ENOENT) {
                *ret = (struct timespec) {};
                return 0;
        }
        return r < 0 ? r : dir_stamp(dir_fd, ret);
}

/* The tasks whose file says a calendar event or interval their schedule does not (or one under the
 * channel's minimum), and those beyond the channel's tasks.max (oldest first), are dropped from all: no
 * timer is made for them, and the one they have is removed. The files are the helper's, and the helper
 * talks to the agent. Returns the number kept. */
static size_t tasks_drop_unchecked(const TasksContext *ctx, Task **all, size_t n) {
        uint64_t max = MIN(ctx->limits.max, (uint64_t) TASKS_PER_CHANNEL_MAX);
        size_t kept = 0;

        for (size_t i = 0; i < n; i++) {
                const char *reason;

                if (kept >= max)
                        reason = "the channel has more tasks than it may have (tasks.max)";
                else if (task_schedule_check(all[i], ctx->limits.min_interval_sec, &reason) >= 0) {
                        all[kept++] = all[i];
                        continue;
                }
                task_journal(ctx, AUDIT_TASK_REFUSED, LOG_WARNING, all[i]->id, NULL, reason,
                             "Task %s of channel %s gets no timer: %s.", all[i]->id, ctx->channel, strna(reason));
                task_free(all[i]);
        }
        return kept;
}

int tasks_restore(const TasksContext *ctx) {
        _cleanup_close_ int dir_fd = -EBADF;
        unsigned total = 0;
        int r;

        if (!ctx->bus)
                return -ENOTCONN;
        r = tasks_dir_open(ctx->state_dir, false, &dir_fd);
        if (r == -ENOENT)
                return tasks_timers_sync(ctx->bus, ctx->channel, NULL, 0, NULL);
        if (r < 0)
                return r;

        /* A path unit does not start its service again for changes made while the service runs: so
         * the pass is repeated until the files stayed as they were during one whole pass. */
        for (unsigned pass = 0; pass < TASKS_SYNC_PASSES_MAX; pass++) {
                struct timespec before = {}, after = {};
                Task **all = NULL;
                size_t n = 0;
                unsigned changed = 0;

                /* Under the channel's lock, as every change of its tasks: a pass that read the files before
                 * an operator's change must not undo the timer that change made after it. */
                r = tasks_dir_lock(dir_fd);
                if (r < 0)
                        return r;
                r = dir_stamp(dir_fd, &before);
                if (r >= 0)
                        r = tasks_list_at(dir_fd, &all, &n);
                if (r >= 0)
                        n = tasks_drop_unchecked(ctx, all, n);
                if (r >= 0) {
                        r = tasks_timers_sync(ctx->bus, ctx->channel, all, n, &changed);
                        task_list_free(all, n);
                }
                (void) flock(dir_fd, LOCK_UN);
                if (r < 0)
                        return r;
                total += changed;
                r = dir_stamp(dir_fd, &after);
                if (r < 0)
                        return r;
                if (before.tv_sec == after.tv_sec && before.tv_nsec == after.tv_nsec)
                        break;
        }
        return (int) MIN(total, (unsigned) INT_MAX);
}
