/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>

#include "dirent-util.h"

int opendir_at(int dir_fd, const char *path, int flags, DIR **ret) {
        int fd = openat(dir_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | flags);
        DIR *d;

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);         /* keeps errno */
                return -errno;
        }
        *ret = d;
        return 0;
}
