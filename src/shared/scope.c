/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "scope.h"


int scope_of_pid(pid_t pid, char **ret_unit) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *path;
        char *id = NULL;
        int r;

        if (pid <= 0)
                return -EINVAL;
        if (sd_booted() <= 0)
                return -ENOMEDIUM;

        r = sd_bus_open_system(&bus);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", "GetUnitByPID", &error, &reply, "u", (uint32_t) pid);
        if (r < 0) {
                if (sd_bus_error_has_name(&error, "org.freedesktop.systemd1.NoUnitForPID"))
                        r = -ESRCH;
                log_debug("GetUnitByPID(%d) failed: %s", (int) pid, error.message ?: strerror(-r));
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return r;
        r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", path, "org.freedesktop.systemd1.Unit",
                                       "Id", &error, &id);
        sd_bus_error_free(&error);
        if (r < 0)
                return r;
        *ret_unit = id;
        return 0;
}
