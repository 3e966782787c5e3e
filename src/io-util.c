/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "io-util.h"
#include "macro.h"

ssize_t loop_read(int fd, void *buf, size_t nbytes) {
        size_t done = 0;

        while (done < nbytes) {
                ssize_t k = read(fd, (char *) buf + done, nbytes - done);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                done += (size_t) k;
        }
        return (ssize_t) done;
}

int loop_write(int fd, const void *buf, size_t nbytes) {
        const char *p = buf;

        while (nbytes > 0) {
                ssize_t k = write(fd, p, nbytes);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EIO;
                p += k;
                nbytes -= (size_t) k;
        }
        return 0;
}

int read_full_file_at(int dir_fd, const char *path, size_t max_size, bool nofollow,
                      char **ret_contents, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        ssize_t n;

        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return S_ISDIR(st.st_mode) ? -EISDIR : -EBADFD;
        if ((size_t) st.st_size > max_size)
                return -EFBIG;

        /* Ask for one byte more than fstat() promised, so a file that grew since is noticed and capped;
         * at least a page, since procfs and sysfs files promise 0 and would be read a byte at a time. */
        size_t cap = MAX((size_t) st.st_size + 1, (size_t) 4096), used = 0;
        if (max_size < SIZE_MAX)
                cap = MIN(cap, max_size + 1);
        buf = malloc(cap + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                n = loop_read(fd, buf + used, cap - used);
                if (n < 0)
                        return (int) n;
                used += (size_t) n;
                if (used > max_size)
                        return -EFBIG;
                if (used < cap)
                        break;
                size_t ncap = MIN(cap * 2, max_size + 1);
                char *nb = realloc(buf, ncap + 1);
                if (!nb)
                        return -ENOMEM;
                buf = nb;
                cap = ncap;
        }
        buf[used] = 0;
        if (ret_size)
                *ret_size = used;
        *ret_contents = TAKE_PTR(buf);
        return 0;
}

int write_file_atomic(const char *path, const void *contents, size_t size, mode_t mode) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (asprintf(&tmp, "%s.#tmp.%d", path, (int) getpid()) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        r = loop_write(fd, contents, size);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

/* mkdir -p, the last component owned by uid:gid with mode. Parents are created root-owned 0755. */
int mkdir_owned(const char *path, mode_t mode, uid_t uid, gid_t gid) {
        _cleanup_free_ char *p = strdup(path);
        struct stat st;

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = 0;
                        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *s = '/';
                }
        if (mkdir(p, mode) < 0) {
                if (errno != EEXIST)
                        return -errno;
                if (lstat(p, &st) < 0)
                        return -errno;
                if (!S_ISDIR(st.st_mode))
                        return -ENOTDIR;
                return 0;
        }
        if (geteuid() == 0 && chown(p, uid, gid) < 0)
                return -errno;
        return 0;
}
