/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gate-mm.h"
#include "gate-syscall.h"
#include "macro.h"

/* The most sharers one scan records: more than this fail closed (a vfork chain that deep is an attack). */
#define GATE_MM_SHARERS_MAX 64U
/* Rounds over the pids handed out during a pass before it gives up (fails closed). */
#define GATE_MM_ROUNDS_MAX 16U
/* The position in /proc's directory where its entries for tasks begin (fs/proc/base.c: FIRST_PROCESS_ENTRY,
 * "self" and "thread-self" there, then every process at its pid past them); the sixty-odd entries before
 * it (cpuinfo, sys, ...) are no task's, and reading them cost more than the tasks. */
#define PROC_TASKS_POS 256

typedef struct Scan {
        int proc_fd;                    /* /proc, the caller's (one thread at a time: its position is ours) */

        pid_t self;                     /* the supervisor's process */
        pid_t sharers[GATE_MM_SHARERS_MAX];
        size_t n;
        size_t tasks;
} Scan;

static _Thread_local char why_buf[256];

static int read_small(const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        return (int) n;
}

/* /proc/sys/kernel/ns_last_pid of the supervisor's pid namespace (the agent's: it cannot leave it), opened
 * once and read again from offset 0 (procfs generates it anew): each pass reads it twice or more. */
static _Atomic int last_pid_fd = -1;

static int last_pid(long *ret) {
        char buf[32];
        int fd = atomic_load(&last_pid_fd);
        ssize_t n;

        if (fd < 0) {
                int expected = -1;

                fd = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        return -errno;
                if (!atomic_compare_exchange_strong(&last_pid_fd, &expected, fd)) {
                        safe_close(fd);
                        fd = expected;
                }
        }
        n = pread(fd, buf, sizeof buf - 1, 0);
        if (n <= 0)
                return n < 0 ? -errno : -EIO;
        buf[n] = 0;
        *ret = strtol(buf, NULL, 10);
        return 0;
}

static long kcmp_vm(pid_t a, pid_t b) {
        return syscall(SYS_kcmp, a, b, KCMP_VM, 0, 0);
}

/* Whether task tid of process pid is blocked in clone(CLONE_VM|CLONE_VFORK) or vfork() waiting for its
 * child: /proc/PID/syscall names the call a sleeping task is in (and says "running" otherwise), its
 * wchan where it sleeps: kernel_clone (wait_for_vfork_done inlined) or wait_for_vfork_done. */
static bool blocked_in_vfork(pid_t pid, pid_t tid) {
        char path[64], buf[256], *end;
        long nr;
        unsigned long flags;

        (void) snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int) pid, (int) tid);
        if (read_small(path, buf, sizeof buf) <= 0 || !isdigit((unsigned char) buf[0]))
                return false;
        nr = strtol(buf, &end, 10);
        flags = strtoul(end, NULL, 16);
        if (!(nr == SYS_clone && (flags & (CLONE_VM | CLONE_VFORK)) == (CLONE_VM | CLONE_VFORK))
#ifdef SYS_vfork
            && nr != SYS_vfork
#endif
        )
                return false;
        (void) snprintf(path, sizeof path, "/proc/%d/task/%d/wchan", (int) pid, (int) tid);
        if (read_small(path, buf, sizeof buf) <= 0)
                return false;
        return streq(buf, "kernel_clone") || streq(buf, "wait_for_vfork_done");
}

/* The numbered entries of a procfs directory (pids, tids) straight from getdents64 into a buffer on the
 * stack: no DIR stream, no allocation, no fstat; read to the end (a short read is not taken for the end). */
typedef struct NumberedDir {
        int fd;
        bool borrowed;                  /* fd is the caller's /proc, not closed here */
        size_t pos, len;
        char buf[4096];
} NumberedDir;

static int numbered_dir_open(NumberedDir *d, int dir_fd, const char *path) {
        d->pos = d->len = 0;
        d->borrowed = false;
        d->fd = openat(dir_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return d->fd < 0 ? -errno : 0;
}

/* The tasks of /proc, read through the kept proc_fd from where they begin: the directory is read afresh
 * from the position set (procfs lists the live tasks, nothing is cached in the open file). Its first entry
 * there must be "self", or the layout is not the one known and it is read from its start. */
static int numbered_dir_tasks(NumberedDir *d, int proc_fd) {
        struct dirent64 *de;
        ssize_t n;

        *d = (NumberedDir) { .fd = proc_fd, .borrowed = true };
        if (lseek(proc_fd, PROC_TASKS_POS, SEEK_SET) < 0)
                return -errno;
        n = getdents64(proc_fd, d->buf, sizeof d->buf);
        if (n < 0)
                return -errno;
        de = (struct dirent64 *) d->buf;
        if (n > 0 && streq(de->d_name, "self")) {
                d->len = (size_t) n;
                return 0;
        }
        if (lseek(proc_fd, 0, SEEK_SET) < 0)
                return -errno;
        return 0;
}

static void numbered_dir_close(NumberedDir *d) {
        if (d->borrowed)
                d->fd = -EBADF;
        else
                d->fd = safe_close(d->fd);
}

/* 1 with the next number, 0 at the end, -errno. */
static int numbered_dir_next(NumberedDir *d, long *ret) {
        for (;;) {
                struct dirent64 *de;

                if (d->pos >= d->len) {
                        ssize_t n = getdents64(d->fd, d->buf, sizeof d->buf);

                        if (n < 0)
                                return -errno;
                        if (n == 0)
                                return 0;
                        d->pos = 0;
                        d->len = (size_t) n;
                }
                de = (struct dirent64 *) (d->buf + d->pos);
                d->pos += de->d_reclen;
                if (isdigit((unsigned char) de->d_name[0])) {
                        *ret = strtol(de->d_name, NULL, 10);
                        return 1;
                }
        }
}

static int found_sharer(Scan *s, pid_t tid) {
        for (size_t i = 0; i < s->n; i++)
                if (s->sharers[i] == tid)
                        return 0;       /* seen already (a new pid that was also in the directory) */
        if (s->n >= GATE_MM_SHARERS_MAX)
                return -E2BIG;
        s->sharers[s->n++] = tid;
        return 0;
}

/* Task tid of process pid: 1 when it shares the caller's address space and can run, 0 when not. */
static int scan_task(pid_t caller, pid_t pid, pid_t tid, Scan *s, const char **ret_why) {
        long k;
        int r;

        if (++s->tasks > GATE_MM_TASKS_MAX)
                return -E2BIG;
        if (tid == caller)
                return 0;
        k = kcmp_vm(caller, tid);
        /* EPERM: ptrace's read check refused, which it does not for a task sharing the caller's address
         * space: dumpability is the address space's, and such a task has the caller's ids (the agent has
         * no others to change to). ESRCH: gone. */
        if (k < 0 && (errno == EPERM || errno == ESRCH))
                return 0;
        if (k < 0)
                return -errno;
        if (k != 0)
                return 0;
        if ((r = found_sharer(s, tid)) < 0)
                return r;
        if (!blocked_in_vfork(pid, tid)) {
                (void) snprintf(why_buf, sizeof why_buf,
                                "task %d shares its memory and can run (a thread, or CLONE_VM without a "
                                "waiting vfork)", (int) tid);
                *ret_why = why_buf;
                return 1;
        }
        return 0;
}

/* The tasks of process pid: a sharer of the caller's address space that can run answers 1. */
static int scan_process(pid_t caller, pid_t pid, Scan *s, const char **ret_why) {
        NumberedDir tasks;
        struct stat st;
        char path[64];
        long t;
        int r;

        /* The supervisor's own threads share its address space, which no agent task has: it forks the
         * agent (never a vfork) before the filter is installed. */
        if (pid == s->self)
                return 0;
        /* procfs counts a process's threads in the link count of its task directory (2 + threads; a
         * leader that has exited is counted while its threads live): a process of one thread is that
         * thread, its leader, and takes no listing. A thread made after this has a pid handed out after
         * the pass began, which the pass looks at too. */
        (void) snprintf(path, sizeof path, "%d/task", (int) pid);
        if (fstatat(s->proc_fd, path, &st, 0) < 0)
                return 0;       /* gone, or never was */
        if (st.st_nlink == 3)
                return scan_task(caller, pid, pid, s, ret_why);
        if (numbered_dir_open(&tasks, s->proc_fd, path) < 0)
                return 0;
        while ((r = numbered_dir_next(&tasks, &t)) > 0)
                if ((r = scan_task(caller, pid, (pid_t) t, s, ret_why)) != 0)
                        break;
        numbered_dir_close(&tasks);
        return r;
}

/* One pass over every task of the pid namespace, then over the pids handed out meanwhile (a task made
 * while the directory was read may have a pid the walk had passed), until none is. Returns 0 or 1 as
 * gate_mm_sole(). */
static int scan(pid_t caller, Scan *s, long *last, const char **ret_why) {
        NumberedDir proc;
        long now, entry;
        int r;

        s->n = s->tasks = 0;
        s->self = getpid();
        r = numbered_dir_tasks(&proc, s->proc_fd);
        if (r < 0)
                return r;
        while ((r = numbered_dir_next(&proc, &entry)) > 0) {
                r = scan_process(caller, (pid_t) entry, s, ret_why);
                if (r != 0)
                        break;
        }
        numbered_dir_close(&proc);
        if (r != 0)
                return r;
        for (unsigned round = 0;; round++) {
                if ((r = last_pid(&now)) < 0)
                        return r;
                if (now == *last)
                        return 0;
                /* Pids wrapped around, or tasks keep coming: not told, fail closed. */
                if (now < *last || now - *last > (long) GATE_MM_TASKS_MAX || round >= GATE_MM_ROUNDS_MAX) {
                        *ret_why = "tasks kept being created while the tasks sharing its memory were looked for";
                        return 1;
                }
                for (long pid = *last + 1; pid <= now; pid++) {
                        /* a new thread's pid names no directory in /proc but is one under its process */
                        char path[64];
                        struct stat st;
                        pid_t tgid = (pid_t) pid;
                        char buf[512], *t;

                        (void) snprintf(path, sizeof path, "/proc/%ld/status", pid);
                        if (read_small(path, buf, sizeof buf) > 0 && (t = strstr(buf, "\nTgid:")))
                                tgid = (pid_t) strtol(t + 6, NULL, 10);
                        (void) snprintf(path, sizeof path, "%d/task", (int) tgid);
                        if (fstatat(s->proc_fd, path, &st, 0) < 0)
                                continue;
                        r = scan_process(caller, tgid, s, ret_why);
                        if (r != 0)
                                return r;
                }
                *last = now;
        }
}

static int pid_cmp(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return x < y ? -1 : x > y;
}

int gate_mm_sole(int proc_fd, pid_t tid, const char **ret_why) {
        Scan a = { .proc_fd = proc_fd }, b = { .proc_fd = proc_fd };
        long last;
        int r;

        /* kcmp must work at all: where it is refused, EPERM would look like "nobody shares". */
        if (kcmp_vm(tid, tid) != 0)
                return errno != 0 ? -errno : -EIO;
        r = last_pid(&last);
        if (r < 0)
                return r;
        /* Twice: a sharer seen blocked in its vfork may have woken since, because its child (another
         * sharer, not seen blocked itself) ended before the walk reached it; the second pass sees it
         * running, or misses that child the first pass found. */
        r = scan(tid, &a, &last, ret_why);
        if (r != 0)
                return r;
        /* No sharer at all at the end of a pass: none can appear any more, since a task shares an address
         * space only by being cloned with CLONE_VM from one that has it, and the only such task left, the
         * caller, waits in its exec. The second pass is for sharers found blocked in a vfork. */
        if (a.n == 0)
                return 0;
        r = scan(tid, &b, &last, ret_why);
        if (r != 0)
                return r;
        qsort(a.sharers, a.n, sizeof(pid_t), pid_cmp);
        qsort(b.sharers, b.n, sizeof(pid_t), pid_cmp);
        if (a.n != b.n || memcmp(a.sharers, b.sharers, a.n * sizeof(pid_t)) != 0) {
                *ret_why = "the tasks sharing its memory changed while they were looked for";
                return 1;
        }
        return 0;
}

/* ---- pages no one else can write ---- */

/* /proc/PID/pagemap's bits (Documentation/admin-guide/mm/pagemap.rst). */
#define PAGEMAP_PRESENT (UINT64_C(1) << 63)
#define PAGEMAP_SWAPPED (UINT64_C(1) << 62)
#define PAGEMAP_FILE_OR_SHARED (UINT64_C(1) << 61)
#define GATE_MM_PAGEMAP_BATCH 64U               /* entries one pread reads at most */
#define GATE_MM_MAPS_BUF (PATH_MAX + 4096U)     /* a line of maps: a path and what comes before it */

static int u64_cmp(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* Who the caller is, for deciding on the files mapped in its memory. */
typedef struct Caller {
        int proc_dir_fd;                /* /proc/TID */
        int root_fd;
        uid_t agent_uid;
} Caller;

/* Whether st is the file the caller runs (/proc/TID/exe): the kernel refuses every write to it while an
 * address space maps it as its program (ETXTBSY), and exec refuses a file anyone has open for writing. */
static bool running_program(const Caller *c, const struct stat *st) {
        struct stat exe;

        return fstatat(c->proc_dir_fd, "exe", &exe, 0) == 0 && exe.st_dev == st->st_dev && exe.st_ino == st->st_ino;
}

/* Whether the regular file mapped at dev:ino, which maps names path, can be written by no task of the
 * agent: 1 yes, 0 no (why_buf says why). The file is the one of that device and inode: the path only
 * finds it. Before Linux 6.8 maps gives an overlayfs file's inode on its layer (the layer's device), while
 * the file found by path has the overlay's device and (its layers on one filesystem, or xino) the layer's
 * inode number: on overlayfs the inode number alone is compared. */
static int file_unwritable(const Caller *c, dev_t dev, ino_t ino, const char *path) {
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_close_ int fd = -EBADF;
        struct statfs sfs;
        struct stat st;
        bool same;

        if (path[0] != '/') {
                (void) snprintf(why_buf, sizeof why_buf, "an argument lies in a special mapping (%.60s)", path);
                return 0;
        }
        fd = (int) syscall(SYS_openat2, c->root_fd, path, &how, sizeof how);
        if (fd < 0 || fstat(fd, &st) < 0) {
                (void) snprintf(why_buf, sizeof why_buf, "an argument lies in a mapping of %.80s, which "
                                "cannot be looked at", path);
                return 0;
        }
        same = st.st_dev == dev && st.st_ino == ino;
        if (!same && st.st_ino == ino && fstatfs(fd, &sfs) == 0 && sfs.f_type == OVERLAYFS_SUPER_MAGIC)
                same = true;
        if (!same || !S_ISREG(st.st_mode)) {
                (void) snprintf(why_buf, sizeof why_buf, "an argument lies in a mapping of %.80s, which is no "
                                "longer that file (shared memory, a deleted or replaced file)", path);
                return 0;
        }
        if ((st.st_uid == c->agent_uid || (st.st_mode & (S_IWGRP | S_IWOTH))) && !running_program(c, &st)) {
                (void) snprintf(why_buf, sizeof why_buf, "an argument lies in a mapping of %.80s, a file the "
                                "agent can write", path);
                return 0;
        }
        return 1;
}

/* A mapping holding a page that pagemap does not show as private anonymous memory: 1 when that page is
 * still the caller's own (a private mapping of a file no task of the agent can write), 0 when not. */
static int vma_decide(const Caller *c, bool shared, dev_t dev, uint64_t inode, const char *name) {
        if (shared) {
                (void) snprintf(why_buf, sizeof why_buf, "an argument lies in shared memory (%.80s)",
                                name[0] ? name : "MAP_SHARED anonymous memory");
                return 0;
        }
        if (inode == 0) {
                (void) snprintf(why_buf, sizeof why_buf, "an argument lies in a page of %.60s that is "
                                "not the process's own", name[0] ? name : "anonymous memory");
                return 0;
        }
        return file_unwritable(c, dev, (ino_t) inode, name);
}

/* One line of /proc/PID/maps: 1 when the pages of it in pages[] (sorted, from *k on) are the caller's
 * own, 0 when one is not; *k moves past the pages below its end. */
static int maps_line(const Caller *c, const char *line, const uint64_t *pages, size_t n, size_t *k) {
        unsigned long long start, end, off, inode;
        unsigned major, minor;
        char perms[5];
        int at = 0, r;

        if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms, &off, &major, &minor,
                   &inode, &at) < 7 || at == 0)
                return -EBADMSG;
        if (*k < n && pages[*k] * gate_page_size() < start) {
                (void) snprintf(why_buf, sizeof why_buf, "an argument lies in memory no longer mapped");
                return 0;
        }
        if (*k >= n || pages[*k] * gate_page_size() >= end)
                return 1;
        r = vma_decide(c, perms[3] != 'p', makedev(major, minor), inode, line + at);
        if (r <= 0)
                return r;
        while (*k < n && pages[*k] * gate_page_size() < end)
                (*k)++;
        return 1;
}

/* Linux 6.11: one mapping of /proc/PID/maps by address, without formatting the others
 * (linux/fs.h, which Debian 12's headers predate). */
#ifndef PROCMAP_QUERY
struct procmap_query {
        uint64_t size;
        uint64_t query_flags;
        uint64_t query_addr;
        uint64_t vma_start;
        uint64_t vma_end;
        uint64_t vma_flags;
        uint64_t vma_page_size;
        uint64_t vma_offset;
        uint64_t inode;
        uint32_t dev_major;
        uint32_t dev_minor;
        uint32_t vma_name_size;
        uint32_t build_id_size;
        uint64_t vma_name_addr;
        uint64_t build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_SHARED 0x08
#endif

/* The pages[] (sorted, distinct) decided on their mappings, asked for one mapping at a time with
 * PROCMAP_QUERY on fd (/proc/PID/maps). -ENOTTY or -EINVAL: a kernel without it. */
static int query_decide(const Caller *c, int fd, const uint64_t *pages, size_t n) {
        char name[PATH_MAX + 1];

        for (size_t k = 0; k < n;) {
                struct procmap_query q = {
                        .size = sizeof q,
                        .query_addr = pages[k] * gate_page_size(),
                        .vma_name_addr = (uint64_t) (uintptr_t) name,
                        .vma_name_size = sizeof name,
                };
                int r;

                if (ioctl(fd, PROCMAP_QUERY, &q) < 0) {
                        if (errno == ENOENT) {
                                (void) snprintf(why_buf, sizeof why_buf, "an argument lies in memory no longer mapped");
                                return 0;
                        }
                        if (errno == ENAMETOOLONG) {
                                (void) snprintf(why_buf, sizeof why_buf, "an argument lies in a mapping whose "
                                                "name is too long to look at");
                                return 0;
                        }
                        return -errno;
                }
                if (q.vma_name_size == 0)
                        name[0] = 0;
                name[sizeof name - 1] = 0;
                r = vma_decide(c, q.vma_flags & PROCMAP_QUERY_VMA_SHARED, makedev(q.dev_major, q.dev_minor),
                               q.inode, name);
                if (r <= 0)
                        return r;
                while (k < n && pages[k] * gate_page_size() < q.vma_end)
                        k++;
        }
        return 1;
}

/* The pages[] (sorted, distinct) that pagemap does not show as private anonymous memory, decided on
 * their mappings: asked for by address where the kernel can (and way allows), else read from
 * /proc/PID/maps a buffer at a time. */
static int maps_decide(const Caller *c, GateMmMaps way, const uint64_t *pages, size_t n) {
        static atomic_bool no_query;
        _cleanup_close_ int fd = openat(c->proc_dir_fd, "maps", O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, k = 0;

        if (fd < 0)
                return -errno;
        if (way == GATE_MM_MAPS_QUERY)
                return query_decide(c, fd, pages, n);
        if (way == GATE_MM_MAPS_AUTO && !atomic_load(&no_query)) {
                int r = query_decide(c, fd, pages, n);

                if (r != -ENOTTY && r != -EINVAL)
                        return r;
                atomic_store(&no_query, true);  /* before Linux 6.11: the text, then */
        }
        buf = malloc(GATE_MM_MAPS_BUF + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t got = read(fd, buf + len, GATE_MM_MAPS_BUF - len);
                char *line = buf, *nl;

                if (got < 0)
                        return -errno;
                if (got == 0)
                        break;
                len += (size_t) got;
                buf[len] = 0;
                while ((nl = memchr(line, '\n', len - (size_t) (line - buf)))) {
                        int r;

                        *nl = 0;
                        r = maps_line(c, line, pages, n, &k);
                        if (r <= 0)
                                return r;
                        if (k >= n)
                                return 1;
                        line = nl + 1;
                }
                len -= (size_t) (line - buf);
                if (len >= GATE_MM_MAPS_BUF)
                        return -EBADMSG;        /* a line longer than any maps writes */
                memmove(buf, line, len);
        }
        (void) snprintf(why_buf, sizeof why_buf, "an argument lies in memory no longer mapped");
        return 0;
}

int gate_mm_private_way(GateMmMaps way, int proc_dir_fd, int root_fd, uid_t agent_uid, const uint64_t *addrs,
                        size_t n, const char **ret_why) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint64_t *pages = NULL;
        size_t m = 0, odd = 0;
        int r;

        if (n == 0)
                return 1;
        if (n > GATE_MM_PAGES_MAX)
                return -E2BIG;
        pages = malloc(n * sizeof(uint64_t));
        if (!pages)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                pages[i] = addrs[i] / gate_page_size();
        qsort(pages, n, sizeof(uint64_t), u64_cmp);
        for (size_t i = 0; i < n; i++)
                if (m == 0 || pages[m - 1] != pages[i])
                        pages[m++] = pages[i];

        fd = openat(proc_dir_fd, "pagemap", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* One pread per run of contiguous pages (a batch at most); the pages that are not private
         * anonymous memory are moved to the front of pages[], in order. */
        for (size_t i = 0; i < m;) {
                uint64_t e[GATE_MM_PAGEMAP_BATCH];
                size_t run = 1;
                ssize_t got;

                while (i + run < m && run < GATE_MM_PAGEMAP_BATCH && pages[i + run] == pages[i] + run)
                        run++;
                if (pages[i] > (uint64_t) INT64_MAX / sizeof(uint64_t))
                        return -EFAULT;
                got = pread(fd, e, run * sizeof(uint64_t), (off_t) (pages[i] * sizeof(uint64_t)));
                if (got < 0)
                        return -errno;
                if ((size_t) got != run * sizeof(uint64_t))
                        return -EIO;
                for (size_t j = 0; j < run; j++)
                        if ((e[j] & PAGEMAP_FILE_OR_SHARED) || !(e[j] & (PAGEMAP_PRESENT | PAGEMAP_SWAPPED)))
                                pages[odd++] = pages[i + j];
                i += run;
        }
        if (odd == 0)
                return 1;
        r = maps_decide(&(const Caller) { .proc_dir_fd = proc_dir_fd, .root_fd = root_fd, .agent_uid = agent_uid },
                        way, pages, odd);
        if (r == 0)
                *ret_why = why_buf;
        return r;
}

int gate_mm_private(int proc_dir_fd, int root_fd, uid_t agent_uid, const uint64_t *addrs, size_t n,
                    const char **ret_why) {
        return gate_mm_private_way(GATE_MM_MAPS_AUTO, proc_dir_fd, root_fd, agent_uid, addrs, n, ret_why);
}
