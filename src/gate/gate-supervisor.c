/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdatomic.h>
#include <linux/filter.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/un.h>
#include <time.h>

#include "fs-util.h"
#include "gate-resolve.h"
#include "gate-script.h"
#include "gate-send.h"
#include "gate-supervisor.h"
#include "gate-syscall.h"
#include "io-util.h"
#include "json-util.h"
#include "log.h"
#include "gate-inode-deny.h"
#include "gate-mm.h"
#include "path-util.h"
#include "seccomp-profile.h"
#include "string-util.h"
#include "strv.h"

/* Linux 6.6: the supervisor is woken on the caller's CPU, which halves a round trip. Debian 12's headers
 * predate it; an older kernel says EINVAL and we go on without. */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#define GATE_TARGET_LOG_MAX 4096U       /* a command line in a decision record is cut here */
#define GATE_RECENT_DENIES_MAX 16U
#define GATE_RECENT_DENY_NS (10ULL * 1000000000ULL)
#define OPEN_HOW_SIZE_MAX 4096U         /* the kernel refuses a larger struct open_how with E2BIG */

/* Linux 6.9: a pidfd for one thread, which polls readable once that thread has exited. */
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

/* A human's "deny" for one caller and command, remembered briefly: a shell searching $PATH asks again
 * for the same command under the next directory (/usr/bin/x denied, then /bin/x), which must not become
 * a second prompt. */
typedef struct RecentDeny {
        pid_t pid;
        char *cache_key;
        uint64_t until_ns;
        char actor[64];
} RecentDeny;

/* A caller whose umask, chdir or fchdir call was continued: its new mask or cwd may not be in force yet,
 * until the same task is seen again (its next trapped call comes after that call returned) or has exited
 * (pidfd readable). */
typedef struct FsChange {
        pid_t tid;
        int pidfd;                      /* PIDFD_THREAD */
} FsChange;

#define GATE_FS_CHANGES_MAX 64U

struct GateSupervisor {
        const GateSupervisorConfig *config;
        RecentDeny recent[GATE_RECENT_DENIES_MAX];
        unsigned recent_next;
        int notify_fd;
        int root_fd;
        atomic_uint pending_approvals;
        atomic_uint_fast64_t exec_epoch;        /* bumped before every exec is continued */
        atomic_uint_fast64_t fs_epoch;  /* bumped before every umask, chdir and fchdir is continued */
        atomic_uint fs_changes;         /* entries in fs_changing[] */
        atomic_bool fs_uncached;        /* fs_changing[] could not track one: keep no umask or cwd */
        atomic_uint_fast64_t stat_local, stat_approvals;
        atomic_uint_fast64_t stat_decision[GATE_LATENCY_BUCKETS], stat_answer[GATE_LATENCY_BUCKETS];
        _Atomic uint32_t call_seq;      /* odd while the receiver handles a call (a futex word) */
        atomic_uint standbys_asleep;    /* standbys waiting on call_seq with FUTEX_WAIT */
        atomic_uint fifo_opens;         /* blocking FIFO opens waiting in threads of their own */
        pthread_mutex_t lock;
        unsigned workers;               /* under lock, like the rest below */
        unsigned standbys;
        unsigned send_waits;            /* workers waiting in a blocking send (send_wait_begin()) */
        uint64_t receiver;              /* which worker receives: its generation */
        FsChange fs_changing[GATE_FS_CHANGES_MAX];
};

#define GATE_CALLER_CACHE_MAX 16U       /* per worker: callers whose /proc/PID handles stay open */

typedef struct CallerHandles {
        pid_t tid;
        int dir_fd;                     /* O_PATH: /proc/TID, pinning the task, not its number */
        int pidfd;                      /* PIDFD_THREAD: tells whether this very task is still alive */
        bool no_pidfd;                  /* the kernel would not give one: not asked again */
        int mem_fd;                     /* /proc/TID/mem, kept for emulated calls while mem_epoch holds */
        uint64_t mem_epoch;
        int status_fd;                  /* /proc/TID/status, opened on the first create */
        mode_t umask;                   /* what status said, while umask_kept and umask_epoch hold */
        bool umask_kept;
        uint64_t umask_epoch;
        char *cwd;                      /* the path of the cwd, while cwd_epoch holds and it names cwd_ino */
        uint64_t cwd_epoch;
        dev_t cwd_dev;
        ino_t cwd_ino;
        uint64_t used;
} CallerHandles;

/* Handles of callers that are gone, closed once the current call is answered: the last close of a dead
 * process's /proc handles frees what they pinned (its struct pid, its mm), which its successor, a new
 * process making its first call, should not wait for. */
#define GATE_DEFERRED_CLOSE_MAX 16U

/* One worker thread and what it keeps between calls (only it uses these: no locking, no sharing). */
typedef struct Worker {
        GateSupervisor *s;
        uint64_t receiver;              /* the generation it received as; 0: a standby */
        CallerHandles callers[GATE_CALLER_CACHE_MAX];
        uint64_t clock;
        int deferred_close[GATE_DEFERRED_CLOSE_MAX];
        size_t n_deferred_close;
        GateMemCache mem_cache;         /* for an exec's strings, reused from one to the next */
        GateScriptCache script_cache;   /* the "#!" lines of files executed */
        int proc_fd;                    /* /proc, for the look for sharers of an exec's memory (gate-mm.h) */
} Worker;

typedef enum ResultType {
        RESULT_ERRNO,                   /* the call fails with error */
        RESULT_VALUE,                   /* the call returns val */
        RESULT_CONTINUE,                /* the kernel runs the call */
        RESULT_FD,                      /* fd is installed in the caller and is the call's result */
        RESULT_DEFERRED,                /* a thread of its own answers later (a blocking FIFO open) */
} ResultType;

typedef struct Request {
        GateSupervisor *s;
        Worker *w;
        CallerHandles *caller;          /* the caller's /proc/TID, once open_caller() succeeded */
        const struct seccomp_notif *n;
        GateCall call;
        int mem_fd, cwd_fd, dir_fd, dir2_fd;   /* dir_fd, dir2_fd: the caller's dirfds, opened */
        int pidfd;                      /* PIDFD_THREAD of the caller, once caller_pidfd() opened it */
        bool mem_kept;                  /* mem_fd is caller->mem_fd: the cache owns it */
        mode_t umask;
        GateResolveContext rctx;
        uint64_t decided_ns;            /* when the verdict was there (CLOCK_MONOTONIC); 0: at the answer */

        /* the decision, for the record */
        GateKind kind;
        const char *op;
        char *target;
        GateVerdict verdict;
        const char *event;              /* "local" or "approval"; NULL: nothing was decided */
        char actor[64];
        char reason[256];

        ResultType result;
        int error;                      /* positive errno for RESULT_ERRNO */
        int64_t val;
        int fd;                         /* RESULT_FD: ours, installed in the caller with fd_cloexec */
        bool fd_cloexec;
} Request;

/* ---- per-thread credentials ---- */

/* Raw syscalls: glibc's set*id() wrappers change every thread of the process, these only the caller. */
static int thread_set_ids(uid_t euid, gid_t egid, bool gid_first) {
        if (gid_first && syscall(SYS_setresgid, (gid_t) -1, egid, (gid_t) -1) < 0)
                return -errno;
        if (syscall(SYS_setresuid, (uid_t) -1, euid, (uid_t) -1) < 0)
                return -errno;
        if (!gid_first && syscall(SYS_setresgid, (gid_t) -1, egid, (gid_t) -1) < 0)
                return -errno;
        return 0;
}

/* The caller's effective and filesystem ids: the kernel clears the effective capabilities as the euid
 * leaves 0, so files are opened, created and changed under the caller's permissions, and a file opened
 * here carries no capability in its f_cred. The real and saved ids stay 0: the agent cannot signal or
 * trace this thread, and the thread can become root again. */
static int thread_become_agent(const GateSupervisorConfig *c) {
        return thread_set_ids(c->uid, c->gid, true);
}

static int thread_become_root(void) {
        return thread_set_ids(0, 0, false);
}

static _noreturn_ void fatal_credentials(int r) {
        log_error_errno(r, "A gate worker cannot switch its credentials, stopping: %m");
        _exit(125);
}

/* ---- answering ---- */

static bool notif_id_valid(int fd, uint64_t id) {
        return ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

static int notif_send(int fd, uint64_t id, int error, int64_t val, bool cont) {
        struct seccomp_notif_resp resp = {
                .id = id,
                .error = cont ? 0 : -error,
                .val = cont ? 0 : val,
                .flags = cont ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0,
        };

        return ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 ? -errno : 0;
}

/* Installs fd in the caller and answers the call with its number, atomically. */
static int notif_addfd_send(int notify_fd, uint64_t id, int fd, bool cloexec) {
        struct seccomp_notif_addfd addfd = {
                .id = id,
                .flags = SECCOMP_ADDFD_FLAG_SEND,
                .srcfd = (uint32_t) fd,
                .newfd = 0,
                .newfd_flags = cloexec ? O_CLOEXEC : 0,
        };
        int r = ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd);

        return r < 0 ? -errno : r;
}

static uint64_t now_ns(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

/* ---- the caller's handles ---- */

static int open_proc(pid_t pid, const char *what, int flags) {
        char p[64];
        int fd;

        (void) snprintf(p, sizeof(p), "/proc/%i%s%s", pid, isempty(what) ? "" : "/", what);
        fd = open(p, flags | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Closes fd after the current call's answer (at once when too many wait). Returns -EBADF. */
static int close_later(Worker *w, int fd) {
        if (fd < 0)
                return -EBADF;
        if (w->n_deferred_close < GATE_DEFERRED_CLOSE_MAX)
                w->deferred_close[w->n_deferred_close++] = fd;
        else
                safe_close(fd);
        return -EBADF;
}

static void close_deferred(Worker *w) {
        for (size_t i = 0; i < w->n_deferred_close; i++)
                safe_close(w->deferred_close[i]);
        w->n_deferred_close = 0;
}

static void caller_handles_forget(Worker *w, CallerHandles *h) {
        h->dir_fd = close_later(w, h->dir_fd);
        h->pidfd = close_later(w, h->pidfd);
        h->mem_fd = close_later(w, h->mem_fd);
        h->status_fd = close_later(w, h->status_fd);
        h->no_pidfd = false;
        h->umask_kept = false;
        h->cwd = mfree(h->cwd);
        h->tid = 0;
        h->used = 0;
}

/* The /proc/PID directory of a caller, kept open by each worker between that caller's calls: opening
 * /proc/PID/... by number costs a lookup each time. The directory fd pins the caller's struct pid, not its
 * number: once that task is gone every openat() beneath it fails, so a recycled pid can never reach the
 * handles of the process that had the number before. The status file (for the umask of creates) is kept
 * too and read again from offset 0, which makes procfs generate it anew: the umask changes untrapped.
 *
 * Where the kernel has thread pidfds, the caller's /proc/TID/mem is kept as well, with a pidfd of the
 * same task. A notification received comes from a task that is alive and holds its number (a task that
 * dies takes its pending notification with it), so a kept pidfd that still shows its task alive after the
 * receipt shows that the caller is that task: no open and no id check per call. Kept memory is used only
 * for calls the supervisor performs itself on what it read and checked (files), never for the calls the
 * kernel continues and reads again (exec, connect): /proc/PID/mem pins the memory the task had when it was
 * opened, and an exec replaces it. Every exec the gate continues bumps exec_epoch, which retires the kept
 * memory of every caller; one opened in the instant between the bump and the exec itself reads an
 * address space nobody uses any more (EOF: read again from a fresh handle), or one still shared with a
 * CLONE_VM process, whose path the supervisor then checks and acts on consistently. */
static CallerHandles *caller_handles(Worker *w, pid_t tid, bool *ret_cached) {
        CallerHandles *h = NULL;
        int fd;

        for (size_t i = 0; i < GATE_CALLER_CACHE_MAX; i++) {
                if (w->callers[i].dir_fd >= 0 && w->callers[i].tid == tid) {
                        h = &w->callers[i];
                        h->used = ++w->clock;
                        *ret_cached = true;
                        return h;
                }
                if (!h || w->callers[i].used < h->used)
                        h = &w->callers[i];     /* the least recently used, for a new one */
        }
        fd = open_proc(tid, "", O_PATH | O_DIRECTORY);
        if (fd < 0)
                return NULL;
        caller_handles_forget(w, h);
        h->tid = tid;
        h->dir_fd = fd;
        h->used = ++w->clock;
        *ret_cached = false;
        return h;
}

/* Whether the task of a kept pidfd has not exited: readable means gone. */
static bool caller_alive(const CallerHandles *h) {
        struct pollfd p = { .fd = h->pidfd, .events = POLLIN };
        int r;

        do
                r = poll(&p, 1, 0);
        while (r < 0 && errno == EINTR);
        return r == 0;
}

static int caller_openat(Request *q, const char *what, int flags) {
        int fd = openat(q->caller->dir_fd, what, flags | O_CLOEXEC);

        return fd < 0 ? -errno : fd;
}

static int open_caller_fd(Request *q, int fd) {
        char what[32];

        if (fd < 0)
                return -EBADF;
        (void) snprintf(what, sizeof(what), "fd/%i", fd);
        return caller_openat(q, what, O_PATH);
}

static int read_umask(Request *q, mode_t *ret) {
        CallerHandles *h = q->caller;
        char buf[4096];
        const char *p;
        ssize_t n;
        unsigned m;

        if (h->status_fd < 0) {
                h->status_fd = caller_openat(q, "status", O_RDONLY);
                if (h->status_fd < 0)
                        return h->status_fd;
        }
        n = read_snapshot(h->status_fd, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        p = strstr(buf, "\nUmask:");
        if (!p || sscanf(p + 7, "%o", &m) != 1)
                return -EIO;
        *ret = (mode_t) (m & 0777);
        return 0;
}

/* ---- umask and cwd changes ----
 * Reading a caller's umask costs a /proc/PID/status, which procfs generates anew with all its fields: more
 * than the rest of a create; reading its cwd costs a readlink of /proc/PID/cwd, with procfs's access
 * check: more than the rest of a relative open. A caller's mask and cwd change only by its own umask(2),
 * chdir(2) and fchdir(2) (the filter refuses chroot and new namespaces), which are trapped and
 * continued unchecked, so what was read stays true until one of them is continued: every one bumps
 * fs_epoch first, which retires everything kept, and the caller is listed as changing until its call has
 * surely returned. A value is kept only when it was read while nothing was changing and the epoch held
 * across the read; it is used only for a caller whose pidfd shows the same task alive. A directory can
 * also move without any call of the caller's (a rename by anyone): a kept cwd is used only while its path
 * still names the same directory. */

static void fs_change_drop_locked(GateSupervisor *s, size_t i) {
        unsigned n = atomic_load(&s->fs_changes);

        safe_close(s->fs_changing[i].pidfd);
        s->fs_changing[i] = s->fs_changing[n - 1];
        atomic_store(&s->fs_changes, n - 1);
}

/* A trapped call from tid: any umask it made before has returned. */
static void fs_change_seen(GateSupervisor *s, pid_t tid) {
        if (atomic_load(&s->fs_changes) == 0)
                return;
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < atomic_load(&s->fs_changes);)
                if (s->fs_changing[i].tid == tid)
                        fs_change_drop_locked(s, i);
                else
                        i++;
        pthread_mutex_unlock(&s->lock);
}

/* A umask, chdir or fchdir call from tid, about to be continued. */
static void fs_change_begin(GateSupervisor *s, pid_t tid) {
        int pidfd = (int) syscall(SYS_pidfd_open, tid, PIDFD_THREAD), error = pidfd < 0 ? errno : 0;
        unsigned n;

        pthread_mutex_lock(&s->lock);
        n = atomic_load(&s->fs_changes);
        if (error == ESRCH)
                ;       /* gone before its call was continued: nothing of it can change any more */
        else if (pidfd < 0 || n >= GATE_FS_CHANGES_MAX) {
                /* Without a way to see it end, nothing is kept any more: slower, never wrong. */
                if (!atomic_exchange(&s->fs_uncached, true))
                        log_debug("Cannot follow the umask or cwd change of %i, keeping neither from now on.", tid);
                safe_close(pidfd);
        } else {
                s->fs_changing[n] = (FsChange) { .tid = tid, .pidfd = pidfd };
                atomic_store(&s->fs_changes, n + 1);
        }
        atomic_fetch_add(&s->fs_epoch, 1);
        pthread_mutex_unlock(&s->lock);
}

/* Whether some umask, chdir or fchdir call may still be under way; forgets callers that have exited. */
static bool fs_changing_now(GateSupervisor *s) {
        bool changing;

        if (atomic_load(&s->fs_uncached))
                return true;
        if (atomic_load(&s->fs_changes) == 0)
                return false;
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < atomic_load(&s->fs_changes);) {
                struct pollfd p = { .fd = s->fs_changing[i].pidfd, .events = POLLIN };

                if (poll(&p, 1, 0) > 0)
                        fs_change_drop_locked(s, i);
                else
                        i++;
        }
        changing = atomic_load(&s->fs_changes) > 0;
        pthread_mutex_unlock(&s->lock);
        return changing;
}

/* The caller's umask: kept, or read (and kept when nothing could change it meanwhile). */
static int caller_umask(Request *q, mode_t *ret) {
        CallerHandles *h = q->caller;
        uint64_t epoch = atomic_load(&q->s->fs_epoch);
        bool settled = !fs_changing_now(q->s);
        int r;

        if (settled && h->umask_kept && h->umask_epoch == epoch && h->pidfd >= 0) {
                *ret = h->umask;
                return 0;
        }
        r = read_umask(q, ret);
        if (r < 0)
                return r;
        if (settled && h->pidfd >= 0 && atomic_load(&q->s->fs_epoch) == epoch) {
                h->umask = *ret;
                h->umask_epoch = epoch;
                h->umask_kept = true;
        }
        return 0;
}

static bool needs_umask(const GateCall *c) {
        return c->action == GATE_ACTION_MKDIR || c->action == GATE_ACTION_MKNOD || c->action == GATE_ACTION_BIND ||
               (c->action == GATE_ACTION_OPEN && ((c->flags & O_CREAT) || (c->flags & O_TMPFILE) == O_TMPFILE));
}

static bool uses_at_empty_path(const GateCall *c) {
        return c->sys == GATE_SYS_EXECVEAT || c->sys == GATE_SYS_LINKAT || c->sys == GATE_SYS_FCHOWNAT ||
               c->sys == GATE_SYS_FCHMODAT2;
}

static bool keeps_memory(const GateCall *c) {
        return c->action != GATE_ACTION_EXEC && c->action != GATE_ACTION_CONNECT;
}

/* Everything of /proc/PID the request needs is opened before the notification id is checked (again):
 * once the id is still valid, these are the caller's and not a recycled pid's. A caller seen before
 * whose pidfd shows it alive needs neither (see caller_handles()). */
static int open_caller(Request *q) {
        pid_t pid = (pid_t) q->n->pid;
        uint64_t epoch = 0;
        bool cached;
        int r;

        for (;;) {
                q->caller = caller_handles(q->w, pid, &cached);
                if (!q->caller)
                        return -errno;
                if (cached && q->caller->pidfd >= 0) {
                        if (!caller_alive(q->caller)) {
                                caller_handles_forget(q->w, q->caller);
                                continue;       /* a new task with the number of one we knew */
                        }
                        if (keeps_memory(&q->call) && q->caller->mem_fd >= 0 &&
                            q->caller->mem_epoch == atomic_load(&q->s->exec_epoch)) {
                                q->mem_fd = q->caller->mem_fd;
                                q->mem_kept = true;
                                break;
                        }
                }
                epoch = atomic_load(&q->s->exec_epoch);
                q->mem_fd = caller_openat(q, "mem", O_RDONLY);
                if (q->mem_fd >= 0)
                        break;
                if (!cached || (q->mem_fd != -ENOENT && q->mem_fd != -ESRCH))
                        return q->mem_fd;
                /* The process we kept the handles of is gone: this caller merely got its number. */
                caller_handles_forget(q->w, q->caller);
        }
        if (needs_umask(&q->call)) {
                r = caller_umask(q, &q->umask);
                if (r < 0)
                        return r;
        }
        q->rctx = (GateResolveContext) { .root_fd = q->s->root_fd, .tid = pid, .supervisor = getpid() };
        if (q->mem_kept)
                return 0;

        /* Only kept memory needs the pidfd, and an exec keeps none: the process an exec makes is often
         * done after it. Opened by number before the id check below, which makes it this caller's. */
        if (keeps_memory(&q->call) && q->caller->pidfd < 0 && !q->caller->no_pidfd) {
                q->caller->pidfd = (int) syscall(SYS_pidfd_open, pid, PIDFD_THREAD);
                if (q->caller->pidfd < 0) {
                        log_debug_errno(errno, "No thread pidfd for %i, its handles are opened per call: %m", pid);
                        q->caller->no_pidfd = true;
                }
        }
        if (!notif_id_valid(q->s->notify_fd, q->n->id))
                return -ESRCH;
        if (keeps_memory(&q->call) && q->caller->pidfd >= 0) {
                close_later(q->w, q->caller->mem_fd);
                q->caller->mem_fd = q->mem_fd;
                q->caller->mem_epoch = epoch;
                q->mem_kept = true;
        }
        return 0;
}

/* Kept memory that reads as gone (the address space an exec left behind): a fresh handle, checked like
 * any. Returns whether there is one to read again from. */
static bool caller_memory_refresh(Request *q) {
        int fd;

        if (!q->mem_kept)
                return false;
        q->caller->mem_fd = close_later(q->w, q->caller->mem_fd);
        q->mem_fd = -EBADF;
        q->mem_kept = false;
        fd = caller_openat(q, "mem", O_RDONLY);
        if (fd < 0)
                return false;
        if (!notif_id_valid(q->s->notify_fd, q->n->id)) {
                safe_close(fd);
                return false;
        }
        q->mem_fd = fd;
        return true;
}

/* The caller's cwd (dirfd AT_FDCWD) or its dirfd, opened when a relative path needs it, and the id
 * checked again. -EBADF is the caller's own error. */
static int caller_dir(Request *q, int dirfd, int *cache) {
        if (*cache >= 0)
                return *cache;
        if (dirfd == AT_FDCWD)
                *cache = caller_openat(q, "cwd", O_PATH | O_DIRECTORY);
        else
                *cache = open_caller_fd(q, dirfd);
        if (*cache < 0)
                return *cache == -ENOENT ? -EBADF : *cache;
        if (!notif_id_valid(q->s->notify_fd, q->n->id))
                return -ESRCH;
        return *cache;
}

/* What the caller's cwd (AT_FDCWD) or dirfd is a path of, read from /proc/TID/cwd or /proc/TID/fd/N
 * directly: one syscall instead of an open, a readlink and a close. Not always a path: "pipe:[N]", or one
 * ending in " (deleted)"; the caller decides what it accepts. */
static int caller_dir_path(Request *q, int dirfd, char **ret) {
        char what[32] = "cwd";

        if (dirfd != AT_FDCWD) {
                if (dirfd < 0)
                        return -EBADF;
                (void) snprintf(what, sizeof(what), "fd/%i", dirfd);
        }
        return readlinkat_malloc(q->caller->dir_fd, what, ret);
}

static bool statx_same_dir(const struct statx *a, dev_t dev, ino_t ino) {
        return S_ISDIR(a->stx_mode) && a->stx_ino == ino && makedev(a->stx_dev_major, a->stx_dev_minor) == dev;
}

/* The path of the caller's cwd: kept (see "umask and cwd changes"), or read from /proc/TID/cwd and kept
 * when nothing could have changed it meanwhile. -ENOENT when the cwd is not on a path (deleted, or out of
 * our root). */
static int caller_cwd_kept(Request *q, char **ret) {
        CallerHandles *h = q->caller;
        uint64_t epoch = atomic_load(&q->s->fs_epoch);
        bool settled = !fs_changing_now(q->s);
        _cleanup_free_ char *path = NULL;
        struct statx at, cwd;
        int r;

        if (settled && h->cwd && h->cwd_epoch == epoch && h->pidfd >= 0 &&
            statx(AT_FDCWD, h->cwd, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO, &at) == 0 &&
            statx_same_dir(&at, h->cwd_dev, h->cwd_ino)) {
                path = strdup(h->cwd);
                if (!path)
                        return -ENOMEM;
                *ret = TAKE_PTR(path);
                return 0;
        }
        r = caller_dir_path(q, AT_FDCWD, &path);
        if (r < 0)
                return r;
        if (path[0] != '/' || endswith(path, " (deleted)"))
                return -ENOENT;
        if (settled && h->pidfd >= 0 &&
            statx(h->dir_fd, "cwd", 0, STATX_TYPE | STATX_INO, &cwd) == 0 &&
            statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO, &at) == 0 &&
            statx_same_dir(&at, makedev(cwd.stx_dev_major, cwd.stx_dev_minor), cwd.stx_ino) &&
            atomic_load(&q->s->fs_epoch) == epoch) {
                free(h->cwd);
                h->cwd = strdup(path);
                h->cwd_epoch = epoch;
                h->cwd_dev = makedev(cwd.stx_dev_major, cwd.stx_dev_minor);
                h->cwd_ino = cwd.stx_ino;
        }
        *ret = TAKE_PTR(path);
        return 0;
}

/* The caller's cwd as a path: from its fd when that was opened (a relative path was resolved from it),
 * otherwise as kept or read from /proc/TID/cwd. */
static int caller_cwd_path(Request *q, char **ret) {
        if (q->cwd_fd >= 0)
                return gate_fd_path(q->cwd_fd, ret);
        return caller_cwd_kept(q, ret);
}

static void request_done(Request *q) {
        if (q->mem_kept)
                q->mem_fd = -EBADF;
        q->mem_fd = safe_close(q->mem_fd);
        q->cwd_fd = safe_close(q->cwd_fd);
        q->dir_fd = safe_close(q->dir_fd);
        q->dir2_fd = safe_close(q->dir2_fd);
        q->fd = safe_close(q->fd);
        q->pidfd = safe_close(q->pidfd);
        q->target = mfree(q->target);
}

/* ---- results ---- */

static void result_errno(Request *q, int error) {
        q->result = RESULT_ERRNO;
        q->error = error < 0 ? -error : error;
}

static void result_fd(Request *q, int fd, bool cloexec) {
        q->result = RESULT_FD;
        q->fd = fd;
        q->fd_cloexec = cloexec;
}

static void result_value(Request *q, int64_t val) {
        q->result = RESULT_VALUE;
        q->val = val;
}

/* A request that cannot be read or resolved: denied, and recorded as such. */
static void fail_closed(Request *q, int r, const char *why) {
        q->verdict.decision = DECISION_DENY;
        (void) snprintf(q->verdict.rule_id, sizeof(q->verdict.rule_id), "%s", "error");
        (void) snprintf(q->reason, sizeof(q->reason), "%s: %s", why, strerror(r < 0 ? -r : r));
        q->verdict.message = q->reason;
        q->event = "local";
        result_errno(q, GATE_DENY_ERRNO);
}

static int decision_rank(Decision d) {
        return d == DECISION_DENY ? 2 : d == DECISION_APPROVE ? 1 : 0;
}

/* Keeps the stricter of two verdicts; on a tie the first. */
static void verdict_merge(GateVerdict *acc, const GateVerdict *v, bool *first) {
        bool by_names = (!*first && acc->by_operand_names) || v->by_operand_names;

        if (*first || decision_rank(v->decision) > decision_rank(acc->decision))
                *acc = *v;
        acc->by_operand_names = by_names;
        *first = false;
}

static bool recent_deny_find(GateSupervisor *s, pid_t pid, const char *key, char actor[static 64]) {
        uint64_t now = now_ns(CLOCK_MONOTONIC);
        bool found = false;

        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < GATE_RECENT_DENIES_MAX; i++) {
                RecentDeny *d = &s->recent[i];

                if (d->cache_key && d->pid == pid && d->until_ns > now && streq(d->cache_key, key)) {
                        memcpy(actor, d->actor, 64);
                        found = true;
                        break;
                }
        }
        pthread_mutex_unlock(&s->lock);
        return found;
}

static void recent_deny_add(GateSupervisor *s, pid_t pid, const char *key, const char *actor) {
        RecentDeny *d;

        pthread_mutex_lock(&s->lock);
        d = &s->recent[s->recent_next++ % GATE_RECENT_DENIES_MAX];
        free(d->cache_key);
        d->cache_key = strdup(key);
        d->pid = pid;
        d->until_ns = now_ns(CLOCK_MONOTONIC) + GATE_RECENT_DENY_NS;
        (void) snprintf(d->actor, sizeof(d->actor), "%s", actor);
        pthread_mutex_unlock(&s->lock);
}

/* Asks the host for "approve" verdicts; afterwards q->verdict.decision is allow or deny. */
static void settle(Request *q, const char *cache_key) {
        GateSupervisor *s = q->s;
        pid_t pid = (pid_t) q->n->pid;
        GateApproval a;
        int r;

        q->event = "local";
        if (q->verdict.decision != DECISION_APPROVE) {
                q->decided_ns = now_ns(CLOCK_MONOTONIC);
                return;
        }

        q->event = "approval";
        if (cache_key && recent_deny_find(s, pid, cache_key, q->actor)) {
                q->verdict.decision = DECISION_DENY;
                (void) snprintf(q->reason, sizeof(q->reason), "%s", "denied-moments-ago");
                return;
        }
        if (atomic_fetch_add(&s->pending_approvals, 1) >= GATE_APPROVALS_PENDING_MAX) {
                atomic_fetch_sub(&s->pending_approvals, 1);
                q->verdict.decision = DECISION_DENY;
                (void) snprintf(q->actor, sizeof(q->actor), "%s", "supervisor");
                (void) snprintf(q->reason, sizeof(q->reason), "%s", "too-many-pending");
                return;
        }
        /* The gate's socket is root's; the agent's credentials come back before anything else is done. */
        r = thread_become_root();
        if (r < 0)
                fatal_credentials(r);
        gate_client_request_approval(s->config->client, q->kind, gate_syscall_name(q->call.sys), q->op,
                                     q->target, q->verdict.rule_id, q->verdict.message, cache_key, pid, &a);
        r = thread_become_agent(s->config);
        if (r < 0)
                fatal_credentials(r);
        atomic_fetch_sub(&s->pending_approvals, 1);

        q->verdict.decision = a.allow ? DECISION_ALLOW : DECISION_DENY;
        (void) snprintf(q->actor, sizeof(q->actor), "%s", a.actor);
        (void) snprintf(q->reason, sizeof(q->reason), "%s", a.reason);
        /* A human's no is remembered for the moment; a failure to ask (the gate down) is not. */
        if (!a.allow && cache_key && !streq(a.actor, "supervisor"))
                recent_deny_add(s, pid, cache_key, a.actor);
}

/* ---- connect ---- */

/* "@name" for an abstract address; bytes that are not printable as \xHH, so a NUL cannot hide a suffix. */
static char *abstract_name(const char *p, size_t n) {
        char *r = malloc(n * 4 + 2), *t = r;

        if (!r)
                return NULL;
        *t++ = '@';
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char) p[i];

                if (ch < 0x20 || ch >= 0x7f || ch == '\\')
                        t += sprintf(t, "\\x%02x", ch);
                else
                        *t++ = (char) ch;
        }
        *t = 0;
        return r;
}

/* The real ids of this worker thread: the agent's while it duplicates one of the agent's fds
 * (pidfd_getfd() checks ptrace access with the real ids, which are otherwise root's), root's again after.
 * The saved ids stay 0 throughout, so the thread keeps its way back and its permitted capabilities. */
static int thread_set_real_ids(uid_t uid, gid_t gid) {
        if (syscall(SYS_setresgid, gid, (gid_t) -1, (gid_t) -1) < 0)
                return -errno;
        if (syscall(SYS_setresuid, uid, (uid_t) -1, (uid_t) -1) < 0)
                return -errno;
        return 0;
}

/* A pidfd of the calling thread, opened once per call and before the notification id is checked again
 * (so it is this caller's). */
static int caller_pidfd(Request *q) {
        int fd;

        if (q->pidfd >= 0)
                return q->pidfd;
        fd = (int) syscall(SYS_pidfd_open, (pid_t) q->n->pid, PIDFD_THREAD);
        if (fd < 0)
                return -errno;
        if (!notif_id_valid(q->s->notify_fd, q->n->id)) {
                safe_close(fd);
                return -ESRCH;
        }
        q->pidfd = fd;
        return fd;
}

/* A duplicate of the caller's fd (the socket of a connect, an fd it sends), from its fd table:
 * pidfd_getfd() on a pidfd of the calling thread (caller_pidfd()). */
static int caller_take_fd(Request *q, int fd) {
        int pidfd, r, got, err;

        if (fd < 0)
                return -EBADF;
        pidfd = caller_pidfd(q);
        if (pidfd < 0)
                return pidfd;
        r = thread_set_real_ids(q->s->config->uid, q->s->config->gid);
        if (r < 0)
                fatal_credentials(r);
        got = (int) syscall(SYS_pidfd_getfd, pidfd, fd, 0);
        err = errno;
        r = thread_set_real_ids(0, 0);
        if (r < 0)
                fatal_credentials(r);
        return got < 0 ? -err : got;
}

/* The first steps of a connect or bind performed here: the caller's socket (caller_take_fd()), its
 * domain, and the address read once from the caller's memory into ss. On failure the call is answered
 * here and a negative value returned. */
static int caller_socket_call(Request *q, struct sockaddr_storage *ss, int *ret_sock, int *ret_domain) {
        size_t len = (size_t) q->call.size;
        _cleanup_close_ int sock = -EBADF;
        socklen_t dlen = sizeof(int);
        int domain = -1;

        /* What the kernel's copy of the address would refuse. */
        if (len > sizeof(*ss))
                return result_errno(q, EINVAL), -EINVAL;
        sock = caller_take_fd(q, q->call.dirfd);
        if (sock == -EBADF)
                return result_errno(q, EBADF), -EBADF;
        if (sock == -ESRCH)
                return fail_closed(q, sock, "the caller went away"), -ESRCH;
        if (sock < 0)
                return fail_closed(q, sock, "cannot reach the caller's socket"), sock;
        if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) < 0) {
                int e = errno;
                return result_errno(q, e), -e;
        }
        if (len > 0 && gate_mem_read(q->mem_fd, q->call.path, ss, len) < 0)
                return result_errno(q, EFAULT), -EFAULT;
        *ret_sock = TAKE_FD(sock);
        *ret_domain = domain;
        return 0;
}

/* Decides an AF_UNIX address read once (ss, len bytes) as a connect() to it: the path normalised
 * against the caller's cwd, the socket the kernel would reach resolved (symlinks followed) and both
 * names checked, an abstract name as "@name". Returns 0 when the call may go on, with ret_res pinning
 * a pathname socket (its fd >= 0) that the call must reach through /proc/self/fd/N, so a symlink or a
 * directory swapped on disk afterwards changes nothing; negative when the call was answered here
 * (refused, or the kernel's own error). connect() and the sends with an address decide the same way. */
static int unix_address_decide(Request *q, const struct sockaddr_storage *ss, size_t len, GateResolved *ret_res) {
        const GatePolicy *policy = q->s->config->policy;
        const struct sockaddr_un *sa = (const struct sockaddr_un *) ss;
        _cleanup_free_ char *given = NULL, *key = NULL;
        GateResolved res = GATE_RESOLVED_NULL;
        GateVerdict v;
        bool first = true;
        int r;

        q->kind = GATE_KIND_CONNECT;
        q->target = mfree(q->target);
        size_t plen = len - offsetof(struct sockaddr_un, sun_path);
        if (sa->sun_path[0] == 0)
                given = abstract_name(sa->sun_path + 1, plen - 1);
        else {
                _cleanup_free_ char *joined = NULL, *cwd = NULL;
                char path[sizeof(sa->sun_path) + 1] = {};

                memcpy(path, sa->sun_path, MIN(plen, sizeof(sa->sun_path)));
                if (path[0] != '/') {
                        r = caller_dir(q, AT_FDCWD, &q->cwd_fd);
                        if (r == -ESRCH)
                                return fail_closed(q, r, "the caller went away"), r;
                        if (r < 0)
                                return fail_closed(q, r, "cannot open the caller's working directory"), r;
                        r = gate_fd_path(q->cwd_fd, &cwd);
                        if (r < 0)
                                return fail_closed(q, r, "cannot read the caller's working directory"), r;
                        if (asprintf(&joined, "%s/%s", cwd, path) < 0)
                                return fail_closed(q, -ENOMEM, "out of memory"), -ENOMEM;
                }
                given = path_clean(joined ?: path);
                /* The socket the kernel would reach: symlinks resolved like connect() does. */
                r = gate_resolve(&q->rctx, path[0] == '/' ? q->s->root_fd : q->cwd_fd, path, GATE_RESOLVE_FOLLOW, &res);
                if (r < 0 || res.fd < 0) {
                        /* Nothing to connect to: the kernel's own error (ENOENT, ENOTDIR, EACCES...), unless
                         * the name itself is denied, which is said first. */
                        gate_resolved_done(&res);
                        if (!given)
                                return fail_closed(q, -ENOMEM, "out of memory"), -ENOMEM;
                        gate_policy_check_connect(policy, given, &v);
                        if (v.decision == DECISION_DENY) {
                                q->verdict = v;
                                q->target = TAKE_PTR(given);
                                q->event = "local";
                                return result_errno(q, GATE_DENY_ERRNO), -GATE_DENY_ERRNO;
                        }
                        r = r < 0 ? r : -ENOENT;
                        return result_errno(q, r), r;
                }
                if (res.path && !streq_ptr(res.path, given)) {
                        gate_policy_check_connect(policy, res.path, &v);
                        verdict_merge(&q->verdict, &v, &first);
                }
        }
        if (!given) {
                gate_resolved_done(&res);
                return fail_closed(q, -ENOMEM, "out of memory"), -ENOMEM;
        }
        gate_policy_check_connect(policy, given, &v);
        verdict_merge(&q->verdict, &v, &first);
        q->target = TAKE_PTR(given);

        key = gate_cache_key_connect(q->target);
        settle(q, key);
        if (q->verdict.decision != DECISION_ALLOW) {
                gate_resolved_done(&res);
                return result_errno(q, GATE_DENY_ERRNO), -GATE_DENY_ERRNO;
        }
        q->decided_ns = now_ns(CLOCK_MONOTONIC);
        *ret_res = res;
        return 0;
}

/* Whether an address is one unix_address_decide() decides: an AF_UNIX address with a name on an
 * AF_UNIX socket. Anything else (TCP and UDP are the egress gateway's, an unnamed or malformed
 * address the kernel's) is performed as given, from the bytes read once. */
static bool unix_address_decided(int domain, const struct sockaddr_storage *ss, size_t len) {
        return domain == AF_UNIX && len > offsetof(struct sockaddr_un, sun_path) &&
               len <= sizeof(struct sockaddr_un) && ss->ss_family == AF_UNIX;
}

/* The address a decided pathname socket is reached by: the object the gate resolved. */
static socklen_t unix_address_via(const GateResolved *res, struct sockaddr_un *ret) {
        *ret = (struct sockaddr_un) { .sun_family = AF_UNIX };
        (void) snprintf(ret->sun_path, sizeof(ret->sun_path), "/proc/self/fd/%i", res->fd);
        return (socklen_t) SUN_LEN(ret);
}

/* connect() is performed here, on the caller's own socket (caller_take_fd()) with the address this
 * supervisor read and checked, once: the caller's memory and fd table, which a sibling thread can
 * change at any time, are never read again by the kernel. Whatever the family: the family of the
 * address in memory can be flipped, the socket's cannot, and a socket number can be swapped for another
 * (dup2) between a check and the kernel's own connect. A pathname socket is reached through the object
 * the gate resolved and checked (/proc/self/fd/N of its O_PATH fd), so a symlink or directory swapped on
 * disk afterwards changes nothing either. The peer sees this supervisor's pid, with the agent's uid and
 * gid (the worker's effective ids). */
static void handle_connect(Request *q) {
        struct sockaddr_storage ss = {};
        size_t len = (size_t) q->call.size;
        _cleanup_close_ int sock = -EBADF;
        GateResolved res = GATE_RESOLVED_NULL;
        int domain = -1, r;

        q->kind = GATE_KIND_CONNECT;
        if (caller_socket_call(q, &ss, &sock, &domain) < 0)
                return;

        if (!unix_address_decided(domain, &ss, len)) {
                r = connect(sock, len > 0 ? (struct sockaddr *) &ss : NULL, (socklen_t) len);
                return r < 0 ? result_errno(q, errno) : result_value(q, 0);
        }
        if (unix_address_decide(q, &ss, len, &res) < 0)
                return;
        if (res.fd >= 0) {
                struct sockaddr_un via;
                socklen_t via_len = unix_address_via(&res, &via);

                r = connect(sock, (struct sockaddr *) &via, via_len);
        } else
                r = connect(sock, (struct sockaddr *) &ss, (socklen_t) len);
        gate_resolved_done(&res);
        if (r < 0)
                return result_errno(q, errno);
        result_value(q, 0);
}

/* ---- send ---- */

/* sendto() with an address, sendmsg() and sendmmsg() are performed here too, on the caller's socket
 * (caller_take_fd()) with what was read once from its memory (gate-send.h): the msghdr, the address,
 * the data, the control messages. An AF_UNIX address is decided as a connect() to it
 * (unix_address_decide()); anything else is sent as given. What the caller keeps of the kernel's own
 * send: its flags (the supervisor adds MSG_NOSIGNAL and raises SIGPIPE in the calling thread itself),
 * blocking or not as the socket's open file says (shared with the duplicate), SO_SNDTIMEO, the implicit
 * credentials a SO_PASSCRED receiver sees (the agent's uid and gid: the worker's real ids are the
 * agent's for the send, the kernel takes those), and sendmmsg()'s msg_len written back. */

#define GATE_SEND_RECHECK_MS 100        /* a waiting send looks this often whether its caller is still there */

/* A blocking send that cannot go waits in its worker, which may be for ever (a peer that never reads).
 * Counted in GATE_WORKERS_MAX, enough of them would hold every worker and no other trapped call of any
 * of the agent's processes would be answered. So a waiting send's worker is not counted there while it
 * waits (a standby is started if there is none), and at most GATE_SEND_WAITS_MAX sends wait at once:
 * beyond, a blocking send that cannot go at once is answered EAGAIN, as if its SO_SNDTIMEO had passed.
 * Each holds its message (at most GATE_SEND_BYTES_MAX) while it waits. */
#define GATE_SEND_WAITS_MAX 128U

static void spawn_worker_locked(GateSupervisor *s, bool receiver);

static bool send_wait_begin(GateSupervisor *s) {
        bool ok;

        pthread_mutex_lock(&s->lock);
        ok = s->send_waits < GATE_SEND_WAITS_MAX;
        if (ok) {
                s->send_waits++;
                if (s->standbys == 0)
                        spawn_worker_locked(s, false);
        }
        pthread_mutex_unlock(&s->lock);
        return ok;
}

static void send_wait_end(GateSupervisor *s) {
        pthread_mutex_lock(&s->lock);
        s->send_waits--;
        pthread_mutex_unlock(&s->lock);
}

/* What a send needs of its socket, asked when needed: the family only for an address, the blocking mode
 * and SO_SNDTIMEO only once a try could not go at once. */
typedef struct SendTarget {
        int sock;
        int domain;                     /* -1: not asked yet */
        bool stream;                    /* SOCK_STREAM: the data may go in parts */
        bool mode_known;
        bool wait;                      /* a blocking send: waits here until it can go */
        uint64_t deadline_ns;           /* SO_SNDTIMEO; 0: none */
        pid_t tgid;                     /* the caller's, read when a control message needs it */
} SendTarget;

/* Whether the send may wait (the socket's open file not O_NONBLOCK, no MSG_DONTWAIT), and until when
 * (SO_SNDTIMEO, counted from the first try that could not go). */
static int send_mode(Request *q, SendTarget *t) {
        struct timeval tv = {};
        socklen_t olen = sizeof(tv);
        int fl;

        if (t->mode_known)
                return 0;
        fl = fcntl(t->sock, F_GETFL);
        if (fl < 0 || getsockopt(t->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, &olen) < 0)
                return -errno;
        t->wait = !(fl & O_NONBLOCK) && !(q->call.flags & MSG_DONTWAIT);
        if (tv.tv_sec > 0 || tv.tv_usec > 0)
                t->deadline_ns = now_ns(CLOCK_MONOTONIC) + (uint64_t) tv.tv_sec * UINT64_C(1000000000) +
                                 (uint64_t) tv.tv_usec * UINT64_C(1000);
        t->mode_known = true;
        return 0;
}

/* The caller's status file, NUL-terminated in buf. */
static int caller_status(Request *q, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;

        fd = caller_openat(q, "status", O_RDONLY);
        if (fd < 0)
                return fd;
        n = loop_pread(fd, buf, size - 1, 0);
        if (n < 0)
                return (int) n;
        buf[n] = 0;
        return 0;
}

/* The caller's thread group id (what an explicit SCM_CREDENTIALS must carry), from its status file. */
static int caller_tgid(Request *q, pid_t *ret) {
        char buf[4096];
        const char *p;
        int tgid, r;

        r = caller_status(q, buf, sizeof(buf));
        if (r < 0)
                return r;
        p = strstr(buf, "\nTgid:");
        if (!p || sscanf(p + strlen("\nTgid:"), "%i", &tgid) != 1 || tgid <= 0)
                return -EIO;
        if (!notif_id_valid(q->s->notify_fd, q->n->id))
                return -ESRCH;
        *ret = (pid_t) tgid;
        return 0;
}

/* What the kernel's own blocking send answers when a signal comes (sock_intr_errno()): ERESTARTSYS, which
 * the caller's return to user space turns into a restart (no handler, or one with SA_RESTART) or EINTR
 * (a handler without), or EINTR outright when the socket has a SO_SNDTIMEO. ERESTARTSYS is the kernel's
 * own, never seen by a caller; a seccomp answer may carry it like any error. */
#define GATE_ERESTARTSYS 512

static uint64_t status_mask(const char *status, const char *field) {
        const char *p = strstr(status, field);
        unsigned long long v;

        return p && sscanf(p + strlen(field), " %llx", &v) == 1 ? (uint64_t) v : 0;
}

/* Whether the calling thread has a signal to take: pending for it or its process, neither blocked nor
 * ignored. Read from its status file; false when it cannot be read (the wait goes on, as before). */
static bool caller_signal_pending(Request *q) {
        char buf[4096];

        if (caller_status(q, buf, sizeof(buf)) < 0)
                return false;
        return ((status_mask(buf, "\nSigPnd:") | status_mask(buf, "\nShdPnd:")) &
                ~status_mask(buf, "\nSigBlk:") & ~status_mask(buf, "\nSigIgn:")) != 0;
}

static int send_take_fd(void *userdata, int fd) {
        Request *q = userdata;
        int r = caller_take_fd(q, fd);

        /* An fd the caller does not have is its own EBADF; anything else fails closed. */
        return r == -EBADF || r >= 0 ? r : -EPERM;
}

/* Waits until a blocking send may be tried again: the socket says it is writable (a stream, a connected
 * datagram socket), or, where it says so and the send still cannot go (an unconnected datagram socket
 * to a full receiver: poll() cannot know the receiver), after a nap that doubles up to
 * GATE_SEND_RECHECK_MS. The caller that goes away (its pidfd readable, its notification gone) ends
 * the wait: no worker waits forever for a caller that is not there. -ESRCH then, -EAGAIN past the
 * socket's SO_SNDTIMEO, and a signal for the caller ends it too (caller_signal_pending()). */
static int send_wait(Request *q, const SendTarget *t, unsigned *nap_ms, bool *said_writable) {
        struct pollfd p[2];
        int timeout = *nap_ms > 0 ? (int) *nap_ms : (int) GATE_SEND_RECHECK_MS, pidfd, r;

        if (!notif_id_valid(q->s->notify_fd, q->n->id))
                return -ESRCH;
        /* The caller's wait is killable only (WAIT_KILLABLE_RECV): a signal for it would wait for the send,
         * which may be for ever. Answered as the kernel's send it interrupts. */
        if (caller_signal_pending(q))
                return t->deadline_ns > 0 ? -EINTR : -GATE_ERESTARTSYS;
        if (t->deadline_ns > 0) {
                uint64_t now = now_ns(CLOCK_MONOTONIC);

                if (now >= t->deadline_ns)
                        return -EAGAIN;
                timeout = (int) MIN((uint64_t) timeout, (t->deadline_ns - now + 999999) / 1000000);
        }
        pidfd = caller_pidfd(q);
        if (pidfd < 0)
                return pidfd;
        p[0] = (struct pollfd) { .fd = pidfd, .events = POLLIN };
        p[1] = (struct pollfd) { .fd = t->sock, .events = POLLOUT };
        r = poll(p, *nap_ms > 0 ? 1 : 2, timeout);
        if (r < 0 && errno != EINTR)
                return -errno;
        if (r > 0 && p[0].revents)
                return -ESRCH;
        if (*nap_ms > 0)
                *nap_ms = MIN(*nap_ms * 2, GATE_SEND_RECHECK_MS);
        else if (r > 0 && (p[1].revents & POLLOUT)) {
                if (*said_writable)
                        *nap_ms = 1;
                *said_writable = true;
        }
        return 0;
}

/* Sends m as the caller's send would: the whole datagram, or on a blocking stream all of it (the kernel
 * too waits until all is sent), the control messages with the first part. Tries never block the worker
 * (MSG_DONTWAIT); a blocking send waits in send_wait(). The worker's real ids are the agent's for the
 * send alone, not while it waits (real ids let the agent signal the thread). Returns the bytes sent. */
static ssize_t send_try(Request *q, SendTarget *t, GateSendMsg *m, const struct sockaddr *to,
                        socklen_t to_len, int flags, bool *waiting) {
        unsigned nap_ms = 0;
        bool said_writable = false;
        size_t done = 0;

        for (;;) {
                struct iovec iov = { .iov_base = m->data + done, .iov_len = m->len - done };
                struct msghdr h = {
                        .msg_name = (void *) to,
                        .msg_namelen = to ? to_len : 0,
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = done == 0 ? m->control : NULL,
                        .msg_controllen = done == 0 ? m->control_len : 0,
                };
                ssize_t n;
                int err, r;

                r = thread_set_real_ids(q->s->config->uid, q->s->config->gid);
                if (r < 0)
                        fatal_credentials(r);
                n = sendmsg(t->sock, &h, flags | MSG_NOSIGNAL | MSG_DONTWAIT);
                err = errno;
                r = thread_set_real_ids(0, 0);
                if (r < 0)
                        fatal_credentials(r);
                if (n >= 0) {
                        done += (size_t) n;
                        if (!t->stream || done >= m->len)
                                return (ssize_t) done;
                        if (send_mode(q, t) < 0 || !t->wait)
                                return (ssize_t) done;
                        continue;
                }
                if (err == EINTR)
                        continue;
                if (err == EAGAIN) {
                        r = send_mode(q, t);
                        if (r < 0)
                                return done > 0 ? (ssize_t) done : r;
                }
                if (err != EAGAIN || !t->wait)
                        return done > 0 ? (ssize_t) done : -err;
                if (!*waiting) {
                        if (!send_wait_begin(q->s))
                                return done > 0 ? (ssize_t) done : -EAGAIN;
                        *waiting = true;
                }
                r = send_wait(q, t, &nap_ms, &said_writable);
                if (r < 0)
                        return done > 0 ? (ssize_t) done : r;
        }
}

static ssize_t send_perform(Request *q, SendTarget *t, GateSendMsg *m, const struct sockaddr *to,
                            socklen_t to_len, int flags) {
        bool waiting = false;
        ssize_t n = send_try(q, t, m, to, to_len, flags, &waiting);

        if (waiting)
                send_wait_end(q->s);
        return n;
}

/* One message: its control messages checked and its fds taken, its AF_UNIX address decided, then sent.
 * Returns the bytes sent, or a negative errno with the call answered or to be answered with it. */
static ssize_t send_one(Request *q, SendTarget *t, GateSendMsg *m) {
        GateResolved res = GATE_RESOLVED_NULL;
        struct sockaddr_un via;
        const struct sockaddr *to = m->addr_len > 0 ? (const struct sockaddr *) &m->addr : NULL;
        socklen_t to_len = (socklen_t) m->addr_len;
        ssize_t n;
        int r;

        if (m->control_len > 0) {
                if (t->tgid == 0) {
                        r = caller_tgid(q, &t->tgid);
                        if (r < 0)
                                return fail_closed(q, r, "cannot read the caller's thread group"), r;
                }
                r = gate_send_control(m, t->tgid, q->s->config->uid, q->s->config->gid, getpid(),
                                      send_take_fd, q);
                if (r < 0)
                        return r;
        }
        if (to && t->domain < 0) {
                socklen_t olen = sizeof(t->domain);

                if (getsockopt(t->sock, SOL_SOCKET, SO_DOMAIN, &t->domain, &olen) < 0)
                        return -errno;
        }
        /* A stream socket of AF_UNIX never sends to an address (the kernel answers EISCONN or EOPNOTSUPP
         * before it looks at it): nothing to decide, and no record of a connect that cannot happen. */
        if (to && !t->stream && unix_address_decided(t->domain, &m->addr, m->addr_len)) {
                r = unix_address_decide(q, &m->addr, m->addr_len, &res);
                if (r < 0)
                        return r;
                if (res.fd >= 0) {
                        to_len = unix_address_via(&res, &via);
                        to = (const struct sockaddr *) &via;
                }
        }
        /* MSG_ZEROCOPY would have the kernel send from our buffer after the call returned, when it may
         * already hold another caller's data: copied, as without SO_ZEROCOPY. */
        n = send_perform(q, t, m, to, to_len, (int) (q->call.flags & ~(uint64_t) MSG_ZEROCOPY));
        gate_resolved_done(&res);
        /* What the kernel does on a stream whose other end is gone, unless told not to: raised before the
         * answer, so it is pending when the call returns. A kernel that can take a caller's fd (thread
         * pidfds, 6.9) waits killably once the call is received (WAIT_KILLABLE_RECV, 5.19), so the signal
         * does not interrupt the call, which would then be sent again. */
        if (n == -EPIPE && t->stream && !(q->call.flags & MSG_NOSIGNAL) && caller_pidfd(q) >= 0 &&
            syscall(SYS_pidfd_send_signal, q->pidfd, SIGPIPE, NULL, 0) < 0)
                log_debug_errno(errno, "Cannot send SIGPIPE to %i, ignoring: %m", (int) q->n->pid);
        return n;
}

/* Reads the message of a sendto or sendmsg, once; memory kept from before an exec reads as gone and
 * is opened afresh. */
static int send_read(Request *q, const SendTarget *t, const struct msghdr *h, GateSendMsg *ret) {
        for (unsigned i = 0;; i++) {
                int r;

                if (h)
                        r = gate_send_read_msghdr(q->mem_fd, h, t->stream, ret);
                else if (q->call.sys == GATE_SYS_SENDMSG)
                        r = gate_send_read_msg(q->mem_fd, q->call.msg, t->stream, ret);
                else
                        r = gate_send_read_to(q->mem_fd, q->call.data, q->call.data_len, q->call.path,
                                              q->call.size, t->stream, ret);
                if (r != -EFAULT || i > 0 || !caller_memory_refresh(q))
                        return r;
                gate_send_msg_done(ret);
                *ret = (GateSendMsg) GATE_SEND_MSG_NULL;
        }
}

/* sendmmsg(): the mmsghdr array read once, the messages sent in turn until one fails; the number sent
 * is the answer (the error when none was), and each one's msg_len is written back into the caller's
 * memory, as the kernel does. */
static void send_many(Request *q, SendTarget *t) {
        _cleanup_free_ struct mmsghdr *v = NULL;
        _cleanup_close_ int mem = -EBADF;
        size_t vlen = MIN((size_t) q->call.vlen, (size_t) GATE_SENDMMSG_MAX), sent = 0;
        ssize_t n = 0;
        int r;

        if (vlen == 0)
                return result_value(q, 0);
        v = calloc(vlen, sizeof(struct mmsghdr));
        if (!v)
                return fail_closed(q, -ENOMEM, "out of memory");
        r = gate_mem_read(q->mem_fd, q->call.msg, v, vlen * sizeof(struct mmsghdr));
        if (r == -EFAULT && caller_memory_refresh(q))
                r = gate_mem_read(q->mem_fd, q->call.msg, v, vlen * sizeof(struct mmsghdr));
        if (r == -EFAULT) {
                /* The kernel sends the messages before the first it cannot read: those, each read once. */
                size_t k = 0;

                while (k < vlen && gate_mem_read(q->mem_fd, q->call.msg + k * sizeof(struct mmsghdr), &v[k],
                                                 sizeof(struct mmsghdr)) == 0)
                        k++;
                vlen = k;
                r = k > 0 ? 0 : -EFAULT;
        }
        if (r < 0)
                return result_errno(q, r);
        for (; sent < vlen; sent++) {
                GateSendMsg m = GATE_SEND_MSG_NULL;

                r = send_read(q, t, &v[sent].msg_hdr, &m);
                n = r < 0 ? r : send_one(q, t, &m);
                gate_send_msg_done(&m);
                if (n < 0)
                        break;
                v[sent].msg_len = (unsigned) n;
        }
        if (sent == 0) {
                if (q->result == RESULT_ERRNO && q->error != 0)
                        return;         /* answered (refused, or failed closed) */
                return result_errno(q, (int) n);
        }
        /* Written through a handle of its own: the kept one is read-only. A caller that unmapped the
         * array meanwhile gets the count still, as from the kernel. */
        mem = caller_openat(q, "mem", O_WRONLY);
        if (mem >= 0 && notif_id_valid(q->s->notify_fd, q->n->id))
                for (size_t i = 0; i < sent; i++)
                        (void) pwrite(mem, &v[i].msg_len, sizeof(v[i].msg_len),
                                      (off_t) (q->call.msg + i * sizeof(struct mmsghdr) + offsetof(struct mmsghdr, msg_len)));
        result_value(q, (int64_t) sent);
}

static void handle_send(Request *q) {
        SendTarget t = { .sock = -EBADF, .domain = -1 };
        _cleanup_close_ int sock = -EBADF;
        socklen_t olen = sizeof(int);
        int type = -1;

        q->kind = GATE_KIND_CONNECT;
        sock = caller_take_fd(q, q->call.dirfd);
        if (sock == -EBADF)
                return result_errno(q, EBADF);
        if (sock == -ESRCH)
                return fail_closed(q, sock, "the caller went away");
        if (sock < 0)
                return fail_closed(q, sock, "cannot reach the caller's socket");
        if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &olen) < 0)
                return result_errno(q, errno);  /* ENOTSOCK, as the kernel says */
        t.sock = sock;
        t.stream = type == SOCK_STREAM;

        if (q->call.sys == GATE_SYS_SENDMMSG)
                return send_many(q, &t);

        GateSendMsg m = GATE_SEND_MSG_NULL;
        ssize_t n;
        int r;

        r = send_read(q, &t, NULL, &m);
        n = r < 0 ? r : send_one(q, &t, &m);
        gate_send_msg_done(&m);
        if (n >= 0)
                return result_value(q, n);
        if (q->result == RESULT_ERRNO && q->error != 0)
                return;
        result_errno(q, (int) n);
}

/* ---- exec ---- */

static char *join_argv(char * const *argv) {
        size_t n = 0;
        char *r, *t;

        STRV_FOREACH(a, argv)
                n += strlen(*a) + 1;
        n = MIN(n, (size_t) GATE_TARGET_LOG_MAX);
        r = t = malloc(n + 1);
        if (!r)
                return NULL;
        *t = 0;
        STRV_FOREACH(a, argv) {
                size_t left = n - (size_t) (t - r);

                if (left == 0)
                        break;
                t += snprintf(t, left + 1, "%s%s", t == r ? "" : " ", *a);
                if ((size_t) (t - r) > n)
                        t = r + n;
        }
        return r;
}

static bool strv_same(char * const *a, char * const *b) {
        for (; *a && *b; a++, b++)
                if (!streq(*a, *b))
                        return false;
        return !*a && !*b;
}

static const char *base_name(const char *p) {
        const char *s = strrchr(p, '/');

        return s ? s + 1 : p;
}

/* The command rules see argv[0]'s name, which the caller chooses freely: check the command also under
 * the name it was executed by and under the name of the file it really is. */
/* Returns whether the check wanted the cwd it was not given (see GateVerdict.needs_cwd). */
static bool check_exec_as(Request *q, char **argv, const char *as, const char *cwd, bool *first) {
        GateVerdict v;
        char *saved;

        if (!as || !argv[0] || streq(base_name(as), base_name(argv[0])))
                return false;
        saved = argv[0];
        argv[0] = (char *) as;
        gate_policy_check_exec(q->s->config->policy, argv, cwd, &v);
        argv[0] = saved;
        verdict_merge(&q->verdict, &v, first);
        return v.needs_cwd;
}

/* The filename and argv as the caller's memory holds them now: read afresh, each chunk of it once. */
static int read_exec(Request *q, char **ret_file, char ***ret_argv) {
        GateMemCache *mc = &q->w->mem_cache;
        _cleanup_free_ char *file = NULL;
        _cleanup_(strv_freep) char **argv = NULL;
        int r;

        gate_mem_cache_reset(mc, q->mem_fd);
        r = gate_mem_cache_read_string(mc, q->call.path, GATE_PATH_MAX, &file, NULL);
        if (r < 0)
                return r;
        r = gate_mem_cache_read_argv(mc, q->call.argv, GATE_ARGV_MAX, GATE_ARGV_BYTES_MAX, &argv);
        if (r < 0)
                return r;
        *ret_file = TAKE_PTR(file);
        *ret_argv = TAKE_PTR(argv);
        return 0;
}

/* The filename alone, read afresh. */
static int read_exec_file(Request *q, char **ret_file) {
        GateMemCache *mc = &q->w->mem_cache;

        gate_mem_cache_reset(mc, q->mem_fd);
        return gate_mem_cache_read_string(mc, q->call.path, GATE_PATH_MAX, ret_file, NULL);
}

/* Whether the caller's filename and argv are its own until the kernel copies them (gate-mm.h): 1 when no
 * other task can change them any more, 0 when one can (ret_why says which), <0 when it cannot be told.
 * kcmp's ptrace check uses the real ids: the agent's for the scan, as for pidfd_getfd(). */
static int exec_memory_sole(Request *q, const char **ret_why) {
        int r, k;

        if (q->w->proc_fd < 0) {
                q->w->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (q->w->proc_fd < 0)
                        return -errno;
        }
        k = thread_set_real_ids(q->s->config->uid, q->s->config->gid);
        if (k < 0)
                fatal_credentials(k);
        r = gate_mm_sole(q->w->proc_fd, (pid_t) q->n->pid, ret_why);
        k = thread_set_real_ids(0, 0);
        if (k < 0)
                fatal_credentials(k);
        return r < 0 ? r : r == 0;
}

/* Whether the pages the filename and argv were just read from (the chunks in the worker's memory cache:
 * read_exec() read nothing else) can be written by no other process either (gate-mm.h): 1 when none can,
 * 0 when one can (ret_why says how), <0 when it cannot be told. Meaningful only once exec_memory_sole()
 * has found no other task in the caller's address space. */
_Static_assert(GATE_MEM_CACHE_CHUNKS_MAX <= GATE_MM_PAGES_MAX, "every chunk an exec's read keeps is looked at");
static int exec_memory_private(Request *q, const char **ret_why) {
        const GateMemCache *mc = &q->w->mem_cache;

        return gate_mm_private(q->caller->dir_fd, q->s->root_fd, q->s->config->uid, mc->addr, mc->n, ret_why);
}

/* An exec whose arguments another task can still change: denied, unless the policy denies it anyway. */
static void exec_memory_shared(Request *q, int sole, const char *why) {
        if (sole < 0)
                return fail_closed(q, sole, why ?: "cannot tell which tasks share the caller's memory, which "
                                   "the kernel reads the command from again");
        (void) snprintf(q->reason, sizeof(q->reason),
                        "another task can change the arguments before the kernel reads them: %s", why);
        q->verdict = (GateVerdict) { .decision = DECISION_DENY, .message = q->reason };
        (void) snprintf(q->verdict.rule_id, sizeof(q->verdict.rule_id), "%s", "exec-shared-memory");
        q->event = "local";
        result_errno(q, GATE_DENY_ERRNO);
}

/* A rule with args_within (the default policy's rm allows) compares the operands' names, cleaned
 * lexically, with its directory: ".." after a symlinked directory ("ws/link/../x") or a symlink with a
 * trailing "/" ("ws/link/") names a place inside while the kernel, and so the command, reaches outside.
 * When such a rule was weighed and the command is not denied anyway, it is checked again with each
 * operand replaced by what it resolves to for the caller (its directories followed, the last component
 * too when a "/" ends it, as rm's own calls resolve it); the stricter verdict wins. An operand that does not resolve keeps its name:
 * the command cannot reach it either. */
static int check_exec_operands(Request *q, const char *exec_path, char **argv, const char *cwd, bool *first) {
        _cleanup_strv_free_ char **real = NULL;
        bool options_done = false;
        GateVerdict v;

        if (q->verdict.decision == DECISION_DENY || !q->verdict.by_operand_names || !argv[0])
                return 0;
        if (strv_extend(&real, argv[0]) < 0)
                return -ENOMEM;
        for (char **a = argv + 1; *a; a++) {
                GateResolved res = GATE_RESOLVED_NULL;
                int r = 0;

                if (!options_done && streq(*a, "--"))
                        options_done = true;
                else if ((options_done || (*a)[0] != '-') && !isempty(*a)) {
                        int start = (*a)[0] == '/' ? q->s->root_fd : caller_dir(q, AT_FDCWD, &q->cwd_fd);

                        if (start < 0)
                                return start;
                        r = gate_resolve(&q->rctx, start, *a, 0, &res);
                }
                r = strv_extend(&real, r >= 0 && res.path ? res.path : *a);
                gate_resolved_done(&res);
                if (r < 0)
                        return r;
        }
        gate_policy_check_execve(q->s->config->policy, exec_path, real, cwd, &v);
        verdict_merge(&q->verdict, &v, first);
        return 0;
}

/* A refusal merged into the verdict, by one of the gate's own rules. */
static void verdict_merge_deny(Request *q, const char *rule_id, const char *message, bool *first) {
        GateVerdict v = { .decision = DECISION_DENY, .message = message };

        (void) snprintf(v.rule_id, sizeof(v.rule_id), "%s", rule_id);
        verdict_merge(&q->verdict, &v, first);
        q->event = "local";
}

/* A script runs its "#!" interpreter, which the kernel opens as it opens an exec's filename (against the
 * caller's cwd when relative, symlinks and /proc magic links followed) and which may be a script itself,
 * up to GATE_SCRIPT_DEPTH_MAX interpreters deep. Each is checked like the command itself: by the name the
 * "#!" line gives, as the file it really is, with the argv the kernel will give it (the interpreter, its
 * argument, the name of the file it runs, the rest). One that is not on a path (a memfd or deleted file
 * reached through /proc/self/fd/N) is refused as such a command is. fd is the file executed. An
 * interpreter that cannot be resolved now is not left for the kernel to look up again (it could be there
 * by then, something else than what was checked): *ret_errno is what the kernel would answer, the exec's
 * answer. */
static int check_exec_interpreters(Request *q, int fd, const char *exec_path, char **argv, const char *cwd,
                                   bool *first, int *ret_errno) {
        const GatePolicy *policy = q->s->config->policy;
        _cleanup_strv_free_ char **cur = NULL;
        _cleanup_free_ char *runs = NULL;       /* the name the kernel gives the file the interpreter runs */
        _cleanup_close_ int held = -EBADF;
        int r;

        *ret_errno = 0;
        /* Nothing is allocated before the file proves a script: an ELF binary costs one fstat() of the
         * fd it was resolved to (its "#!" cache entry), or the read of its first bytes. */
        for (unsigned depth = 0;; depth++) {
                _cleanup_free_ char *interp = NULL, *iarg = NULL;
                _cleanup_strv_free_ char **next = NULL;
                GateResolved ir = GATE_RESOLVED_NULL;
                GateVerdict v;
                int start;

                r = gate_script_interpreter(&q->w->script_cache, fd, &interp, &iarg);
                if (r < 0 || r == GATE_EXEC_BINARY)
                        return r < 0 ? r : 0;
                if (r == GATE_EXEC_OTHER) {
                        /* Not left to a binfmt_misc handler the host may have (its interpreter would run
                         * unchecked): what the kernel answers when none takes the file. */
                        *ret_errno = ENOEXEC;
                        return 0;
                }
                if (depth >= GATE_SCRIPT_DEPTH_MAX) {
                        /* The kernel fails this exec with ELOOP: nothing to run, nothing to allow. */
                        verdict_merge_deny(q, "script-depth", "a chain of \"#!\" interpreters deeper than the kernel runs", first);
                        return 0;
                }
                if (!runs && !(runs = strdup(exec_path)))
                        return -ENOMEM;
                if (strv_extend(&next, interp) < 0 || (iarg && strv_extend(&next, iarg) < 0) ||
                    strv_extend(&next, runs) < 0)
                        return -ENOMEM;
                for (size_t i = 1; (cur ?: argv)[0] && (cur ?: argv)[i]; i++)
                        if (strv_extend(&next, (cur ?: argv)[i]) < 0)
                                return -ENOMEM;
                gate_policy_check_execve(policy, interp, next, cwd, &v);
                verdict_merge(&q->verdict, &v, first);

                start = interp[0] == '/' ? q->s->root_fd : caller_dir(q, AT_FDCWD, &q->cwd_fd);
                if (start < 0)
                        return start;
                r = gate_resolve(&q->rctx, start, interp, GATE_RESOLVE_FOLLOW | GATE_RESOLVE_OBJECT_ONLY, &ir);
                if (r < 0 || ir.fd < 0) {
                        /* The kernel cannot open it either: the exec fails here with what it would say. */
                        gate_resolved_done(&ir);
                        *ret_errno = r < 0 ? -r : ENOENT;
                        return 0;
                }
                if (!ir.path) {
                        gate_resolved_done(&ir);
                        verdict_merge_deny(q, "no-path", "exec of an object that is not on a path (memfd, deleted file)", first);
                        return 0;
                }
                (void) check_exec_as(q, next, ir.path, cwd, first);
                safe_close(held);
                held = TAKE_FD(ir.fd);
                fd = held;
                gate_resolved_done(&ir);
                free(runs);
                runs = TAKE_PTR(interp);
                strv_free(cur);
                cur = TAKE_PTR(next);
        }
}

static void handle_exec(Request *q) {
        const GatePolicy *policy = q->s->config->policy;
        _cleanup_free_ char *file = NULL, *file2 = NULL, *cwd = NULL, *key = NULL, *exec_path = NULL,
                *resolved_path = NULL;
        _cleanup_(strv_freep) char **argv = NULL, **argv2 = NULL;
        GateResolved res = GATE_RESOLVED_NULL;
        unsigned flags = GATE_RESOLVE_OBJECT_ONLY;
        GateVerdict v;
        bool first = true;
        const char *why = NULL;
        bool exec_sole_mm = q->s->config->exec_sole_mm;
        int r, start, sole = 0, error = 0;

        q->kind = GATE_KIND_EXEC;
        /* What the kernel copies after CONTINUE must be what was decided. Where the verdict can depend on
         * the arguments, the tasks that share the caller's memory are looked for (gate-mm.h) before the
         * arguments are read for the decision: once none of them can run, nothing but the caller, waiting
         * here, can change the filename and argv before the kernel copies them, so that one read is what
         * the kernel will read. The filename alone is read before, to resolve it: a shell or execvp()
         * trying the directories of $PATH gets its ENOENT without the look for sharers. */
        r = exec_sole_mm ? read_exec_file(q, &file) : read_exec(q, &file, &argv);
        if (r < 0)
                return fail_closed(q, r, "cannot read the command");

        if (q->call.follow)
                flags |= GATE_RESOLVE_FOLLOW;
        if (q->call.flags & AT_EMPTY_PATH)
                flags |= GATE_RESOLVE_EMPTY_PATH;
        /* An absolute filename ignores the cwd and the dirfd, as the kernel does. */
        start = q->s->root_fd;
        if (file[0] != '/') {
                r = caller_dir(q, AT_FDCWD, &q->cwd_fd);
                if (r < 0)
                        return fail_closed(q, r, "cannot open the caller's working directory");
                start = r;
        }
        if (file[0] != '/' && q->call.dirfd != AT_FDCWD) {
                start = caller_dir(q, q->call.dirfd, &q->dir_fd);
                if (start == -EBADF)
                        return result_errno(q, EBADF);
                if (start < 0)
                        return fail_closed(q, start, "cannot open the caller's directory fd");
        }
        r = gate_resolve(&q->rctx, start, file, flags, &res);
        if (r < 0)
                return result_errno(q, r);      /* what the kernel would say: ENOENT lets execvp() go on */
        if (res.fd < 0) {
                gate_resolved_done(&res);
                return result_errno(q, ENOENT);
        }

        if (exec_sole_mm) {
                _cleanup_free_ char *file_again = NULL;

                sole = exec_memory_sole(q, &why);
                r = read_exec(q, &file_again, &argv);
                if (r >= 0 && !streq(file, file_again))
                        r = -EAGAIN;    /* changed between its resolution and the look for sharers */
                if (r < 0) {
                        gate_resolved_done(&res);
                        return fail_closed(q, r, r == -EAGAIN ? "the command changed while it was checked" :
                                           "cannot read the command");
                }
                /* No other task runs in the caller's memory; no other process may write the pages the
                 * kernel will copy from either (memory shared with another process, a file's page). */
                if (sole > 0) {
                        sole = exec_memory_private(q, &why);
                        if (sole < 0)
                                why = "cannot tell whether another process can write the memory of the command, "
                                      "which the kernel reads again";
                }
        }
        if (!argv[0]) {
                /* An empty argv: the kernel gives the program its filename as argv[0]. */
                r = strv_extend(&argv, file);
                if (r < 0) {
                        gate_resolved_done(&res);
                        return fail_closed(q, r, "out of memory");
                }
        }
        q->target = join_argv(argv);
        if (!q->target) {
                gate_resolved_done(&res);
                return fail_closed(q, -ENOMEM, "out of memory");
        }
        if (!res.path) {
                /* A memfd, a deleted file, anything not on a path: never executed. */
                gate_resolved_done(&res);
                q->verdict = (GateVerdict) { .decision = DECISION_DENY, .message = "exec of an object that is not on a path (memfd, deleted file)" };
                (void) snprintf(q->verdict.rule_id, sizeof(q->verdict.rule_id), "%s", "no-path");
                q->event = "local";
                return result_errno(q, GATE_DENY_ERRNO);
        }

        /* The cwd is read only when needed: for a relative filename, or when a rule wants it for a relative
         * operand (rm inside the workspace); most commands are checked without it. */
        r = file[0] != '/' && file[0] != 0 ? caller_cwd_path(q, &cwd) : 0;
        if (r >= 0) {
                /* The path the kernel is asked to execute, absolute, its symlinks not resolved. */
                _cleanup_free_ char *base = NULL, *joined = NULL;

                if (file[0] == '/')
                        exec_path = path_clean(file);
                else if (file[0] == 0)
                        exec_path = strdup(res.path);
                else {
                        r = start == q->cwd_fd ? 0 : gate_fd_path(start, &base);
                        if (r >= 0 && asprintf(&joined, "%s/%s", base ?: cwd, file) < 0)
                                r = -ENOMEM;
                        if (r >= 0)
                                exec_path = path_clean(joined);
                }
                if (r >= 0 && !exec_path)
                        r = -ENOMEM;
        }
        for (;;) {
                bool needs_cwd;

                if (r < 0) {
                        gate_resolved_done(&res);
                        return fail_closed(q, r, "cannot read the caller's working directory");
                }
                first = true;
                gate_policy_check_execve(policy, exec_path, argv, cwd, &v);
                verdict_merge(&q->verdict, &v, &first);
                needs_cwd = v.needs_cwd;
                /* And as the file it really is, symlinks resolved (/usr/bin/foo -> /bin/rm). */
                needs_cwd = check_exec_as(q, argv, res.path, cwd, &first) || needs_cwd;
                if (!needs_cwd || cwd)
                        break;
                r = caller_cwd_path(q, &cwd);
        }
        r = check_exec_interpreters(q, res.fd, exec_path, argv, cwd, &first, &error);
        if (r < 0) {
                gate_resolved_done(&res);
                return fail_closed(q, r, "cannot read the script's interpreter");
        }
        if (error > 0) {
                gate_resolved_done(&res);
                return result_errno(q, error);  /* as the kernel: ENOENT (no "#!" interpreter), ENOEXEC */
        }
        r = check_exec_operands(q, exec_path, argv, cwd, &first);
        if (r < 0) {
                gate_resolved_done(&res);
                return fail_closed(q, r, "cannot resolve the command's operands");
        }
        /* The session cache names the file that runs, not a name for it. */
        resolved_path = strdup(res.path);
        if (!resolved_path) {
                gate_resolved_done(&res);
                return fail_closed(q, -ENOMEM, "out of memory");
        }
        /* Closed after the answer: nothing here needs the file any more. */
        res.fd = close_later(q->w, res.fd);
        res.dir_fd = close_later(q->w, res.dir_fd);
        gate_resolved_done(&res);

        /* Refused before an approval is asked for, so no human approves what then fails. */
        if (exec_sole_mm && q->verdict.decision != DECISION_DENY && sole <= 0)
                return exec_memory_shared(q, sole, why);

        /* The session cache's key matters only to an approval. */
        if (q->verdict.decision == DECISION_APPROVE)
                key = gate_cache_key_exec(resolved_path, argv);
        settle(q, key);
        if (q->verdict.decision != DECISION_ALLOW)
                return result_errno(q, GATE_DENY_ERRNO);
        if (sole > 0) {
                q->result = RESULT_CONTINUE;
                return;
        }

        /* Nothing proves the memory still (a policy of plain denials, or exec_shared_memory "check"): the
         * kernel reads both again when it continues, and a sibling thread may have changed them meanwhile.
         * A second read narrows that window; only the Landlock floor, or the operator's choice, closes it. */
        r = read_exec(q, &file2, &argv2);
        if (r < 0 || !streq(file, file2))
                return fail_closed(q, r < 0 ? r : -EAGAIN, "the command changed while it was checked");
        if (!argv2[0] && strv_extend(&argv2, file2) < 0)
                return fail_closed(q, -ENOMEM, "out of memory");
        if (!strv_same(argv, argv2))
                return fail_closed(q, -EAGAIN, "the command changed while it was checked");
        /* The second read is the gate's own work, not the call's: part of the decision's time. */
        q->decided_ns = now_ns(CLOCK_MONOTONIC);
        q->result = RESULT_CONTINUE;
}

/* ---- files ---- */

static int read_open_how(Request *q) {
        struct open_how how = {};
        uint8_t extra[64];
        int r;

        if (q->call.size < sizeof(how))
                return -EINVAL;
        if (q->call.size > OPEN_HOW_SIZE_MAX)
                return -E2BIG;
        r = gate_mem_read(q->mem_fd, q->call.how, &how, sizeof(how));
        if (r == -EFAULT && caller_memory_refresh(q))
                r = gate_mem_read(q->mem_fd, q->call.how, &how, sizeof(how));
        if (r < 0)
                return r;
        /* A larger struct from a newer libc: fine as long as what we do not know is zero. */
        for (uint64_t off = sizeof(how); off < q->call.size; off += sizeof(extra)) {
                size_t n = MIN(sizeof(extra), q->call.size - off);

                r = gate_mem_read(q->mem_fd, q->call.how + off, extra, n);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n; i++)
                        if (extra[i])
                                return -E2BIG;
        }
        if (how.resolve & ~(uint64_t) (RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS |
                                       RESOLVE_BENEATH | RESOLVE_IN_ROOT | RESOLVE_CACHED))
                return -EINVAL;
        if ((how.resolve & RESOLVE_BENEATH) && (how.resolve & RESOLVE_IN_ROOT))
                return -EINVAL;
        q->call.flags = how.flags;
        q->call.mode = (uint32_t) how.mode;
        q->call.follow = !(how.flags & O_NOFOLLOW) && (how.flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
        q->call.dev = how.resolve;      /* kept here: only opens have it */
        return 0;
}

static unsigned resolve_flags(const GateCall *c) {
        unsigned f = c->follow ? GATE_RESOLVE_FOLLOW : 0;

        if (uses_at_empty_path(c) && (c->flags & AT_EMPTY_PATH))
                f |= GATE_RESOLVE_EMPTY_PATH;
        if (c->sys == GATE_SYS_OPENAT2) {
                if (c->dev & RESOLVE_NO_SYMLINKS)
                        f |= GATE_RESOLVE_NO_SYMLINKS;
                if (c->dev & RESOLVE_NO_MAGICLINKS)
                        f |= GATE_RESOLVE_NO_MAGICLINKS;
                if (c->dev & RESOLVE_BENEATH)
                        f |= GATE_RESOLVE_BENEATH;
                if (c->dev & RESOLVE_IN_ROOT)
                        f |= GATE_RESOLVE_IN_ROOT;
        }
        return f;
}

/* Checks every operation of ops on res; an object with no path (a caller's pipe reached through
 * /proc/self/fd) is the caller's already: nothing to check. */
/* Whether path lies in the supervisor's own /proc/PID (or one of its threads' /proc/TID): the kernel lets
 * a process into every entry of its own, so opened by the supervisor for the agent these would show the
 * agent the supervisor (its status, its maps), whatever its non-dumpable flag keeps the agent from. */
static bool path_is_supervisors_proc(const char *path) {
        const char *p = startswith(path, "/proc/"), *t;
        _cleanup_close_ int fd = -EBADF;
        char buf[256], status[64];
        unsigned long n;
        char *end;
        ssize_t k;

        if (!p || *p < '0' || *p > '9')
                return false;
        errno = 0;
        n = strtoul(p, &end, 10);
        if (errno != 0 || (*end != 0 && *end != '/') || n > INT_MAX)
                return false;
        if ((pid_t) n == getpid())
                return true;
        /* A thread of ours, named by its own id: its Tgid says so. */
        (void) snprintf(status, sizeof(status), "/proc/%lu/status", n);
        fd = open(status, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;           /* no such task: the resolution says ENOENT */
        k = read_snapshot(fd, buf, sizeof(buf));
        if (k <= 0)
                return true;            /* cannot tell: treated as ours, which denies */
        t = strstr(buf, "\nTgid:");
        return !t || (pid_t) strtol(t + 6, NULL, 10) == getpid();
}

static void check_file(Request *q, const GateResolved *res, const FileOp *ops, size_t n, bool *first) {
        size_t fold_from = SIZE_MAX;
        bool fold_asked = false;

        for (size_t i = 0; i < n; i++) {
                GateVerdict v;

                if (!res->path)
                        continue;
                if (path_is_supervisors_proc(res->path)) {
                        v = (GateVerdict) { .decision = DECISION_DENY, .message = "the gate's own /proc entries" };
                        (void) snprintf(v.rule_id, sizeof(v.rule_id), "%s", "supervisor");
                } else {
                        /* In a directory that folds case the kernel opens .env for .ENV: where reading the
                         * path folded would be stricter, the directories are asked whether they fold. */
                        if (!fold_asked && casefold_possible() &&
                            gate_policy_check_file_fold_matters(q->s->config->policy, ops[i], res->path)) {
                                if (gate_resolved_fold_from(res, q->s->root_fd, &fold_from) < 0)
                                        fold_from = 0;
                                fold_asked = true;
                        }
                        gate_policy_check_file_folding(q->s->config->policy, ops[i], res->path, fold_from, &v);
                }
                if (*first || decision_rank(v.decision) > decision_rank(q->verdict.decision))
                        q->op = file_op_to_string(ops[i]);
                verdict_merge(&q->verdict, &v, first);
        }
}

static char *proc_self_fd(int fd) {
        char *p;

        return asprintf(&p, "/proc/self/fd/%i", fd) < 0 ? NULL : p;
}

/* The mode a file made for the caller gets: its umask applied here (the supervisor's own is 0), as the
 * kernel would. Unlike the kernel, this also applies when the directory has a default ACL: stricter. */
static mode_t caller_mode(const Request *q, mode_t mode) {
        return mode & ~(q->umask & 0777);
}

/* A blocking open of a FIFO waits until the other end is opened, which may be never: in a worker it
 * would hold one of GATE_WORKERS_MAX, and enough such readers would stall every trapped call. So it
 * waits in a thread of its own (at most GATE_FIFO_OPENS_MAX at once; beyond, in the worker as before),
 * which answers the call when the open returns. The thread is made by a worker and has its
 * credentials, the agent's. */
#define GATE_FIFO_OPENS_MAX 1024U

typedef struct FifoOpen {
        GateSupervisor *s;
        uint64_t id;
        int fd;                         /* O_PATH of the FIFO the gate checked */
        int flags;
        bool cloexec;
} FifoOpen;

static void *fifo_open_thread(void *userdata) {
        FifoOpen *o = userdata;
        char p[64];
        int fd, r;

        (void) snprintf(p, sizeof(p), "/proc/self/fd/%i", o->fd);
        fd = open(p, o->flags | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                (void) notif_send(o->s->notify_fd, o->id, errno, 0, false);
        else {
                r = notif_addfd_send(o->s->notify_fd, o->id, fd, o->cloexec);
                if (r < 0 && r != -ENOENT)
                        (void) notif_send(o->s->notify_fd, o->id, -r, 0, false);
                safe_close(fd);
        }
        safe_close(o->fd);
        atomic_fetch_sub(&o->s->fifo_opens, 1);
        free(o);
        return NULL;
}

static bool fifo_open_defer(Request *q, int fifo_fd) {
        pthread_attr_t attr;
        pthread_t t;
        FifoOpen *o;
        int r;

        if (atomic_fetch_add(&q->s->fifo_opens, 1) >= GATE_FIFO_OPENS_MAX)
                goto no;
        o = calloc(1, sizeof(FifoOpen));
        if (!o)
                goto no;
        *o = (FifoOpen) {
                .s = q->s,
                .id = q->n->id,
                .fd = fcntl(fifo_fd, F_DUPFD_CLOEXEC, 3),
                .flags = (int) (q->call.flags & ~(uint64_t) (O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)),
                .cloexec = q->call.flags & O_CLOEXEC,
        };
        if (o->fd < 0 || pthread_attr_init(&attr) != 0) {
                safe_close(o->fd);
                free(o);
                goto no;
        }
        (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        (void) pthread_attr_setstacksize(&attr, 64 * 1024);
        r = pthread_create(&t, &attr, fifo_open_thread, o);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                safe_close(o->fd);
                free(o);
                goto no;
        }
        q->result = RESULT_DEFERRED;
        return true;
no:
        atomic_fetch_sub(&q->s->fifo_opens, 1);
        return false;
}

/* A file opened for reading that the policy's read rules named at the start under another name (a hard
 * link from before the run, a renamed directory): refused on its inode. fd is the file opened here, so
 * the check is of the object the caller would get. Returns true when refused (answered). */
static bool read_denied_by_inode(Request *q, int fd, uint64_t flags) {
        const char *rule;
        struct stat st;

        if (!q->s->config->read_denied || (flags & O_ACCMODE) == O_WRONLY || (flags & O_PATH))
                return false;
        if (fstat(fd, &st) < 0) {
                fail_closed(q, -errno, "cannot look at the opened file");
                return true;
        }
        if (!S_ISREG(st.st_mode) || !(rule = gate_inode_deny_find(q->s->config->read_denied, st.st_dev, st.st_ino)))
                return false;
        q->verdict = (GateVerdict) { .decision = DECISION_DENY,
                                     .message = "the file is one whose reading is denied or needs a human, by another name "
                                                "(a link or a renamed directory)" };
        (void) snprintf(q->verdict.rule_id, sizeof(q->verdict.rule_id), "inode:%s", rule);
        q->event = "local";
        result_errno(q, GATE_DENY_ERRNO);
        return true;
}

static void emulate_open(Request *q, GateResolved *res) {
        uint64_t f = q->call.flags;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (f & O_PATH) {
                /* ADDFD cannot install an O_PATH file (the kernel's fget() refuses them: EBADF). Such an
                 * fd reads and writes nothing: reopening it by /proc/self/fd/N is an open the gate
                 * decides on the object, and exec through it is refused by the workload profile
                 * (execveat); what it tells, metadata, stat() tells untrapped. So an O_PATH open allowed
                 * by the checked path is left to the kernel (O_CREAT is ignored with O_PATH). */
                if (res->fd < 0)
                        return result_errno(q, ENOENT);
                q->result = RESULT_CONTINUE;
                return;
        }
        if (res->fd >= 0) {
                if ((f & O_CREAT) && (f & O_EXCL))
                        return result_errno(q, EEXIST);
                if (fstat(res->fd, &st) < 0)
                        return result_errno(q, errno);
                if (S_ISLNK(st.st_mode))
                        return result_errno(q, ELOOP);          /* O_NOFOLLOW on a symlink */
                if ((f & O_DIRECTORY) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
                        return result_errno(q, ENOTDIR);
                if (S_ISFIFO(st.st_mode) && !(f & O_NONBLOCK) && fifo_open_defer(q, res->fd))
                        return;
                {
                        /* Reopen the object we checked (never the path again); O_NOCTTY: a terminal must
                         * not become ours. */
                        _cleanup_free_ char *p = proc_self_fd(res->fd);

                        if (!p)
                                return result_errno(q, ENOMEM);
                        fd = open(p, (int) (f & ~(uint64_t) (O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC | O_NOCTTY,
                                  caller_mode(q, (mode_t) q->call.mode));
                        if (fd < 0)
                                return result_errno(q, errno);
                }
        } else {
                if (!(f & O_CREAT))
                        return result_errno(q, ENOENT);
                if (res->must_be_dir || !res->name)
                        return result_errno(q, EISDIR);
                fd = openat(res->dir_fd, res->name, (int) f | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                            caller_mode(q, (mode_t) q->call.mode));
                if (fd < 0)
                        return result_errno(q, errno);
        }

        if (read_denied_by_inode(q, fd, f))
                return;
        result_fd(q, TAKE_FD(fd), f & O_CLOEXEC);
}

static void result_of(Request *q, int r) {
        if (r < 0)
                result_errno(q, errno);
        else
                result_value(q, 0);
}

static void emulate(Request *q, GateResolved *res, GateResolved *res2) {
        const GateCall *c = &q->call;
        _cleanup_free_ char *p = NULL, *target = NULL;
        int r;

        switch (c->action) {
        case GATE_ACTION_OPEN:
                return emulate_open(q, res);
        case GATE_ACTION_MKDIR:
        case GATE_ACTION_MKNOD:
        case GATE_ACTION_SYMLINK:
                if (res->fd >= 0 || !res->name)
                        return result_errno(q, EEXIST);
                if (c->action == GATE_ACTION_SYMLINK) {
                        r = gate_mem_read_string(q->mem_fd, c->target, GATE_PATH_MAX, &target, NULL);
                        if (r < 0)
                                return fail_closed(q, r, "cannot read the symlink's target");
                        return result_of(q, symlinkat(target, res->dir_fd, res->name));
                }
                if (c->action == GATE_ACTION_MKDIR)
                        return result_of(q, mkdirat(res->dir_fd, res->name, caller_mode(q, (mode_t) c->mode)));
                return result_of(q, mknodat(res->dir_fd, res->name, caller_mode(q, (mode_t) c->mode), (dev_t) c->dev));
        case GATE_ACTION_UNLINK:
                if (!res->name)
                        return result_errno(q, c->flags & AT_REMOVEDIR ? EINVAL : EISDIR);
                return result_of(q, unlinkat(res->dir_fd, res->name, (int) (c->flags & AT_REMOVEDIR)));
        case GATE_ACTION_RENAME:
                if (!res->name || !res2->name)
                        return result_errno(q, EBUSY);
                return result_of(q, (int) syscall(SYS_renameat2, res->dir_fd, res->name, res2->dir_fd, res2->name,
                                                  (unsigned) c->flags));
        case GATE_ACTION_LINK:
                if (res->fd < 0)
                        return result_errno(q, ENOENT);
                if (res2->fd >= 0 || !res2->name)
                        return result_errno(q, EEXIST);
                /* Links the object checked, through our own magic link to it. */
                p = proc_self_fd(res->fd);
                if (!p)
                        return result_errno(q, ENOMEM);
                return result_of(q, linkat(AT_FDCWD, p, res2->dir_fd, res2->name, AT_SYMLINK_FOLLOW));
        case GATE_ACTION_CHMOD:
        case GATE_ACTION_TRUNCATE:
                if (res->fd < 0)
                        return result_errno(q, ENOENT);
                p = proc_self_fd(res->fd);
                if (!p)
                        return result_errno(q, ENOMEM);
                if (c->action == GATE_ACTION_CHMOD)
                        return result_of(q, fchmodat(AT_FDCWD, p, (mode_t) c->mode, 0));
                return result_of(q, truncate(p, (off_t) c->size));
        case GATE_ACTION_CHOWN:
                if (res->fd < 0)
                        return result_errno(q, ENOENT);
                return result_of(q, fchownat(res->fd, "", c->uid, c->gid, AT_EMPTY_PATH));
        default:
                return fail_closed(q, -EINVAL, "unexpected call");
        }
}

static int read_path(Request *q, uint64_t addr, char **ret) {
        int r = gate_mem_read_string(q->mem_fd, addr, GATE_PATH_MAX, ret, NULL);

        if (r == -EFAULT && caller_memory_refresh(q))
                r = gate_mem_read_string(q->mem_fd, addr, GATE_PATH_MAX, ret, NULL);
        return r < 0 && r != -ENAMETOOLONG ? -EFAULT : r;
}

/* Where a path starts: the root, or for a relative one (and every scoped walk) the caller's cwd or dirfd. */
static int path_start(Request *q, const char *path, int dirfd, int *dirfd_cache, unsigned flags) {
        int start;

        /* An absolute path ignores the dirfd, as the kernel does, unless it is the root of the walk. */
        if (path[0] == '/' && !(flags & (GATE_RESOLVE_BENEATH | GATE_RESOLVE_IN_ROOT | GATE_RESOLVE_EMPTY_PATH)))
                return q->s->root_fd;
        start = caller_dir(q, dirfd, dirfd == AT_FDCWD ? &q->cwd_fd : dirfd_cache);
        if (start < 0)
                return start == -EBADF ? -EBADF : -EFAULT;
        return start;
}

static int resolve_path(Request *q, const char *path, int dirfd, int *dirfd_cache, unsigned flags, GateResolved *ret) {
        int start = path_start(q, path, dirfd, dirfd_cache, flags);

        if (start < 0)
                return start;
        return gate_resolve(&q->rctx, start, path, flags, ret);
}

static int resolve_arg(Request *q, uint64_t addr, int dirfd, int *dirfd_cache, unsigned flags, GateResolved *ret) {
        _cleanup_free_ char *path = NULL;
        int r;

        r = read_path(q, addr, &path);
        if (r < 0)
                return r;
        return resolve_path(q, path, dirfd, dirfd_cache, flags, ret);
}

/* What open() keeps of its flags (the kernel's VALID_OPEN_FLAGS); openat2() refuses anything else. */
#define OPEN_FLAGS_VALID ((uint64_t) (O_ACCMODE | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND | O_NONBLOCK | \
                                      O_DSYNC | FASYNC | O_DIRECT | O_LARGEFILE | O_DIRECTORY | O_NOFOLLOW | \
                                      O_NOATIME | O_CLOEXEC | O_SYNC | O_PATH | O_TMPFILE))

/* Most opens name a path with no symlink on it, which the policy simply allows. Such a path is checked as
 * written (made absolute and cleaned, which is what the resolution would report for it) and then opened
 * by the kernel with every symlink refused, so what is opened is what sits at the checked path now: no
 * O_PATH handles, no reopening. A relative path is made absolute with the path of the caller's cwd or
 * dirfd (one readlink of /proc/TID/cwd or fd/N) and opened as that absolute path from the root, so the
 * object opened is the one at the path checked even if the directory moves meanwhile. A symlink on the
 * way (even one swapped in after the check: ELOOP), a directory that is not a path (deleted, a pipe), any
 * verdict but allow, O_PATH, O_TMPFILE, openat2(), a path ending in "/", "." or "..", or a path whose
 * verdict read folded would be stricter on a kernel that can fold case (gate_resolved_fold_from() asks
 * each directory) take the full resolution instead, which checks again. Returns true when the call is
 * decided. */
static bool open_fast(Request *q, const char *path) {
        uint64_t f = q->call.flags;
        struct open_how how = {
                .flags = (f & OPEN_FLAGS_VALID) | O_CLOEXEC | O_NOCTTY,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_free_ char *base = NULL, *joined = NULL, *clean = NULL;
        const char *name = strrchr(path, '/');
        FileOp op = gate_open_op(f);
        GateVerdict v;
        uint64_t decided;
        int start, fd, error, r;

        if (q->call.sys == GATE_SYS_OPENAT2 || (f & O_PATH) || (f & O_TMPFILE) == O_TMPFILE)
                return false;
        name = name ? name + 1 : path;
        if (isempty(name) || streq(name, ".") || streq(name, "..") || strlen(name) > NAME_MAX)
                return false;
        start = q->s->root_fd;
        if (path[0] != '/') {
                /* the full resolution says why when there is no such directory */
                r = q->call.dirfd == AT_FDCWD ? caller_cwd_kept(q, &base) : caller_dir_path(q, q->call.dirfd, &base);
                if (r < 0 || base[0] != '/' || endswith(base, " (deleted)"))
                        return false;
                if (asprintf(&joined, "%s/%s", streq(base, "/") ? "" : base, path) < 0)
                        return false;
        }
        clean = path_clean(joined ?: path);
        if (!clean)
                return false;
        if (startswith(clean, "/proc/"))
                return false;   /* the full resolution sees /proc for what it is */
        gate_policy_check_file(q->s->config->policy, op, clean, &v);
        if (v.decision != DECISION_ALLOW)
                return false;
        /* Where the path read folded would be stricter (.ENV), the full resolution asks its directories
         * whether they fold. */
        if (casefold_possible() && gate_policy_check_file_fold_matters(q->s->config->policy, op, clean))
                return false;
        decided = now_ns(CLOCK_MONOTONIC);

        if (f & O_CREAT)
                how.mode = caller_mode(q, (mode_t) (q->call.mode & 07777));
        /* Never blocking here: a FIFO waits for its other end, and waits in a thread of its own
         * (fifo_open_defer()) after the full resolution; so does anything but a regular file or a
         * directory. Looked at first, not opened: even a non-blocking open of a FIFO is a reader or
         * writer for a moment, which the other end notices. */
        {
                struct stat st;

                if (fstatat(start, joined ?: path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
                        return false;
        }
        fd = (int) syscall(SYS_openat2, start, joined ?: path, &how, sizeof(how));
        error = fd < 0 ? errno : 0;
        if (error == ELOOP || error == EXDEV || error == EAGAIN || error == ENOSYS || error == EINVAL || error == E2BIG ||
            (error == ENAMETOOLONG && joined))
                return false;

        q->verdict = v;
        q->op = file_op_to_string(op);
        q->event = "local";
        q->decided_ns = decided;
        q->target = TAKE_PTR(clean);
        if (fd < 0)
                result_errno(q, error);         /* the caller's own: ENOENT, EACCES, EEXIST, ... */
        else if (read_denied_by_inode(q, fd, f))
                safe_close(fd);
        else
                result_fd(q, fd, f & O_CLOEXEC);
        return true;
}

/* bind() is performed here too, on the caller's socket with the address read once: a pathname socket
 * creates an inode, which is a create of that path for the file rules (a denied path gets none), made
 * through the directory the gate resolved and with the caller's umask. Other families and abstract
 * names are not decided, only performed from the bytes read. */
static void handle_bind(Request *q) {
        struct sockaddr_storage ss = {};
        struct sockaddr_un *sa = (struct sockaddr_un *) &ss, via = { .sun_family = AF_UNIX };
        size_t len = (size_t) q->call.size, plen;
        char path[sizeof(sa->sun_path) + 1] = {};
        _cleanup_free_ char *key = NULL;
        _cleanup_close_ int sock = -EBADF;
        GateResolved res = GATE_RESOLVED_NULL;
        bool first = true;
        int domain = -1, r;

        q->kind = GATE_KIND_FILE;
        if (caller_socket_call(q, &ss, &sock, &domain) < 0)
                return;
        if (domain != AF_UNIX || len <= offsetof(struct sockaddr_un, sun_path) || sa->sun_family != AF_UNIX ||
            sa->sun_path[0] == 0) {
                r = bind(sock, len > 0 ? (struct sockaddr *) &ss : NULL, (socklen_t) len);
                return r < 0 ? result_errno(q, errno) : result_value(q, 0);
        }

        plen = MIN(len - offsetof(struct sockaddr_un, sun_path), sizeof(sa->sun_path));
        memcpy(path, sa->sun_path, plen);
        r = resolve_path(q, path, AT_FDCWD, &q->cwd_fd, 0, &res);
        if (r == -EFAULT || r == -ENOMEM)
                return fail_closed(q, r, "cannot resolve the socket's path");
        if (r < 0)
                return result_errno(q, r);
        check_file(q, &res, (const FileOp[]) { FILE_OP_CREATE }, 1, &first);
        q->target = strdup(res.path ?: path);
        key = gate_cache_key_file(FILE_OP_CREATE, res.path ?: path);
        settle(q, key);
        if (q->verdict.decision != DECISION_ALLOW) {
                gate_resolved_done(&res);
                return result_errno(q, GATE_DENY_ERRNO);
        }
        if (res.fd >= 0 || res.dir_fd < 0 || !res.name) {
                gate_resolved_done(&res);
                return result_errno(q, res.fd >= 0 ? EADDRINUSE : EINVAL);
        }
        if ((size_t) snprintf(via.sun_path, sizeof(via.sun_path), "/proc/self/fd/%i/%s", res.dir_fd, res.name) >=
            sizeof(via.sun_path)) {
                gate_resolved_done(&res);
                return result_errno(q, ENAMETOOLONG);
        }
        r = bind(sock, (struct sockaddr *) &via, (socklen_t) SUN_LEN(&via));
        if (r < 0) {
                r = -errno;
                gate_resolved_done(&res);
                return result_errno(q, r);
        }
        /* The inode got this process's umask: the caller's instead. */
        if (fchmodat(res.dir_fd, res.name, 0777 & ~q->umask, 0) < 0)
                log_debug_errno(errno, "Cannot give the socket %s the caller's umask, ignoring: %m", strna(res.path));
        gate_resolved_done(&res);
        result_value(q, 0);
}

/* The resolution went through a magic link of the supervisor's own /proc entries (its fds, cwd, root):
 * a deny of the gate's, recorded with what was asked for. */
static void deny_supervisors_proc(Request *q, const char *path) {
        q->verdict = (GateVerdict) { .decision = DECISION_DENY, .message = "the gate's own /proc entries" };
        (void) snprintf(q->verdict.rule_id, sizeof(q->verdict.rule_id), "%s", "supervisor");
        q->op = file_op_to_string(q->call.action == GATE_ACTION_OPEN ? gate_open_op(q->call.flags) : FILE_OP_READ);
        q->target = strdup(path);
        q->event = "local";
        result_errno(q, GATE_DENY_ERRNO);
}

static void handle_file(Request *q) {
        GateResolved res = GATE_RESOLVED_NULL, res2 = GATE_RESOLVED_NULL;
        FileOp ops[GATE_CALL_OPS_MAX], ops2[GATE_CALL_OPS_MAX];
        _cleanup_free_ char *key = NULL, *path = NULL;
        size_t n, n2;
        bool first = true;
        int r;

        q->kind = GATE_KIND_FILE;
        if (q->call.sys == GATE_SYS_OPENAT2) {
                r = read_open_how(q);
                if (r == -EFAULT)
                        return fail_closed(q, r, "cannot read struct open_how");
                if (r < 0)
                        return result_errno(q, r);
                if (q->call.dev & RESOLVE_CACHED)
                        return result_errno(q, EAGAIN);         /* allowed by openat2(2): retry uncached */
                if (q->call.dev & RESOLVE_NO_XDEV)
                        return fail_closed(q, -EOPNOTSUPP, "RESOLVE_NO_XDEV is not supported by the gate");
                if (needs_umask(&q->call)) {
                        r = caller_umask(q, &q->umask);
                        if (r < 0 || !notif_id_valid(q->s->notify_fd, q->n->id))
                                return fail_closed(q, r < 0 ? r : -ESRCH, "cannot read the caller's umask");
                }
        }

        r = read_path(q, q->call.path, &path);
        if (r == -EFAULT)
                return fail_closed(q, r, "cannot read or resolve the path");
        if (r < 0)
                return result_errno(q, r);
        if (q->call.action == GATE_ACTION_OPEN && open_fast(q, path))
                return;
        r = resolve_path(q, path, q->call.dirfd, &q->dir_fd, resolve_flags(&q->call), &res);
        if (r == -EFAULT || r == -ENOMEM)
                return fail_closed(q, r, "cannot read or resolve the path");
        if (r == -EPERM && q->rctx.supervisor_hit)
                return deny_supervisors_proc(q, path);
        if (r < 0)
                return result_errno(q, r);
        if (q->call.path2) {
                r = resolve_arg(q, q->call.path2, q->call.dirfd2, &q->dir2_fd, 0, &res2);
                if (r == -EFAULT || r == -ENOMEM) {
                        gate_resolved_done(&res);
                        return fail_closed(q, r, "cannot read or resolve the path");
                }
                if (r < 0) {
                        gate_resolved_done(&res);
                        return result_errno(q, r);
                }
        }

        gate_call_ops(&q->call, ops, &n, ops2, &n2);
        check_file(q, &res, ops, n, &first);
        check_file(q, &res2, ops2, n2, &first);
        if (first) {
                /* Nothing had a path: the caller's own pipe or socket, reopened. */
                q->verdict = (GateVerdict) { .decision = DECISION_ALLOW };
                (void) snprintf(q->verdict.rule_id, sizeof(q->verdict.rule_id), "%s", "no-path");
        }
        if (res.path && res2.path) {
                if (asprintf(&q->target, "%s -> %s", res.path, res2.path) < 0)
                        q->target = NULL;
        } else
                q->target = strdup(res.path ?: res2.path ?: "(no path)");

        key = gate_cache_key_file(q->op ? file_op_from_string(q->op) : ops[0], res.path ?: strempty(res2.path));
        settle(q, key);
        if (q->verdict.decision == DECISION_ALLOW)
                emulate(q, &res, &res2);
        else
                result_errno(q, GATE_DENY_ERRNO);
        gate_resolved_done(&res);
        gate_resolved_done(&res2);
}

/* ---- the decision record ---- */

static void record(Request *q, uint64_t latency_ns) {
        const GateSupervisorConfig *c = q->s->config;
        _cleanup_(json_object_putp) json_object *o = NULL;
        bool local = q->event && streq(q->event, "local");
        const char *line;
        GateAuditRecord rec;

        if (!q->event)
                return;         /* nothing was decided (e.g. ENOENT from the resolution) */
        if (q->verdict.decision == DECISION_ALLOW && local && !c->verbose)
                return;         /* silent allows; an approved one is always recorded */

        rec = (GateAuditRecord) {
                .ts_ns = (int64_t) now_ns(CLOCK_REALTIME),
                .pid = (pid_t) q->n->pid,
                .kind = q->kind,
                .syscall = gate_syscall_name(q->call.sys),
                .op = q->kind == GATE_KIND_FILE ? q->op : NULL,
                .target = q->target,
                .rule_id = q->verdict.rule_id,
                .decision = q->verdict.decision,
                .event = q->event,
                .actor = q->actor[0] ? q->actor : NULL,
                .latency_ns = latency_ns,
                .error = q->result == RESULT_ERRNO ? q->error : 0,
                .message = q->reason[0] ? q->reason : q->verdict.message,
        };
        o = gate_audit_record_json(c->client, &rec);
        if (!o)
                return;
        if (c->log_fd >= 0) {
                _cleanup_free_ char *l = NULL;

                line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
                if (asprintf(&l, "%s\n", line) >= 0)
                        (void) loop_write(c->log_fd, l, strlen(l));
        }
        if (local)
                (void) gate_client_audit(c->client, o);
}

/* ---- workers ---- */

size_t gate_latency_bucket(uint64_t ns) {
        unsigned shift;

        if (ns < 2 * GATE_LATENCY_SUB)
                return (size_t) ns;
        shift = (unsigned) (63 - __builtin_clzll(ns)) - GATE_LATENCY_SUB_BITS;
        return (size_t) shift * GATE_LATENCY_SUB + (size_t) (ns >> shift);
}

uint64_t gate_latency_bucket_ns(size_t bucket) {
        unsigned shift;

        if (bucket < 2 * GATE_LATENCY_SUB)
                return bucket;
        shift = (unsigned) (bucket / GATE_LATENCY_SUB) - 1;
        return ((uint64_t) (bucket - (size_t) shift * GATE_LATENCY_SUB) << shift) + (UINT64_C(1) << shift) / 2;
}

static void handle(Worker *w, const struct seccomp_notif *n) {
        GateSupervisor *s = w->s;
        Request q = {
                .s = s,
                .w = w,
                .n = n,
                .mem_fd = -EBADF, .cwd_fd = -EBADF, .dir_fd = -EBADF, .dir2_fd = -EBADF, .fd = -EBADF,
                .pidfd = -EBADF,
                .umask = 022,
        };
        uint64_t t0 = now_ns(CLOCK_MONOTONIC), latency;
        int r;

        fs_change_seen(s, (pid_t) n->pid);
        r = gate_call_decode(n->data.nr, (const uint64_t *) n->data.args, &q.call);
        if (r < 0 || n->data.arch != seccomp_arch_native()) {
                fail_closed(&q, r < 0 ? r : -EINVAL, "unexpected syscall");
                goto answer;
        }
        if (q.call.action == GATE_ACTION_FS_CHANGE) {
                /* Nothing to decide: a umask or a cwd is the caller's own business; only what is kept of
                 * them is retired. */
                fs_change_begin(s, (pid_t) n->pid);
                (void) notif_send(s->notify_fd, n->id, 0, 0, true);
                return;
        }
        r = open_caller(&q);
        if (r == -ESRCH) {
                request_done(&q);
                close_deferred(w);
                return;         /* the caller is gone */
        }
        if (r < 0) {
                fail_closed(&q, r, "cannot open the caller's /proc entries");
                goto answer;
        }

        switch (q.call.action) {
        case GATE_ACTION_CONNECT:
                handle_connect(&q);
                break;
        case GATE_ACTION_BIND:
                handle_bind(&q);
                break;
        case GATE_ACTION_SEND:
                handle_send(&q);
                break;
        case GATE_ACTION_EXEC:
                handle_exec(&q);
                break;
        default:
                handle_file(&q);
                break;
        }

answer:
        /* Recorded before the answer: once the caller goes on (and maybe exits, and the agent with it), its
         * decision is in the log. */
        latency = now_ns(CLOCK_MONOTONIC) - t0;
        record(&q, latency);
        if (q.event && streq(q.event, "local")) {
                uint64_t decision = q.decided_ns > t0 ? q.decided_ns - t0 : latency;

                atomic_fetch_add_explicit(&s->stat_local, 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&s->stat_decision[gate_latency_bucket(decision)], 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&s->stat_answer[gate_latency_bucket(latency)], 1, memory_order_relaxed);
        } else if (q.event)
                atomic_fetch_add_explicit(&s->stat_approvals, 1, memory_order_relaxed);
        switch (q.result) {
        case RESULT_FD:
                r = notif_addfd_send(s->notify_fd, n->id, q.fd, q.fd_cloexec);
                /* The caller is gone (ENOENT), or over its fd limit (EMFILE): the latter it must hear. */
                if (r < 0 && r != -ENOENT)
                        (void) notif_send(s->notify_fd, n->id, -r, 0, false);
                break;
        case RESULT_CONTINUE:
                /* An exec replaces the caller's memory: no kept /proc/PID/mem may be read after it. */
                if (q.call.action == GATE_ACTION_EXEC)
                        atomic_fetch_add(&s->exec_epoch, 1);
                /* The id is checked by the kernel too; a dead caller's answer is simply refused. */
                (void) notif_send(s->notify_fd, n->id, 0, 0, true);
                break;
        case RESULT_VALUE:
                (void) notif_send(s->notify_fd, n->id, 0, q.val, false);
                break;
        case RESULT_ERRNO:
                (void) notif_send(s->notify_fd, n->id, q.error, 0, false);
                break;
        case RESULT_DEFERRED:
                break;
        }
        request_done(&q);
        close_deferred(w);
}

/* One worker receives the notifications and handles them one after the other; the next caller waits in
 * the kernel's queue meanwhile, which is cheaper than a second receiver: every thread waiting in
 * SECCOMP_IOCTL_NOTIF_RECV is woken for every notification (the kernel's wait is not exclusive), so idle
 * receivers cost each call a context switch apiece. But a call may block its worker for long (an
 * approval, a FIFO's open waiting for its writer, whose open is a trapped call too): a standby worker
 * watches the receiver's call_seq, odd while it handles a call, and becomes the receiver when the same
 * call is still being handled GATE_RECEIVER_SLOW_MS later; a new standby is started for it. The slow
 * worker, once done, becomes the standby, or ends when there is one already. The watch costs the
 * receiver two atomic increments a call and no syscall: the standby looks every GATE_RECEIVER_SLOW_MS
 * while calls come, and after GATE_STANDBY_IDLE_LOOKS looks at an idle receiver it sleeps on call_seq
 * (a futex), which the next call wakes. */
#define GATE_RECEIVER_SLOW_MS 5
#define GATE_STANDBY_IDLE_LOOKS 20

static void *worker(void *userdata);

static void futex_wait_while(_Atomic uint32_t *word, uint32_t value) {
        (void) syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *word) {
        (void) syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* The receiver, between receiving a call and handling it. */
static void call_begin(GateSupervisor *s) {
        atomic_fetch_add(&s->call_seq, 1);
        if (atomic_load(&s->standbys_asleep) > 0)
                futex_wake_all(&s->call_seq);
}

/* Under s->lock. */
static void spawn_worker_locked(GateSupervisor *s, bool receiver) {
        pthread_attr_t attr;
        pthread_t t;
        Worker *w;
        int r;

        /* The workers waiting in a send are not counted (GATE_SEND_WAITS_MAX caps them). */
        if (s->workers - s->send_waits >= GATE_WORKERS_MAX)
                return;
        w = calloc(1, sizeof(*w));
        if (!w) {
                log_warning("Cannot start another gate worker, callers may wait: %m");
                return;
        }
        w->s = s;
        for (size_t i = 0; i < GATE_CALLER_CACHE_MAX; i++)
                w->callers[i] = (CallerHandles) { .dir_fd = -EBADF, .pidfd = -EBADF, .mem_fd = -EBADF, .status_fd = -EBADF };
        w->mem_cache = (GateMemCache) GATE_MEM_CACHE_NULL;
        w->proc_fd = -EBADF;
        if (receiver)
                w->receiver = ++s->receiver;
        r = pthread_attr_init(&attr);
        if (r == 0) {
                (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                r = pthread_create(&t, &attr, worker, w);
                (void) pthread_attr_destroy(&attr);
        }
        if (r != 0) {
                log_warning_errno(r, "Cannot start another gate worker, callers may wait: %m");
                free(w);
                return;
        }
        s->workers++;
        if (!receiver)
                s->standbys++;
}

static void worker_free(Worker *w) {
        for (size_t i = 0; i < GATE_CALLER_CACHE_MAX; i++)
                caller_handles_forget(w, &w->callers[i]);
        close_deferred(w);
        gate_mem_cache_done(&w->mem_cache);
        gate_script_cache_done(&w->script_cache);
        safe_close(w->proc_fd);
        free(w);
}

/* Waits until the receiver is slow, then takes its place. */
static void standby(Worker *w) {
        GateSupervisor *s = w->s;
        const struct timespec look = { .tv_nsec = GATE_RECEIVER_SLOW_MS * 1000000L };
        unsigned idle = 0;

        for (;;) {
                uint32_t seq = atomic_load(&s->call_seq), now;

                if (!(seq & 1) && idle >= GATE_STANDBY_IDLE_LOOKS) {
                        /* The store is seen by call_begin(), or the futex sees its increment. */
                        atomic_fetch_add(&s->standbys_asleep, 1);
                        futex_wait_while(&s->call_seq, seq);
                        atomic_fetch_sub(&s->standbys_asleep, 1);
                        idle = 0;
                        continue;
                }
                (void) clock_nanosleep(CLOCK_MONOTONIC, 0, &look, NULL);
                now = atomic_load(&s->call_seq);
                if (now != seq || !(seq & 1)) {
                        idle = now == seq ? idle + 1 : 0;
                        continue;
                }

                /* The same call for a whole look: take over, unless it ended meanwhile. */
                pthread_mutex_lock(&s->lock);
                if (atomic_load(&s->call_seq) != seq) {
                        pthread_mutex_unlock(&s->lock);
                        continue;
                }
                s->standbys--;
                w->receiver = ++s->receiver;    /* the slow one finds out when it is done */
                atomic_fetch_add(&s->call_seq, 1);      /* even: the new receiver has no call yet */
                if (s->standbys == 0)
                        spawn_worker_locked(s, false);
                pthread_mutex_unlock(&s->lock);
                return;
        }
}

/* After a call: false when another worker took over receiving meanwhile and there is a standby already. */
static bool worker_done(Worker *w) {
        GateSupervisor *s = w->s;
        bool go_on = true;

        pthread_mutex_lock(&s->lock);
        if (w->receiver == s->receiver)
                atomic_fetch_add(&s->call_seq, 1);      /* even again; under the lock, as a takeover is */
        else if (s->standbys > 0) {
                s->workers--;
                go_on = false;
        } else {
                w->receiver = 0;
                s->standbys++;
        }
        pthread_mutex_unlock(&s->lock);
        return go_on;
}

static void *worker(void *userdata) {
        Worker *w = userdata;
        GateSupervisor *s = w->s;
        const GateSupervisorConfig *c = s->config;
        struct seccomp_notif n;
        int r;

        /* The agent's groups and ids: from here on this thread acts as the caller, and becomes root only to
         * reach the gate's socket. (No unshare(CLONE_FS) for a umask of its own: Docker's default seccomp
         * profile refuses unshare; the supervisor's umask is 0 and caller_mode() applies the caller's.) */
        /* A worker started by another worker inherits the agent's credentials: root first, for setgroups. */
        r = thread_become_root();
        if (r < 0)
                fatal_credentials(r);
        if (syscall(SYS_setgroups, c->n_groups, c->groups) < 0)
                fatal_credentials(-errno);
        r = thread_become_agent(c);
        if (r < 0)
                fatal_credentials(r);

        for (;;) {
                if (w->receiver == 0)
                        standby(w);

                memset(&n, 0, sizeof(n));       /* the kernel insists */
                r = ioctl(s->notify_fd, SECCOMP_IOCTL_NOTIF_RECV, &n);
                if (r < 0) {
                        if (errno == EINTR || errno == ENOENT)
                                continue;       /* the caller went away before we took it */
                        log_error_errno(errno, "Cannot receive seccomp notifications, the gate stops: %m");
                        _exit(125);     /* the agent dies with us (PDEATHSIG): never unguarded */
                }
                /* Nobody else receives while this call is handled: if it takes long, the standby will. */
                call_begin(s);
                handle(w, &n);
                if (!worker_done(w))
                        break;
        }
        worker_free(w);
        return NULL;
}

int gate_supervisor_start(const GateSupervisorConfig *c, int notify_fd, GateSupervisor **ret) {
        GateSupervisor *s;
        struct seccomp_notif_sizes sizes = {};
        int r;

        /* The structs of our headers must be the kernel's. */
        if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0)
                return -errno;
        if (sizes.seccomp_notif != sizeof(struct seccomp_notif) ||
            sizes.seccomp_notif_resp != sizeof(struct seccomp_notif_resp))
                return -EPROTO;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->config = c;
        s->notify_fd = notify_fd;
        /* Every mode the supervisor creates with is already masked with the caller's umask. */
        (void) umask(0);
        if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) < 0)
                log_debug_errno(errno, "No synchronous wake-ups for seccomp notifications, ignoring: %m");
        pthread_mutex_init(&s->lock, NULL);
        s->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (s->root_fd < 0) {
                r = -errno;
                free(s);
                return r;
        }
        pthread_mutex_lock(&s->lock);
        spawn_worker_locked(s, true);
        for (unsigned i = 1; i < GATE_WORKERS_MIN; i++)
                spawn_worker_locked(s, false);
        pthread_mutex_unlock(&s->lock);
        if (s->workers == 0) {
                safe_close(s->root_fd);
                free(s);
                return -EAGAIN;
        }
        *ret = s;
        return 0;
}

void gate_supervisor_stats(GateSupervisor *s, GateSupervisorStats *ret) {
        GateSupervisorStats st = {
                .local = atomic_load(&s->stat_local),
                .approvals = atomic_load(&s->stat_approvals),
        };

        for (size_t i = 0; i < GATE_LATENCY_BUCKETS; i++) {
                st.decision[i] = atomic_load(&s->stat_decision[i]);
                st.answer[i] = atomic_load(&s->stat_answer[i]);
        }
        *ret = st;
}

uint64_t gate_stats_permille_ns(const uint64_t histogram[static GATE_LATENCY_BUCKETS], unsigned permille) {
        uint64_t total = 0, seen = 0;

        for (size_t i = 0; i < GATE_LATENCY_BUCKETS; i++)
                total += histogram[i];
        if (total == 0)
                return 0;
        for (size_t i = 0; i < GATE_LATENCY_BUCKETS; i++) {
                seen += histogram[i];
                if (seen * 1000 >= total * permille)
                        return gate_latency_bucket_ns(i);
        }
        return gate_latency_bucket_ns(GATE_LATENCY_BUCKETS - 1);
}

int gate_supervisor_probe(const GateSupervisorConfig *c, pid_t pid) {
        _cleanup_close_ int fd = -EBADF;
        int r, q;

        r = thread_become_agent(c);
        if (r < 0)
                return r;
        fd = open_proc(pid, "mem", O_RDONLY);
        q = thread_become_root();
        if (q < 0)
                return q;
        /* The ptrace check happens at the open: reads need nothing more. */
        return fd < 0 ? fd : 0;
}

/* ---- the filter ---- */

/* clone()'s flags: the first argument, the second on s390. */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG SCMP_A1
#else
#define CLONE_FLAGS_ARG SCMP_A0
#endif

/* A filter for the native architecture only: i386 (int 0x80) and, on x86_64, x32 syscall numbers take the
 * bad-architecture action, which kills the process. TSYNC: every thread gets it. */
static int filter_new(bool logged, scmp_filter_ctx *ret) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        int r;

        if (!ctx)
                return -ENOMEM;
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                return r;
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
        if (r < 0)
                return r;
        if (logged && seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1) < 0)
                log_debug("No SECCOMP_FILTER_FLAG_LOG here: the gate's own refusals leave no audit record.");
        *ret = TAKE_PTR(ctx);
        return 0;
}

/* Two filters. The first traps the gate's calls (a listener) and hides clone3 (ENOSYS, which libc falls
 * back from on every new thread: not worth a record). The second, loaded last so that the kernel reports
 * its verdicts (of filters that agree, the newest), refuses what would get around the gate, with
 * SECCOMP_FILTER_FLAG_LOG: each refusal is a kernel audit record, like the workload profile's. The flag
 * cannot go on the first, where it would log every trapped call too. */
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#define GATE_FILTER_BYTES_MAX (1024U * 1024U)

/* Loads ctx's program as a filter with a listener, and with WAIT_KILLABLE_RECV where the kernel has it
 * (5.19): once the supervisor has received a call, only a fatal signal interrupts the caller's wait, so
 * a call the supervisor performed is never restarted and performed again (a mkdir or an O_EXCL create
 * then saying EEXIST, which breaks lock files under Go's SIGURG). libseccomp 2.5 cannot ask for that
 * flag: the program is exported and loaded here. The caller is the agent's process before its exec, a
 * single thread, so no TSYNC is needed. Returns the listener fd. */
static int filter_load_listener(scmp_filter_ctx ctx) {
        _cleanup_close_ int memfd = memfd_create("gate-filter", MFD_CLOEXEC);
        _cleanup_free_ struct sock_filter *insns = NULL;
        struct sock_fprog prog;
        off_t size;
        long fd;
        int r;

        if (memfd < 0)
                return -errno;
        r = seccomp_export_bpf(ctx, memfd);
        if (r < 0)
                return r;
        size = lseek(memfd, 0, SEEK_END);
        if (size <= 0 || size > (off_t) GATE_FILTER_BYTES_MAX || size % (off_t) sizeof(struct sock_filter) != 0)
                return -EINVAL;
        insns = malloc((size_t) size);
        if (!insns)
                return -ENOMEM;
        if (loop_pread(memfd, insns, (size_t) size, 0) != (ssize_t) size)
                return -EIO;
        prog = (struct sock_fprog) { .len = (unsigned short) (size / (off_t) sizeof(struct sock_filter)), .filter = insns };
        fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                     SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
        if (fd < 0 && errno == EINVAL) {
                log_debug("The kernel has no SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: a call interrupted by a "
                          "signal may be performed twice.");
                fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        }
        return fd < 0 ? -errno : (int) fd;
}

int gate_filter_install(int *ret_notify_fd) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL, deny = NULL;
        static const char * const denied[] = { GATE_DENIED_SYSCALLS };
        static const uint64_t setflags[] = { FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS };
        int r, fd;

        r = filter_new(false, &ctx);
        if (r < 0)
                return r;
        r = filter_new(true, &deny);
        if (r < 0)
                return r;
        for (GateSyscall s = 0; s < _GATE_SYS_MAX; s++) {
                long nr = gate_syscall_nr(s);

                if (nr < 0)
                        continue;
                if (s == GATE_SYS_SENDTO)
                        /* Only with an address: send() and sendto(NULL) on a connected socket go to the
                         * peer its connect (decided) chose, and cost nothing. */
                        r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, (int) nr, 1, SCMP_A4(SCMP_CMP_NE, 0));
                else
                        r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, (int) nr, 0);
                if (r < 0)
                        return log_debug_errno(r, "Cannot trap %s: %m", gate_syscall_name(s));
        }
        /* clone3() passes its flags in memory, out of the filter's sight: ENOSYS, and libc falls back to
         * clone(), whose flags the second filter sees. */
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        if (r < 0)
                return r;
        /* Paths are resolved in the supervisor's root and mount namespace, which the agent shares from the
         * start: it may never leave them. It holds no capability for chroot, pivot_root, setns or a new
         * mount namespace, and no user namespace may give it one; refusing them here as well makes that
         * hold by this filter alone, whatever the engine's profile, so no caller's root is ever looked
         * at. */
        r = seccomp_rule_add(deny, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
        if (r < 0)
                return r;
        r = seccomp_rule_add(deny, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWNS, CLONE_NEWNS));
        if (r < 0)
                return r;
        r = seccomp_rule_add(deny, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                             CLONE_FLAGS_ARG(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
        if (r < 0)
                return r;
        r = seccomp_rule_add(deny, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                             CLONE_FLAGS_ARG(SCMP_CMP_MASKED_EQ, CLONE_NEWNS, CLONE_NEWNS));
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
                int nr = seccomp_syscall_resolve_name(denied[i]);

                if (nr == __NR_SCMP_ERROR)
                        return -ENOSYS;
                r = seccomp_rule_add(deny, SCMP_ACT_ERRNO(EPERM), nr, 0);
                if (r < 0)
                        return r;
        }
        /* The policy compares names byte for byte: a directory made to fold case (+F) would let another
         * spelling pass its rules (see gate_resolved_fold_from()). The flags are behind a pointer, so
         * SETFLAGS is refused whatever it sets; the kernel reads the request as 32 bits, and so does the
         * rule. */
        for (size_t i = 0; i < ELEMENTSOF(setflags); i++) {
                r = seccomp_rule_add(deny, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                                     SCMP_A1(SCMP_CMP_MASKED_EQ, UINT64_C(0xffffffff), setflags[i]));
                if (r < 0)
                        return r;
        }
        fd = filter_load_listener(ctx);
        if (fd < 0)
                return fd;
        r = seccomp_load(deny);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        *ret_notify_fd = fd;
        return 0;
}
