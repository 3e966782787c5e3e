/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "dirent-util.h"
#include "fs-util.h"
#include "io-util.h"
#include "log.h"
#include "macro.h"
#include "string-util.h"
#include "tripwire.h"

typedef enum EntryType {
        ENTRY_DIR,
        ENTRY_FILE,
        ENTRY_SYMLINK,
        ENTRY_ABSENT,                   /* a protected path that did not exist: it must not appear */
} EntryType;

typedef struct Entry {
        char *rel;
        EntryType type;
        mode_t mode;
        uid_t uid;
        gid_t gid;
        char *data;                     /* file content or symlink target */
        size_t size;
} Entry;

typedef struct Watch {
        int wd;
        char *rel;                      /* what the watch is on ("" for the work dir) */
        char *only_name;                /* an ancestor: only events about this name matter; NULL: all */
        char *pending;                  /* on the way to a missing protected path: what is left of it below
                                         * rel (only_name is its first component); its appearance is
                                         * followed down, not a change by itself */
        bool folds;                     /* rel folds case (+F): only_name may appear spelt otherwise */
} Watch;

struct Tripwire {
        char *work_dir;
        int work_fd;
        Entry *entries;
        size_t n_entries;
        size_t bytes;
        int inotify_fd;
        Watch *watches;
        size_t n_watches;
        int stop_fd;
        pthread_t thread;
        bool armed;
        pid_t pid;
        char *tampered;
};

#define WATCH_PROTECTED (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | \
                         IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)
#define WATCH_ANCESTOR (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)

/* Opens rel (clean, relative) below dir_fd one component at a time with O_NOFOLLOW: a symlink anywhere is
 * refused (-ELOOP or -ENOTDIR), except as the last component with O_PATH, where the link itself is
 * opened. A walk rather than openat2(RESOLVE_NO_SYMLINKS), which service sandboxes' syscall filters may
 * not allow. */
static int open_beneath(int dir_fd, const char *rel, int flags) {
        _cleanup_free_ char *copy = strdup(isempty(rel) ? "." : rel);
        _cleanup_close_ int cur = -EBADF;
        char *c, *next;

        if (!copy)
                return -ENOMEM;
        cur = openat(dir_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cur < 0)
                return -errno;
        for (c = copy; c; c = next) {
                int fd;

                next = strchr(c, '/');
                if (next)
                        *next++ = 0;
                if (streq(c, ".."))
                        return -EPERM;
                fd = openat(cur, c, next ? O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC : flags | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                safe_close(cur);
                cur = fd;
        }
        return TAKE_FD(cur);
}

static char *rel_join(const char *a, const char *b) {
        char *s;
        if (asprintf(&s, "%s%s%s", a, isempty(a) ? "" : "/", b) < 0)
                return NULL;
        return s;
}

static int entry_add(Tripwire *t, Entry e) {
        Entry *n;

        if (t->n_entries >= TRIPWIRE_ENTRIES_MAX)
                return -E2BIG;
        n = reallocarray(t->entries, t->n_entries + 1, sizeof(Entry));
        if (!n)
                return -ENOMEM;
        t->entries = n;
        t->entries[t->n_entries++] = e;
        return 0;
}

static const Entry *entry_find(const Tripwire *t, const char *rel) {
        for (size_t i = 0; i < t->n_entries; i++)
                if (streq(t->entries[i].rel, rel))
                        return &t->entries[i];
        return NULL;
}

/* Whether the directory rel folds case: 1 also when that cannot be read, so that its names are matched
 * ignoring case rather than missed. */
static bool dir_folds(Tripwire *t, const char *rel) {
        _cleanup_close_ int fd = -EBADF;

        if (!casefold_possible())
                return false;
        fd = open_beneath(t->work_fd, rel, O_PATH | O_DIRECTORY);
        return fd < 0 || dir_fd_casefolded(fd) != 0;
}

/* Whether an event about name concerns the watch's only_name. In a directory that folds case the kernel
 * opens .MCP.JSON for .mcp.json: a watch for a missing path takes every new name there and lets
 * pending_follow() look the protected name up, so the kernel's own folding (Unicode too) decides; the
 * others, on names that exist (the kernel refuses a second spelling of them), compare ignoring ASCII
 * case. */
static bool watch_name_matches(const Watch *w, const char *name) {
        if (!w->only_name)
                return true;
        if (!name)
                return false;
        if (!w->folds)
                return streq(name, w->only_name);
        if (w->pending)
                return true;
        return ascii_strcaseeq(name, w->only_name);
}

static int watch_add_pending(Tripwire *t, const char *rel, const char *only_name, const char *pending, uint32_t mask) {
        _cleanup_free_ char *path = NULL;
        Watch *n;
        int wd;

        if (t->n_watches >= TRIPWIRE_WATCHES_MAX)
                return -E2BIG;
        if (asprintf(&path, "%s%s%s", t->work_dir, isempty(rel) ? "" : "/", rel) < 0)
                return -ENOMEM;
        wd = inotify_add_watch(t->inotify_fd, path, mask | IN_DONT_FOLLOW | IN_MASK_ADD);
        if (wd < 0)
                return log_debug_errno(errno, "Failed to watch %s: %m", path);
        n = reallocarray(t->watches, t->n_watches + 1, sizeof(Watch));
        if (!n)
                return -ENOMEM;
        t->watches = n;
        t->watches[t->n_watches] = (Watch) {
                .wd = wd,
                .folds = dir_folds(t, rel),
                .rel = strdup(rel),
                .only_name = only_name ? strdup(only_name) : NULL,
                .pending = pending ? strdup(pending) : NULL,
        };
        t->n_watches++;
        if (!t->watches[t->n_watches - 1].rel || (only_name && !t->watches[t->n_watches - 1].only_name) ||
            (pending && !t->watches[t->n_watches - 1].pending))
                return -ENOMEM;
        return 0;
}

static int watch_add(Tripwire *t, const char *rel, const char *only_name, uint32_t mask) {
        return watch_add_pending(t, rel, only_name, NULL, mask);
}

/* Splits "a/b/c" into "a" (returned, allocated) and "b/c" (*ret_rest, inside path; NULL for the last). */
static char *first_component(const char *path, const char **ret_rest) {
        const char *slash = strchr(path, '/');

        *ret_rest = slash ? slash + 1 : NULL;
        return slash ? strndup(path, (size_t) (slash - path)) : strdup(path);
}

/* Watches each directory above rel (and rel's own name in its parent), up to the work dir: a rename
 * there moves the protection away. */
static int watch_ancestors(Tripwire *t, const char *rel) {
        _cleanup_free_ char *copy = strdup(rel);
        int r;

        if (!copy)
                return -ENOMEM;
        if (isempty(copy))
                return 0;
        for (;;) {
                char *slash = strrchr(copy, '/');
                const char *name = slash ? slash + 1 : copy;

                if (slash)
                        *slash = 0;
                r = watch_add(t, slash ? copy : "", name, WATCH_ANCESTOR);
                if (r < 0)
                        return r;
                if (!slash)
                        return 0;
        }
}

/* A missing protected path: rel_dir exists and is watched for the first component of pending. Follows
 * what has appeared since, one directory at a time, watching each before looking into it (so nothing
 * created in between is missed). Returns 1 with the path in *ret_path when the protected path itself
 * exists now, or something other than a directory stands where a directory of its path belongs (a
 * symlink or a file would redirect it); 0 when it is still missing. */
static int pending_follow(Tripwire *t, const char *rel_dir, const char *pending, char **ret_path) {
        _cleanup_free_ char *dir = strdup(rel_dir);
        int r;

        if (!dir)
                return -ENOMEM;
        for (;;) {
                _cleanup_free_ char *first = NULL, *child = NULL, *next = NULL;
                _cleanup_close_ int fd = -EBADF;
                const char *rest;
                struct stat st;

                first = first_component(pending, &rest);
                child = first ? rel_join(dir, first) : NULL;
                if (!child)
                        return -ENOMEM;
                fd = open_beneath(t->work_fd, child, O_PATH);
                if (fd == -ENOENT)
                        return 0;
                if (fd >= 0 && fstat(fd, &st) < 0)
                        return -errno;
                if (fd < 0 || !rest || !S_ISDIR(st.st_mode)) {
                        *ret_path = TAKE_PTR(child);
                        return 1;
                }
                next = first_component(rest, &(const char *) { NULL });
                if (!next)
                        return -ENOMEM;
                r = watch_add_pending(t, child, next, rest, WATCH_ANCESTOR);
                /* Gone again since it was opened: nothing protected is there, and its parent's watch
                 * follows the name should it come back. */
                if (r == -ENOENT || r == -ENOTDIR)
                        return 0;
                if (r < 0)
                        return r;
                free(dir);
                dir = TAKE_PTR(child);
                pending = t->watches[t->n_watches - 1].pending;
        }
}

/* A protected path that does not exist: recorded as absent and watched from its nearest existing
 * directory, whose own name is watched like any protected path's ancestors. A file or a symlink on the
 * way (a .git file of a worktree, say) is not ours to follow: nothing is watched then. */
static int absent_add(Tripwire *t, const char *rel) {
        _cleanup_free_ char *have = strdup(""), *first = NULL;
        const char *pending = rel, *rest;
        int r;

        if (!have)
                return -ENOMEM;
        for (;;) {
                _cleanup_free_ char *child = NULL;
                _cleanup_close_ int fd = -EBADF;
                struct stat st;

                free(first);
                first = first_component(pending, &rest);
                child = first ? rel_join(have, first) : NULL;
                if (!child)
                        return -ENOMEM;
                fd = open_beneath(t->work_fd, child, O_PATH);
                if (fd == -ENOENT)
                        break;
                if (fd == -ENOTDIR || fd == -ELOOP)
                        return 0;
                if (fd < 0)
                        return fd;
                if (fstat(fd, &st) < 0)
                        return -errno;
                if (!S_ISDIR(st.st_mode) || !rest)
                        return 0;
                free(have);
                have = TAKE_PTR(child);
                pending = rest;
        }

        r = entry_add(t, (Entry) { .rel = strdup(rel), .type = ENTRY_ABSENT });
        if (r >= 0 && !t->entries[t->n_entries - 1].rel)
                r = -ENOMEM;
        if (r >= 0)
                r = watch_add_pending(t, have, first, pending, WATCH_ANCESTOR);
        if (r >= 0)
                r = watch_ancestors(t, have);
        return r;
}

static int snapshot(Tripwire *t, int fd, const char *rel, const struct stat *st);

static int snapshot_dir(Tripwire *t, int fd, const char *rel) {
        _cleanup_close_ int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (dfd < 0)
                return -errno;
        d = fdopendir(dfd);
        if (!d)
                return -errno;
        dfd = -EBADF;   /* owned by d */
        while (r >= 0 && (errno = 0, de = readdir(d))) {
                _cleanup_free_ char *child = NULL;
                _cleanup_close_ int cfd = -EBADF;
                struct stat st;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                child = rel_join(rel, de->d_name);
                if (!child) {
                        r = -ENOMEM;
                        break;
                }
                cfd = openat(dirfd(d), de->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (cfd < 0 || fstat(cfd, &st) < 0) {
                        r = -errno;
                        break;
                }
                r = snapshot(t, cfd, child, &st);
        }
        if (r >= 0 && errno != 0)
                r = -errno;
        closedir(d);
        return r;
}

static int snapshot(Tripwire *t, int fd, const char *rel, const struct stat *st) {
        Entry e = { .mode = st->st_mode & 07777, .uid = st->st_uid, .gid = st->st_gid };
        int r;

        if (S_ISDIR(st->st_mode)) {
                e.type = ENTRY_DIR;
        } else if (S_ISREG(st->st_mode)) {
                _cleanup_close_ int rfd = -EBADF;
                ssize_t n;

                if ((size_t) st->st_size > TRIPWIRE_BYTES_MAX - t->bytes)
                        return -EFBIG;
                {
                        /* Reopen the O_PATH fd for reading: the file checked is the file read. */
                        char p[64];
                        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
                        rfd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                }
                if (rfd < 0)
                        return -errno;
                e.type = ENTRY_FILE;
                e.data = malloc((size_t) st->st_size + 1);
                if (!e.data)
                        return -ENOMEM;
                n = loop_read(rfd, e.data, (size_t) st->st_size + 1);
                if (n < 0 || (size_t) n > (size_t) st->st_size) {
                        free(e.data);
                        return n < 0 ? (int) n : -EBUSY;        /* grew while we read */
                }
                e.size = (size_t) n;
                t->bytes += e.size;
        } else if (S_ISLNK(st->st_mode)) {
                char target[PATH_MAX];
                ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
                if (n < 0)
                        return -errno;
                e.type = ENTRY_SYMLINK;
                e.data = strndup(target, (size_t) n);
                if (!e.data)
                        return -ENOMEM;
                e.size = (size_t) n;
        } else
                return 0;       /* sockets, fifos, devices: nothing to restore */

        e.rel = strdup(rel);
        if (!e.rel) {
                free(e.data);
                return -ENOMEM;
        }
        r = entry_add(t, e);
        if (r < 0) {
                free(e.rel);
                free(e.data);
                return r;
        }
        if (e.type == ENTRY_SYMLINK)
                return 0;
        r = watch_add(t, rel, NULL, WATCH_PROTECTED);
        if (r < 0)
                return r;
        return e.type == ENTRY_DIR ? snapshot_dir(t, fd, rel) : 0;
}

int tripwire_new(const char *work_dir, char * const *rel_paths, Tripwire **ret) {
        Tripwire *t;
        int r;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->work_fd = t->inotify_fd = t->stop_fd = -EBADF;
        t->work_dir = strdup(work_dir);
        if (!t->work_dir) {
                r = -ENOMEM;
                goto fail;
        }
        t->work_fd = open(work_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        t->inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        t->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (t->work_fd < 0 || t->inotify_fd < 0 || t->stop_fd < 0) {
                r = -errno;
                goto fail;
        }

        for (char * const *p = rel_paths; p && *p; p++) {
                _cleanup_close_ int fd = open_beneath(t->work_fd, *p, O_PATH);
                struct stat st;

                if (fd == -ENOENT || fd == -ENOTDIR) {
                        /* Missing: watched for its creation (a protected .mcp.json or .git/hooks made
                         * by the agent would be run by the host's tools), also below directories that
                         * are missing too (.git/hooks before `git init`). */
                        r = absent_add(t, *p);
                        if (r < 0)
                                goto fail;
                        continue;
                }
                if (fd < 0) {
                        r = fd;
                        goto fail;
                }
                if (fstat(fd, &st) < 0) {
                        r = -errno;
                        goto fail;
                }
                /* A symbolic link (not mounted read-only, container-spec.c) is kept as the link: its
                 * replacement or a new target trips the wire from its directory's watch; what it points
                 * at, when in the tree, is a protected path of its own (protected_paths_guarded()). */
                r = snapshot(t, fd, *p, &st);
                if (r < 0)
                        goto fail;

                r = watch_ancestors(t, *p);
                if (r < 0)
                        goto fail;
        }
        *ret = t;
        return 0;
fail:
        tripwire_free(t);
        return r;
}

const char *tripwire_root(const Tripwire *t) {
        return t->work_dir;
}

size_t tripwire_count(const Tripwire *t) {
        return t ? t->n_entries : 0;
}

static void tripwire_fire(Tripwire *t, const char *rel, const char *name) {
        if (t->tampered)
                return;
        t->tampered = name ? rel_join(rel, name) : strdup(rel);
        if (!t->tampered)
                t->tampered = strdup("?");
        if (t->pid > 0)
                (void) kill(t->pid, SIGKILL);
}

static void *tripwire_thread(void *userdata) {
        Tripwire *t = userdata;
        union {
                char buf[64 * 1024];
                struct inotify_event align;
        } u;

        for (;;) {
                struct pollfd p[2] = { { .fd = t->inotify_fd, .events = POLLIN }, { .fd = t->stop_fd, .events = POLLIN } };
                ssize_t n;

                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        tripwire_fire(t, "(the watch failed)", NULL);
                        return NULL;
                }
                /* Events first: a change just before the stop still counts. */
                while ((n = read(t->inotify_fd, u.buf, sizeof(u.buf))) > 0)
                        for (char *c = u.buf; c < u.buf + n;) {
                                const struct inotify_event *ev = (const struct inotify_event *) c;

                                c += sizeof(*ev) + ev->len;
                                if (ev->mask & IN_Q_OVERFLOW) {
                                        tripwire_fire(t, "(too many changes to follow)", NULL);
                                        continue;
                                }
                                /* By index: following a pending path adds watches. */
                                for (size_t i = 0; i < t->n_watches; i++) {
                                        const Watch *w = &t->watches[i];
                                        bool self = ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED);

                                        if (w->wd != ev->wd)
                                                continue;
                                        if (w->only_name && !self && !watch_name_matches(w, ev->len > 0 ? ev->name : NULL))
                                                continue;
                                        if (w->pending) {
                                                _cleanup_free_ char *rel = NULL, *pending = NULL, *path = NULL;
                                                int k;

                                                /* Its directory going away, or the name leaving: nothing
                                                 * protected was there yet. */
                                                if (self || !(ev->mask & (IN_CREATE | IN_MOVED_TO)))
                                                        continue;
                                                rel = strdup(w->rel);
                                                pending = strdup(w->pending);
                                                k = rel && pending ? pending_follow(t, rel, pending, &path) : -ENOMEM;
                                                if (k < 0)
                                                        tripwire_fire(t, "(too many changes to follow)", NULL);
                                                else if (k > 0)
                                                        tripwire_fire(t, path, NULL);
                                                continue;
                                        }
                                        if (w->only_name && !self)
                                                tripwire_fire(t, w->rel, w->only_name);
                                        else
                                                tripwire_fire(t, w->rel, !self && ev->len > 0 ? ev->name : NULL);
                                }
                        }
                if (p[1].revents)
                        return NULL;
        }
}

int tripwire_arm(Tripwire *t, pid_t pid) {
        int r;

        if (!t || t->armed)
                return -EINVAL;
        t->pid = pid;
        r = -pthread_create(&t->thread, NULL, tripwire_thread, t);
        if (r < 0)
                return r;
        t->armed = true;
        return 0;
}

const char *tripwire_disarm(Tripwire *t) {
        if (!t)
                return NULL;
        if (t->armed) {
                (void) eventfd_write(t->stop_fd, 1);
                (void) pthread_join(t->thread, NULL);
                t->armed = false;
        }
        return t->tampered;
}

/* rm -rf of name below dir_fd, without following symlinks. */
static int remove_tree(int dir_fd, const char *name) {
        struct stat st;

        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (S_ISDIR(st.st_mode)) {
                DIR *d;
                struct dirent *de;
                int r = opendir_at(dir_fd, name, O_NOFOLLOW, &d);

                if (r < 0)
                        return r;
                while ((de = readdir(d)))
                        if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                                (void) remove_tree(dirfd(d), de->d_name);
                closedir(d);
                return unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
        }
        return unlinkat(dir_fd, name, 0) < 0 ? -errno : 0;
}

/* Opens rel's directory below the work dir into *ret_fd (1), removing what is in the way (a file or a
 * symlink where a directory belongs). With create, what is missing is made; without, a missing directory
 * or one that had to be removed ends the walk with 0 (nothing below it can be there). */
static int open_work_dir(Tripwire *t, const char *rel, bool create, unsigned *changed, int *ret_fd) {
        _cleanup_free_ char *copy = strdup(rel);
        _cleanup_close_ int cur = -EBADF;
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        cur = open_beneath(t->work_fd, "", O_PATH | O_DIRECTORY);
        if (cur < 0)
                return cur;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                int fd = open_beneath(cur, c, O_PATH | O_DIRECTORY);

                if (fd == -ENOTDIR || fd == -ELOOP) {
                        if (unlinkat(cur, c, 0) < 0)
                                return -errno;
                        (*changed)++;
                        if (!create)
                                return 0;
                        fd = -ENOENT;
                }
                if (fd == -ENOENT) {
                        if (!create)
                                return 0;
                        if (mkdirat(cur, c, 0755) < 0)
                                return -errno;
                        (*changed)++;
                        fd = open_beneath(cur, c, O_PATH | O_DIRECTORY);
                }
                if (fd < 0)
                        return fd;
                safe_close(cur);
                cur = fd;
        }
        *ret_fd = TAKE_FD(cur);
        return 1;
}

static int restore_entry(Tripwire *t, const Entry *e, unsigned *changed) {
        _cleanup_free_ char *parent = strdup(e->rel);
        _cleanup_close_ int pfd = -EBADF, fd = -EBADF;
        const char *name;
        char *slash;
        struct stat st;
        int r;

        if (!parent)
                return -ENOMEM;
        slash = strrchr(parent, '/');
        name = slash ? slash + 1 : e->rel;
        if (slash)
                *slash = 0;
        else
                parent[0] = 0;
        if (e->type == ENTRY_ABSENT) {
                /* What appeared goes, and a file or symlink standing where a directory of its path
                 * belongs (all were directories or missing at the snapshot); directories that appeared
                 * on the way are left as they are. */
                int k = open_work_dir(t, parent, false, changed, &pfd);

                if (k <= 0)
                        return k;
                if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return errno == ENOENT ? 0 : -errno;
                k = remove_tree(pfd, name);
                if (k < 0)
                        return k;
                (*changed)++;
                return 0;
        }
        r = open_work_dir(t, parent, true, changed, &pfd);
        if (r < 0)
                return r;
        /* An O_PATH fd of a directory cannot be written through: reopen it. */
        {
                int d = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (d < 0)
                        return -errno;
                safe_close(pfd);
                pfd = d;
        }

        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT)
                        return -errno;
                st.st_mode = 0;
        }

        switch (e->type) {
        case ENTRY_DIR:
                if (st.st_mode && !S_ISDIR(st.st_mode)) {
                        int k = remove_tree(pfd, name);
                        if (k < 0)
                                return k;
                        st.st_mode = 0;
                }
                if (!st.st_mode) {
                        if (mkdirat(pfd, name, e->mode) < 0)
                                return -errno;
                        (*changed)++;
                }
                fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                break;

        case ENTRY_FILE: {
                _cleanup_free_ char *now = NULL;
                size_t size = 0;

                if (S_ISREG(st.st_mode) && (st.st_mode & 07777) == e->mode && st.st_uid == e->uid && st.st_gid == e->gid &&
                    read_full_file_at(pfd, name, e->size + 1, true, &now, &size) >= 0 && size == e->size &&
                    memcmp(now, e->data, size) == 0)
                        return 0;
                if (st.st_mode) {
                        int k = remove_tree(pfd, name);
                        if (k < 0)
                                return k;
                }
                fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, e->mode);
                if (fd < 0)
                        return -errno;
                {
                        int k = loop_write(fd, e->data, e->size);
                        if (k < 0)
                                return k;
                }
                (*changed)++;
                break;
        }

        case ENTRY_SYMLINK: {
                char target[PATH_MAX];
                ssize_t n = S_ISLNK(st.st_mode) ? readlinkat(pfd, name, target, sizeof(target) - 1) : -1;

                if (n >= 0 && (size_t) n == e->size && memcmp(target, e->data, e->size) == 0)
                        return 0;
                if (st.st_mode) {
                        int k = remove_tree(pfd, name);
                        if (k < 0)
                                return k;
                }
                if (symlinkat(e->data, pfd, name) < 0)
                        return -errno;
                if (fchownat(pfd, name, e->uid, e->gid, AT_SYMLINK_NOFOLLOW) < 0)
                        log_debug_errno(errno, "Failed to chown the restored symlink %s, ignoring: %m", e->rel);
                (*changed)++;
                return 0;
        }

        case ENTRY_ABSENT:
                return 0;       /* handled above */
        }

        if (fchmod(fd, e->mode) < 0 || (fchown(fd, e->uid, e->gid) < 0 && errno != EPERM))
                return -errno;

        if (e->type == ENTRY_DIR) {
                /* What the agent added below a snapshotted directory goes. */
                DIR *d = fdopendir(TAKE_FD(fd));
                struct dirent *de;

                if (!d)
                        return -errno;
                while ((de = readdir(d))) {
                        _cleanup_free_ char *child = NULL;

                        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        child = rel_join(e->rel, de->d_name);
                        if (!child) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        if (!entry_find(t, child)) {
                                (void) remove_tree(dirfd(d), de->d_name);
                                (*changed)++;
                        }
                }
                closedir(d);
        }
        return 0;
}

int tripwire_restore(Tripwire *t) {
        unsigned changed = 0;
        int r = 0;

        if (!t)
                return 0;
        /* Parents come before their children in the snapshot. */
        for (size_t i = 0; i < t->n_entries; i++) {
                int k = restore_entry(t, &t->entries[i], &changed);
                if (k < 0) {
                        log_warning_errno(k, "Failed to restore %s/%s: %m", t->work_dir, t->entries[i].rel);
                        if (r == 0)
                                r = k;
                }
        }
        return r < 0 ? r : (int) changed;
}

Tripwire *tripwire_free(Tripwire *t) {
        if (!t)
                return NULL;
        (void) tripwire_disarm(t);
        for (size_t i = 0; i < t->n_entries; i++) {
                free(t->entries[i].rel);
                free(t->entries[i].data);
        }
        free(t->entries);
        for (size_t i = 0; i < t->n_watches; i++) {
                free(t->watches[i].rel);
                free(t->watches[i].only_name);
                free(t->watches[i].pending);
        }
        free(t->watches);
        safe_close(t->work_fd);
        safe_close(t->inotify_fd);
        safe_close(t->stop_fd);
        free(t->tampered);
        free(t->work_dir);
        free(t);
        return NULL;
}
