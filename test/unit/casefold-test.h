/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A file system that folds case for the tests that need one: a tmpfs -o casefold (Linux 6.13 with
 * CONFIG_UNICODE) mounted in a mount namespace of the test's own. */

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include "macro.h"

/* Mounts the tmpfs on dir: 0, or -errno when it cannot be (not root; a kernel without the tables says
 * EINVAL). Unshares the mount namespace first, so no thread may be running: call it last. */
static inline int casefold_tmpfs_mount(const char *dir) {
        if (geteuid() != 0)
                return -EPERM;
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return -errno;
        if (mount("tmpfs", dir, "tmpfs", 0, "casefold,mode=0755") < 0)
                return -errno;
        return 0;
}

/* chattr +F on the empty directory path. */
static inline int casefold_dir_set(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        unsigned int flags = 0;

        if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
                return -errno;
        flags |= FS_CASEFOLD_FL;
        return ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0 ? -errno : 0;
}
