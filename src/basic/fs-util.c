/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirent-util.h"
#include "string-util.h"
#include "fs-util.h"
#include "io-util.h"
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

int write_file_beneath(int dir_fd, const char *path, mode_t mode, const void *data, size_t size) {
        _cleanup_free_ char *p = NULL, *tmp = NULL;
        _cleanup_close_ int cur = -EBADF, fd = -EBADF;
        char *name, *slash;
        int r;

        if (isempty(path) || path[0] == '/')
                return -EINVAL;
        p = strdup(path);
        if (!p)
                return -ENOMEM;
        cur = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;

        /* the directories, one component at a time, each opened without following a symlink */
        name = p;
        while ((slash = strchr(name, '/'))) {
                int next;

                *slash = 0;
                if (isempty(name) || streq(name, ".") || streq(name, ".."))
                        return -EINVAL;
                next = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0 && errno == ENOENT) {
                        if (mkdirat(cur, name, 0700) < 0 && errno != EEXIST)
                                return -errno;
                        next = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                }
                if (next < 0)
                        return -errno;  /* a symlink: ELOOP or ENOTDIR */
                safe_close(cur);
                cur = next;
                name = slash + 1;
        }
        if (isempty(name) || streq(name, ".") || streq(name, ".."))
                return -EINVAL;

        /* a new file, then renamed over the name: whatever was there (a symlink too) is replaced */
        if (asprintf(&tmp, ".%s.#loop-tmp", name) < 0)
                return -ENOMEM;
        if (unlinkat(cur, tmp, 0) < 0 && errno != ENOENT)
                return -errno;
        fd = openat(cur, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        r = loop_write(fd, data, size);
        if (r >= 0 && fchmod(fd, mode) < 0)    /* not the umask's */
                r = -errno;
        if (r >= 0 && close(TAKE_FD(fd)) < 0)
                r = -errno;
        if (r >= 0 && renameat(cur, tmp, cur, name) < 0)
                r = -errno;
        if (r < 0)
                (void) unlinkat(cur, tmp, 0);
        return r;
}

static bool casefold_possible_cached;

static void casefold_possible_once(void) {
        static const char * const features[] = {
                "/sys/fs/ext4/features/casefold", "/sys/fs/tmpfs/features/casefold", "/sys/fs/f2fs/features/casefold",
        };

        for (size_t i = 0; i < ELEMENTSOF(features); i++)
                if (access(features[i], F_OK) == 0) {
                        casefold_possible_cached = true;
                        return;
                }
        /* ext4 lists casefold among its features exactly when the kernel has the tables. */
        casefold_possible_cached = access("/sys/fs/ext4/features", F_OK) < 0;
}

bool casefold_possible(void) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;

        (void) pthread_once(&once, casefold_possible_once);
        return casefold_possible_cached;
}

int dir_fd_casefolded(int fd) {
        _cleanup_close_ int dfd = -EBADF;
        unsigned int flags = 0;
        int r;

        r = ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0 ? -errno : 0;
        if (r == -EBADF) {
                /* An O_PATH fd answers no ioctl: reopened for reading. */
                dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
                if (dfd < 0)
                        return -errno;
                r = ioctl(dfd, FS_IOC_GETFLAGS, &flags) < 0 ? -errno : 0;
        }
        if (r == -ENOTTY || r == -EOPNOTSUPP || r == -EINVAL)
                return 0;       /* a file system without these flags */
        if (r < 0)
                return r;
        return !!(flags & FS_CASEFOLD_FL);
}
