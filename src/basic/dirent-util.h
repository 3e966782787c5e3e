/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Directory streams with scope-based cleanup. */

#include <dirent.h>

static inline void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)
