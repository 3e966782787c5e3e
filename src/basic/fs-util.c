/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

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
