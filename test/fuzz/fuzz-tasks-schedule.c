/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: a task's schedule as an agent sends it (tasks-schedule.h): the input as a cron
 * expression, an interval and an RFC 3339 time. Whatever is accepted converts to a calendar event within
 * its cap, and a cron expression's shortest gap between two firings is a whole number of minutes, at
 * least one and at most the eight years between two leap days across 2100. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "tasks-schedule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EIGHT_YEARS_SEC (8ULL * 366 * 86400)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL, *cal = NULL;
        const char *reason = NULL;
        uint64_t gap = 0, sec = 0;
        int64_t epoch;

        if (size > 4096)
                return 0;
        text = strndup((const char *) data, size);
        if (!text)
                return 0;

        if (tasks_cron_to_oncalendar(text, &cal, &gap, &reason) == 0) {
                if (reason || !cal || strlen(cal) == 0 || strlen(cal) > TASKS_ONCALENDAR_MAX)
                        abort();
                if (gap < 60 || gap % 60 != 0 || gap > EIGHT_YEARS_SEC)
                        abort();
        } else if (!reason)
                abort();        /* every refusal says why */
        cal = mfree(cal);

        if (tasks_interval_parse(text, &sec, &reason) == 0 && (sec == 0 || sec > TASKS_INTERVAL_MAX_SEC))
                abort();
        if (tasks_time_parse(text, &epoch, &reason) == 0 && tasks_time_to_oncalendar(epoch, &cal) == 0 &&
            strlen(cal) > TASKS_ONCALENDAR_MAX)
                abort();
        return 0;
}
