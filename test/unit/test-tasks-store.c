/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The rules of scheduled tasks (tasks_request() without a bus: files only) in a temp state dir. */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "tap.h"
#include "tasks-service.h"
#include "tasks-store.h"

static TasksContext ctx;

static json_object *req(const char *op, const char *args_json) {
        json_object *args = args_json ? json_tokener_parse(args_json) : NULL, *answer = NULL;
        int r = tasks_request(&ctx, op, args, &answer);
        json_object_put(args);
        return r < 0 ? NULL : answer;
}

static bool answer_ok(json_object *a) {
        json_object *v;
        return a && json_object_object_get_ex(a, "ok", &v) && json_object_get_boolean(v);
}

static const char *answer_error(json_object *a) {
        json_object *v;
        return a && json_object_object_get_ex(a, "error", &v) ? json_object_get_string(v) : "";
}

static const char *task_field(json_object *a, const char *key) {
        json_object *t, *v;
        return a && json_object_object_get_ex(a, "task", &t) && json_object_object_get_ex(t, key, &v) ?
                json_object_get_string(v) : NULL;
}

static size_t n_tasks(void) {
        json_object *a = req("list", NULL), *l;
        size_t n = a && json_object_object_get_ex(a, "tasks", &l) ? json_object_array_length(l) : (size_t) -1;
        json_object_put(a);
        return n;
}

/* tasks.min_interval_sec bounds how often a cron task fires as it bounds an interval task: a cron
 * expression was accepted whatever the minimum ("* * * * *" with an hour's minimum fired every minute). */
static void test_cron_min_interval(void) {
        static const struct {
                const char *cron;
                uint64_t min_sec;
                bool allowed;
        } cases[] = {
                { "* * * * *", 3600, false },
                { "*/30 * * * *", 3600, false },
                { "0,59 * * * *", 3600, false },          /* 0:59 to 1:00 */
                { "0 * * * *", 3600, true },
                { "* * * * *", 60, true },
                { "0 0 * * *", 2 * 86400, false },
                { "0 0 */2 * *", 2 * 86400, false },      /* the 31st, then the 1st */
                { "59 23 * * sun", 7 * 86400, true },
                { "59 23 * * sun,mon", 2 * 86400, false },
                { "0 0 * * mon", 7 * 86400, true },
                { "0 0 * * mon", 7 * 86400 + 1, false },
                { "0 0 29 2 *", 366 * 86400, true },      /* leap days: four years apart or eight */
                { "0 0,23 * * *", 3 * 3600, false },      /* 23:00 to midnight */
                { "* * * * 7/1", 3600, false },           /* every minute of Sundays, not "never" */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(task_freep) Task *t = calloc(1, sizeof(Task));
                const char *reason = NULL;
                int r = t ? task_set_schedule(t, TASK_CRON, cases[i].cron, cases[i].min_sec, 0, &reason) : -ENOMEM;

                if (cases[i].allowed)
                        ok(r == 0, "cron \"%s\" is allowed with a minimum interval of %" PRIu64 " s (%s)",
                           cases[i].cron, cases[i].min_sec, strna(reason));
                else
                        ok(r == -EINVAL && reason && strstr(reason, "min_interval_sec"),
                           "cron \"%s\" fires more often than a minimum interval of %" PRIu64 " s: refused (%s)",
                           cases[i].cron, cases[i].min_sec, strna(reason));
        }
}

/* A task file read back by the timers' writer (root): the helper that wrote it talks to the agent, so
 * what the file says its timer is (on_calendar, interval_sec) must be what its schedule says, and no shorter
 * than the channel's minimum. The sync made any calendar event or interval the file named. */
static void test_schedule_check(void) {
        static const struct {
                TaskType type;
                const char *schedule, *oncalendar;
                uint64_t interval_sec;
                bool allowed;
                const char *what;
        } cases[] = {
                { TASK_CRON, "*/5 * * * *", "*-*-* *:00,05,10,15,20,25,30,35,40,45,50,55:00", 0, true,
                  "a cron task as tasks_request() wrote it" },
                { TASK_CRON, "*/5 * * * *", "*-*-* *:*:*", 0, false, "a cron task rewritten to fire every second" },
                { TASK_CRON, "* * * * *", "*-*-* *:*:00", 0, false, "a cron task under the minimum interval" },
                { TASK_CRON, NULL, "*-*-* *:*:00", 0, false, "a cron task without a schedule" },
                { TASK_INTERVAL, "5m", NULL, 300, true, "an interval task as written" },
                { TASK_INTERVAL, "5m", NULL, 1, false, "an interval task whose interval_sec was rewritten to 1" },
                { TASK_INTERVAL, "1s", NULL, 1, false, "an interval task rewritten as a whole to 1s" },
                { TASK_ONCE, "2030-01-01T00:00:00Z", "2030-01-01 00:00:00 UTC", 0, true, "a once task as written" },
                { TASK_ONCE, "2030-01-01T00:00:00Z", "*-*-* *:*:*", 0, false, "a once task rewritten to fire every second" },
                { TASK_MANUAL, NULL, NULL, 0, true, "a manual task (no timer)" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Task t = { .type = cases[i].type, .schedule = (char *) cases[i].schedule,
                           .oncalendar = (char *) cases[i].oncalendar, .interval_sec = cases[i].interval_sec };
                const char *reason = NULL;
                int r = task_schedule_check(&t, 120, &reason);

                if (cases[i].allowed)
                        ok(r == 0, "%s gets its timer (%s)", cases[i].what, strna(reason));
                else
                        ok(r == -EINVAL && reason, "%s gets no timer: %s", cases[i].what, strna(reason));
        }
}

/* A once task fired, then edited (or cancelled and scheduled again) to a time a second ahead, fired again
 * and again: the agent's prompts queued every second or two whatever tasks.min_interval_sec said. */
static void test_once_min_interval(void) {
        const uint64_t at = UINT64_C(1893456000);       /* 2030-01-01T00:00:00Z */
        static const struct {
                uint64_t ahead_sec, min_sec;
                bool allowed;
        } cases[] = {
                { 1, 60, false },
                { 59, 60, false },
                { 60, 60, true },
                { 3600, 60, true },
                { 1, 0, true },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(task_freep) Task *t = calloc(1, sizeof(Task));
                const char *reason = NULL;
                int r = t ? task_set_schedule(t, TASK_ONCE, "2030-01-01T00:00:00Z", cases[i].min_sec,
                                              (at - cases[i].ahead_sec) * 1000000ULL, &reason) : -ENOMEM;

                if (cases[i].allowed)
                        ok(r == 0, "a once time %" PRIu64 " s ahead is allowed with a minimum interval of %" PRIu64 " s (%s)",
                           cases[i].ahead_sec, cases[i].min_sec, strna(reason));
                else
                        ok(r == -EINVAL && reason && strstr(reason, "min_interval_sec"),
                           "a once time %" PRIu64 " s ahead is refused with a minimum interval of %" PRIu64 " s (%s)",
                           cases[i].ahead_sec, cases[i].min_sec, strna(reason));
        }
}

/* A prompt of control characters is written escaped, six bytes for one: a prompt of tasks.prompt_max's
 * ceiling made a file larger than a task file may be to be read, so the task was recorded but never listed,
 * counted, shown or cancelled: tasks.max did not bound the files an agent could leave on the disk. */
static void test_escaped_prompt_counts(void) {
        char dir[] = "/tmp/test-tasks-escaped.XXXXXX";
        TasksContext saved = ctx;
        _cleanup_free_ char *prompt = malloc(TASKS_PROMPT_MAX);
        json_object *args, *a;
        int r;

        if (!prompt || !mkdtemp(dir))
                abort();
        memset(prompt, 0x01, TASKS_PROMPT_MAX);
        ctx = (TasksContext) { .channel = "demo", .state_dir = dir, .actor = "container:c1",
                               .limits = { .max = 1, .min_interval_sec = 60, .prompt_max = TASKS_PROMPT_MAX } };
        args = json_object_new_object();
        if (!args || json_object_object_add(args, "type", json_object_new_string("manual")) < 0 ||
            json_object_object_add(args, "prompt", json_object_new_string_len(prompt, (int) TASKS_PROMPT_MAX)) < 0)
                abort();
        a = NULL;
        r = tasks_request(&ctx, "schedule", args, &a);
        ok(r == 0 && answer_ok(a), "a task with a prompt of %u control characters is scheduled", TASKS_PROMPT_MAX);
        json_object_put(a);
        is_int(n_tasks(), 1, "...and listed (its file is read back)");
        a = NULL;
        r = tasks_request(&ctx, "schedule", args, &a);
        ok(r == 0 && !answer_ok(a) && strstr(answer_error(a), "tasks.max"), "...and counted: a second one is over tasks.max");
        json_object_put(a);
        json_object_put(args);
        {
                char cmd[64];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
                (void) !system(cmd);
        }
        ctx = saved;
}

int main(void) {
        char dir[] = "/tmp/test-tasks-store.XXXXXX";
        char id[TASK_ID_LEN + 1] = "", args[512];
        json_object *a;
        struct stat st;

        if (!mkdtemp(dir))
                return 1;
        ctx = (TasksContext) { .channel = "demo", .state_dir = dir, .actor = "container:c1",
                               .limits = { .max = 3, .min_interval_sec = 60, .prompt_max = 64 } };

        a = req("schedule", "{\"type\":\"cron\",\"schedule\":\"*/5 * * * *\",\"prompt\":\"check\"}");
        ok(answer_ok(a) && task_id_valid(task_field(a, "id")), "a cron task is scheduled with an id");
        if (answer_ok(a))
                snprintf(id, sizeof id, "%s", task_field(a, "id"));
        ok(streq_ptr(task_field(a, "on_calendar"), "*-*-* *:00,05,10,15,20,25,30,35,40,45,50,55:00"), "...with its OnCalendar=");
        ok(streq_ptr(task_field(a, "created_by"), "container:c1"), "...recording who made it");
        json_object_put(a);
        snprintf(args, sizeof args, "%s/tasks/%s.json", dir, id);
        ok(stat(args, &st) == 0 && (st.st_mode & 0777) == 0600, "the task file is %s, mode 0600", args);

        a = req("schedule", "{\"type\":\"interval\",\"schedule\":\"59s\",\"prompt\":\"x\"}");
        ok(!answer_ok(a) && strstr(answer_error(a), "min_interval_sec"), "an interval below the minimum is refused");
        json_object_put(a);
        a = req("schedule", "{\"type\":\"interval\",\"schedule\":\"1m\",\"prompt\":\"0123456789012345678901234567890123456789012345678901234567890123456789\"}");
        ok(!answer_ok(a) && strstr(answer_error(a), "prompt_max"), "a prompt above tasks.prompt_max is refused");
        json_object_put(a);
        a = req("schedule", "{\"type\":\"interval\",\"schedule\":\"1m\",\"prompt\":\"a\\u0000b\"}");
        ok(!answer_ok(a), "a prompt with a NUL is refused");
        json_object_put(a);
        a = req("schedule", "{\"type\":\"once\",\"schedule\":\"2001-01-01T00:00:00Z\",\"prompt\":\"x\"}");
        ok(!answer_ok(a) && strstr(answer_error(a), "past"), "a once time in the past is refused");
        json_object_put(a);
        a = req("schedule", "{\"type\":\"weekly\",\"prompt\":\"x\"}");
        ok(!answer_ok(a) && strstr(answer_error(a), "type"), "an unknown type is refused");
        json_object_put(a);
        a = req("schedule", "{\"type\":\"manual\",\"schedule\":\"5m\",\"prompt\":\"x\"}");
        ok(!answer_ok(a) && strstr(answer_error(a), "no schedule"), "a manual task with a schedule is refused");
        json_object_put(a);
        a = req("schedule", "{\"type\":7,\"prompt\":\"x\"}");
        ok(!answer_ok(a), "a type that is not a string is refused");
        json_object_put(a);

        json_object_put(req("schedule", "{\"type\":\"manual\",\"prompt\":\"m\"}"));
        json_object_put(req("schedule", "{\"type\":\"once\",\"schedule\":\"2099-01-01T00:00:00+02:00\",\"prompt\":\"o\"}"));
        is_int(n_tasks(), 3, "three tasks are listed");
        a = req("schedule", "{\"type\":\"manual\",\"prompt\":\"one too many\"}");
        ok(!answer_ok(a) && strstr(answer_error(a), "tasks.max"), "the channel's cap is enforced");
        json_object_put(a);

        snprintf(args, sizeof args, "{\"id\":\"%s\",\"schedule\":\"0 9 * * mon-fri\",\"prompt\":\"new\"}", id);
        a = req("edit", args);
        ok(answer_ok(a) && streq_ptr(task_field(a, "prompt"), "new") &&
           streq_ptr(task_field(a, "on_calendar"), "Mon..Fri *-*-* 09:00:00"), "edit changes the prompt and the schedule");
        json_object_put(a);
        snprintf(args, sizeof args, "{\"id\":\"%s\",\"schedule\":\"0 0 1 * 1\"}", id);
        a = req("edit", args);
        ok(!answer_ok(a) && strstr(answer_error(a), "OR"), "an edit to an inexpressible schedule is refused");
        json_object_put(a);
        snprintf(args, sizeof args, "{\"id\":\"%s\"}", id);
        a = req("toggle", args);
        ok(answer_ok(a) && streq_ptr(task_field(a, "enabled"), "false"), "toggle without enabled flips the task off");
        json_object_put(a);
        a = req("show", args);
        ok(answer_ok(a) && streq_ptr(task_field(a, "enabled"), "false") && streq_ptr(task_field(a, "prompt"), "new"),
           "show reads back what was recorded");
        json_object_put(a);
        a = req("run", args);
        ok(!answer_ok(a) && strstr(answer_error(a), "operator"), "a container cannot run a task by hand");
        json_object_put(a);

        a = req("show", "{\"id\":\"../../etc\"}");
        ok(!answer_ok(a) && strstr(answer_error(a), "no task"), "an id that is not a task id names no task");
        json_object_put(a);
        a = req("show", "{\"id\":\"00000000\"}");
        ok(!answer_ok(a) && strstr(answer_error(a), "no task 00000000"), "an unknown id is answered as unknown");
        json_object_put(a);
        a = req("frobnicate", NULL);
        ok(!answer_ok(a) && strstr(answer_error(a), "unknown operation"), "an unknown operation is refused");
        json_object_put(a);

        a = req("cancel", args);
        ok(answer_ok(a), "cancel removes the task");
        json_object_put(a);
        is_int(n_tasks(), 2, "two tasks are left");
        a = req("cancel", args);
        ok(!answer_ok(a), "cancelling it again says there is no such task");
        json_object_put(a);

        ctx.limits.min_interval_sec = 3600;
        a = req("schedule", "{\"type\":\"cron\",\"schedule\":\"* * * * *\",\"prompt\":\"x\"}");
        ok(!answer_ok(a) && strstr(answer_error(a), "min_interval_sec"),
           "schedule_task refuses a cron task firing more often than tasks.min_interval_sec");
        json_object_put(a);
        test_cron_min_interval();
        test_schedule_check();
        test_once_min_interval();
        test_escaped_prompt_counts();

        {
                char cmd[256];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
                (void) !system(cmd);
        }
        return done_testing();
}
