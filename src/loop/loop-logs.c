/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* `loop logs [NAME]`: the audit stream (src/shared/audit.c) read back from the journal with sd-journal. */

#include <getopt.h>
#include <inttypes.h>
#include <time.h>
#include <systemd/sd-journal.h>

#include "audit.h"
#include "config.h"
#include "json-util.h"
#include "log.h"
#include "loop.h"
#include "loop-options.h"
#include "text-escape.h"

#define LOGS_FOLLOW_DEFAULT_LINES 10U
#define JOURNALD_SOCKET "/run/systemd/journal/socket"

typedef struct LogsArgs {
        const char *channel;
        AuditEvent event;       /* _AUDIT_EVENT_INVALID: all */
        bool follow;
        bool json;
        bool lines_set;
        uint64_t lines;
} LogsArgs;

static void logs_help(void) {
        printf("loop logs [OPTIONS...] [NAME]\n\n"
               "Show loop's audit events from the journal: of channel NAME, or of all channels.\n\n"
               "Options:\n"
               "  -h --help              Show this help\n"
               "  -f --follow            Keep printing events as they come\n"
               "  -n --lines=N           Only the last N events (with --follow: default %u)\n"
               "     --event=EVENT       Only events of this kind (e.g. run-finished)\n"
               "     --json              One JSON object per event, with all LOOP_* fields\n\n"
               "The same entries answer `journalctl LOOP_CHANNEL=NAME` and `journalctl -x` explains them.\n",
               LOGS_FOLLOW_DEFAULT_LINES);
}

/* The value of field in the current entry, or NULL (-ENOENT) when the entry has none. */
static int entry_field(sd_journal *j, const char *field, char **ret) {
        const void *data;
        size_t len, fl = strlen(field);
        char *v;
        int r;

        r = sd_journal_get_data(j, field, &data, &len);
        if (r < 0)
                return r;
        if (len < fl + 1)
                return -EBADMSG;
        v = strndup((const char *) data + fl + 1, len - fl - 1);
        if (!v)
                return -ENOMEM;
        *ret = v;
        return 0;
}

/* Who wrote the entry, as journald saw it (trusted fields, from the sender's credentials and cgroup):
 * root, or a process of one of loop's system units (its helpers run as user loop or a dynamic user).
 * Anyone who may log could write an entry with loop's MESSAGE_ID and LOOP_* fields; those are shown with
 * their writer's uid. 1: loop's; 0: someone else's, *ret_uid set (NULL when journald recorded none). */
static int entry_writer_is_loop(sd_journal *j, char **ret_uid) {
        _cleanup_free_ char *uid = NULL, *unit = NULL;

        (void) entry_field(j, "_UID", &uid);
        (void) entry_field(j, "_SYSTEMD_UNIT", &unit);
        if (streq_ptr(uid, "0") || (unit && startswith(unit, "loop-")))
                return 1;
        *ret_uid = TAKE_PTR(uid);
        return 0;
}

static void print_text(sd_journal *j) {
        _cleanup_free_ char *message = NULL, *channel = NULL, *event = NULL, *shown = NULL, *shown_channel = NULL,
                            *shown_event = NULL, *writer = NULL;
        char ts[64] = "-";
        uint64_t usec;
        struct tm tm;
        time_t t;

        if (sd_journal_get_realtime_usec(j, &usec) >= 0) {
                t = (time_t) (usec / 1000000);
                if (localtime_r(&t, &tm))
                        (void) strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
        }
        (void) entry_field(j, "MESSAGE", &message);
        (void) entry_field(j, "LOOP_CHANNEL", &channel);
        (void) entry_field(j, "LOOP_EVENT", &event);

        /* The message may be the agent's text (run-turn): shown, never acted on by the terminal. */
        shown = text_escape_prose(strempty(message), 0);
        shown_channel = text_escape_display(channel ?: "-", 0);
        shown_event = text_escape_display(event ?: "-", 0);
        if (!shown || !shown_channel || !shown_event) {
                log_oom();
                return;
        }
        if (entry_writer_is_loop(j, &writer) > 0)
                printf("%s %s %s: ", ts, shown_channel, shown_event);
        else
                /* the uid is journald's, digits only; shown with the record so it is not taken for loop's */
                printf("%s %s %s [written by uid %s]: ", ts, shown_channel, shown_event,
                       writer && writer[strspn(writer, "0123456789")] == 0 ? writer : "?");
        /* Continuation lines of a multi-line message are indented, as journalctl does. */
        for (const char *p = shown; *p; p++) {
                putchar(*p);
                if (*p == '\n' && p[1])
                        fputs("    ", stdout);
        }
        putchar('\n');
}

static int print_json(sd_journal *j) {
        _cleanup_(json_object_putp) json_object *o = json_object_new_object();
        static const struct { const char *field, *key; } meta[] = {
                { "MESSAGE",           "message" },
                { "MESSAGE_ID",        "message_id" },
                { "SYSLOG_IDENTIFIER", "identifier" },
                { "_SYSTEMD_UNIT",     "unit" },
        };
        const void *data;
        size_t len;
        uint64_t usec;

        if (!o)
                return -ENOMEM;
        if (sd_journal_get_realtime_usec(j, &usec) >= 0) {
                char ts[64];
                time_t t = (time_t) (usec / 1000000);
                struct tm tm;

                if (gmtime_r(&t, &tm)) {
                        size_t k = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
                        snprintf(ts + k, sizeof ts - k, ".%06" PRIu64 "Z", usec % 1000000);
                        json_object_object_add(o, "time", json_object_new_string(ts));
                }
                json_object_object_add(o, "realtime_usec", json_object_new_int64((int64_t) usec));
        }
        for (size_t i = 0; i < ELEMENTSOF(meta); i++) {
                _cleanup_free_ char *v = NULL;
                if (entry_field(j, meta[i].field, &v) >= 0)
                        json_object_object_add(o, meta[i].key, json_object_new_string(v));
        }
        static const struct { const char *field, *key; } numbers[] = {
                { "PRIORITY", "priority" },
                { "_PID",     "pid" },
                { "_UID",     "uid" },          /* who wrote it, as journald saw it: not only loop may */
        };
        for (size_t i = 0; i < ELEMENTSOF(numbers); i++) {
                _cleanup_free_ char *v = NULL;
                if (entry_field(j, numbers[i].field, &v) >= 0)
                        json_object_object_add(o, numbers[i].key, json_object_new_int(atoi(v)));
        }

        SD_JOURNAL_FOREACH_DATA(j, data, len) {
                const char *d = data, *eq = memchr(d, '=', len);
                _cleanup_free_ char *key = NULL;

                if (!eq || len < 5 || memcmp(d, "LOOP_", 5) != 0)
                        continue;
                key = strndup(d, (size_t) (eq - d));
                if (!key)
                        return -ENOMEM;
                json_object_object_add(o, key, json_object_new_string_len(eq + 1, (int) (len - (size_t) (eq + 1 - d))));
        }

        return json_print(stdout, o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

static int logs_add_matches(sd_journal *j, const LogsArgs *a) {
        _cleanup_free_ char *m = NULL;
        int r;

        /* Only loop's audit entries: one of its MESSAGE_IDs (matches on one field are ORed, on different
         * fields ANDed). */
        for (AuditEvent e = 0; e < _AUDIT_EVENT_MAX; e++) {
                if (a->event >= 0 && e != a->event)
                        continue;
                m = mfree(m);
                if (asprintf(&m, "MESSAGE_ID=%s", audit_event_message_id(e)) < 0)
                        return -ENOMEM;
                r = sd_journal_add_match(j, m, 0);
                if (r < 0)
                        return r;
        }
        if (a->channel) {
                m = mfree(m);
                if (asprintf(&m, "LOOP_CHANNEL=%s", a->channel) < 0)
                        return -ENOMEM;
                r = sd_journal_add_match(j, m, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* sd_journal_open() succeeds on a machine without any journal; say so instead of printing nothing. */
static int logs_check_journal(sd_journal *j) {
        uint64_t usage = 0;

        if (sd_journal_get_usage(j, &usage) >= 0 && usage > 0)
                return 0;
        if (access(JOURNALD_SOCKET, F_OK) >= 0)
                return 0;       /* journald runs, nothing stored yet */
        if (geteuid() != 0)
                log_error("No journal files readable and systemd-journald is not running here. "
                          "(The system journal needs root or the group systemd-journal or adm.)");
        else
                log_error("No journal: systemd-journald is not running on this machine (no %s) and there are "
                          "no journal files. Without a journal, loop writes its audit events to stderr.",
                          JOURNALD_SOCKET);
        return -ENOENT;
}

static int logs_parse_argv(int argc, char *argv[], LogsArgs *a) {
        enum { ARG_JSON = 0x100, ARG_EVENT };
        static const struct option options[] = {
                { "help",   no_argument,       NULL, 'h' },
                { "follow", no_argument,       NULL, 'f' },
                { "lines",  required_argument, NULL, 'n' },
                { "json",   no_argument,       NULL, ARG_JSON },
                { "event",  required_argument, NULL, ARG_EVENT },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "hfn:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        logs_help();
                        return 0;
                case 'f':
                        a->follow = true;
                        break;
                case 'n': {
                        char *end;
                        unsigned long long v;

                        errno = 0;
                        v = strtoull(optarg, &end, 10);
                        if (errno != 0 || end == optarg || *end || optarg[0] == '-') {
                                log_error("Invalid number of lines \"%s\".", optarg);
                                return -EINVAL;
                        }
                        a->lines = v;
                        a->lines_set = true;
                        break;
                }
                case ARG_JSON:
                        a->json = true;
                        break;
                case ARG_EVENT:
                        a->event = audit_event_from_string(optarg);
                        if (a->event < 0) {
                                log_error("Unknown event \"%s\"; known: container-registered, container-status, "
                                          "container-removed, run-started, run-turn, run-tool-use, run-finished, "
                                          "run-failed, run-retried, queue-queued, queue-taken, queue-done, "
                                          "queue-retry, queue-failed, runner-started, runner-stopped.", optarg);
                                return -EINVAL;
                        }
                        break;
                default:
                        return -EINVAL;
                }

        if (argc - optind > 1) {
                log_error("loop logs takes at most one channel name.");
                return -EINVAL;
        }
        if (optind < argc) {
                a->channel = argv[optind];
                if (!loop_check_channel_name(a->channel))
                        return -EINVAL;
        }
        return 1;
}

int verb_logs(int argc, char *argv[]) {
        _cleanup_(sd_journal_closep) sd_journal *j = NULL;
        LogsArgs a = { .event = _AUDIT_EVENT_INVALID };
        bool have_current = false;
        uint64_t n_shown = 0;
        int r;

        r = logs_parse_argv(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (a.follow && !a.lines_set)
                a.lines = LOGS_FOLLOW_DEFAULT_LINES, a.lines_set = true;

        r = sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY);
        if (r < 0) {
                log_error_errno(r, "Failed to open the journal: %m");
                return EXIT_FAILURE;
        }
        if (logs_check_journal(j) < 0)
                return EXIT_FAILURE;
        /* Fields are capped at 64 KiB by the writer; show them whole. */
        (void) sd_journal_set_data_threshold(j, 0);

        r = logs_add_matches(j, &a);
        if (r < 0) {
                log_error_errno(r, "Failed to add journal matches: %m");
                return EXIT_FAILURE;
        }

        if (a.lines_set) {
                r = sd_journal_seek_tail(j);
                if (r >= 0 && a.lines > 0) {
                        r = sd_journal_previous_skip(j, a.lines);
                        have_current = r > 0;
                } else if (r >= 0)
                        /* -n 0: stand on the last entry, so the first next() only finds new ones. */
                        r = sd_journal_previous(j);
        } else
                r = sd_journal_seek_head(j);
        if (r < 0) {
                log_error_errno(r, "Failed to seek in the journal: %m");
                return EXIT_FAILURE;
        }

        for (;;) {
                if (!have_current) {
                        r = sd_journal_next(j);
                        if (r < 0) {
                                log_error_errno(r, "Failed to read the journal: %m");
                                return EXIT_FAILURE;
                        }
                        if (r == 0) {
                                if (!a.follow)
                                        break;
                                if (fflush(stdout) != 0)
                                        return EXIT_FAILURE;    /* the reader went away */
                                r = sd_journal_wait(j, UINT64_MAX);
                                if (r < 0) {
                                        log_error_errno(r, "Failed to wait for the journal: %m");
                                        return EXIT_FAILURE;
                                }
                                continue;
                        }
                }
                have_current = false;

                if (a.json) {
                        r = print_json(j);
                        if (r < 0) {
                                log_oom();
                                return EXIT_FAILURE;
                        }
                } else
                        print_text(j);
                n_shown++;
        }

        if (n_shown == 0 && !a.json)
                printf("-- No entries --\n");
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
