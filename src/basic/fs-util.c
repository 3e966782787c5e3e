/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirent-util.h"
#include "string-util.h"
#include "fs-util.h"
#include "macro.h"

int dir_open_unshared(const char *path, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return -EPERM;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

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
