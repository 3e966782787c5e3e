/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Directory streams with scope-based cleanup. */

#include <dirent.h>

#include "macro.h"

static inline void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)

/* A stream of the directory path relative to dir_fd (AT_FDCWD for none; "." for dir_fd itself, read from
 * its start on an fd of its own), opened O_RDONLY | O_DIRECTORY | O_CLOEXEC | flags (O_NOFOLLOW...);
 * -errno of what failed, nothing left open. */
int opendir_at(int dir_fd, const char *path, int flags, DIR **ret);
