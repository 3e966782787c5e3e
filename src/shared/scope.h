/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Containers as transient scope units: under systemd, a container created with the channel's slice as its
 * CgroupParent (by an engine using the systemd cgroup driver) becomes a scope in that slice; this finds
 * which one, over sd-bus, from the container's main pid. */

#include <sys/types.h>

/* The unit pid belongs to (e.g. "libpod-<id>.scope"), from org.freedesktop.systemd1.Manager.GetUnitByPID.
 * -ENOMEDIUM when systemd is not PID 1 (no scopes here), -ESRCH when the pid has no unit. */
int scope_of_pid(pid_t pid, char **ret_unit);
