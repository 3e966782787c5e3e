/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The cron -> OnCalendar= table: test-tasks-schedule checks the conversion against it, and
 * test-tasks-cron (integration) checks each converted expression's next firings against
 * `systemd-analyze calendar --iterations=5` and Python's croniter. A NULL oncalendar means refused,
 * with reason containing the given text. */

static const struct {
        const char *cron, *oncalendar, *reason;
} tasks_cron_table[] = {
        { "* * * * *", "*-*-* *:*:00", NULL },
        { "0 * * * *", "*-*-* *:00:00", NULL },
        { "*/15 * * * *", "*-*-* *:00,15,30,45:00", NULL },
        { "5 4 * * *", "*-*-* 04:05:00", NULL },
        { "0 22 * * 1-5", "Mon..Fri *-*-* 22:00:00", NULL },
        { "23 0-20/2 * * *", "*-*-* 00,02,04,06,08,10,12,14,16,18,20:23:00", NULL },
        { "0 0,12 1 */2 *", "*-01,03,05,07,09,11-01 00,12:00:00", NULL },
        { "0 4 8-14 * *", "*-*-08..14 04:00:00", NULL },
        { "0 0 * * sun", "Sun *-*-* 00:00:00", NULL },
        { "0 0 * * 7", "Sun *-*-* 00:00:00", NULL },
        { "0 0 * * 5-7", "Sun,Fri,Sat *-*-* 00:00:00", NULL },
        { "30 9 * * MON,wed,Fri", "Mon,Wed,Fri *-*-* 09:30:00", NULL },
        { "0 9 * jan-mar *", "*-01..03-* 09:00:00", NULL },
        { "0 9 1 JUL *", "*-07-01 09:00:00", NULL },
        { "10-12 * * * *", "*-*-* *:10..12:00", NULL },
        { "10,11 * * * *", "*-*-* *:10,11:00", NULL },
        { "5/20 * * * *", "*-*-* *:05,25,45:00", NULL },
        { "0 0 */2 * *", "*-*-01,03,05,07,09,11,13,15,17,19,21,23,25,27,29,31 00:00:00", NULL },
        { "0 0 29 2 *", "*-02-29 00:00:00", NULL },
        { "@hourly", "*-*-* *:00:00", NULL },
        { "@daily", "*-*-* 00:00:00", NULL },
        { "@weekly", "Sun *-*-* 00:00:00", NULL },
        { "@monthly", "*-*-01 00:00:00", NULL },
        { "@yearly", "*-01-01 00:00:00", NULL },
        { "0 0 1 * 1", NULL, "OR the day of week" },
        { "0 0 1-31 * mon", NULL, "OR the day of week" },
        { "0 0 30 2 *", NULL, "no month" },
        { "@reboot", NULL, "no @reboot" },
        { "60 * * * *", NULL, "minute field" },
        { "* 24 * * *", NULL, "hour field" },
        { "* * 0 * *", NULL, "day-of-month field" },
        { "* * * 13 *", NULL, "month field" },
        { "* * * * 8", NULL, "day-of-week field" },
        { "* * * * mon-sun", NULL, "day-of-week field" },
        { "*/0 * * * *", NULL, "minute field" },
        { "5-1 * * * *", NULL, "minute field" },
        { "* * * *", NULL, "exactly five fields" },
        { "* * * * * *", NULL, "exactly five fields" },
        { "1,,2 * * * *", NULL, "minute field" },
        { "", NULL, "exactly five fields" },
};
