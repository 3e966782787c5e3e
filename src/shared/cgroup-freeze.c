/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <unistd.h>

#include "cgroup-freeze.h"
#include "io-util.h"
#include "log.h"
#include "macro.h"
#include "strv.h"
#include "time-util.h"

bool cgroup_path_is_valid(const char *path) {
        if (!path || path[0] != '/' || strlen(path) >= 4096 || strpbrk(path, "\n\\"))
                return false;
        if (streq(path, "/"))
                return true;
        for (const char *p = path + 1;;) {
                size_t n = strcspn(p, "/");
                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                if (!p[n])
                        return true;
                p += n + 1;
        }
}

int cgroup_proc_unified_path(const char *text, char **ret) {
        for (const char *line = text; line && *line;) {
                const char *end = strchr(line, '\n');
                size_t n = end ? (size_t) (end - line) : strlen(line);

                if (n >= 3 && strncmp(line, "0::", 3) == 0) {
                        _cleanup_free_ char *path = strndup(line + 3, n - 3);
                        if (!path)
                                return -ENOMEM;
                        if (!cgroup_path_is_valid(path))
                                return -EBADMSG;
                        *ret = TAKE_PTR(path);
                        return 0;
                }
                line = end ? end + 1 : NULL;
        }
        return -ENOMEDIUM;
}

int cgroup_events_frozen(const char *text) {
        for (const char *line = text; line && *line;) {
                const char *end = strchr(line, '\n');
                size_t n = end ? (size_t) (end - line) : strlen(line);

                if (n == strlen("frozen 1") && strncmp(line, "frozen ", 7) == 0 && (line[7] == '0' || line[7] == '1'))
                        return line[7] == '1';
                line = end ? end + 1 : NULL;
        }
        return -EBADMSG;
}

int cgroup_path_of_container(const char *path, const char *id, char **ret) {
        size_t id_len = strlen(id);

        if (!cgroup_path_is_valid(path) || id_len < 12)
                return -EINVAL;
        for (const char *p = path + 1; *p;) {
                size_t n = strcspn(p, "/");
                if (memmem(p, n, id, id_len)) {
                        char *s = strndup(path, (size_t) (p - path) + n);
                        if (!s)
                                return -ENOMEM;
                        *ret = s;
                        return 0;
                }
                p += n + (p[n] == '/');
        }
        return -ESRCH;
}

int cgroup2_root_open(int *ret_fd) {
        static const char * const candidates[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };

        for (size_t i = 0; i < ELEMENTSOF(candidates); i++) {
                _cleanup_close_ int fd = open(candidates[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                struct statfs sfs;

                if (fd < 0)
                        continue;
                if (fstatfs(fd, &sfs) < 0)
                        return -errno;
                if ((uint64_t) sfs.f_type == (uint64_t) CGROUP2_SUPER_MAGIC) {
                        *ret_fd = TAKE_FD(fd);
                        return 0;
                }
        }
        return -ENOMEDIUM;
}

/* path is absolute in the hierarchy; the root's files are opened as they are, others relative to it. */
static int cgroup_file_open(int root_fd, const char *path, const char *file, int flags) {
        _cleanup_free_ char *rel = NULL;
        int fd;

        if (!cgroup_path_is_valid(path) || streq(path, "/"))   /* the root cannot be frozen */
                return -EINVAL;
        if (asprintf(&rel, "%s/%s", path + 1, file) < 0)
                return -ENOMEM;
        fd = openat(root_fd, rel, flags | O_CLOEXEC | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

int cgroup_is_frozen(int root_fd, const char *path) {
        _cleanup_close_ int fd = cgroup_file_open(root_fd, path, "cgroup.freeze", O_RDONLY);
        char buf[8] = {};

        if (fd < 0)
                return fd;
        ssize_t k = loop_read(fd, buf, sizeof(buf) - 1);
        if (k < 0)
                return (int) k;
        if (k < 1 || (buf[0] != '0' && buf[0] != '1'))
                return -EBADMSG;
        return buf[0] == '1';
}

int cgroup_set_frozen(int root_fd, const char *path, bool frozen) {
        _cleanup_close_ int fd = cgroup_file_open(root_fd, path, "cgroup.freeze", O_WRONLY);

        if (fd < 0)
                return fd;
        return loop_write(fd, frozen ? "1" : "0", 1);
}

int cgroup_wait_frozen(int root_fd, const char *path, uint64_t deadline_usec) {
        _cleanup_close_ int fd = cgroup_file_open(root_fd, path, "cgroup.events", O_RDONLY);

        if (fd < 0)
                return fd;
        for (;;) {
                char buf[256];
                ssize_t k;
                int r;

                /* a cgroup file is read from its start each time; poll() says when it changed */
                k = read_snapshot(fd, buf, sizeof(buf));
                if (k < 0)
                        return (int) k;
                r = cgroup_events_frozen(buf);
                if (r != 0)
                        return r < 0 ? r : 0;

                if (clock_usec(CLOCK_MONOTONIC) >= deadline_usec)
                        return -ETIMEDOUT;
                r = fd_wait_until(fd, POLLPRI, deadline_usec);
                if (r < 0 && r != -ETIMEDOUT)
                        return r;
        }
}

int cgroup_freeze_all(int root_fd, char * const *paths) {
        int r = -ETIMEDOUT;

        for (unsigned attempt = 0; attempt < CGROUP_FREEZE_ATTEMPTS && r == -ETIMEDOUT; attempt++) {
                uint64_t deadline;

                if (attempt > 0) {
                        for (char * const *p = paths; p && *p; p++)
                                (void) cgroup_set_frozen(root_fd, *p, false);
                        (void) usleep(CGROUP_FREEZE_RETRY_USEC);
                }
                for (char * const *p = paths; p && *p; p++) {
                        r = cgroup_set_frozen(root_fd, *p, true);
                        if (r < 0)
                                return r;
                }
                deadline = clock_usec(CLOCK_MONOTONIC) + CGROUP_FREEZE_TIMEOUT_USEC / CGROUP_FREEZE_ATTEMPTS;
                r = 0;
                for (char * const *p = paths; p && *p && r == 0; p++)
                        r = cgroup_wait_frozen(root_fd, *p, deadline);
        }
        if (r == -ETIMEDOUT)
                for (char * const *p = paths; p && *p; p++)
                        (void) cgroup_set_frozen(root_fd, *p, false);
        return r;
}

static int record_path(const char *dir, char **ret) {
        return asprintf(ret, "%s/" CGROUP_FREEZE_RECORD, dir) < 0 ? -ENOMEM : 0;
}

int cgroup_freeze_record_write(const char *dir, char * const *paths) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        if (strv_length(paths) > CGROUP_FREEZE_MAX)
                return -E2BIG;
        r = record_path(dir, &path);
        if (r < 0)
                return r;
        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        STRV_FOREACH(p, paths)
                fprintf(f, "%s\n", *p);
        if (fclose(f) != 0)
                return -ENOMEM;
        (void) mkdir(dir, 0755);
        return write_file_atomic(path, text, size, 0600);
}

int cgroup_freeze_record_remove(const char *dir) {
        _cleanup_free_ char *path = NULL;
        int r = record_path(dir, &path);

        if (r < 0)
                return r;
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int cgroup_freeze_record_thaw(const char *dir) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        _cleanup_close_ int root_fd = -EBADF;
        size_t size;
        int r, n = 0, failed = 0;

        r = record_path(dir, &path);
        if (r < 0)
                return r;
        r = read_full_file_at(AT_FDCWD, path, CGROUP_RECORD_MAX, true, &text, &size);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        r = cgroup2_root_open(&root_fd);
        if (r < 0)
                return r;
        for (char *line = text, *end; line && *line; line = end ? end + 1 : NULL) {
                end = strchr(line, '\n');
                if (end)
                        *end = 0;
                if (!cgroup_path_is_valid(line) || streq(line, "/")) {
                        log_warning("%s: \"%s\" is not a cgroup path, ignoring.", path, line);
                        continue;
                }
                r = cgroup_set_frozen(root_fd, line, false);
                if (r == -ENOENT)       /* gone with its container */
                        continue;
                if (r < 0) {
                        log_error_errno(r, "Cannot thaw cgroup %s: %m", line);
                        failed = r;
                        continue;
                }
                n++;
        }
        if (failed < 0)
                return failed;  /* the record stays for the next try */
        r = cgroup_freeze_record_remove(dir);
        return r < 0 ? r : n;
}
