/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "tap.h"
#include "tasks-schedule.h"
#include "tasks-cron-table.h"

static void test_cron_table(void) {
        for (size_t i = 0; i < ELEMENTSOF(tasks_cron_table); i++) {
                const char *reason = NULL;
                char *got = NULL;
                int r;

                r = tasks_cron_to_oncalendar(tasks_cron_table[i].cron, &got, NULL, &reason);
                if (tasks_cron_table[i].oncalendar)
                        ok(r == 0 && streq(got, tasks_cron_table[i].oncalendar), "cron \"%s\" is OnCalendar=%s (got %s)",
                           tasks_cron_table[i].cron, tasks_cron_table[i].oncalendar, r == 0 ? got : strna(reason));
                else
                        ok(r == -EINVAL && reason && strstr(reason, tasks_cron_table[i].reason),
                           "cron \"%s\" is refused: %s (got %s)", tasks_cron_table[i].cron,
                           tasks_cron_table[i].reason, r == 0 ? got : strna(reason));
                free(got);
        }
}

/* "a/n" in the day of week runs to 7: 7/n was no day at all, which wrote a calendar event of every day. */
static void test_cron_dow_step(void) {
        static const struct { const char *cron, *oncalendar; } cases[] = {
                { "0 0 * * 7/1", "Sun *-*-* 00:00:00" },
                { "0 0 * * 7/3", "Sun *-*-* 00:00:00" },
                { "0 0 * * 5/1", "Sun,Fri,Sat *-*-* 00:00:00" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *reason = NULL;
                char *got = NULL;
                int r = tasks_cron_to_oncalendar(cases[i].cron, &got, NULL, &reason);

                ok(r == 0 && streq(got, cases[i].oncalendar), "cron \"%s\" is OnCalendar=%s (got %s)", cases[i].cron,
                   cases[i].oncalendar, r == 0 ? got : strna(reason));
                free(got);
        }
}

static void test_interval(void) {
        const char *reason;
        uint64_t s = 0;

        ok(tasks_interval_parse("5m", &s, &reason) == 0 && s == 300, "5m is 300 s");
        ok(tasks_interval_parse("1h30m", &s, &reason) == 0 && s == 5400, "1h30m is 5400 s");
        ok(tasks_interval_parse("2d", &s, &reason) == 0 && s == 172800, "2d is 172800 s");
        ok(tasks_interval_parse("90s", &s, &reason) == 0 && s == 90, "90s is 90 s");
        ok(tasks_interval_parse("5", &s, &reason) == -EINVAL && reason, "a number without unit is refused");
        ok(tasks_interval_parse("0m", &s, &reason) == -EINVAL, "a zero interval is refused");
        ok(tasks_interval_parse("400d", &s, &reason) == -ERANGE, "an interval above a year is refused");
        ok(tasks_interval_parse("99999999999999999999999s", &s, &reason) == -ERANGE, "a huge number does not overflow");
        ok(tasks_interval_parse("5m ", &s, &reason) == -EINVAL, "trailing junk is refused");
        ok(tasks_interval_parse("", &s, &reason) == -EINVAL, "an empty interval is refused");
}

static void test_time(void) {
        const char *reason;
        char *cal = NULL;
        int64_t t = 0;

        ok(tasks_time_parse("2026-11-26T12:00:00Z", &t, &reason) == 0 && t == 1795694400, "a UTC time parses");
        ok(tasks_time_parse("2026-11-26T13:30:00+01:30", &t, &reason) == 0 && t == 1795694400, "an offset is applied");
        ok(tasks_time_parse("2026-11-26T12:00:00.123456Z", &t, &reason) == 0 && t == 1795694400, "a fraction is dropped");
        ok(tasks_time_parse("2026-11-26T12:00:00", &t, &reason) == -EINVAL && strstr(reason, "offset"), "a time without zone is refused");
        ok(tasks_time_parse("2026-02-30T12:00:00Z", &t, &reason) == -EINVAL, "30 February is refused");
        ok(tasks_time_parse("2027-02-29T12:00:00Z", &t, &reason) == -EINVAL, "29 February of a common year is refused");
        /* systemd's calendar events end with 2199: a later time was recorded, its timer never made, and every
         * sync of the channel failed on it */
        ok(tasks_time_parse("9999-12-31T23:59:59Z", &t, &reason) == -EINVAL && reason && strstr(reason, "2199"),
           "a time beyond 2199 is refused with the reason");
        ok(tasks_time_parse("2199-12-31T23:59:59Z", &t, &reason) == 0, "the last second of 2199 is a time");
        ok(tasks_time_parse("2026-11-26T12:00:00Zjunk", &t, &reason) == -EINVAL, "trailing junk is refused");
        ok(tasks_time_to_oncalendar(1795694400, &cal) == 0 && streq(cal, "2026-11-26 12:00:00 UTC"), "an instant is an OnCalendar= in UTC");
        free(cal);
}

static void test_types(void) {
        ok(task_type_from_string("cron") == TASK_CRON && task_type_from_string("manual") == TASK_MANUAL, "type names parse");
        ok(task_type_from_string("Cron") == _TASK_TYPE_INVALID && task_type_from_string(NULL) == _TASK_TYPE_INVALID, "unknown types are refused");
}

int main(void) {
        test_cron_table();
        test_cron_dow_step();
        test_interval();
        test_time();
        test_types();
        return done_testing();
}
