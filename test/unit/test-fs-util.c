/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

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

        (void) unlinkat(dfd, "link", 0);
        (void) unlinkat(dfd, "long", 0);
        rmdir(dir);
        return done_testing();
}
