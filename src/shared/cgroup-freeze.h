/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Freezing containers with the cgroup v2 freezer (cgroup.freeze, cgroup.events), for the Docker API
 * proxy: a channel's containers are held still while a container with pinned binds is started, so
 * that none of them can swap a bind source between the pin check and the runtime's mount. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CGROUP_FREEZE_TIMEOUT_USEC (5ULL * 1000000ULL)  /* for one cgroup to say "frozen 1" */
#define CGROUP_FREEZE_ATTEMPTS 5U                       /* cgroup_freeze_all() tries, each a fifth of that */
#define CGROUP_FREEZE_RETRY_USEC (20ULL * 1000ULL)      /* thawed between two tries */
#define CGROUP_FREEZE_MAX 64U                           /* cgroups one freeze may hold (and a record list) */
#define CGROUP_FREEZE_RECORD "frozen-cgroups"           /* in the service's runtime directory */
#define CGROUP_PROC_FILE_MAX (64U * 1024U)              /* /proc/PID/cgroup as read */
#define CGROUP_RECORD_MAX (CGROUP_FREEZE_MAX * 4096U)

/* The unified hierarchy's path in the text of /proc/PID/cgroup (its "0::" line): absolute, without "."
 * or ".." components or empty ones. -ENOMEDIUM without such a line, -EBADMSG for a path that is not
 * one. */
int cgroup_proc_unified_path(const char *text, char **ret);

/* The "frozen" key of the text of cgroup.events: 1 or 0, -EBADMSG without it. */
int cgroup_events_frozen(const char *text);

/* The part of path up to and including its first component that contains id (a container's full id:
 * libpod-ID.scope, docker-ID.scope, /docker/ID), which holds every process of the container, also those
 * in sub-cgroups the runtime made (Podman's .../container). -ESRCH when no component names it: the
 * process is not in the container's own cgroup, and no other may be frozen in its stead. */
int cgroup_path_of_container(const char *path, const char *id, char **ret);

/* Whether path is one cgroup_proc_unified_path() would return (a record's lines are checked so). */
bool cgroup_path_is_valid(const char *path);

/* The cgroup2 mount: /sys/fs/cgroup when it is one, else the hybrid layout's /sys/fs/cgroup/unified
 * (checked by the file system's magic). -ENOMEDIUM when there is none. */
int cgroup2_root_open(int *ret_fd);

/* Whether the cgroup at path (relative to the cgroup2 root) is frozen now (cgroup.freeze reads 1). */
int cgroup_is_frozen(int root_fd, const char *path);

/* Writes 1 (freeze) or 0 (thaw) to path's cgroup.freeze. */
int cgroup_set_frozen(int root_fd, const char *path, bool frozen);

/* Waits until path's cgroup.events says "frozen 1", polling POLLPRI, until deadline (CLOCK_MONOTONIC
 * usec): -ETIMEDOUT then. */
int cgroup_wait_frozen(int root_fd, const char *path, uint64_t deadline_usec);

/* Freezes every cgroup of paths and waits until all say "frozen 1". A task that waits for its seccomp
 * supervisor in a killable sleep (SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, the gate's) cannot be frozen
 * until the supervisor answers, and the supervisor, in the same container, may have been frozen first:
 * after a fifth of CGROUP_FREEZE_TIMEOUT_USEC everything is thawed for CGROUP_FREEZE_RETRY_USEC, so it
 * can answer, and frozen again, CGROUP_FREEZE_ATTEMPTS times in all. -ETIMEDOUT (everything thawed)
 * when no try froze them all; on other errors the caller thaws. */
int cgroup_freeze_all(int root_fd, char * const *paths);

/* The record of what a freeze holds: one path a line, written (atomically) before the first cgroup is
 * frozen, removed once all are thawed. cgroup_freeze_record_thaw() thaws what a record left behind (a
 * proxy that died mid-start) and removes it; 0 when there was none, else the number thawed. */
int cgroup_freeze_record_write(const char *dir, char * const *paths);
int cgroup_freeze_record_remove(const char *dir);
int cgroup_freeze_record_thaw(const char *dir);
