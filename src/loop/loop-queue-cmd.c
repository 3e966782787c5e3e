/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop send`, `loop outbox` (`loop results`) and `loop queue`: the channel's work queue from the command
 * line. The runner (loop-agent@NAME.service) is what consumes it. */

#include <getopt.h>
#include <inttypes.h>
#include <time.h>

#include "audit.h"
#include "config.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "loop.h"
#include "loop-options.h"
#include "queue.h"
#include "state-dir.h"
#include "string-util.h"
#include "strv.h"
#include "text-escape.h"
#include "unit-state.h"

#define QUEUE_CMD_LINE_MAX 72U          /* the first line of a result or error is cut to this in tables */
#define QUEUE_CMD_LINE_BUF (QUEUE_CMD_LINE_MAX * 4 + 8)  /* ...escaped: at most 4 bytes a byte, and "..." */

static int read_prompt_stdin(char **ret) {
        char *buf;
        size_t n;
        int r;

        r = read_text_fd(STDIN_FILENO, QUEUE_PROMPT_MAX, &buf, &n);
        if (r < 0)
                return r;
        /* "echo text | loop send NAME -" should not queue the newline echo adds. */
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = 0;
        *ret = buf;
        return 0;
}

/* Opens the queue of a channel for reading; a channel that never got a message has none. */
static int open_queue_for_reading(const char *channel, Queue **ret) {
        _cleanup_free_ char *dir = NULL;
        int r;

        r = channel_queue_dir(channel, &dir);
        if (r < 0)
                return log_error_errno(r, "Cannot find the state directory of channel %s: %m", channel);
        r = queue_open(dir, false, ret);
        if (r == -ENOENT) {
                _cleanup_(config_set_freep) ConfigSet *set = NULL;

                if (config_load(config_dir(), &set) >= 0 && !config_set_find_channel(set, channel))
                        return log_error_errno(r, "No channel \"%s\": there is no %s/channels.d/%s.json, and no queue in %s.",
                                               channel, set->dir, channel, dir);
                return log_error_errno(r, "Channel %s has no queue in %s (nothing was sent to it yet).", channel, dir);
        }
        if (r == -EACCES)
                return log_error_errno(r, "Cannot open the queue in %s: %m (root or members of group loop only)", dir);
        if (r < 0)
                return log_error_errno(r, "Cannot open the queue in %s: %m", dir);
        return 0;
}

/* The channel NAME that `loop outbox` and `loop queue` take as their only argument (at argv[optind]),
 * checked, and its queue opened for reading. Logs why not; the usage names argv[0], then usage_options. */
static int open_queue_of_argument(int argc, char *argv[], const char *usage_options, const char **ret_channel,
                                  Queue **ret) {
        const char *channel;
        int r;

        if (optind != argc - 1) {
                log_error("Usage: loop %s NAME%s", argv[0], usage_options);
                return -EINVAL;
        }
        channel = argv[optind];
        if (!loop_check_channel_name(channel))
                return -EINVAL;
        r = open_queue_for_reading(channel, ret);
        if (r < 0)
                return r;
        *ret_channel = channel;
        return 0;
}

static const char *json_string_of(json_object *o, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static int64_t json_int_of(json_object *o, const char *key, int64_t fallback) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return fallback;
        return json_object_get_int64(v);
}

static bool json_flag(json_object *o, const char *key) {
        json_object *v;

        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_boolean) &&
                json_object_get_boolean(v);
}

/* "YYYY-MM-DD HH:MM:SS" in local time, "-" when unknown. */
static const char *format_usec(int64_t usec, char *buf, size_t size) {
        struct tm tm;
        time_t t;

        if (usec <= 0)
                return "-";
        t = (time_t) (usec / 1000000);
        if (!localtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                return "-";
        return buf;
}

/* The first line of s, its first QUEUE_CMD_LINE_MAX bytes escaped for the terminal (text_escape_display():
 * what a sender or an agent wrote shows no control, C1 or bidi character as itself), "..." when there is
 * more; into buf of QUEUE_CMD_LINE_BUF bytes. */
static const char *first_line(const char *s, char buf[static QUEUE_CMD_LINE_BUF]) {
        _cleanup_free_ char *line = NULL, *escaped = NULL;
        size_t n;

        if (isempty(s))
                return "-";
        n = strcspn(s, "\n");
        line = strndup(s, n);
        escaped = line ? text_escape_display(line, QUEUE_CMD_LINE_MAX) : NULL;
        if (!escaped)
                return "(out of memory)";
        snprintf(buf, QUEUE_CMD_LINE_BUF, "%s%s", escaped,
                 s[n] && s[n + 1] && !endswith(escaped, "...") ? "..." : "");
        return buf;
}

static void send_help(void) {
        printf("loop send NAME [--] PROMPT...\n"
               "loop send NAME -\n\n"
               "Queue PROMPT for channel NAME (\"-\": read it from standard input) and print the message id.\n"
               "loop-agent@NAME.path starts the channel's runner, which works through the queue in order,\n"
               "resuming the channel's session. Root and members of group loop may send.\n");
}

/* Under systemd, loop-agent@NAME.path starts the runner when the inbox has work: a message sent while it
 * is not active waits, so say so (the message is queued and nothing is lost). */
static void warn_unless_watched(const char *channel) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_free_ char *unit = NULL, *state = NULL;

        if (unit_bus_open(&bus) < 0 || !bus || asprintf(&unit, "loop-agent@%s.path", channel) < 0 ||
            unit_get_string(bus, unit, UNIT_INTERFACE, "ActiveState", &state) < 0 || streq(state, "active"))
                return;
        log_warning("%s is %s, so nothing runs the message yet; it stays queued until the unit is started "
                    "('systemctl start %s', or 'systemctl start loop.target' when loop is not running).",
                    unit, state, unit);
}

int verb_send(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                {}
        };
        _cleanup_(config_set_freep) ConfigSet *set = NULL;
        _cleanup_(queue_freep) Queue *q = NULL;
        _cleanup_free_ char *prompt = NULL, *dir = NULL, *id = NULL;
        const Channel *ch;
        const char *channel;
        size_t depth;
        int c, r;

        /* "+": options only before NAME, so a prompt word like "-x" stays part of the prompt. */
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        send_help();
                        return EXIT_SUCCESS;
                default:
                        return EXIT_FAILURE;
                }

        if (loop_take_channel_argument(argc, argv, "loop send NAME [--] PROMPT... (see 'loop send --help')", &channel) < 0)
                return EXIT_FAILURE;
        if (optind >= argc) {
                log_error("No prompt given (see 'loop send --help').");
                return EXIT_FAILURE;
        }
        if (optind == argc - 1 && streq(argv[optind], "-")) {
                r = read_prompt_stdin(&prompt);
                if (r == -E2BIG) {
                        log_error("The prompt on standard input is larger than %u bytes.", QUEUE_PROMPT_MAX);
                        return EXIT_FAILURE;
                }
                if (r == -EINVAL) {
                        log_error("The prompt on standard input contains a NUL byte.");
                        return EXIT_FAILURE;
                }
                if (r < 0) {
                        log_error_errno(r, "Failed to read the prompt from standard input: %m");
                        return EXIT_FAILURE;
                }
        } else {
                prompt = strv_join(argv + optind, " ");
                if (!prompt)
                        return log_oom(), EXIT_FAILURE;
        }
        if (isempty(prompt)) {
                log_error("The prompt is empty.");
                return EXIT_FAILURE;
        }
        if (strlen(prompt) > QUEUE_PROMPT_MAX) {
                log_error("The prompt is larger than %u bytes.", QUEUE_PROMPT_MAX);
                return EXIT_FAILURE;
        }

        r = config_load(config_dir(), &set);
        if (r < 0) {
                log_error_errno(r, "Failed to load the configuration from %s: %m", config_dir());
                return EXIT_FAILURE;
        }
        ch = config_set_find_channel(set, channel);
        if (!ch) {
                log_error("No channel \"%s\": there is no %s/channels.d/%s.json.", channel, set->dir, channel);
                return EXIT_FAILURE;
        }
        if (!ch->valid) {
                log_error("Channel \"%s\" is invalid: %s (see 'loop config check %s').", channel, strna(ch->reason),
                          channel);
                return EXIT_FAILURE;
        }
        config_set_log_warnings(set, ch->path);
        if (!ch->config.enabled) {
                log_error("Channel \"%s\" is disabled (\"enabled\": false in %s); nothing would run the message.",
                          channel, ch->path);
                return EXIT_FAILURE;
        }

        r = channel_queue_dir(channel, &dir);
        if (r < 0) {
                log_error_errno(r, "Cannot find the state directory of channel %s: %m", channel);
                return EXIT_FAILURE;
        }
        r = queue_open(dir, true, &q);
        if (r == -EACCES || r == -EPERM) {
                log_error_errno(r, "Cannot open the queue in %s: %m. Senders must be root or members of group loop, "
                                "and the queue must exist (it does once loop-agent@%s ran or root sent a message).",
                                dir, channel);
                return EXIT_FAILURE;
        }
        if (r < 0) {
                log_error_errno(r, "Cannot open the queue in %s: %m", dir);
                return EXIT_FAILURE;
        }

        r = queue_push(q, prompt, NULL, &id);
        if (r == -EXFULL) {
                log_error("The queue of channel %s is full (%u messages waiting); try again when the runner has "
                          "taken some ('loop queue %s' shows them).", channel, QUEUE_DEPTH_MAX, channel);
                return EXIT_FAILURE;
        }
        if (r == -ENOSPC || r == -EDQUOT) {
                log_error_errno(r, "Cannot queue the message for channel %s: %m in %s. Free some space there and "
                                "send it again.", channel, dir);
                return EXIT_FAILURE;
        }
        if (r < 0) {
                log_error_errno(r, "Failed to queue the message for channel %s in %s: %m", channel, dir);
                return EXIT_FAILURE;
        }

        {
                _cleanup_free_ char *sender = NULL;
                char *extra[] = { NULL, NULL };
                AuditFields f = { .channel = channel, .message_id = id, .extra = extra };
                if (asprintf(&sender, "LOOP_SENDER_UID=%u", (unsigned) getuid()) >= 0)
                        extra[0] = sender;
                /* A record, not chatter: to the journal, and on a terminal only with LOOP_LOG_LEVEL=info. */
                if (!getenv("LOOP_LOG_LEVEL") && log_resolve_target() == LOG_TARGET_CONSOLE &&
                    log_get_max_level() > LOG_NOTICE)
                        log_set_max_level(LOG_NOTICE);
                (void) audit_log(AUDIT_QUEUE_QUEUED, LOG_INFO, &f, "Message %s queued for channel %s by uid %u.", id,
                                 channel, (unsigned) getuid());
        }
        puts(id);
        if (queue_depth(q, &depth) >= 0 && depth > 1)
                log_notice("Queued as %s; %zu messages waiting.", id, depth);
        warn_unless_watched(channel);
        return EXIT_SUCCESS;
}

static void outbox_help(const char *verb) {
        printf("loop %s NAME [--json] [-n N]\n\n"
               "Show the results of channel NAME's queued messages, newest last: id, time, status, session\n"
               "and the first line of the result. -n N: only the last N; --json: the stored results.\n", verb);
}

int verb_outbox(int argc, char *argv[]) {
        enum { ARG_JSON = 0x100 };
        static const struct option options[] = {
                { "help", no_argument,       NULL, 'h' },
                { "json", no_argument,       NULL, ARG_JSON },
                { "lines", required_argument, NULL, 'n' },
                {}
        };
        _cleanup_(queue_freep) Queue *q = NULL;
        _cleanup_(json_object_putp) json_object *a = NULL;
        const char *channel;
        unsigned long long limit = 0;
        bool json = false;
        int c, r;

        while ((c = getopt_long(argc, argv, "hn:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        outbox_help(argv[0]);
                        return EXIT_SUCCESS;
                case ARG_JSON:
                        json = true;
                        break;
                case 'n': {
                        char *end;
                        errno = 0;
                        limit = strtoull(optarg, &end, 10);
                        if (errno != 0 || end == optarg || *end || optarg[0] == '-' || limit > SIZE_MAX) {
                                log_error("-n wants a number, not \"%s\".", optarg);
                                return EXIT_FAILURE;
                        }
                        break;
                }
                default:
                        return EXIT_FAILURE;
                }
        if (open_queue_of_argument(argc, argv, " [--json] [-n N]", &channel, &q) < 0)
                return EXIT_FAILURE;

        r = queue_list(q, "outbox", (size_t) limit, &a);
        if (r < 0) {
                log_error_errno(r, "Failed to read the outbox of %s: %m", queue_path(q));
                return EXIT_FAILURE;
        }
        if (json) {
                return json_print(stdout, a, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }
        if (json_object_array_length(a) == 0) {
                printf("No results for channel %s yet.\n", channel);
                return EXIT_SUCCESS;
        }
        printf("%-29s %-19s %-6s %-36s %s\n", "ID", "FINISHED", "STATUS", "SESSION", "RESULT");
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                json_object *o = json_object_array_get_idx(a, i);
                bool is_error = json_flag(o, "is_error");
                const char *text = is_error ? (json_string_of(o, "error") ?: json_string_of(o, "result")) : json_string_of(o, "result");
                char when[32], line[QUEUE_CMD_LINE_BUF];

                printf("%-29s %-19s %-6s %-36s %s\n", strna(json_string_of(o, "id")),
                       format_usec(json_int_of(o, "finished_usec", 0), when, sizeof when),
                       is_error ? "error" : "ok", json_string_of(o, "session_id") ?: "-", first_line(text, line));
        }
        return EXIT_SUCCESS;
}

static void queue_help(void) {
        printf("loop queue NAME [--json]\n\n"
               "Show what waits in channel NAME's inbox (time queued, sender, attempts, last error) and the\n"
               "messages that failed for good, with the reason.\n");
}

int verb_queue(int argc, char *argv[]) {
        _cleanup_(queue_freep) Queue *q = NULL;
        _cleanup_(json_object_putp) json_object *inbox = NULL, *failed = NULL;
        const char *channel;
        bool json;
        int r;

        r = loop_parse_json_options(argc, argv, queue_help, &json);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (open_queue_of_argument(argc, argv, " [--json]", &channel, &q) < 0)
                return EXIT_FAILURE;

        r = queue_list(q, "inbox", 0, &inbox);
        if (r >= 0)
                r = queue_list(q, "failed", 0, &failed);
        if (r < 0) {
                log_error_errno(r, "Failed to read the queue in %s: %m", queue_path(q));
                return EXIT_FAILURE;
        }

        if (json) {
                _cleanup_(json_object_putp) json_object *root = json_object_new_object();
                if (!root)
                        return log_oom(), EXIT_FAILURE;
                json_object_object_add(root, "channel", json_object_new_string(channel));
                json_object_object_add(root, "inbox", TAKE_PTR(inbox));
                json_object_object_add(root, "failed", TAKE_PTR(failed));
                return json_print(stdout, root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        }

        if (json_object_array_length(inbox) == 0)
                printf("Nothing queued for channel %s.\n", channel);
        else {
                printf("Queued (%zu):\n", json_object_array_length(inbox));
                printf("%-29s %-19s %-12s %-8s %s\n", "ID", "QUEUED", "SENDER", "ATTEMPTS", "PROMPT");
                for (size_t i = 0; i < json_object_array_length(inbox); i++) {
                        json_object *o = json_object_array_get_idx(inbox, i);
                        const char *last_error = json_string_of(o, "last_error");
                        char when[32], line[QUEUE_CMD_LINE_BUF];

                        printf("%-29s %-19s %-12s %-8" PRId64 " %s\n", strna(json_string_of(o, "id")),
                               format_usec(json_int_of(o, "created_usec", 0), when, sizeof when),
                               strna(json_string_of(o, "sender")), json_int_of(o, "attempts", 0),
                               first_line(json_string_of(o, "prompt"), line));
                        if (last_error)
                                printf("%29s last error: %s\n", "", first_line(last_error, line));
                }
        }
        if (json_object_array_length(failed) > 0) {
                printf("\nFailed (%zu), in %s/failed/:\n", json_object_array_length(failed), queue_path(q));
                printf("%-29s %-19s %-8s %s\n", "ID", "FAILED", "ATTEMPTS", "REASON");
                for (size_t i = 0; i < json_object_array_length(failed); i++) {
                        json_object *o = json_object_array_get_idx(failed, i);
                        char when[32], line[QUEUE_CMD_LINE_BUF];

                        printf("%-29s %-19s %-8" PRId64 " %s\n", strna(json_string_of(o, "id")),
                               format_usec(json_int_of(o, "failed_usec", 0), when, sizeof when),
                               json_int_of(o, "attempts", 0), first_line(json_string_of(o, "reason"), line));
                }
        }
        return EXIT_SUCCESS;
}
