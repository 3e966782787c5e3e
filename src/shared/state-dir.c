/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "config-build.h"
#include "macro.h"
#include "state-dir.h"

static int state_dir_join(const char *base, const char *middle, const char *channel, char **ret) {
        char *p;

        if (asprintf(&p, "%s%s/%s", base, middle, channel) < 0)
                return -ENOMEM;
        *ret = p;
        return 0;
}

int channel_state_dir(const char *channel, char **ret) {
        const char *base = getenv("XDG_STATE_HOME"), *override = getenv("LOOP_STATE_DIR");

        if (!isempty(override))
                return state_dir_join(override, "", channel, ret);
        if (getuid() == 0)
                return state_dir_join(LOOP_STATE_DIR, "", channel, ret);
        if (!isempty(base))
                return state_dir_join(base, "/loop", channel, ret);
        base = getenv("HOME");
        if (isempty(base))
                return -ENXIO;
        return state_dir_join(base, "/.local/state/loop", channel, ret);
}

int channel_queue_dir(const char *channel, char **ret) {
        const char *override = getenv("LOOP_STATE_DIR");

        return state_dir_join(isempty(override) ? LOOP_STATE_DIR : override, "", channel, ret);
}
