/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Path resolution on behalf of a trapped caller, one component at a time with O_PATH|O_NOFOLLOW, so the
 * supervisor ends up holding the very objects it checked and acts on them (the fd or the directory and
 * name) instead of resolving the path a second time. Run it with the caller's filesystem credentials:
 * search permissions are the caller's.
 *
 * Resolving in the supervisor would get three things wrong that the kernel would get right for the caller:
 * /proc/self and /proc/thread-self (they name whoever resolves them) are replaced by the caller's pid;
 * magic links (/proc/PID/fd/N, cwd, root, exe) are followed by the kernel, so /dev/stdin reaches the
 * caller's pipe; and the root is the caller's (".." never leaves it, absolute symlinks start from it).
 * The caller's root must be the supervisor's (same mount), which the supervisor checks first: paths are
 * reported as the supervisor's /proc/self/fd links read them. */

#include <stdbool.h>
#include <sys/types.h>

#include "macro.h"

#define GATE_RESOLVE_FOLLOW        (1U << 0)    /* follow a symlink in the last component */
#define GATE_RESOLVE_NO_SYMLINKS   (1U << 1)    /* openat2's RESOLVE_NO_SYMLINKS: -ELOOP on any symlink */
#define GATE_RESOLVE_NO_MAGICLINKS (1U << 2)    /* RESOLVE_NO_MAGICLINKS: -ELOOP on a /proc magic link */
#define GATE_RESOLVE_BENEATH       (1U << 3)    /* RESOLVE_BENEATH: leaving start_fd fails with -EXDEV */
#define GATE_RESOLVE_IN_ROOT       (1U << 4)    /* RESOLVE_IN_ROOT: start_fd is the root */
#define GATE_RESOLVE_EMPTY_PATH    (1U << 5)    /* AT_EMPTY_PATH: "" names start_fd itself */
#define GATE_RESOLVE_OBJECT_ONLY   (1U << 6)    /* only fd and path are wanted: dir_fd and name may be unset
                                                 * when the object exists */

#define GATE_RESOLVE_SYMLINKS_MAX 40U           /* the kernel's MAXSYMLINKS */

typedef struct GateResolveContext {
        int root_fd;            /* O_PATH fd of the caller's root */
        pid_t tid;              /* the caller's thread, in the supervisor's pid namespace */
        pid_t tgid;             /* its process; 0 until /proc/self needs it */
        pid_t supervisor;       /* a process whose magic links (/proc/N/fd/M, cwd, root, exe) are not
                                 * followed for the caller: -EPERM, and supervisor_hit set. 0: none */
        bool supervisor_hit;
} GateResolveContext;

typedef struct GateResolved {
        int dir_fd;             /* O_PATH: the directory holding name; -EBADF when the path ends in ".", "..",
                                 * "/", "" or a magic link */
        char *name;             /* the last component; NULL as for dir_fd */
        int fd;                 /* O_PATH (a symlink itself when not followed): the object; -EBADF when it
                                 * does not exist (then dir_fd and name say where it would be created) */
        char *path;             /* absolute and clean: what the policy checks. NULL when the object has no
                                 * path: a pipe, socket, memfd or deleted file reached through a magic link */
        bool via_magic_link;    /* the object was reached through a /proc magic link */
        bool must_be_dir;       /* the path ended in '/' */
} GateResolved;

#define GATE_RESOLVED_NULL { .dir_fd = -EBADF, .fd = -EBADF }

/* Resolves path relative to start_fd (an O_PATH directory: the caller's cwd or dirfd; with BENEATH or
 * IN_ROOT also the root). Errors are what the caller's syscall would get: -ENOENT for a missing
 * directory on the way, -ENOTDIR, -ELOOP, -EXDEV, -EACCES, -ENAMETOOLONG. */
int gate_resolve(GateResolveContext *ctx, int start_fd, const char *path, unsigned flags, GateResolved *ret);
void gate_resolved_done(GateResolved *r);

/* The path of an fd as /proc/self/fd/N shows it (the kernel's d_path). */
int gate_fd_path(int fd, char **ret);

/* Where the path of r starts to lie in directories that fold case (fs-util.h: casefold_possible()): the
 * offset in r->path of the first component whose directory folds, from the directory r's name is in (or
 * the object's parent) up to the root, each asked with FS_IOC_GETFLAGS; SIZE_MAX when none does or the
 * kernel cannot fold. A directory whose flags cannot be read (not readable to the caller) is taken to
 * fold, so is one whose parent cannot be found. root_fd is the caller's root. */
int gate_resolved_fold_from(const GateResolved *r, int root_fd, size_t *ret);
/* The same walk whether the kernel can fold or not (for tests: a kernel without the tables answers
 * every directory "does not fold"). */
int gate_resolved_fold_walk(const GateResolved *r, int root_fd, size_t *ret);
