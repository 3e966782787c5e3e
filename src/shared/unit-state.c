/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <systemd/sd-daemon.h>

#include "macro.h"
#include "unit-state.h"

int unit_get_string(sd_bus *bus, const char *unit, const char *interface, const char *property, char **ret) {
        _cleanup_free_ char *path = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        assert(ret);

        if (!bus || !unit || !interface || !property)
                return -EINVAL;
        r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit, &path);
        if (r < 0)
                return r;
        r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", path, interface, property, &error, ret);
        sd_bus_error_free(&error);
        return r;
}

int unit_bus_open(sd_bus **ret) {
        assert(ret);

        *ret = NULL;
        if (sd_booted() <= 0)
                return 0;
        return sd_bus_open_system(ret);
}
