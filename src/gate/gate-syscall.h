/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What `loop syscallwrap` traps, and how one trapped call is read: the table of trapped syscalls, the
 * decoding of their raw arguments into one shape (GateCall), the file operation each one is checked as,
 * and bounded reads of strings and argv from the caller's memory (/proc/PID/mem).
 *
 * The reference traps the twelve *at-style syscalls. A static binary can call the old path syscalls
 * directly (open, creat, rename, unlink, rmdir, mkdir, mknod, link, symlink, chmod, chown, lchown, and
 * truncate, which writes without any open), so where the architecture has them they are trapped too and
 * handled as their *at counterpart. fchmodat2 (Linux 6.6) is trapped by number. umask, chdir and fchdir
 * are trapped but never checked: the supervisor creates files with the caller's umask and resolves
 * relative paths against its cwd, and keeps what it read of both until one of these calls says they
 * change, instead of reading /proc/PID/status and /proc/PID/cwd for every call. */

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "gate-policy.h"

typedef enum GateSyscall {
        GATE_SYS_CONNECT,
        GATE_SYS_BIND,
        GATE_SYS_EXECVE,
        GATE_SYS_EXECVEAT,
        GATE_SYS_OPENAT,
        GATE_SYS_OPENAT2,
        GATE_SYS_RENAMEAT2,
        GATE_SYS_UNLINKAT,
        GATE_SYS_LINKAT,
        GATE_SYS_SYMLINKAT,
        GATE_SYS_FCHMODAT,
        GATE_SYS_FCHOWNAT,
        GATE_SYS_MKDIRAT,
        /* beyond the reference's twelve */
        GATE_SYS_FCHMODAT2,
        GATE_SYS_MKNODAT,
        GATE_SYS_RENAMEAT,
        GATE_SYS_OPEN,
        GATE_SYS_CREAT,
        GATE_SYS_RENAME,
        GATE_SYS_UNLINK,
        GATE_SYS_RMDIR,
        GATE_SYS_MKDIR,
        GATE_SYS_MKNOD,
        GATE_SYS_LINK,
        GATE_SYS_SYMLINK,
        GATE_SYS_CHMOD,
        GATE_SYS_CHOWN,
        GATE_SYS_LCHOWN,
        GATE_SYS_TRUNCATE,
        /* performed by the supervisor; sendto only with an address (the filter looks at the argument) */
        GATE_SYS_SENDTO,
        GATE_SYS_SENDMSG,
        GATE_SYS_SENDMMSG,
        /* not checked: they only tell the supervisor that the caller's umask or cwd changes */
        GATE_SYS_UMASK,
        GATE_SYS_CHDIR,
        GATE_SYS_FCHDIR,
        _GATE_SYS_MAX,
        _GATE_SYS_INVALID = -EINVAL,
} GateSyscall;

/* Refused outright, with EPERM: io_uring performs calls out of the filter's sight; Linux AIO (io_setup and
 * the calls on its context) writes a read's data into the caller's memory when the device completes it,
 * after io_submit returned (O_DIRECT), so a read submitted just before an exec can land on the filename or
 * an argument after the gate has read them and before the kernel copies them (gate-mm.h proves no other
 * task writes those pages, not that no I/O does); chroot, pivot_root and setns would move the agent out
 * of the root and mount namespace the supervisor resolves its paths in; kcmp, which the workload profile
 * leaves for KCMP_VM (the supervisor's, gate-mm.h), the agent never needs. */
#define GATE_DENIED_SYSCALLS "io_uring_setup", "io_uring_enter", "io_uring_register", \
        "io_setup", "io_submit", "io_cancel", "io_getevents", "io_pgetevents", "io_destroy", \
        "chroot", "pivot_root", "setns", "kcmp"

const char *gate_syscall_name(GateSyscall s);
/* The native syscall number, or -1 when this architecture does not have the syscall. */
long gate_syscall_nr(GateSyscall s);
/* _GATE_SYS_INVALID for a number that is not trapped. */
GateSyscall gate_syscall_from_nr(long nr);

/* What the supervisor does with a call. */
typedef enum GateAction {
        GATE_ACTION_CONNECT,    /* performed by the supervisor on the caller's socket */
        GATE_ACTION_BIND,       /* the same; a pathname socket is a create of its path */
        GATE_ACTION_EXEC,       /* checked, then the kernel continues it */
        GATE_ACTION_OPEN,       /* emulated: opened by the supervisor, the fd injected */
        GATE_ACTION_MKDIR,      /* the rest: emulated, the result returned */
        GATE_ACTION_MKNOD,
        GATE_ACTION_UNLINK,
        GATE_ACTION_RENAME,
        GATE_ACTION_LINK,
        GATE_ACTION_SYMLINK,
        GATE_ACTION_CHMOD,
        GATE_ACTION_CHOWN,
        GATE_ACTION_TRUNCATE,
        GATE_ACTION_SEND,       /* performed by the supervisor on the caller's socket, with what it read */
        GATE_ACTION_FS_CHANGE,  /* continued unchecked: the supervisor keeps callers' umask and cwd */
        _GATE_ACTION_MAX,
        _GATE_ACTION_INVALID = -EINVAL,
} GateAction;

/* One trapped call in one shape, whatever the syscall. Addresses are in the caller's memory. */
typedef struct GateCall {
        GateSyscall sys;
        GateAction action;
        int dirfd;              /* AT_FDCWD or the caller's fd for path */
        uint64_t path;          /* the path (connect, bind, sendto: the sockaddr; exec: the filename) */
        int dirfd2;             /* rename and link: the new name's directory */
        uint64_t path2;         /* rename and link: the new name; symlink: the new link's name */
        uint64_t target;        /* symlink: the link's content */
        uint64_t argv;          /* exec */
        uint64_t how;           /* openat2: struct open_how */
        uint64_t size;          /* connect, bind, sendto: addrlen; openat2: sizeof(struct open_how); truncate: length */
        uint64_t flags;         /* send flags, open flags, AT_* flags (unlinkat's AT_REMOVEDIR too), RENAME_* flags */
        uint32_t mode;          /* open, mkdir, mknod, chmod; umask: the new mask */
        uint64_t dev;           /* mknod */
        uint32_t uid, gid;      /* chown; (uint32_t) -1 is "unchanged" */
        uint64_t data, data_len;        /* sendto: the buffer (its address is path, its length size) */
        uint64_t msg;           /* sendmsg: the struct msghdr; sendmmsg: the struct mmsghdr array */
        uint32_t vlen;          /* sendmmsg: the number of messages */
        bool follow;            /* whether the last component of path is followed when it is a symlink */
} GateCall;

/* Decodes the raw arguments of a trapped call: -EINVAL for a number that is not trapped. Pure. */
int gate_call_decode(long nr, const uint64_t args[6], GateCall *ret);

/* The operation an open is checked as: O_PATH -> stat; O_CREAT or O_TMPFILE -> create; O_WRONLY, O_RDWR,
 * O_TRUNC or O_APPEND -> write; O_DIRECTORY -> list; else read. */
FileOp gate_open_op(uint64_t flags);

/* The operations a file call is checked as, first on path, then (rename, link) on the new name. Every
 * listed operation must be allowed; the strictest verdict wins. A rename takes the old name away
 * (delete), hands its content to another name (read: a read denied by name must not fall to the next
 * name) and writes the new one (create, write: it replaces what was there); a hard link gives the file a
 * second name, which must not grant what the first denies (link, write, read on the old name; create on
 * the new one); a symlink is a new name (link, create). Returns the number of operations written to
 * ret_ops (at most GATE_CALL_OPS_MAX) for each of the two paths. */
#define GATE_CALL_OPS_MAX 4
void gate_call_ops(const GateCall *c, FileOp ret_ops[GATE_CALL_OPS_MAX], size_t *ret_n,
                   FileOp ret_ops2[GATE_CALL_OPS_MAX], size_t *ret_n2);

/* Caps on what is read from a caller: a path (or symlink content) of at most PATH_MAX bytes with its NUL,
 * at most GATE_ARGV_MAX arguments of GATE_ARGV_BYTES_MAX bytes in all (the kernel's default ARG_MAX is
 * 2 MiB). A string not terminated within its cap is refused, never cut. */
#define GATE_PATH_MAX PATH_MAX
#define GATE_ARGV_MAX 16384U
#define GATE_ARGV_BYTES_MAX (2U * 1024U * 1024U)

/* The size of a page of memory (sysconf(_SC_PAGESIZE), asked once). */
size_t gate_page_size(void);

/* Reads exactly size bytes at addr: -EFAULT when they are not all mapped (or addr is 0). */
int gate_mem_read(int mem_fd, uint64_t addr, void *buf, size_t size);
/* Reads a NUL-terminated string of at most max bytes including the NUL; -ENAMETOOLONG when there is no
 * NUL within max, -EFAULT when unreadable. Reads page by page, so a string that ends just before an
 * unmapped page is read. ret_len (may be NULL) excludes the NUL. */
int gate_mem_read_string(int mem_fd, uint64_t addr, size_t max, char **ret, size_t *ret_len);
/* Reads a NULL-terminated argv: -E2BIG beyond max_args entries or max_bytes bytes of strings (NULs
 * included), -EFAULT when unreadable. A NULL argv address reads as an empty argv (the kernel allows it). */
int gate_mem_read_argv(int mem_fd, uint64_t addr, size_t max_args, size_t max_bytes, char ***ret);

/* The caller's memory read a chunk at a time and kept for one decision: an exec's filename, argv array
 * and strings mostly share a chunk or two, each one read. GATE_MEM_CHUNK-aligned chunks never straddle a
 * page. The same reads as above, with the same results and caps, plus -E2BIG past
 * GATE_MEM_CACHE_CHUNKS_MAX chunks (a few thousand strings each on a page of its own). To read the
 * memory again as it is now, reset the cache first. */
#define GATE_MEM_CHUNK 4096U
#define GATE_MEM_CACHE_CHUNKS_MAX 1024U        /* 4 MiB: twice GATE_ARGV_BYTES_MAX */
#define GATE_MEM_CACHE_KEEP 16U                /* chunks' worth of memory kept from one use to the next */
typedef struct GateMemCache {
        int fd;                                 /* /proc/PID/mem, not owned */
        size_t n, n_alloc;
        uint64_t *addr;                         /* the chunks' addresses */
        uint8_t *data;                          /* n_alloc * GATE_MEM_CHUNK bytes */
        size_t last;                            /* the chunk read from last */
} GateMemCache;
#define GATE_MEM_CACHE_NULL { .fd = -EBADF }
void gate_mem_cache_reset(GateMemCache *c, int mem_fd);
void gate_mem_cache_done(GateMemCache *c);
int gate_mem_cache_read_string(GateMemCache *c, uint64_t addr, size_t max, char **ret, size_t *ret_len);
int gate_mem_cache_read_argv(GateMemCache *c, uint64_t addr, size_t max_args, size_t max_bytes, char ***ret);
