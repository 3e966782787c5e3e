/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop task`: the operator's view of a channel's scheduled tasks, under the same rules and records as the
 * agent's `loop mcp` (tasks-service.h), acting as "operator:USER". As root it also makes the timers at
 * once (the helper leaves that to loop-tasks-sync.service). Two verbs are for units: `fire NAME:ID`
 * (loop-task@.service, when a timer elapses) and `sync NAME...|--all` (loop-tasks-sync.service,
 * loop-task-restore.service at boot). */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "channel-defaults.h"
#include "config.h"
#include "json-util.h"
#include "log.h"
#include "loop.h"
#include "queue.h"
#include "state-dir.h"
#include "strv.h"
#include "tasks-service.h"
#include "tasks-timer.h"
#include "text-escape.h"

#define TASKS_SYNC_SETTLE_MS_MAX 10000U
/* bytes of a prompt that `loop task list` shows (escaped: what the agent wrote never reaches the
 * operator's terminal as control, escape or bidi characters) */
#define TASK_LIST_PROMPT_MAX 60U
/* rounds of one sync while the task files keep changing (at the 200 ms of loop-tasks-sync.service: two
 * minutes); a change after the last is the next start's */
#define TASKS_SYNC_ROUNDS_MAX 600U

static void task_help(void) {
        printf("%s task COMMAND NAME ...\n\n"
               "The scheduled tasks of a channel: each is a systemd timer (loop-task@NAME:ID.timer) that queues\n"
               "its prompt into the channel's queue when it fires.\n\n"
               "Commands:\n"
               "  list NAME                          The channel's tasks\n"
               "  show NAME ID                       One task\n"
               "  add NAME --type TYPE [--schedule S] [--name LABEL] [--disabled] [--] PROMPT...\n"
               "                                     TYPE: cron (\"*/5 * * * *\"), interval (5m, 1h30m),\n"
               "                                     once (RFC 3339 time), manual (no schedule)\n"
               "  edit NAME ID [--type T] [--schedule S] [--prompt P] [--name LABEL]\n"
               "  enable NAME ID | disable NAME ID   Start or stop the task's timer\n"
               "  rm NAME ID                         Cancel the task\n"
               "  run NAME ID                        Queue the task's prompt now\n"
               "  sync [--settle-ms MS] NAME...|--all\n"
               "                                     Make the timers agree with the task files\n\n"
               "Options:\n"
               "  --json                             Print the answer as JSON\n"
               "  -h --help                          Show this help\n",
               program_invocation_short_name);
}

static int print_answer(json_object *answer, bool json) {
        json_object *ok, *v;

        if (json)
                (void) json_print(stdout, answer, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!json_object_object_get_ex(answer, "ok", &ok) || !json_object_get_boolean(ok)) {
                json_object_object_get_ex(answer, "error", &v);
                log_error("%s", v ? json_object_get_string(v) : "failed");
                return EXIT_FAILURE;
        }
        if (json)
                return EXIT_SUCCESS;
        if (json_object_object_get_ex(answer, "warning", &v))
                log_warning("%s", json_object_get_string(v));
        if (json_object_object_get_ex(answer, "tasks", &v)) {
                printf("%-8s  %-8s  %-7s  %-24s  %s\n", "ID", "TYPE", "STATE", "SCHEDULE", "PROMPT");
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        json_object *t = json_object_array_get_idx(v, i), *f;
                        static const char * const keys[] = { "id", "type", "schedule", "prompt" };
                        char *get[ELEMENTSOF(keys)] = {};
                        bool enabled = json_object_object_get_ex(t, "enabled", &f) && json_object_get_boolean(f);
                        bool done = json_object_object_get_ex(t, "done", &f) && json_object_get_boolean(f);
                        bool oom = false;

                        for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                                if (json_object_object_get_ex(t, keys[k], &f) &&
                                    !(get[k] = text_escape_display(strempty(json_object_get_string(f)),
                                                                   k == 3 ? TASK_LIST_PROMPT_MAX : 0)))
                                        oom = true;
                        if (!oom)
                                printf("%-8s  %-8s  %-7s  %-24s  %s\n", strempty(get[0]), strempty(get[1]),
                                       done ? "done" : enabled ? "enabled" : "disabled", get[2] ?: "-", strempty(get[3]));
                        for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                                free(get[k]);
                        if (oom)
                                return log_oom(), EXIT_FAILURE;
                }
                return EXIT_SUCCESS;
        }
        if (json_object_object_get_ex(answer, "task", &v)) {
                json_object *q;
                json_object_object_foreach(v, key, val) {
                        _cleanup_free_ char *text = text_escape_display(strempty(json_object_get_string(val)), 0);
                        if (!text)
                                return log_oom(), EXIT_FAILURE;
                        printf("%s: %s\n", key, text);
                }
                if (json_object_object_get_ex(answer, "queue_id", &q))
                        printf("queued: %s\n", json_object_get_string(q));
                if (json_object_object_get_ex(answer, "status", &q))
                        printf("status: %s\n", json_object_get_string(q));
        }
        return EXIT_SUCCESS;
}

/* The context of an operator's request on channel: its limits from the configuration (a channel must
 * exist), its state dir, the system bus when there is one. */
static int operator_context(const char *channel, bool need_config, ConfigSet **set, TasksContext *ctx, char **ret_state_dir,
                            char **ret_actor, sd_bus **ret_bus) {
        _cleanup_free_ char *user = NULL;
        const Channel *ch;
        const char *reason;
        int r;

        if (channel_name_check(channel, &reason) < 0)
                return log_error_errno(EINVAL, "\"%s\" is not a valid channel name: %s.", channel, reason);
        *ctx = (TasksContext) { .channel = channel, .operator = true,
                                .limits = { .max = CHANNEL_TASKS_MAX_DEFAULT,
                                            .min_interval_sec = CHANNEL_TASKS_MIN_INTERVAL_SEC_DEFAULT,
                                            .prompt_max = CHANNEL_TASKS_PROMPT_MAX_DEFAULT } };
        if (need_config) {
                r = config_load(config_dir(), set);
                if (r < 0)
                        return log_error_errno(r, "Failed to load the configuration from %s: %m", config_dir());
                ch = config_set_find_channel(*set, channel);
                if (!ch || !ch->valid)
                        return log_error_errno(ENOENT, "No valid channel \"%s\" (see 'loop config check %s').", channel, channel);
                ctx->limits = ch->config.tasks;
        }
        r = channel_queue_dir(channel, ret_state_dir);
        if (r < 0)
                return log_error_errno(r, "Cannot find the state directory of channel %s: %m", channel);
        if (queue_sender_name(getuid(), &user) < 0 || asprintf(ret_actor, "operator:%s", user) < 0)
                return log_oom();
        /* root makes the timers at once; anyone else leaves it to loop-tasks-sync.service */
        if (geteuid() == 0 && (r = tasks_bus_open(ret_bus)) < 0 && r != -ENOMEDIUM)
                log_warning_errno(r, "Cannot talk to systemd, the timers of %s are left to loop-tasks-sync.service: %m", channel);
        ctx->state_dir = *ret_state_dir;
        ctx->actor = *ret_actor;
        ctx->bus = *ret_bus;
        return 0;
}

static int add_string(json_object *o, const char *key, const char *value) {
        if (!value)
                return 0;
        return json_object_object_add(o, key, json_object_new_string(value));
}

/* A timer outlives the removal of its channel from the configuration (until the next boot): its firing
 * must not queue the prompt where nobody looks, for a channel that may come back with a pile of them.
 * 1: fire; 0: the channel is gone, its timers removed; -ENOENT: it is there but not valid. A configuration
 * that cannot be read at all does not stop a firing (the queue keeps it). */
static int fire_channel_check(const char *channel, sd_bus *bus) {
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        const Channel *ch;
        int r;

        r = config_load(config_dir(), &set);
        if (r < 0) {
                log_warning_errno(r, "Failed to load the configuration from %s, firing anyway: %m", config_dir());
                return 1;
        }
        ch = config_set_find_channel(set, channel);
        if (ch && ch->valid)
                return 1;
        if (ch)
                return log_error_errno(ENOENT, "Channel %s is not valid (see 'loop config check %s'): its task is not queued.",
                                       channel, channel);
        log_notice("Channel %s is not configured any more: its task is not queued, its timers are removed.", channel);
        if (bus && (r = tasks_timers_sync(bus, channel, NULL, 0, NULL)) < 0)
                log_warning_errno(r, "Cannot remove the timers of channel %s: %m", channel);
        return 0;
}

typedef struct SyncChannel {
        const char *name;
        char *state_dir;                /* NULL: not a valid channel name, skipped */
        TasksConfig limits;             /* the channel's configured ones, or the defaults */
        bool removed;                   /* not in the configuration: its timers go */
        struct timespec stamp;          /* of its tasks directory when its last round began */
} SyncChannel;

static void sync_channels_free(SyncChannel *c, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(c[i].state_dir);
        free(c);
}

/* One writer for the timers of every channel: loop-tasks-sync.service, which each channel's
 * loop-tasks-sync@NAME.path starts when its task files change (and loop-task-restore.service at boot,
 * loop-tasks@NAME's exit for its channel). A path unit does not start a service that runs already, so
 * the changes made while this runs are its own to see: after a first round over the channels it waits
 * settle_ms and makes another round over those whose tasks directory moved since their last round,
 * until a round finds none (or TASKS_SYNC_ROUNDS_MAX). A burst of writes, of one agent or of a hundred
 * channels, is then a few rounds of one process over one connection to systemd. */
static int task_sync(int argc, char *argv[], bool all, uint64_t settle_ms) {
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        struct timespec settle = { .tv_sec = settle_ms / 1000, .tv_nsec = (settle_ms % 1000) * 1000000 };
        SyncChannel *channels = NULL;
        size_t n;
        int r, ret = EXIT_SUCCESS;

        if (settle_ms > 0)
                (void) nanosleep(&settle, NULL);
        r = tasks_bus_open(&bus);
        if (r < 0)
                return log_error_errno(r, "Cannot talk to systemd, the timers cannot be made: %m"), EXIT_FAILURE;
        /* the channels' minimum intervals, which the task files (the helper's) are checked against */
        r = config_load(config_dir(), &set);
        if (r < 0 && all)
                return log_error_errno(r, "Failed to load the configuration from %s: %m", config_dir()), EXIT_FAILURE;
        if (r < 0)
                log_warning_errno(r, "Failed to load the configuration from %s, the default task limits apply: %m", config_dir());
        n = all ? set->n_channels : (size_t) argc;
        channels = calloc(n ?: 1, sizeof(SyncChannel));
        if (!channels)
                return log_oom(), EXIT_FAILURE;
        for (size_t i = 0; i < n; i++) {
                const Channel *ch;

                channels[i].name = all ? set->channels[i].name : argv[i];
                channels[i].limits = (TasksConfig) { .max = CHANNEL_TASKS_MAX_DEFAULT,
                                                     .min_interval_sec = CHANNEL_TASKS_MIN_INTERVAL_SEC_DEFAULT,
                                                     .prompt_max = CHANNEL_TASKS_PROMPT_MAX_DEFAULT };
                if (channel_name_check(channels[i].name, NULL) < 0 || channel_queue_dir(channels[i].name, &channels[i].state_dir) < 0) {
                        log_error("\"%s\" is not a valid channel name.", channels[i].name);
                        ret = EXIT_FAILURE;
                        continue;
                }
                ch = set ? config_set_find_channel(set, channels[i].name) : NULL;
                if (ch && ch->valid)
                        channels[i].limits = ch->config.tasks;
                /* a channel taken out of the configuration keeps no timer that would fill its queue */
                channels[i].removed = set && !ch;
        }

        for (unsigned round = 0; round < TASKS_SYNC_ROUNDS_MAX; round++) {
                unsigned synced = 0;

                if (round > 0 && settle_ms > 0)
                        (void) nanosleep(&settle, NULL);
                for (size_t i = 0; i < n; i++) {
                        SyncChannel *c = channels + i;
                        TasksContext ctx = { .channel = c->name, .state_dir = c->state_dir, .actor = "operator:root",
                                             .operator = true, .bus = bus, .limits = c->limits };
                        unsigned removed = 0;
                        struct timespec now;

                        if (!c->state_dir)
                                continue;
                        if (c->removed) {
                                if (round > 0)
                                        continue;
                                r = tasks_timers_sync(bus, c->name, NULL, 0, &removed);
                                if (r < 0) {
                                        log_error_errno(r, "Cannot remove the timers of channel %s, which is not configured: %m", c->name);
                                        ret = EXIT_FAILURE;
                                } else if (removed > 0)
                                        log_info("Channel %s is not configured: %u timers removed.", c->name, removed);
                                continue;
                        }
                        r = tasks_stamp(c->state_dir, &now);
                        if (r < 0 && round > 0)
                                continue;       /* the first round tried it and said why */
                        if (r < 0)
                                now = (struct timespec) {};
                        if (round > 0 && now.tv_sec == c->stamp.tv_sec && now.tv_nsec == c->stamp.tv_nsec)
                                continue;
                        c->stamp = now;
                        synced++;
                        r = tasks_restore(&ctx);
                        if (r < 0) {
                                log_error_errno(r, "Cannot make the timers of channel %s agree with its tasks: %m", c->name);
                                ret = EXIT_FAILURE;
                                /* tried again only when its files change again */
                        } else if (r > 0)
                                log_info("Channel %s: %d timers made or removed.", c->name, r);
                }
                if (round > 0 && synced == 0)
                        break;
        }
        sync_channels_free(channels, n);
        return ret;
}

int verb_task(int argc, char *argv[]) {
        enum { ARG_JSON = 0x100, ARG_TYPE, ARG_SCHEDULE, ARG_PROMPT, ARG_NAME, ARG_DISABLED, ARG_ALL, ARG_SETTLE };
        static const struct option options[] = {
                { "help",     no_argument,       NULL, 'h' },
                { "json",     no_argument,       NULL, ARG_JSON },
                { "type",     required_argument, NULL, ARG_TYPE },
                { "schedule", required_argument, NULL, ARG_SCHEDULE },
                { "prompt",   required_argument, NULL, ARG_PROMPT },
                { "name",     required_argument, NULL, ARG_NAME },
                { "disabled", no_argument,       NULL, ARG_DISABLED },
                { "all",      no_argument,       NULL, ARG_ALL },
                { "settle-ms", required_argument, NULL, ARG_SETTLE },
                {}
        };
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(json_object_putp) json_object *args = NULL, *answer = NULL;
        _cleanup_free_ char *state_dir = NULL, *actor = NULL, *joined = NULL, *channel_owned = NULL, *id_owned = NULL;
        const char *type = NULL, *schedule = NULL, *prompt = NULL, *name = NULL, *verb, *op, *channel, *id = NULL;
        bool json = false, disabled = false, all = false;
        uint64_t settle_ms = 0;
        TasksContext ctx;
        int c, r;

        /* "+": options may follow the verb and NAME, but the prompt's words after "--" stay words */
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        task_help();
                        return EXIT_SUCCESS;
                case ARG_JSON:     json = true; break;
                case ARG_TYPE:     type = optarg; break;
                case ARG_SCHEDULE: schedule = optarg; break;
                case ARG_PROMPT:   prompt = optarg; break;
                case ARG_NAME:     name = optarg; break;
                case ARG_DISABLED: disabled = true; break;
                case ARG_ALL:      all = true; break;
                case ARG_SETTLE: {
                        char *end;
                        errno = 0;
                        settle_ms = strtoull(optarg, &end, 10);
                        if (errno || end == optarg || *end || settle_ms > TASKS_SYNC_SETTLE_MS_MAX) {
                                log_error("--settle-ms takes a number of milliseconds up to %u.", TASKS_SYNC_SETTLE_MS_MAX);
                                return EXIT_FAILURE;
                        }
                        break;
                }
                default:
                        return EXIT_FAILURE;
                }
        if (optind >= argc) {
                log_error("Usage: loop task list|show|add|edit|enable|disable|rm|run|sync NAME ... (see 'loop task --help')");
                return EXIT_FAILURE;
        }
        verb = argv[optind++];

        if (streq(verb, "sync"))
                return task_sync(argc - optind, argv + optind, all, settle_ms);

        if (streq(verb, "fire")) {
                /* from loop-task@NAME:ID.service: one argument, the unit's instance */
                if (optind + 1 != argc || task_instance_parse(argv[optind], &channel_owned, &id_owned) < 0) {
                        log_error("Usage: loop task fire NAME:ID");
                        return EXIT_FAILURE;
                }
                channel = channel_owned;
                id = id_owned;
                optind++;
        } else {
                if (optind >= argc) {
                        log_error("No channel given (see 'loop task --help').");
                        return EXIT_FAILURE;
                }
                channel = argv[optind++];
        }

        args = json_object_new_object();
        if (!args)
                return log_oom(), EXIT_FAILURE;

        if (streq(verb, "list"))
                op = "list";
        else if (streq(verb, "add")) {
                op = "schedule";
                if (!prompt && optind < argc) {
                        joined = strv_join(argv + optind, " ");
                        if (!joined)
                                return log_oom(), EXIT_FAILURE;
                        prompt = joined;
                        optind = argc;
                }
                if (!type || !prompt) {
                        log_error("loop task add needs --type and a prompt (see 'loop task --help').");
                        return EXIT_FAILURE;
                }
                if (add_string(args, "type", type) < 0 || add_string(args, "schedule", schedule) < 0 ||
                    add_string(args, "prompt", prompt) < 0 || add_string(args, "name", name) < 0 ||
                    (disabled && json_object_object_add(args, "enabled", json_object_new_boolean(false)) < 0))
                        return log_oom(), EXIT_FAILURE;
        } else if (streq(verb, "show") || streq(verb, "edit") || streq(verb, "enable") || streq(verb, "disable") ||
                   streq(verb, "rm") || streq(verb, "run") || streq(verb, "fire")) {
                if (!id) {
                        if (optind >= argc) {
                                log_error("No task id given (see 'loop task --help').");
                                return EXIT_FAILURE;
                        }
                        id = argv[optind++];
                }
                if (add_string(args, "id", id) < 0)
                        return log_oom(), EXIT_FAILURE;
                if (streq(verb, "show"))
                        op = "show";
                else if (streq(verb, "rm"))
                        op = "cancel";
                else if (streq(verb, "run"))
                        op = "run";
                else if (streq(verb, "fire"))
                        op = "fire";
                else if (streq(verb, "edit")) {
                        op = "edit";
                        if (add_string(args, "type", type) < 0 || add_string(args, "schedule", schedule) < 0 ||
                            add_string(args, "prompt", prompt) < 0 || add_string(args, "name", name) < 0)
                                return log_oom(), EXIT_FAILURE;
                } else {
                        op = "toggle";
                        if (json_object_object_add(args, "enabled", json_object_new_boolean(streq(verb, "enable"))) < 0)
                                return log_oom(), EXIT_FAILURE;
                }
        } else {
                log_error("Unknown command \"task %s\" (see 'loop task --help').", verb);
                return EXIT_FAILURE;
        }
        if (optind < argc) {
                log_error("Unexpected argument \"%s\" (see 'loop task --help').", argv[optind]);
                return EXIT_FAILURE;
        }

        /* fire needs no limits: the timer's unit names the channel, the files say the rest (fire_channel_check()
         * only asks whether the channel is still configured) */
        r = operator_context(channel, !streq(op, "fire"), &set, &ctx, &state_dir, &actor, &bus);
        if (r < 0)
                return EXIT_FAILURE;
        if (streq(op, "fire")) {
                ctx.actor = "timer";
                r = fire_channel_check(channel, bus);
                if (r <= 0)
                        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        r = tasks_request(&ctx, op, args, &answer);
        if (r < 0)
                return log_oom(), EXIT_FAILURE;
        if (streq(op, "fire")) {
                /* the unit's journal has the task-fired record already; only a failure is worth a line */
                json_object *v;
                if (json_object_object_get_ex(answer, "ok", &v) && json_object_get_boolean(v))
                        return EXIT_SUCCESS;
        }
        return print_answer(answer, json);
}
