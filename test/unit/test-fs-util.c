/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "io-util.h"
#include "macro.h"
#include "tap.h"

/* The contents of path below dfd, or NULL. */
static char *contents(int dfd, const char *path) {
        char *s = NULL;
        size_t n;

        return read_full_file_at(dfd, path, 4096, true, &s, &n) < 0 ? NULL : s;
}

static void test_write_file_beneath(void) {
        char dir[] = "/tmp/test-fs-util-w-XXXXXX", victim[] = "/tmp/test-fs-util-v-XXXXXX";
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
        _cleanup_close_ int dfd = -EBADF, vfd = -EBADF;
        struct stat st;

        if (!mkdtemp(dir) || !mkdtemp(victim))
                abort();
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        vfd = open(victim, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || vfd < 0)
                abort();
        if (write_file_beneath(vfd, "target", 0644, "victim's\n", 9) < 0)
                abort();

        is_int(write_file_beneath(dfd, ".claude.json", 0600, "{\"a\": 1}\n", 9), 0,
               "write_file_beneath() writes a file below a dir fd");
        is_str(a = contents(dfd, ".claude.json"), "{\"a\": 1}\n", "...with the data intact");
        ok(fstatat(dfd, ".claude.json", &st, AT_SYMLINK_NOFOLLOW) == 0 && (st.st_mode & 07777) == 0600,
           "...with exactly the mode asked for");

        /* a symlink planted at the name is replaced, its target left alone */
        if (unlinkat(dfd, ".claude.json", 0) < 0 || symlinkat(victim, dfd, "out") < 0)
                abort();
        {
                char target[PATH_MAX];
                snprintf(target, sizeof target, "%s/target", victim);
                if (symlinkat(target, dfd, ".claude.json") < 0)
                        abort();
        }
        is_int(write_file_beneath(dfd, ".claude.json", 0600, "new\n", 4), 0, "a symlink at the name is no error");
        ok(fstatat(dfd, ".claude.json", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode),
           "...it is replaced by the file");
        is_str(b = contents(vfd, "target"), "victim's\n", "...and the file it pointed to is unchanged");

        ok(write_file_beneath(dfd, "out/target", 0600, "x", 1) < 0, "a symlink as a directory is refused");
        is_str(c = contents(vfd, "target"), "victim's\n", "...and nothing is written through it");
        is_int(write_file_beneath(dfd, "../escape", 0600, "x", 1), -EINVAL, "\"..\" is refused");
        is_int(write_file_beneath(dfd, "/etc/x", 0600, "x", 1), -EINVAL, "an absolute path is refused");
        is_int(write_file_beneath(dfd, "sub/dir/f", 0640, "deep", 4), 0, "missing directories are made");
        is_str(d = contents(dfd, "sub/dir/f"), "deep", "...and the file is written in them");
        ok(fstatat(dfd, "sub", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700,
           "...made 0700");

        (void) rm_rf_at(AT_FDCWD, dir);
        (void) rm_rf_at(AT_FDCWD, victim);
}

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

        test_write_file_beneath();
        return done_testing();
}
