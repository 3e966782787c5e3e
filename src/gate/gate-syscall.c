/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>

#include "gate-syscall.h"
#include "io-util.h"
#include "strv.h"

/* Debian 12's headers predate fchmodat2 (Linux 6.6); its number is the same on every architecture. */
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif

typedef struct GateSyscallInfo {
        const char *name;
        long nr;
} GateSyscallInfo;

static const GateSyscallInfo syscall_table[_GATE_SYS_MAX] = {
        [GATE_SYS_CONNECT]   = { "connect",   __NR_connect },
        [GATE_SYS_BIND]      = { "bind",      __NR_bind },
        [GATE_SYS_EXECVE]    = { "execve",    __NR_execve },
        [GATE_SYS_EXECVEAT]  = { "execveat",  __NR_execveat },
        [GATE_SYS_OPENAT]    = { "openat",    __NR_openat },
        [GATE_SYS_OPENAT2]   = { "openat2",   __NR_openat2 },
        [GATE_SYS_RENAMEAT2] = { "renameat2", __NR_renameat2 },
        [GATE_SYS_UNLINKAT]  = { "unlinkat",  __NR_unlinkat },
        [GATE_SYS_LINKAT]    = { "linkat",    __NR_linkat },
        [GATE_SYS_SYMLINKAT] = { "symlinkat", __NR_symlinkat },
        [GATE_SYS_FCHMODAT]  = { "fchmodat",  __NR_fchmodat },
        [GATE_SYS_FCHOWNAT]  = { "fchownat",  __NR_fchownat },
        [GATE_SYS_MKDIRAT]   = { "mkdirat",   __NR_mkdirat },
        [GATE_SYS_FCHMODAT2] = { "fchmodat2", __NR_fchmodat2 },
        [GATE_SYS_MKNODAT]   = { "mknodat",   __NR_mknodat },
#ifdef __NR_renameat
        [GATE_SYS_RENAMEAT]  = { "renameat",  __NR_renameat },
#else
        [GATE_SYS_RENAMEAT]  = { "renameat",  -1 },
#endif
#ifdef __NR_open
        [GATE_SYS_OPEN]      = { "open",      __NR_open },
        [GATE_SYS_CREAT]     = { "creat",     __NR_creat },
        [GATE_SYS_RENAME]    = { "rename",    __NR_rename },
        [GATE_SYS_UNLINK]    = { "unlink",    __NR_unlink },
        [GATE_SYS_RMDIR]     = { "rmdir",     __NR_rmdir },
        [GATE_SYS_MKDIR]     = { "mkdir",     __NR_mkdir },
        [GATE_SYS_MKNOD]     = { "mknod",     __NR_mknod },
        [GATE_SYS_LINK]      = { "link",      __NR_link },
        [GATE_SYS_SYMLINK]   = { "symlink",   __NR_symlink },
        [GATE_SYS_CHMOD]     = { "chmod",     __NR_chmod },
        [GATE_SYS_CHOWN]     = { "chown",     __NR_chown },
        [GATE_SYS_LCHOWN]    = { "lchown",    __NR_lchown },
#else   /* the generic syscall table (arm64, riscv64) has only the *at variants */
        [GATE_SYS_OPEN]      = { "open",      -1 },
        [GATE_SYS_CREAT]     = { "creat",     -1 },
        [GATE_SYS_RENAME]    = { "rename",    -1 },
        [GATE_SYS_UNLINK]    = { "unlink",    -1 },
        [GATE_SYS_RMDIR]     = { "rmdir",     -1 },
        [GATE_SYS_MKDIR]     = { "mkdir",     -1 },
        [GATE_SYS_MKNOD]     = { "mknod",     -1 },
        [GATE_SYS_LINK]      = { "link",      -1 },
        [GATE_SYS_SYMLINK]   = { "symlink",   -1 },
        [GATE_SYS_CHMOD]     = { "chmod",     -1 },
        [GATE_SYS_CHOWN]     = { "chown",     -1 },
        [GATE_SYS_LCHOWN]    = { "lchown",    -1 },
#endif
        [GATE_SYS_TRUNCATE]  = { "truncate",  __NR_truncate },
        [GATE_SYS_SENDTO]    = { "sendto",    __NR_sendto },
        [GATE_SYS_SENDMSG]   = { "sendmsg",   __NR_sendmsg },
        [GATE_SYS_SENDMMSG]  = { "sendmmsg",  __NR_sendmmsg },
        [GATE_SYS_UMASK]     = { "umask",     __NR_umask },
        [GATE_SYS_CHDIR]     = { "chdir",     __NR_chdir },
        [GATE_SYS_FCHDIR]    = { "fchdir",    __NR_fchdir },
};

const char *gate_syscall_name(GateSyscall s) {
        return s >= 0 && s < _GATE_SYS_MAX ? syscall_table[s].name : NULL;
}

long gate_syscall_nr(GateSyscall s) {
        return s >= 0 && s < _GATE_SYS_MAX ? syscall_table[s].nr : -1;
}

GateSyscall gate_syscall_from_nr(long nr) {
        if (nr < 0)
                return _GATE_SYS_INVALID;
        for (GateSyscall s = 0; s < _GATE_SYS_MAX; s++)
                if (syscall_table[s].nr == nr)
                        return s;
        return _GATE_SYS_INVALID;
}

/* The kernel reads fds and flags of these syscalls as int. */
static int arg_int(uint64_t v) {
        return (int) (uint32_t) v;
}

int gate_call_decode(long nr, const uint64_t a[6], GateCall *ret) {
        GateSyscall s = gate_syscall_from_nr(nr);
        GateCall c = {
                .sys = s,
                .dirfd = AT_FDCWD,
                .dirfd2 = AT_FDCWD,
                .uid = UINT32_MAX,
                .gid = UINT32_MAX,
                .follow = true,
        };

        switch (s) {
        case GATE_SYS_CONNECT:
        case GATE_SYS_BIND:
                c.action = s == GATE_SYS_BIND ? GATE_ACTION_BIND : GATE_ACTION_CONNECT;
                c.dirfd = arg_int(a[0]);        /* the socket */
                c.path = a[1];
                c.size = (uint32_t) a[2];
                break;
        case GATE_SYS_EXECVE:
                c.action = GATE_ACTION_EXEC;
                c.path = a[0];
                c.argv = a[1];
                break;
        case GATE_SYS_EXECVEAT:
                c.action = GATE_ACTION_EXEC;
                c.dirfd = arg_int(a[0]);
                c.path = a[1];
                c.argv = a[2];
                c.flags = (uint32_t) a[4];
                c.follow = !(c.flags & AT_SYMLINK_NOFOLLOW);
                break;
        case GATE_SYS_OPEN:
        case GATE_SYS_CREAT:
        case GATE_SYS_OPENAT:
                c.action = GATE_ACTION_OPEN;
                if (s == GATE_SYS_OPENAT) {
                        c.dirfd = arg_int(a[0]);
                        a++;
                }
                c.path = a[0];
                if (s == GATE_SYS_CREAT) {
                        c.flags = O_CREAT | O_WRONLY | O_TRUNC;
                        c.mode = (uint32_t) a[1];
                } else {
                        c.flags = (uint32_t) a[1];
                        c.mode = (uint32_t) a[2];
                }
                /* O_CREAT|O_EXCL fails on a symlink instead of following it. */
                c.follow = !(c.flags & O_NOFOLLOW) && (c.flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL);
                break;
        case GATE_SYS_OPENAT2:
                c.action = GATE_ACTION_OPEN;
                c.dirfd = arg_int(a[0]);
                c.path = a[1];
                c.how = a[2];
                c.size = a[3];
                break;          /* flags, mode and follow come from struct open_how, read later */
        case GATE_SYS_RENAME:
                c.action = GATE_ACTION_RENAME;
                c.path = a[0];
                c.path2 = a[1];
                c.follow = false;
                break;
        case GATE_SYS_RENAMEAT:
        case GATE_SYS_RENAMEAT2:
                c.action = GATE_ACTION_RENAME;
                c.dirfd = arg_int(a[0]);
                c.path = a[1];
                c.dirfd2 = arg_int(a[2]);
                c.path2 = a[3];
                c.flags = s == GATE_SYS_RENAMEAT2 ? (uint32_t) a[4] : 0;
                c.follow = false;
                break;
        case GATE_SYS_UNLINK:
        case GATE_SYS_RMDIR:
                c.action = GATE_ACTION_UNLINK;
                c.path = a[0];
                c.flags = s == GATE_SYS_RMDIR ? AT_REMOVEDIR : 0;
                c.follow = false;
                break;
        case GATE_SYS_UNLINKAT:
                c.action = GATE_ACTION_UNLINK;
                c.dirfd = arg_int(a[0]);
                c.path = a[1];
                c.flags = (uint32_t) a[2];
                c.follow = false;
                break;
        case GATE_SYS_LINK:
                c.action = GATE_ACTION_LINK;
                c.path = a[0];
                c.path2 = a[1];
                c.follow = false;
                break;
        case GATE_SYS_LINKAT:
                c.action = GATE_ACTION_LINK;
                c.dirfd = arg_int(a[0]);
                c.path = a[1];
                c.dirfd2 = arg_int(a[2]);
                c.path2 = a[3];
                c.flags = (uint32_t) a[4];
                c.follow = c.flags & AT_SYMLINK_FOLLOW;
                break;
        case GATE_SYS_SYMLINK:
        case GATE_SYS_SYMLINKAT:
                /* path is the new link's name, target its content (never resolved: it is a string). */
                c.action = GATE_ACTION_SYMLINK;
                c.target = a[0];
                if (s == GATE_SYS_SYMLINKAT) {
                        c.dirfd = arg_int(a[1]);
                        c.path = a[2];
                } else
                        c.path = a[1];
                c.follow = false;
                break;
        case GATE_SYS_CHMOD:
                c.action = GATE_ACTION_CHMOD;
                c.path = a[0];
                c.mode = (uint32_t) a[1];
                break;
        case GATE_SYS_FCHMODAT:
        case GATE_SYS_FCHMODAT2:
                c.action = GATE_ACTION_CHMOD;
                c.dirfd = arg_int(a[0]);
                c.path = a[1];
                c.mode = (uint32_t) a[2];
                c.flags = s == GATE_SYS_FCHMODAT2 ? (uint32_t) a[3] : 0;   /* fchmodat has no flags */
                c.follow = !(c.flags & AT_SYMLINK_NOFOLLOW);
                break;
        case GATE_SYS_CHOWN:
        case GATE_SYS_LCHOWN:
                c.action = GATE_ACTION_CHOWN;
                c.path = a[0];
                c.uid = (uint32_t) a[1];
                c.gid = (uint32_t) a[2];
                c.follow = s == GATE_SYS_CHOWN;
                break;
        case GATE_SYS_FCHOWNAT:
                c.action = GATE_ACTION_CHOWN;
                c.dirfd = arg_int(a[0]);
                c.path = a[1];
                c.uid = (uint32_t) a[2];
                c.gid = (uint32_t) a[3];
                c.flags = (uint32_t) a[4];
                c.follow = !(c.flags & AT_SYMLINK_NOFOLLOW);
                break;
        case GATE_SYS_MKDIR:
        case GATE_SYS_MKDIRAT:
                c.action = GATE_ACTION_MKDIR;
                if (s == GATE_SYS_MKDIRAT) {
                        c.dirfd = arg_int(a[0]);
                        a++;
                }
                c.path = a[0];
                c.mode = (uint32_t) a[1];
                c.follow = false;
                break;
        case GATE_SYS_MKNOD:
        case GATE_SYS_MKNODAT:
                c.action = GATE_ACTION_MKNOD;
                if (s == GATE_SYS_MKNODAT) {
                        c.dirfd = arg_int(a[0]);
                        a++;
                }
                c.path = a[0];
                c.mode = (uint32_t) a[1];
                c.dev = (uint32_t) a[2];
                c.follow = false;
                break;
        case GATE_SYS_TRUNCATE:
                c.action = GATE_ACTION_TRUNCATE;
                c.path = a[0];
                c.size = a[1];
                break;
        case GATE_SYS_SENDTO:
                c.action = GATE_ACTION_SEND;
                c.dirfd = arg_int(a[0]);        /* the socket */
                c.data = a[1];
                c.data_len = a[2];
                c.flags = (uint32_t) a[3];
                c.path = a[4];
                c.size = (uint32_t) a[5];
                break;
        case GATE_SYS_SENDMSG:
                c.action = GATE_ACTION_SEND;
                c.dirfd = arg_int(a[0]);
                c.msg = a[1];
                c.flags = (uint32_t) a[2];
                break;
        case GATE_SYS_SENDMMSG:
                c.action = GATE_ACTION_SEND;
                c.dirfd = arg_int(a[0]);
                c.msg = a[1];
                c.vlen = (uint32_t) a[2];
                c.flags = (uint32_t) a[3];
                break;
        case GATE_SYS_UMASK:
                c.action = GATE_ACTION_FS_CHANGE;
                c.mode = (uint32_t) a[0] & 0777;       /* the kernel keeps these bits */
                break;
        case GATE_SYS_CHDIR:
        case GATE_SYS_FCHDIR:
                c.action = GATE_ACTION_FS_CHANGE;
                break;
        default:
                return -EINVAL;
        }

        *ret = c;
        return 0;
}

FileOp gate_open_op(uint64_t flags) {
        if (flags & O_PATH)
                return FILE_OP_STAT;
        if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
                return FILE_OP_CREATE;
        if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_APPEND)))
                return FILE_OP_WRITE;
        if (flags & O_DIRECTORY)
                return FILE_OP_LIST;
        return FILE_OP_READ;
}

void gate_call_ops(const GateCall *c, FileOp ops[GATE_CALL_OPS_MAX], size_t *ret_n,
                   FileOp ops2[GATE_CALL_OPS_MAX], size_t *ret_n2) {
        size_t n = 0, n2 = 0;

        switch (c->action) {
        case GATE_ACTION_OPEN:
                ops[n++] = gate_open_op(c->flags);
                break;
        case GATE_ACTION_MKDIR:
        case GATE_ACTION_MKNOD:
                ops[n++] = FILE_OP_CREATE;
                break;
        case GATE_ACTION_UNLINK:
                ops[n++] = FILE_OP_DELETE;
                break;
        case GATE_ACTION_RENAME:
                /* The file goes on under another name: whoever may not read it by this name must not
                 * get it readable by the next one, so moving it is a read of it too. */
                ops[n++] = FILE_OP_DELETE;
                ops[n++] = FILE_OP_READ;
                if (c->flags & RENAME_EXCHANGE) {
                        /* both names get the other's file */
                        ops[n++] = FILE_OP_CREATE;
                        ops[n++] = FILE_OP_WRITE;
                        ops2[n2++] = FILE_OP_DELETE;
                        ops2[n2++] = FILE_OP_READ;
                }
                ops2[n2++] = FILE_OP_CREATE;
                ops2[n2++] = FILE_OP_WRITE;
                break;
        case GATE_ACTION_LINK:
                /* A second name must not grant what the first denies: writing, and reading. */
                ops[n++] = FILE_OP_LINK;
                ops[n++] = FILE_OP_WRITE;
                ops[n++] = FILE_OP_READ;
                ops2[n2++] = FILE_OP_CREATE;
                break;
        case GATE_ACTION_SYMLINK:
                ops[n++] = FILE_OP_LINK;
                ops[n++] = FILE_OP_CREATE;
                break;
        case GATE_ACTION_CHMOD:
                ops[n++] = FILE_OP_CHMOD;
                break;
        case GATE_ACTION_CHOWN:
                ops[n++] = FILE_OP_CHOWN;
                break;
        case GATE_ACTION_TRUNCATE:
                ops[n++] = FILE_OP_WRITE;
                break;
        default:
                break;
        }
        *ret_n = n;
        *ret_n2 = n2;
}

/* ---- the caller's memory ---- */

size_t gate_page_size(void) {
        static size_t ps;

        if (ps == 0) {
                long l = sysconf(_SC_PAGESIZE);
                ps = l > 0 ? (size_t) l : 4096;
        }
        return ps;
}

/* /proc/PID/mem takes the address as the file offset, which is signed. */
static bool address_ok(uint64_t addr, size_t size) {
        return addr != 0 && addr <= INT64_MAX && size <= INT64_MAX - addr;
}

int gate_mem_read(int mem_fd, uint64_t addr, void *buf, size_t size) {
        ssize_t k;

        if (!address_ok(addr, size))
                return -EFAULT;
        k = loop_pread(mem_fd, buf, size, (off_t) addr);
        if (k < 0)
                return k == -EIO || k == -EINVAL ? -EFAULT : (int) k;
        return (size_t) k < size ? -EFAULT : 0;     /* the end of the mapping */
}

/* ---- the caller's memory, a chunk at a time ---- */

void gate_mem_cache_reset(GateMemCache *c, int mem_fd) {
        /* The chunks of one huge argv are not worth keeping for the next exec. */
        if (c->n_alloc > GATE_MEM_CACHE_KEEP) {
                c->addr = mfree(c->addr);
                c->data = mfree(c->data);
                c->n_alloc = 0;
        }
        c->fd = mem_fd;
        c->n = 0;
        c->last = 0;
}

void gate_mem_cache_done(GateMemCache *c) {
        c->addr = mfree(c->addr);
        c->data = mfree(c->data);
        *c = (GateMemCache) GATE_MEM_CACHE_NULL;
}

/* The cached chunk at base (GATE_MEM_CHUNK-aligned), read now if it is not there yet. */
static int mem_cache_chunk(GateMemCache *c, uint64_t base, const uint8_t **ret) {
        uint8_t *d;
        int r;

        if (c->last < c->n && c->addr[c->last] == base) {
                *ret = c->data + c->last * GATE_MEM_CHUNK;
                return 0;
        }
        for (size_t i = 0; i < c->n; i++)
                if (c->addr[i] == base) {
                        c->last = i;
                        *ret = c->data + i * GATE_MEM_CHUNK;
                        return 0;
                }
        if (c->n == GATE_MEM_CACHE_CHUNKS_MAX)
                return -E2BIG;
        if (c->n == c->n_alloc) {
                size_t want = MIN(MAX(c->n_alloc * 2, (size_t) 4), (size_t) GATE_MEM_CACHE_CHUNKS_MAX);
                uint64_t *a = reallocarray(c->addr, want, sizeof(uint64_t));

                if (!a)
                        return -ENOMEM;
                c->addr = a;
                d = reallocarray(c->data, want, GATE_MEM_CHUNK);
                if (!d)
                        return -ENOMEM;
                c->data = d;
                c->n_alloc = want;
        }
        /* The whole chunk: no page boundary falls inside it, so it is readable when any byte of it is. */
        d = c->data + c->n * GATE_MEM_CHUNK;
        r = gate_mem_read(c->fd, base, d, GATE_MEM_CHUNK);
        if (r < 0)
                return r;
        c->addr[c->n] = base;
        c->last = c->n++;
        *ret = d;
        return 0;
}

static int mem_cache_read(GateMemCache *c, uint64_t addr, void *buf, size_t size) {
        size_t done = 0;

        if (!address_ok(addr, size))
                return -EFAULT;
        while (done < size) {
                uint64_t at = addr + done, base = at & ~(uint64_t) (GATE_MEM_CHUNK - 1);
                size_t off = (size_t) (at - base), k = MIN(size - done, GATE_MEM_CHUNK - off);
                const uint8_t *chunk;
                int r;

                r = mem_cache_chunk(c, base, &chunk);
                if (r < 0)
                        return r;
                memcpy((uint8_t *) buf + done, chunk + off, k);
                done += k;
        }
        return 0;
}

/* Either a plain read of the caller's memory, or one through a cache. */
typedef struct MemReader {
        int fd;
        GateMemCache *cache;
} MemReader;

static int reader_read(const MemReader *m, uint64_t addr, void *buf, size_t size) {
        return m->cache ? mem_cache_read(m->cache, addr, buf, size) : gate_mem_read(m->fd, addr, buf, size);
}

static int read_string(const MemReader *m, uint64_t addr, size_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, alloc = 0;

        if (max == 0)
                return -ENAMETOOLONG;
        if (!address_ok(addr, max))
                return -EFAULT;
        for (;;) {
                /* Never past the end of the page: the next one may be unmapped and the string may end here.
                 * The first read is short, most paths are. */
                size_t chunk = MIN(MIN(gate_page_size() - (size_t) ((addr + len) % gate_page_size()), max - len),
                                   len == 0 ? (size_t) 256 : SIZE_MAX);
                const char *nul;
                int r;

                if (chunk == 0)
                        return -ENAMETOOLONG;
                if (len + chunk + 1 > alloc) {
                        size_t want = MIN(MAX(alloc * 2, len + chunk + 1), max + 1);
                        char *p = realloc(buf, want);

                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        alloc = want;
                }
                r = reader_read(m, addr + len, buf + len, chunk);
                if (r < 0)
                        return r;
                nul = memchr(buf + len, 0, chunk);
                if (nul) {
                        len = (size_t) (nul - buf);
                        break;
                }
                len += chunk;
        }
        if (ret_len)
                *ret_len = len;
        *ret = TAKE_PTR(buf);
        return 0;
}

static int read_argv(const MemReader *m, uint64_t addr, size_t max_args, size_t max_bytes, char ***ret) {
        _cleanup_(strv_freep) char **argv = NULL;
        size_t n = 0, bytes = 0;

        argv = calloc(1, sizeof(char *));
        if (!argv)
                return -ENOMEM;
        if (addr == 0) {
                *ret = TAKE_PTR(argv);
                return 0;
        }
        /* The pointers are read a batch at a time, never past the page they start on (the array may end
         * right before an unmapped page); one pointer straddling two pages is read alone. */
        uint64_t ptrs[16];
        size_t have = 0, at = 0;

        for (;;) {
                uint64_t p;
                size_t len;
                char **a;
                int r;

                if (n >= max_args)
                        return -E2BIG;
                if (at == have) {
                        uint64_t next = addr + n * sizeof(uint64_t);
                        size_t k = (gate_page_size() - (size_t) (next % gate_page_size())) / sizeof(uint64_t);

                        k = MIN(MAX(k, (size_t) 1), ELEMENTSOF(ptrs));
                        r = reader_read(m, next, ptrs, k * sizeof(uint64_t));
                        if (r < 0)
                                return r;
                        have = k;
                        at = 0;
                }
                p = ptrs[at++];
                if (p == 0)
                        break;
                if (bytes >= max_bytes)
                        return -E2BIG;
                a = reallocarray(argv, n + 2, sizeof(char *));
                if (!a)
                        return -ENOMEM;
                argv = a;
                argv[n + 1] = NULL;
                r = read_string(m, p, max_bytes - bytes, &argv[n], &len);
                if (r == -ENAMETOOLONG)
                        return -E2BIG;
                if (r < 0)
                        return r;
                bytes += len + 1;
                n++;
        }
        *ret = TAKE_PTR(argv);
        return 0;
}

int gate_mem_read_string(int mem_fd, uint64_t addr, size_t max, char **ret, size_t *ret_len) {
        return read_string(&(const MemReader) { .fd = mem_fd }, addr, max, ret, ret_len);
}

int gate_mem_read_argv(int mem_fd, uint64_t addr, size_t max_args, size_t max_bytes, char ***ret) {
        return read_argv(&(const MemReader) { .fd = mem_fd }, addr, max_args, max_bytes, ret);
}

int gate_mem_cache_read_string(GateMemCache *c, uint64_t addr, size_t max, char **ret, size_t *ret_len) {
        return read_string(&(const MemReader) { .cache = c }, addr, max, ret, ret_len);
}

int gate_mem_cache_read_argv(GateMemCache *c, uint64_t addr, size_t max_args, size_t max_bytes, char ***ret) {
        return read_argv(&(const MemReader) { .cache = c }, addr, max_args, max_bytes, ret);
}
