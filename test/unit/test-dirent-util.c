/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "dirent-util.h"
#include "macro.h"
#include "tap.h"

static unsigned count_entries(DIR *d) {
        unsigned n = 0;
        for (struct dirent *de; (de = readdir(d));)
                n += !streq(de->d_name, ".") && !streq(de->d_name, "..");
        return n;
}

int main(void) {
        char dir[] = "/tmp/test-dirent-util-XXXXXX";
        _cleanup_close_ int dfd = -EBADF;

        if (!mkdtemp(dir))
                return 1;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || mkdirat(dfd, "sub", 0700) < 0 || mkdirat(dfd, "sub/a", 0700) < 0 ||
            symlinkat("sub", dfd, "link") < 0)
                return 1;

        {
                _cleanup_closedir_ DIR *d = NULL;
                is_int(opendir_at(dfd, "sub", O_NOFOLLOW, &d), 0, "opendir_at() opens a directory below a dir fd");
                is_int(d ? count_entries(d) : 0, 1, "and lists it");
                ok(d && (fcntl(dirfd(d), F_GETFD) & FD_CLOEXEC), "its fd is close-on-exec");
        }
        {
                _cleanup_closedir_ DIR *d = NULL, *e = NULL;
                is_int(opendir_at(dfd, ".", 0, &d), 0, "\".\" opens the dir fd's own directory");
                is_int(d ? count_entries(d) : 0, 2, "with its entries");
                is_int(opendir_at(dfd, ".", 0, &e), 0, "a second time");
                is_int(e ? count_entries(e) : 0, 2, "from its start, on an fd of its own");
        }
        {
                DIR *d = NULL;
                is_int(opendir_at(dfd, "link", O_NOFOLLOW, &d), -ENOTDIR, "O_NOFOLLOW refuses a symlink");
                is_int(opendir_at(dfd, "missing", 0, &d), -ENOENT, "a missing directory is -ENOENT");
                ok(!d, "nothing is returned on failure");
        }

        (void) unlinkat(dfd, "link", 0);
        (void) unlinkat(dfd, "sub/a", AT_REMOVEDIR);
        (void) unlinkat(dfd, "sub", AT_REMOVEDIR);
        rmdir(dir);
        return done_testing();
}
