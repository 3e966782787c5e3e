/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "dirent-util.h"
#include "string-util.h"
#include "fs-util.h"
#include "macro.h"

int readlinkat_malloc(int dir_fd, const char *path, char **ret) {
        _cleanup_free_ char *buf = malloc(PATH_MAX + 1);
        ssize_t n;

        if (!buf)
                return -ENOMEM;
        n = readlinkat(dir_fd, path, buf, PATH_MAX + 1);
        if (n < 0)
                return -errno;
        if (n > PATH_MAX)
                return -ENAMETOOLONG;
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        return 0;
}

int rm_rf_at(int parent_fd, const char *name) {
        _cleanup_closedir_ DIR *d = NULL;
        int r;

        r = opendir_at(parent_fd, name, O_NOFOLLOW, &d);
        if (r == -ENOTDIR || r == -ELOOP)
                return unlinkat(parent_fd, name, 0) < 0 ? -errno : 0;
        if (r < 0)
                return r;
        for (struct dirent *de; (de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (de->d_type == DT_DIR)
                        (void) rm_rf_at(dirfd(d), de->d_name);
                else if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno == EISDIR)
                        (void) rm_rf_at(dirfd(d), de->d_name);
        }
        return unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}
