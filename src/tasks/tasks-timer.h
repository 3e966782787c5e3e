/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A task's timer: a transient timer unit loop-task@NAME:ID.timer made over the system bus
 * (StartTransientUnit), which starts loop-task@NAME:ID.service (units/loop-task@.service, `loop task fire
 * NAME:ID`) when it elapses. Transient, because the state files are the truth: systemd keeps the timer
 * across daemon-reload; after a reboot `loop task restore` (loop-task-restore.service) makes every timer
 * again from the files, and Persistent= catches up a calendar firing missed while the machine was off.
 *
 *   cron      OnCalendar=EXPR, Persistent=yes
 *   interval  OnActiveSec=N, OnUnitActiveSec=N (a monotonic timer, counted from the last firing)
 *   once      OnCalendar=INSTANT UTC, Persistent=yes, RemainAfterElapse=no: gone after it fired
 *   manual    no timer; a disabled or done task neither. */

#include <systemd/sd-bus.h>

#include "tasks-store.h"

#define TASK_UNIT_PREFIX "loop-task@"
#define TASK_UNIT_NAME_MAX 256U

/* systemd's bus: its private socket for root, else the system bus; -ENOMEDIUM when systemd is not PID 1. */
int tasks_bus_open(sd_bus **ret);

/* "loop-task@NAME:ID" + suffix (".timer", ".service") */
int task_unit_name(const char *channel, const char *id, const char *suffix, char **ret);
/* "NAME:ID" -> channel and id, checked. */
int task_instance_parse(const char *instance, char **ret_channel, char **ret_id);

/* Stops the task's timer if there is one, then makes it again from t (nothing when t needs none). */
int task_timer_apply(sd_bus *bus, const char *channel, const Task *t, char **ret_error);
/* Stops and forgets the task's timer; no timer is not an error. */
int task_timer_remove(sd_bus *bus, const char *channel, const char *id, char **ret_error);
/* The timer's Description=: it names the schedule, so a sync tells a timer that is out of date. */
int task_timer_description(const char *channel, const Task *t, char **ret);
/* Makes the channel's timers agree with its tasks: removes the timers of tasks that are gone, disabled
 * or done, makes those missing or out of date, starts a once task whose instant passed unfired. Returns
 * 0 or the last error (every task is tried). */
int tasks_timers_sync(sd_bus *bus, const char *channel, Task * const *tasks, size_t n, unsigned *ret_changed);
/* Whether the task's timer is loaded. */
int task_timer_exists(sd_bus *bus, const char *channel, const char *id);
