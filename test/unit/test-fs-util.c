/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fs-util.h"
#include "macro.h"
#include "tap.h"

int main(void) {
        char dir[] = "/tmp/test-fs-util-XXXXXX", path[PATH_MAX];
        _cleanup_free_ char *t = NULL, *long_target = malloc(PATH_MAX + 2), *u = NULL, *v = NULL;
        _cleanup_close_ int dfd = -EBADF;

        if (!mkdtemp(dir) || !long_target)
                return 1;
        dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || symlinkat("some/target", dfd, "link") < 0)
                return 1;
        is_int(readlinkat_malloc(dfd, "link", &t), 0, "readlinkat_malloc() reads a link below a dir fd");
        is_str(t, "some/target", "its target");
        snprintf(path, sizeof path, "%s/link", dir);
        ok(readlinkat_malloc(AT_FDCWD, path, &u) == 0 && streq_ptr(u, "some/target"), "and by an absolute path");
        is_int(readlinkat_malloc(dfd, "missing", &v), -ENOENT, "a missing link is -ENOENT");
        is_int(readlinkat_malloc(AT_FDCWD, dir, &v), -EINVAL, "a directory is no link (-EINVAL)");

        memset(long_target, 'x', PATH_MAX + 1);
        long_target[PATH_MAX + 1] = 0;
        if (symlinkat(long_target, dfd, "long") == 0)
                is_int(readlinkat_malloc(dfd, "long", &v), -ENAMETOOLONG, "a target longer than PATH_MAX is refused");
        else
                skip("a target longer than PATH_MAX is refused", "the file system takes no such link");
        ok(!v, "nothing is returned on failure");

        {
                char sub[PATH_MAX];
                int fd = -EBADF, r;
                snprintf(sub, sizeof sub, "%s/private", dir);
                (void) mkdir(sub, 0700);
                ok(dir_open_unshared(sub, &fd) == 0 && fd >= 0, "dir_open_unshared() opens a directory only its owner writes");
                safe_close(fd);
                fd = -EBADF;
                (void) chmod(sub, 0770);
                is_int(dir_open_unshared(sub, &fd), -EPERM, "a directory its group may write in is refused");
                (void) chmod(sub, 0703);
                is_int(dir_open_unshared(sub, &fd), -EPERM, "so is one others may write in");
                (void) rmdir(sub);
                (void) symlinkat(dir, dfd, "dirlink");
                snprintf(sub, sizeof sub, "%s/dirlink", dir);
                r = dir_open_unshared(sub, &fd);
                ok(r == -ENOTDIR || r == -ELOOP, "a symlink to a directory is not followed");
                (void) unlinkat(dfd, "dirlink", 0);
                snprintf(sub, sizeof sub, "%s/missing", dir);
                is_int(dir_open_unshared(sub, &fd), -ENOENT, "a missing directory is -ENOENT");
                ok(fd == -EBADF, "nothing is returned on failure");
        }
        (void) unlinkat(dfd, "link", 0);
        (void) unlinkat(dfd, "long", 0);
        rmdir(dir);
        return done_testing();
}
