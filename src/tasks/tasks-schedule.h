/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A task's schedule, turned into what its systemd timer says:
 *
 *   cron      five fields (minute hour day-of-month month day-of-week), each "*", a number, a name (jan..dec,
 *             sun..sat, any case), a range a-b, a step *\/n, a-b/n or a/n, or a list of those; 7 is Sunday
 *             too; the macros @yearly @annually @monthly @weekly @daily @midnight @hourly. Converted exactly
 *             to one OnCalendar= expression in local time, every field an explicit list (ranges of three or
 *             more written a..b). Refused with the reason: cron's rule that a day matches when its day of
 *             month OR its day of week does, when both are restricted (a calendar event needs both);
 *             @reboot; a day of month no month in the list has (30 February).
 *   interval  a duration such as 90s, 5m, 1h30m, 2d (units s m h d; at most TASKS_INTERVAL_MAX_SEC) becomes
 *             OnActiveSec= and OnUnitActiveSec= of that length;
 *   once      an RFC 3339 time (2026-11-26T12:00:00Z, offsets and fractions allowed, the fraction dropped)
 *             becomes OnCalendar= at that instant in UTC;
 *   manual    no timer. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define TASKS_CRON_MAX 256U                     /* bytes of a cron expression */
#define TASKS_SCHEDULE_MAX 256U                 /* bytes of any schedule string */
#define TASKS_ONCALENDAR_MAX 1024U
#define TASKS_INTERVAL_MAX_SEC (366ULL * 24 * 3600)
#define TASKS_YEAR_MAX 2199                     /* the last year systemd's calendar events name */

typedef enum TaskType {
        TASK_CRON,
        TASK_INTERVAL,
        TASK_ONCE,
        TASK_MANUAL,
        _TASK_TYPE_MAX,
        _TASK_TYPE_INVALID = -EINVAL,
} TaskType;

const char *task_type_to_string(TaskType t);
TaskType task_type_from_string(const char *s);

/* cron -> OnCalendar= value, and (ret_shortest_sec, may be NULL) the shortest time between two of its
 * firings, which tasks.min_interval_sec bounds as it bounds an interval. -EINVAL with *ret_reason (static
 * text) saying why. */
int tasks_cron_to_oncalendar(const char *cron, char **ret, uint64_t *ret_shortest_sec, const char **ret_reason);

/* "5m" -> 300. -EINVAL for anything else (reason in *ret_reason), -ERANGE above the maximum. */
int tasks_interval_parse(const char *s, uint64_t *ret_sec, const char **ret_reason);

/* RFC 3339 -> seconds since the epoch. -EINVAL with the reason. */
int tasks_time_parse(const char *s, int64_t *ret_epoch, const char **ret_reason);
/* epoch -> "YYYY-MM-DD HH:MM:SS UTC" (an OnCalendar= value). */
int tasks_time_to_oncalendar(int64_t epoch, char **ret);
