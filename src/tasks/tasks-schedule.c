/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "tasks-schedule.h"

static const char * const task_type_table[_TASK_TYPE_MAX] = {
        [TASK_CRON] = "cron",
        [TASK_INTERVAL] = "interval",
        [TASK_ONCE] = "once",
        [TASK_MANUAL] = "manual",
};

const char *task_type_to_string(TaskType t) {
        return t >= 0 && t < _TASK_TYPE_MAX ? task_type_table[t] : NULL;
}

TaskType task_type_from_string(const char *s) {
        for (TaskType t = 0; t < _TASK_TYPE_MAX; t++)
                if (streq_ptr(s, task_type_table[t]))
                        return t;
        return _TASK_TYPE_INVALID;
}


/* ---- cron ---- */

typedef struct CronField {
        const char *what;
        unsigned min, max;
        const char * const *names;      /* names[i] is the value min + i */
} CronField;

static const char * const month_names[] = { "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec", NULL };
static const char * const dow_names[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL };
static const char * const dow_systemd[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };

static const CronField cron_fields[5] = {
        { "minute", 0, 59, NULL },
        { "hour", 0, 23, NULL },
        { "day of month", 1, 31, NULL },
        { "month", 1, 12, month_names },
        { "day of week", 0, 7, dow_names },
};

static int cron_value(const CronField *f, const char *s, size_t n, unsigned *ret) {
        unsigned v = 0;

        if (n == 0)
                return -EINVAL;
        if (f->names && n == 3 && isalpha((unsigned char) s[0])) {
                for (unsigned i = 0; f->names[i]; i++)
                        if (strncasecmp(s, f->names[i], 3) == 0) {
                                *ret = f->min + i;
                                return 0;
                        }
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                if (!isdigit((unsigned char) s[i]) || i >= 2)
                        return -EINVAL;
                v = v * 10 + (unsigned) (s[i] - '0');
        }
        if (v < f->min || v > f->max)
                return -ERANGE;
        *ret = v;
        return 0;
}

/* One field to a bitmask of its values. */
static int cron_field_parse(const CronField *f, const char *text, uint64_t *ret) {
        uint64_t mask = 0;
        const char *p = text;

        for (;;) {
                const char *end = strchrnul(p, ','), *slash, *dash;
                unsigned lo, hi, step = 1;
                size_t n = (size_t) (end - p);

                slash = memchr(p, '/', n);
                if (slash) {
                        unsigned s = 0;
                        const char *q = slash + 1;

                        if (q == end || end - q > 2)
                                return -EINVAL;
                        for (; q < end; q++) {
                                if (!isdigit((unsigned char) *q))
                                        return -EINVAL;
                                s = s * 10 + (unsigned) (*q - '0');
                        }
                        if (s == 0)
                                return -EINVAL;
                        step = s;
                        n = (size_t) (slash - p);
                }
                dash = memchr(p, '-', n);
                if (n == 1 && p[0] == '*') {
                        lo = f->min;
                        hi = f->max == 7 ? 6 : f->max;  /* day of week: 0..6, 7 is Sunday again */
                } else if (dash) {
                        if (cron_value(f, p, (size_t) (dash - p), &lo) < 0 ||
                            cron_value(f, dash + 1, n - (size_t) (dash - p) - 1, &hi) < 0 || lo > hi)
                                return -EINVAL;
                } else {
                        if (cron_value(f, p, n, &lo) < 0)
                                return -EINVAL;
                        /* "a/n": from a to the end, as Vixie cron reads it (day of week: to 7, so 7/n is
                         * Sunday; ending at 6 left 7/n no day at all, a timer of every day whose gap was
                         * counted as never) */
                        hi = slash ? f->max : lo;
                }
                for (unsigned v = lo; v <= hi; v += step)
                        mask |= UINT64_C(1) << (f->max == 7 && v == 7 ? 0 : v);
                if (!*end)
                        break;
                p = end + 1;
        }
        if (mask == 0)
                return -EINVAL;         /* no value: never one the calendar event would leave out */
        *ret = mask;
        return 0;
}

static bool mask_full(const CronField *f, uint64_t mask) {
        unsigned hi = f->max == 7 ? 6 : f->max;
        for (unsigned v = f->min; v <= hi; v++)
                if (!(mask & (UINT64_C(1) << v)))
                        return false;
        return true;
}

/* The values of mask as a systemd list: "*" when full, runs of three or more as a..b. */
static int mask_format(const CronField *f, uint64_t mask, bool weekday, FILE *out) {
        unsigned hi = f->max == 7 ? 6 : f->max;
        bool first = true;

        if (mask_full(f, mask) && !weekday) {
                fputc('*', out);
                return 0;
        }
        for (unsigned v = f->min; v <= hi; v++) {
                unsigned e = v;

                if (!(mask & (UINT64_C(1) << v)))
                        continue;
                while (e + 1 <= hi && (mask & (UINT64_C(1) << (e + 1))))
                        e++;
                if (!first)
                        fputc(',', out);
                first = false;
                if (weekday && e >= v + 2)
                        fprintf(out, "%s..%s", dow_systemd[v], dow_systemd[e]);
                else if (weekday)
                        for (unsigned w = v; w <= e; w++)
                                fprintf(out, "%s%s", w > v ? "," : "", dow_systemd[w]);
                else if (e >= v + 2)
                        fprintf(out, "%02u..%02u", v, e);
                else
                        for (unsigned w = v; w <= e; w++)
                                fprintf(out, "%s%02u", w > v ? "," : "", w);
                v = e;
        }
        return 0;
}

static const struct {
        const char *macro, *cron;
} cron_macros[] = {
        { "@yearly", "0 0 1 1 *" },
        { "@annually", "0 0 1 1 *" },
        { "@monthly", "0 0 1 * *" },
        { "@weekly", "0 0 * * 0" },
        { "@daily", "0 0 * * *" },
        { "@midnight", "0 0 * * *" },
        { "@hourly", "0 * * * *" },
};

/* Days in a Gregorian cycle: dates, months and weekdays repeat after 400 years. */
#define GREGORIAN_CYCLE_DAYS 146097U

static bool leap_year(unsigned y) {
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* The shortest time between two firings of the cron fields' masks (day of month and day of week both
 * matching: the caller refused the OR case), in seconds of local time as the calendar counts it (a
 * daylight-saving shift is not counted). Within a day: the closest two of its times; across days: the
 * last time of a firing day to the first of the next, over every day of a Gregorian cycle. */
static uint64_t cron_shortest_gap_sec(const uint64_t mask[5]) {
        static const uint8_t month_days[13] = { 0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        unsigned first = UINT_MAX, last = 0, prev = UINT_MAX, dow = 6;         /* 2000-01-01 was a Saturday */
        unsigned first_day = UINT_MAX, prev_day = UINT_MAX, day = 0;
        uint64_t shortest = UINT64_MAX, days = UINT64_MAX;

        for (unsigned h = 0; h < 24; h++)
                for (unsigned m = 0; m < 60; m++) {
                        unsigned t = h * 60 + m;
                        if (!(mask[1] & (UINT64_C(1) << h)) || !(mask[0] & (UINT64_C(1) << m)))
                                continue;
                        if (prev != UINT_MAX)
                                shortest = MIN(shortest, (uint64_t) (t - prev) * 60);
                        first = MIN(first, t);
                        last = t;
                        prev = t;
                }
        if (first == UINT_MAX)
                return UINT64_MAX;

        for (unsigned y = 2000; y < 2400; y++)
                for (unsigned mon = 1; mon <= 12; mon++) {
                        unsigned n = month_days[mon] + (mon == 2 && leap_year(y));
                        for (unsigned d = 1; d <= n; d++, day++, dow = (dow + 1) % 7) {
                                if (!(mask[3] & (UINT64_C(1) << mon)) || !(mask[2] & (UINT64_C(1) << d)) ||
                                    !(mask[4] & (UINT64_C(1) << dow)))
                                        continue;
                                if (prev_day != UINT_MAX)
                                        days = MIN(days, (uint64_t) (day - prev_day));
                                first_day = MIN(first_day, day);
                                prev_day = day;
                        }
                }
        if (first_day == UINT_MAX)
                return UINT64_MAX;
        days = MIN(days, (uint64_t) (first_day + GREGORIAN_CYCLE_DAYS - prev_day));
        return MIN(shortest, days * 86400 - (uint64_t) (last - first) * 60);
}

int tasks_cron_to_oncalendar(const char *cron, char **ret, uint64_t *ret_shortest_sec, const char **ret_reason) {
        _cleanup_free_ char *copy = NULL, *buf = NULL;
        char *fields[5], *save = NULL, *tok;
        uint64_t mask[5];
        size_t n = 0, size = 0;
        FILE *out;
        static const uint8_t month_days[13] = { 0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        unsigned longest = 0;

        *ret_reason = "not a cron expression";
        if (!cron || strlen(cron) > TASKS_CRON_MAX)
                return (*ret_reason = "the cron expression is empty or too long"), -EINVAL;
        while (isspace((unsigned char) *cron))
                cron++;
        for (size_t i = 0; i < ELEMENTSOF(cron_macros); i++)
                if (strncasecmp(cron, cron_macros[i].macro, strlen(cron_macros[i].macro)) == 0 &&
                    strspn(cron + strlen(cron_macros[i].macro), " \t") == strlen(cron + strlen(cron_macros[i].macro)))
                        cron = cron_macros[i].cron;
        if (cron[0] == '@')
                return (*ret_reason = "only @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly are known (no @reboot)"), -EINVAL;

        copy = strdup(cron);
        if (!copy)
                return -ENOMEM;
        for (tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
                if (n == 5)
                        return (*ret_reason = "a cron expression has exactly five fields: minute hour day-of-month month day-of-week"), -EINVAL;
                fields[n++] = tok;
        }
        if (n != 5)
                return (*ret_reason = "a cron expression has exactly five fields: minute hour day-of-month month day-of-week"), -EINVAL;

        for (size_t i = 0; i < 5; i++)
                if (cron_field_parse(&cron_fields[i], fields[i], &mask[i]) < 0) {
                        static const char * const reasons[5] = {
                                "the minute field is not valid (0-59, *, ranges, steps, lists)",
                                "the hour field is not valid (0-23, *, ranges, steps, lists)",
                                "the day-of-month field is not valid (1-31, *, ranges, steps, lists)",
                                "the month field is not valid (1-12 or jan-dec, *, ranges, steps, lists)",
                                "the day-of-week field is not valid (0-7 or sun-sat, *, ranges, steps, lists)",
                        };
                        *ret_reason = reasons[i];
                        return -EINVAL;
                }

        /* cron fires on a day whose day of month OR day of week matches when both fields are restricted
         * (neither starts with "*"); a calendar event needs both to match. Only when one of them allows
         * every day do the two readings agree. */
        if (!(mask_full(&cron_fields[2], mask[2]) && fields[2][0] == '*') &&
            !(mask_full(&cron_fields[4], mask[4]) && fields[4][0] == '*'))
                return (*ret_reason = "cron runs when the day of month OR the day of week matches if both are restricted, "
                                      "which one systemd calendar event cannot say: restrict only one of them (use two tasks)"), -EINVAL;

        for (unsigned m = 1; m <= 12; m++)
                if (mask[3] & (UINT64_C(1) << m))
                        longest = MAX(longest, month_days[m]);
        for (unsigned d = 1; d <= 31; d++)
                if ((mask[2] & (UINT64_C(1) << d)) && d <= longest)
                        goto some_day;
        return (*ret_reason = "no month in the month field has that day of month"), -EINVAL;
some_day:

        out = open_memstream(&buf, &size);
        if (!out)
                return -ENOMEM;
        if (!mask_full(&cron_fields[4], mask[4])) {
                mask_format(&cron_fields[4], mask[4], true, out);
                fputc(' ', out);
        }
        fputs("*-", out);
        mask_format(&cron_fields[3], mask[3], false, out);
        fputc('-', out);
        mask_format(&cron_fields[2], mask[2], false, out);
        fputc(' ', out);
        mask_format(&cron_fields[1], mask[1], false, out);
        fputc(':', out);
        mask_format(&cron_fields[0], mask[0], false, out);
        fputs(":00", out);
        if (fclose(out) != 0)
                return -ENOMEM;
        if (size > TASKS_ONCALENDAR_MAX)
                return (*ret_reason = "the calendar event would be too long"), -EINVAL;
        if (ret_shortest_sec)
                *ret_shortest_sec = cron_shortest_gap_sec(mask);
        *ret_reason = NULL;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* ---- interval ---- */

int tasks_interval_parse(const char *s, uint64_t *ret_sec, const char **ret_reason) {
        uint64_t total = 0;
        const char *p = s;

        *ret_reason = "an interval is a duration such as 90s, 5m, 1h30m or 2d";
        if (isempty(s) || strlen(s) > TASKS_SCHEDULE_MAX)
                return -EINVAL;
        while (*p) {
                uint64_t v = 0, unit;
                const char *start = p;

                while (isdigit((unsigned char) *p)) {
                        if (v > TASKS_INTERVAL_MAX_SEC)
                                return (*ret_reason = "the interval is longer than a year"), -ERANGE;
                        v = v * 10 + (uint64_t) (*p++ - '0');
                }
                if (p == start)
                        return -EINVAL;
                switch (*p) {
                case 's': unit = 1; break;
                case 'm': unit = 60; break;
                case 'h': unit = 3600; break;
                case 'd': unit = 86400; break;
                default: return -EINVAL;
                }
                p++;
                if (v > TASKS_INTERVAL_MAX_SEC)
                        return (*ret_reason = "the interval is longer than a year"), -ERANGE;
                total += v * unit;
                if (total > TASKS_INTERVAL_MAX_SEC)
                        return (*ret_reason = "the interval is longer than a year"), -ERANGE;
        }
        if (total == 0)
                return (*ret_reason = "the interval must be longer than zero"), -EINVAL;
        *ret_reason = NULL;
        *ret_sec = total;
        return 0;
}

/* ---- once ---- */

static int digits(const char **p, unsigned n, int *ret) {
        int v = 0;
        for (unsigned i = 0; i < n; i++, (*p)++) {
                if (!isdigit((unsigned char) **p))
                        return -EINVAL;
                v = v * 10 + (**p - '0');
        }
        *ret = v;
        return 0;
}

int tasks_time_parse(const char *s, int64_t *ret_epoch, const char **ret_reason) {
        static const uint8_t month_days[13] = { 0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        int year, mon, day, hour, min, sec, oh = 0, om = 0, sign = 0;
        const char *p = s;
        struct tm tm = {};
        time_t t;

        *ret_reason = "a time is RFC 3339, such as 2026-11-26T12:00:00Z or 2026-11-26T13:00:00+01:00";
        if (isempty(s) || strlen(s) > TASKS_SCHEDULE_MAX)
                return -EINVAL;
        if (digits(&p, 4, &year) < 0 || *p++ != '-' || digits(&p, 2, &mon) < 0 || *p++ != '-' ||
            digits(&p, 2, &day) < 0 || (*p != 'T' && *p != 't' && *p != ' ') || !*p++ ||
            digits(&p, 2, &hour) < 0 || *p++ != ':' || digits(&p, 2, &min) < 0 || *p++ != ':' ||
            digits(&p, 2, &sec) < 0)
                return -EINVAL;
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                while (isdigit((unsigned char) *p))
                        p++;
        }
        if (*p == 'Z' || *p == 'z')
                p++;
        else if (*p == '+' || *p == '-') {
                sign = *p++ == '+' ? 1 : -1;
                if (digits(&p, 2, &oh) < 0 || *p++ != ':' || digits(&p, 2, &om) < 0 || oh > 23 || om > 59)
                        return -EINVAL;
        } else
                return (*ret_reason = "the time needs a time zone offset (Z or +HH:MM)"), -EINVAL;
        if (*p)
                return -EINVAL;
        if (year > TASKS_YEAR_MAX)
                return (*ret_reason = "the time lies beyond the last year a systemd calendar event names (2199)"), -EINVAL;
        if (year < 1970 || mon < 1 || mon > 12 || day < 1 || day > month_days[mon] ||
            (mon == 2 && day == 29 && !((year % 4 == 0 && year % 100 != 0) || year % 400 == 0)) ||
            hour > 23 || min > 59 || sec > 60)
                return (*ret_reason = "the time names no real instant"), -EINVAL;
        if (sec == 60)
                sec = 59;       /* a leap second: the timer fires at :59 */

        tm = (struct tm) { .tm_year = year - 1900, .tm_mon = mon - 1, .tm_mday = day,
                           .tm_hour = hour, .tm_min = min, .tm_sec = sec };
        t = timegm(&tm);
        if (t == (time_t) -1)
                return (*ret_reason = "the time names no real instant"), -EINVAL;
        *ret_reason = NULL;
        *ret_epoch = (int64_t) t - sign * (oh * 3600 + om * 60);
        return 0;
}

int tasks_time_to_oncalendar(int64_t epoch, char **ret) {
        time_t t = (time_t) epoch;
        struct tm tm;
        char *s;

        if (!gmtime_r(&t, &tm))
                return -ERANGE;
        if (asprintf(&s, "%04d-%02d-%02d %02d:%02d:%02d UTC", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}
