/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "fs-util.h"
#include "gate-policy.h"
#include "path-util.h"
#include "gate-resolve.h"
#include "io-util.h"
#include "string-util.h"

#define PROC_ROOT_INO 1

void gate_resolved_done(GateResolved *r) {
        r->dir_fd = safe_close(r->dir_fd);
        r->fd = safe_close(r->fd);
        r->name = mfree(r->name);
        r->path = mfree(r->path);
}

int gate_fd_path(int fd, char **ret) {
        char link[sizeof("/proc/self/fd/") + 12];

        (void) snprintf(link, sizeof(link), "/proc/self/fd/%i", fd);
        return readlinkat_malloc(AT_FDCWD, link, ret);
}

static int dup_fd(int fd) {
        int r = fcntl(fd, F_DUPFD_CLOEXEC, 3);

        return r < 0 ? -errno : r;
}

static bool same_inode(int a, int b) {
        struct stat sa, sb;

        return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int proc_tgid(pid_t tid, pid_t *ret) {
        char p[64];
        _cleanup_fclose_ FILE *f = NULL;
        char line[256];

        (void) snprintf(p, sizeof(p), "/proc/%i/status", tid);
        f = fopen(p, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                int v;

                if (sscanf(line, "Tgid: %i", &v) == 1 && v > 0) {
                        *ret = v;
                        return 0;
                }
        }
        return -ESRCH;
}

/* A symlink's content as the caller would see it: /proc/self and /proc/thread-self in the proc root are
 * the caller's, not ours. */
static int read_link(GateResolveContext *ctx, int dir_fd, const char *name, bool in_proc_root, char **ret) {
        _cleanup_free_ char *buf = NULL;
        int r;

        if (in_proc_root && (streq(name, "self") || streq(name, "thread-self"))) {
                if (ctx->tgid <= 0) {
                        r = proc_tgid(ctx->tid, &ctx->tgid);
                        if (r < 0)
                                return r;
                }
                if (streq(name, "self"))
                        r = asprintf(&buf, "%i", ctx->tgid);
                else
                        r = asprintf(&buf, "%i/task/%i", ctx->tgid, ctx->tid);
                if (r < 0)
                        return -ENOMEM;
                *ret = TAKE_PTR(buf);
                return 0;
        }

        r = readlinkat_malloc(dir_fd, name, &buf);
        if (r < 0)
                return r;
        if (isempty(buf))
                return -ENOENT;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* The path of a directory fd, refusing one that was removed meanwhile. */
static int dir_path(int fd, char **ret) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_nlink == 0)
                return -ENOENT;
        return gate_fd_path(fd, ret);
}

/* Whether dir_fd (a directory of procfs: /proc/N, /proc/N/fd, /proc/N/task/T/fd, ...) belongs to process
 * pid or one of its threads. In doubt, yes. */
static bool proc_dir_is_of(int dir_fd, pid_t pid) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        char status[64], *end;
        const char *p, *t;
        unsigned long n;
        size_t size;

        if (gate_fd_path(dir_fd, &path) < 0)
                return true;
        p = startswith(path, "/proc/");
        if (!p || *p < '0' || *p > '9')
                return false;
        errno = 0;
        n = strtoul(p, &end, 10);
        if (errno != 0 || (*end != 0 && *end != '/') || n > INT_MAX)
                return true;
        if ((pid_t) n == pid)
                return true;
        (void) snprintf(status, sizeof(status), "/proc/%lu/status", n);
        if (read_full_file_at(AT_FDCWD, status, 64 * 1024, true, &text, &size) < 0)
                return true;
        t = strstr(text, "\nTgid:");
        return !t || (pid_t) strtol(t + 6, NULL, 10) == pid;
}

static int finish_path(GateResolved *res, const char *name) {
        _cleanup_free_ char *d = NULL, *joined = NULL;
        struct stat st;
        int r;

        if (res->via_magic_link) {
                /* Whatever the caller's fd refers to: a path only when it is a live object on one. */
                if (fstat(res->fd, &st) < 0)
                        return -errno;
                r = gate_fd_path(res->fd, &d);
                if (r < 0)
                        return r;
                if (d[0] != '/' || st.st_nlink == 0)
                        return 0;
                res->path = path_clean(d);
                return res->path ? 0 : -ENOMEM;
        }
        if (!name) {
                r = dir_path(res->fd, &d);
                if (r < 0)
                        return r;
                res->path = path_clean(d);
                return res->path ? 0 : -ENOMEM;
        }
        r = dir_path(res->dir_fd, &d);
        if (r < 0)
                return r;
        if (d[0] != '/')
                return -ENOENT;
        if (asprintf(&joined, "%s/%s", d, name) < 0)
                return -ENOMEM;
        res->path = path_clean(joined);
        if (!res->path)
                return -ENOMEM;
        res->name = strdup(name);
        return res->name ? 0 : -ENOMEM;
}

/* The end of every walk: res gets its path (name in res->dir_fd, or res->fd itself when name is NULL) and
 * goes to *ret; on failure what it holds is released and *ret is untouched. */
static int finish(GateResolved *res, const char *name, GateResolved *ret) {
        int r = finish_path(res, name);

        if (r < 0) {
                gate_resolved_done(res);
                return r;
        }
        *ret = *res;
        return 0;
}

/* The object of a path with its symlinks followed, for a caller that wants only the object and its path
 * (an exec): one openat2() refusing symlinks gets most absolute paths, with the lexically cleaned path;
 * for the rest (/bin/true -> usr/bin/true, /usr/bin/python3 -> python3.11) the kernel follows them, as
 * it would for the caller, and the path is the object's real one. The object must not be in procfs,
 * where "self" would have meant the supervisor; a walk that only passed through it
 * ("/proc/self/task/N/../../..") can come out only by "..", to where the caller's would, and magic links
 * are refused. Returns -EAGAIN for the component walk, which also gives the exact error of a dangling
 * or looping link. */
static int resolve_object(int start_fd, const char *path, unsigned flags, GateResolved *ret) {
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *p = NULL;
        GateResolved res = GATE_RESOLVED_NULL;
        struct statfs sf;
        int r;

        if (!(flags & GATE_RESOLVE_OBJECT_ONLY) || !(flags & GATE_RESOLVE_FOLLOW) ||
            (flags & (GATE_RESOLVE_BENEATH | GATE_RESOLVE_IN_ROOT | GATE_RESOLVE_EMPTY_PATH)))
                return -EAGAIN;
        if (path[0] == '/') {
                fd = (int) syscall(SYS_openat2, start_fd, path, &how, sizeof(how));
                if (fd >= 0) {
                        res.path = path_clean(path);
                        if (!res.path)
                                return -ENOMEM;
                        res.fd = TAKE_FD(fd);
                        *ret = res;
                        return 0;
                }
                if (errno != ELOOP && errno != EXDEV && errno != ENOSYS && errno != EAGAIN)
                        return -errno;
        }
        if (flags & GATE_RESOLVE_NO_SYMLINKS)
                return -EAGAIN;
        how.resolve = RESOLVE_NO_MAGICLINKS;
        fd = (int) syscall(SYS_openat2, start_fd, path, &how, sizeof(how));
        if (fd < 0)
                return -EAGAIN;
        if (fstatfs(fd, &sf) < 0 || sf.f_type == PROC_SUPER_MAGIC)
                return -EAGAIN;
        r = gate_fd_path(fd, &p);
        if (r < 0)
                return r;
        /* Not on a path, or deleted meanwhile (which d_path marks; a name really ending so takes the walk). */
        if (p[0] != '/' || endswith(p, " (deleted)"))
                return -EAGAIN;
        res.path = path_clean(p);
        if (!res.path)
                return -ENOMEM;
        res.fd = TAKE_FD(fd);
        *ret = res;
        return 0;
}

/* Most paths have no symlink at all: one openat2() refusing symlinks gets the directory, the path is the
 * lexically cleaned one. Many others have one only among their directories (/lib -> usr/lib on a merged
 * /usr): then the kernel follows them, as it would for the caller, and the path is the directory's real
 * one, unless the walk ended in procfs, where "self" would have meant the supervisor. Returns -EAGAIN
 * when the path needs the component walk; when only its last component is a symlink to follow, the walk
 * can go on from the directory, returned in ret_dir_fd. */
static int resolve_fast(int start_fd, const char *path, unsigned flags, GateResolved *ret, int *ret_dir_fd,
                        int *ret_link_fd) {
        struct open_how how = {
                .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_free_ char *dir = NULL, *base = NULL, *joined = NULL;
        _cleanup_close_ int dfd = -EBADF, fd = -EBADF;
        GateResolved res = GATE_RESOLVED_NULL;
        const char *name = strrchr(path, '/');
        bool dir_followed = false;
        struct stat st;
        int r;

        if (flags & (GATE_RESOLVE_BENEATH | GATE_RESOLVE_IN_ROOT | GATE_RESOLVE_EMPTY_PATH))
                return -EAGAIN;
        name = name ? name + 1 : path;
        if (isempty(name) || streq(name, ".") || streq(name, "..") || strlen(name) > NAME_MAX)
                return -EAGAIN;
        if (name == path)
                dir = strdup(".");
        else if (name == path + 1)
                dir = strdup("/");
        else
                dir = strndup(path, name - path - 1);
        if (!dir)
                return -ENOMEM;

        dfd = (int) syscall(SYS_openat2, start_fd, dir, &how, sizeof(how));
        if (dfd < 0 && errno == ELOOP && !(flags & GATE_RESOLVE_NO_SYMLINKS)) {
                struct statfs sf;

                how.resolve = RESOLVE_NO_MAGICLINKS;
                dfd = (int) syscall(SYS_openat2, start_fd, dir, &how, sizeof(how));
                if (dfd >= 0 && (fstatfs(dfd, &sf) < 0 || sf.f_type == PROC_SUPER_MAGIC))
                        return -EAGAIN;
                dir_followed = true;
        }
        if (dfd < 0)
                return errno == ELOOP || errno == EXDEV || errno == ENOSYS || errno == EAGAIN ? -EAGAIN : -errno;
        fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno != ENOENT)
                return -errno;
        if (fd >= 0) {
                if (fstat(fd, &st) < 0)
                        return -errno;
                if (S_ISLNK(st.st_mode) && (flags & GATE_RESOLVE_FOLLOW)) {
                        *ret_dir_fd = TAKE_FD(dfd);
                        *ret_link_fd = TAKE_FD(fd);
                        return -EAGAIN;
                }
        }

        /* The path: a followed directory's real one plus the name, or a relative path made absolute. */
        if (dir_followed || path[0] != '/') {
                r = dir_followed ? dir_path(dfd, &base) : gate_fd_path(start_fd, &base);
                if (r < 0)
                        return r;
                if (base[0] != '/')
                        return dir_followed ? -EAGAIN : -ENOENT;
                if (asprintf(&joined, "%s/%s", base, dir_followed ? name : path) < 0)
                        return -ENOMEM;
        }
        res.path = path_clean(joined ?: path);
        res.name = strdup(name);
        if (!res.path || !res.name) {
                gate_resolved_done(&res);
                return -ENOMEM;
        }
        res.dir_fd = TAKE_FD(dfd);
        res.fd = TAKE_FD(fd);
        *ret = res;
        return 0;
}

/* The directories of *p (all but its last component) opened from dir_fd in one openat2() that refuses
 * every symlink, and *p moved past them. Returns the new directory, 0 when the walk must take them one by
 * one (a symlink on the way, a scoped walk, a trailing slash, nothing to leap), or -ENOMEM. */
static int leap_directories(int dir_fd, const char **p, unsigned flags) {
        struct open_how how = {
                .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_free_ char *dirs = NULL;
        const char *slash = strrchr(*p, '/');
        int fd;

        if (flags & (GATE_RESOLVE_BENEATH | GATE_RESOLVE_IN_ROOT) || !slash || slash[1] == 0 || slash == *p)
                return 0;
        dirs = strndup(*p, slash - *p);
        if (!dirs)
                return -ENOMEM;
        fd = (int) syscall(SYS_openat2, dir_fd, dirs, &how, sizeof(how));
        if (fd < 0)
                return 0;
        *p = slash + 1;
        return fd;
}

int gate_resolve(GateResolveContext *ctx, int start_fd, const char *path, unsigned flags, GateResolved *ret) {
        _cleanup_free_ char *todo = NULL;
        _cleanup_close_ int cur = -EBADF, link_fd = -EBADF;
        GateResolved res = GATE_RESOLVED_NULL;
        bool scoped = flags & (GATE_RESOLVE_BENEATH | GATE_RESOLVE_IN_ROOT);
        int root = scoped ? start_fd : ctx->root_fd;
        unsigned links = 0;
        const char *p;
        int r;

        if (strlen(path) >= PATH_MAX)
                return -ENAMETOOLONG;
        if (path[0] == 0 && !(flags & GATE_RESOLVE_EMPTY_PATH))
                return -ENOENT;
        r = resolve_object(start_fd, path, flags, ret);
        if (r != -EAGAIN)
                return r;
        r = resolve_fast(start_fd, path, flags, ret, &cur, &link_fd);
        if (r != -EAGAIN)
                return r;
        todo = strdup(path);
        if (!todo)
                return -ENOMEM;

        p = todo;
        if (cur >= 0)
                p = strrchr(todo, '/') ? strrchr(todo, '/') + 1 : todo;   /* resolve_fast()'s directory */
        else if (todo[0] == '/') {
                if (flags & GATE_RESOLVE_BENEATH)
                        return -EXDEV;
                cur = dup_fd(root);
        } else
                cur = dup_fd(start_fd);
        if (cur < 0)
                return cur;

        for (bool leap = false;;) {
                _cleanup_close_ int fd = -EBADF;
                _cleanup_free_ char *name = NULL, *target = NULL;
                const char *e, *rest;
                bool last, trailing;
                struct stat st;

                while (*p == '/')
                        p++;
                if (leap) {
                        /* After a symlink: its directories in one openat2() when none of them is a link
                         * (the walk below checks each component the same way, but one at a time). */
                        leap = false;
                        r = leap_directories(cur, &p, flags);
                        if (r < 0)
                                return r;
                        if (r > 0) {
                                safe_close(cur);
                                cur = r;
                        }
                }
                if (*p == 0) {
                        /* "/", "" (AT_EMPTY_PATH) or a path ending in "." or "..": the directory itself.
                         * "" names the caller's fd, which may be anything (a memfd for fexecve()). */
                        res.via_magic_link = path[0] == 0;
                        res.fd = TAKE_FD(cur);
                        break;
                }
                e = strchrnul(p, '/');
                rest = e;
                while (*rest == '/')
                        rest++;
                last = *rest == 0;
                trailing = last && *e == '/';
                name = strndup(p, e - p);
                if (!name)
                        return -ENOMEM;
                if (strlen(name) > NAME_MAX)
                        return -ENAMETOOLONG;
                p = rest;

                if (streq(name, "."))
                        continue;
                if (streq(name, "..")) {
                        int up;

                        if (same_inode(cur, root)) {
                                if (flags & GATE_RESOLVE_BENEATH)
                                        return -EXDEV;
                                continue;       /* ".." at the root is the root */
                        }
                        up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                        if (up < 0)
                                return -errno;
                        safe_close(cur);
                        cur = up;
                        continue;
                }

                /* resolve_fast() stopped at this very symlink, opened already. */
                fd = link_fd >= 0 ? TAKE_FD(link_fd) : openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        if (errno == ENOENT && last) {
                                res.dir_fd = TAKE_FD(cur);
                                res.must_be_dir = trailing;
                                return finish(&res, name, ret);
                        }
                        return -errno;
                }
                if (fstat(fd, &st) < 0)
                        return -errno;

                if (S_ISLNK(st.st_mode) && (!last || trailing || (flags & GATE_RESOLVE_FOLLOW))) {
                        struct statfs sf;
                        struct stat sc;
                        bool on_proc, proc_root;
                        char *n;

                        if (flags & GATE_RESOLVE_NO_SYMLINKS)
                                return -ELOOP;
                        if (++links > GATE_RESOLVE_SYMLINKS_MAX)
                                return -ELOOP;
                        if (fstatfs(cur, &sf) < 0)
                                return -errno;
                        on_proc = sf.f_type == PROC_SUPER_MAGIC;
                        if (on_proc && fstat(cur, &sc) < 0)
                                return -errno;
                        proc_root = on_proc && sc.st_ino == PROC_ROOT_INO;

                        if (on_proc && !proc_root) {
                                /* A magic link: the kernel follows it (to the caller's fd, cwd, root, exe). */
                                int m;

                                if (flags & GATE_RESOLVE_NO_MAGICLINKS)
                                        return -ELOOP;
                                /* The supervisor opens what it resolves with its own fd table: its own
                                 * fds, cwd and root are never the caller's to reach by name. */
                                if (ctx->supervisor > 0 && proc_dir_is_of(cur, ctx->supervisor)) {
                                        ctx->supervisor_hit = true;
                                        return -EPERM;
                                }
                                m = openat(cur, name, O_PATH | O_CLOEXEC);
                                if (m < 0)
                                        return -errno;
                                if (last) {
                                        res.fd = m;
                                        res.via_magic_link = true;
                                        break;
                                }
                                if (fstat(m, &st) < 0 || !S_ISDIR(st.st_mode)) {
                                        safe_close(m);
                                        return -ENOTDIR;
                                }
                                safe_close(cur);
                                cur = m;
                                continue;
                        }

                        r = read_link(ctx, cur, name, proc_root, &target);
                        if (r < 0)
                                return r;
                        /* The link's content in front of what is left of the path. */
                        if (asprintf(&n, "%s%s%s", target, *p || trailing ? "/" : "", p) < 0)
                                return -ENOMEM;
                        if (strlen(n) >= PATH_MAX * 2) {
                                free(n);
                                return -ENAMETOOLONG;
                        }
                        free(todo);
                        todo = n;
                        p = todo;
                        leap = true;
                        if (todo[0] == '/') {
                                int rfd;

                                if (flags & GATE_RESOLVE_BENEATH)
                                        return -EXDEV;
                                rfd = dup_fd(root);
                                if (rfd < 0)
                                        return rfd;
                                safe_close(cur);
                                cur = rfd;
                        }
                        continue;
                }

                if (!last) {
                        if (!S_ISDIR(st.st_mode))
                                return -ENOTDIR;
                        safe_close(cur);
                        cur = TAKE_FD(fd);
                        continue;
                }
                if (trailing && !S_ISDIR(st.st_mode))
                        return -ENOTDIR;
                res.dir_fd = TAKE_FD(cur);
                res.fd = TAKE_FD(fd);
                res.must_be_dir = trailing;
                return finish(&res, name, ret);
        }

        return finish(&res, NULL, ret);
}

/* The offset in path of its component number n (1: the first), or its length when it has fewer. */
static size_t component_offset(const char *path, size_t n) {
        size_t slashes = 0;

        for (size_t i = 0; path[i]; i++)
                if (path[i] == '/' && ++slashes == n)
                        return i + 1;
        return strlen(path);
}

int gate_resolved_fold_from(const GateResolved *r, int root_fd, size_t *ret) {
        if (!casefold_possible()) {
                *ret = SIZE_MAX;
                return 0;
        }
        return gate_resolved_fold_walk(r, root_fd, ret);
}

/* The directory above fd, readable when the caller may read it (one ioctl answers then), else O_PATH. */
static int open_parent(int fd) {
        int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);

        if (up < 0 && errno == EACCES)
                up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        return up < 0 ? -errno : up;
}

int gate_resolved_fold_walk(const GateResolved *r, int root_fd, size_t *ret) {
        _cleanup_close_ int cur = -EBADF;
        size_t depth = 0;
        ssize_t top = -1;
        struct stat st;

        if (!r->path || r->path[0] != '/') {
                *ret = SIZE_MAX;
                return 0;
        }
        for (const char *c = r->path; *c; c++)
                depth += *c == '/' && c[1] != 0;
        if (depth == 0) {               /* "/" has no name to fold */
                *ret = SIZE_MAX;
                return 0;
        }
        /* The directory the last component is in, at depth - 1, readable where it may be read: each level
         * then costs an ioctl, an openat and a close. */
        if (r->dir_fd >= 0) {
                cur = openat(r->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
                if (cur < 0 && errno == EACCES)
                        cur = dup_fd(r->dir_fd);
        } else if (r->fd >= 0 && fstat(r->fd, &st) == 0 && S_ISDIR(st.st_mode))
                cur = open_parent(r->fd);
        else {
                _cleanup_free_ char *dir = strndup(r->path, strrchr(r->path, '/') - r->path);

                if (!dir)
                        return -ENOMEM;
                cur = openat(root_fd, isempty(dir) ? "." : dir + 1, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
        }
        if (cur < 0) {
                *ret = component_offset(r->path, 1);
                return 0;
        }
        /* Level by level up to the root: the path is absolute and clean, as deep as its directories are. */
        for (size_t level = depth - 1;; level--) {
                int up;

                if (dir_fd_casefolded(cur) != 0)        /* folding, or cannot tell */
                        top = (ssize_t) level;
                if (level == 0)
                        break;
                up = open_parent(cur);
                if (up < 0) {
                        top = 0;
                        break;
                }
                safe_close(cur);
                cur = up;
        }
        *ret = top < 0 ? SIZE_MAX : component_offset(r->path, (size_t) top + 1);
        return 0;
}
