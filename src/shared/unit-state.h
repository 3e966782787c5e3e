/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What systemd says of a unit, over the system bus: for `loop status` and `loop send`, which tell the
 * operator when a channel's runner waits or its inbox is not watched. */

#include <systemd/sd-bus.h>

#define UNIT_INTERFACE "org.freedesktop.systemd1.Unit"
#define UNIT_SERVICE_INTERFACE "org.freedesktop.systemd1.Service"

/* INTERFACE's string PROPERTY of UNIT (e.g. UNIT_INTERFACE "ActiveState", UNIT_SERVICE_INTERFACE
 * "StatusText") in *ret. -EINVAL without a bus; the bus call's error otherwise. */
int unit_get_string(sd_bus *bus, const char *unit, const char *interface, const char *property, char **ret);

/* The system bus when systemd is PID 1 (0 and *ret NULL otherwise, so callers just skip what it would add). */
int unit_bus_open(sd_bus **ret);
