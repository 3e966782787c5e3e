/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "config.h"
#include "tasks-timer.h"
#include "time-util.h"
#include "string-util.h"

#define SYSTEMD_DEST "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"
/* A stopped timer is unloaded by systemd's next garbage collection, at once; waited for this long at most
 * before the same name is made again. */
#define TASK_TIMER_GONE_WAIT_USEC (5ULL * 1000000ULL)

int tasks_bus_open(sd_bus **ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        if (sd_booted() <= 0)
                return -ENOMEDIUM;
        /* root talks to systemd directly, as systemctl does: no bus daemon needed, no polkit asked */
        if (geteuid() == 0) {
                r = sd_bus_new(&bus);
                if (r < 0)
                        return r;
                r = sd_bus_set_address(bus, "unix:path=/run/systemd/private");
                if (r >= 0)
                        r = sd_bus_start(bus);
                if (r >= 0) {
                        *ret = TAKE_PTR(bus);
                        return 0;
                }
                bus = sd_bus_flush_close_unref(bus);
        }
        return sd_bus_open_system(ret);
}

int task_unit_name(const char *channel, const char *id, const char *suffix, char **ret) {
        char *s;

        if (channel_name_check(channel, NULL) < 0 || !task_id_valid(id))
                return -EINVAL;
        if (asprintf(&s, TASK_UNIT_PREFIX "%s:%s%s", channel, id, suffix) < 0)
                return -ENOMEM;
        if (strlen(s) > TASK_UNIT_NAME_MAX) {
                free(s);
                return -ENAMETOOLONG;
        }
        *ret = s;
        return 0;
}

int task_instance_parse(const char *instance, char **ret_channel, char **ret_id) {
        const char *colon;
        _cleanup_free_ char *channel = NULL, *id = NULL;

        colon = instance ? strrchr(instance, ':') : NULL;
        if (!colon)
                return -EINVAL;
        channel = strndup(instance, (size_t) (colon - instance));
        id = strdup(colon + 1);
        if (!channel || !id)
                return -ENOMEM;
        if (channel_name_check(channel, NULL) < 0 || !task_id_valid(id))
                return -EINVAL;
        *ret_channel = TAKE_PTR(channel);
        *ret_id = TAKE_PTR(id);
        return 0;
}

static int bus_error_text(const sd_bus_error *e, int r, char **ret_error) {
        if (ret_error && !*ret_error)
                (void) asprintf(ret_error, "%s", sd_bus_error_is_set(e) ? e->message : strerror(-r));
        return r;
}

int task_timer_exists(sd_bus *bus, const char *channel, const char *id) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *unit = NULL;
        int r;

        r = task_unit_name(channel, id, ".timer", &unit);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "GetUnit", &e, &reply, "s", unit);
        if (r >= 0)
                return 1;
        if (sd_bus_error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit"))
                return 0;
        return r;
}

int task_timer_remove(sd_bus *bus, const char *channel, const char *id, char **ret_error) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *unit = NULL;
        struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
        int r;

        r = task_unit_name(channel, id, ".timer", &unit);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "StopUnit", &e, NULL, "ss", unit, "replace");
        if (r < 0 && !sd_bus_error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit"))
                return bus_error_text(&e, r, ret_error);
        /* a timer that failed stays loaded until its failure is reset */
        sd_bus_error_free(&e);
        (void) sd_bus_call_method(bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "ResetFailedUnit", &e, NULL, "s", unit);

        /* the name is free once systemd has unloaded the unit */
        for (uint64_t waited = 0; waited < TASK_TIMER_GONE_WAIT_USEC; waited += 10000) {
                r = task_timer_exists(bus, channel, id);
                if (r <= 0)
                        return r < 0 ? bus_error_text(&e, r, ret_error) : 0;
                nanosleep(&ts, NULL);
        }
        if (ret_error && !*ret_error)
                (void) asprintf(ret_error, "the timer %s did not go away", unit);
        return -EBUSY;
}

int task_timer_description(const char *channel, const Task *t, char **ret) {
        char *s;
        int k;

        if (t->type == TASK_INTERVAL)
                k = asprintf(&s, "loop task %s of channel %s: every %" PRIu64 "s", t->id, channel, t->interval_sec);
        else
                k = asprintf(&s, "loop task %s of channel %s: %s", t->id, channel, strempty(t->oncalendar));
        if (k < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static bool task_wants_timer(const Task *t) {
        return t->enabled && !t->done && t->type != TASK_MANUAL;
}

static int task_timer_create(sd_bus *bus, const char *channel, const Task *t, char **ret_error);

int task_timer_apply(sd_bus *bus, const char *channel, const Task *t, char **ret_error) {
        int r;

        r = task_timer_remove(bus, channel, t->id, ret_error);
        if (r < 0)
                return r;
        return task_timer_create(bus, channel, t, ret_error);
}

/* The timer of t, known not to exist. */
static int task_timer_create(sd_bus *bus, const char *channel, const Task *t, char **ret_error) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_free_ char *unit = NULL, *description = NULL;
        int r;

        if (!task_wants_timer(t))
                return 0;

        r = task_unit_name(channel, t->id, ".timer", &unit);
        if (r < 0)
                return r;
        r = task_timer_description(channel, t, &description);
        if (r < 0)
                return r;

        r = sd_bus_message_new_method_call(bus, &m, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "StartTransientUnit");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "ss", unit, "fail");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "(sv)(sv)", "Description", "s", description,
                                  "AccuracyUSec", "t", (uint64_t) 1000000);
        if (r < 0)
                return r;
        if (t->type == TASK_INTERVAL)
                r = sd_bus_message_append(m, "(sv)", "TimersMonotonic", "a(st)", 2,
                                          "OnActiveSec", t->interval_sec * 1000000ULL,
                                          "OnUnitActiveSec", t->interval_sec * 1000000ULL);
        else
                r = sd_bus_message_append(m, "(sv)(sv)", "TimersCalendar", "a(ss)", 1, "OnCalendar", t->oncalendar,
                                          "Persistent", "b", 1);
        if (r >= 0 && t->type == TASK_ONCE)
                r = sd_bus_message_append(m, "(sv)", "RemainAfterElapse", "b", 0);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r < 0)
                return r;
        r = sd_bus_call(bus, m, 0, &e, NULL);
        if (r < 0)
                return bus_error_text(&e, r, ret_error);
        return 0;
}

/* A once task whose instant passed without a firing (the machine was off): no stamp file makes
 * Persistent= catch it up, so the service is started here, once. */
static int task_start_missed(sd_bus *bus, const char *channel, const Task *t) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *unit = NULL;
        const char *reason;
        int64_t at;
        int r;

        if (t->type != TASK_ONCE || tasks_time_parse(t->schedule, &at, &reason) < 0 ||
            (uint64_t) at * 1000000ULL > clock_usec(CLOCK_REALTIME))
                return 0;
        r = task_unit_name(channel, t->id, ".service", &unit);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "StartUnit", &e, NULL, "ss", unit, "replace");
        return r < 0 ? r : 1;
}

int tasks_timers_sync(sd_bus *bus, const char *channel, Task * const *tasks, size_t n, unsigned *ret_changed) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_free_ char *pattern = NULL, *prefix = NULL;
        _cleanup_free_ bool *seen = calloc(n ?: 1, sizeof(bool));
        unsigned changed = 0;
        int r, ret = 0;

        if (!seen)
                return -ENOMEM;
        if (channel_name_check(channel, NULL) < 0)
                return -EINVAL;
        if (asprintf(&prefix, TASK_UNIT_PREFIX "%s:", channel) < 0 || asprintf(&pattern, "%s*.timer", prefix) < 0)
                return -ENOMEM;

        r = sd_bus_message_new_method_call(bus, &m, SYSTEMD_DEST, SYSTEMD_PATH, SYSTEMD_MANAGER, "ListUnitsByPatterns");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "as", 0);
        if (r >= 0)
                r = sd_bus_message_append(m, "as", 1, pattern);
        if (r < 0)
                return r;
        r = sd_bus_call(bus, m, 0, &e, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        if (r < 0)
                return r;
        for (;;) {
                const char *name, *description, *load, *active;
                _cleanup_free_ char *id = NULL, *want = NULL;
                const Task *t = NULL;
                const char *rest;

                r = sd_bus_message_read(reply, "(ssssssouso)", &name, &description, &load, &active, NULL, NULL, NULL,
                                        NULL, NULL, NULL);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                rest = startswith(name, prefix);
                if (!rest || !endswith(rest, ".timer"))
                        continue;
                id = strndup(rest, strlen(rest) - strlen(".timer"));
                if (!id)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        if (streq(tasks[i]->id, id)) {
                                t = tasks[i];
                                seen[i] = true;
                        }
                if (t && task_wants_timer(t)) {
                        r = task_timer_description(channel, t, &want);
                        if (r < 0)
                                return r;
                        if (streq(description, want) && streq(active, "active"))
                                continue;
                        r = task_timer_apply(bus, channel, t, NULL);
                } else if (task_id_valid(id))
                        r = task_timer_remove(bus, channel, id, NULL);
                else
                        continue;
                if (r < 0)
                        ret = r;
                else
                        changed++;
        }
        for (size_t i = 0; i < n; i++) {
                if (seen[i] || !task_wants_timer(tasks[i]))
                        continue;
                r = task_start_missed(bus, channel, tasks[i]);
                if (r == 0)
                        /* ListUnitsByPatterns did not list it: no timer to stop first */
                        r = task_timer_create(bus, channel, tasks[i], NULL);
                if (r < 0)
                        ret = r;
                else
                        changed++;
        }
        if (ret_changed)
                *ret_changed = changed;
        return ret;
}
