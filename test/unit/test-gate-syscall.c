/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The pure parts of the supervisor: which syscalls are trapped, how their arguments are decoded, which
 * file operations each is checked as, and the bounds of reading strings and argv from a caller's memory
 * (read here from our own /proc/self/mem, with an unmapped page right after the data). */

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "gate-syscall.h"
#include "strv.h"
#include "tap.h"

static GateCall decode(long nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) {
        uint64_t a[6] = { a0, a1, a2, a3, a4, 0 };
        GateCall c = {};

        (void) gate_call_decode(nr, a, &c);
        return c;
}

static void test_table(void) {
        static const char * const reference[] = { "connect", "execve", "execveat", "openat", "openat2", "renameat2",
                                                  "unlinkat", "linkat", "symlinkat", "fchmodat", "fchownat", "mkdirat" };
        uint64_t a[6] = {};
        GateCall c;

        for (size_t i = 0; i < ELEMENTSOF(reference); i++) {
                bool found = false;

                for (GateSyscall s = 0; s < _GATE_SYS_MAX; s++)
                        if (streq(gate_syscall_name(s), reference[i]) && gate_syscall_nr(s) >= 0)
                                found = true;
                ok(found, "the reference's %s is trapped", reference[i]);
        }
#ifdef __x86_64__
        ok(gate_syscall_from_nr(__NR_bind) == GATE_SYS_BIND, "bind(2) is trapped (a unix socket's inode is a create)");
        {
                GateCall bc;
                uint64_t args[6] = { 5, 0x1000, 110, 0, 0, 0 };

                ok(gate_call_decode(__NR_bind, args, &bc) == 0 && bc.action == GATE_ACTION_BIND && bc.dirfd == 5 &&
                   bc.path == 0x1000 && bc.size == 110, "bind decodes its socket, address and length");
        }
        ok(gate_syscall_from_nr(__NR_open) == GATE_SYS_OPEN, "x86_64: the legacy open(2) is trapped");
        ok(gate_syscall_from_nr(__NR_unlink) == GATE_SYS_UNLINK, "x86_64: the legacy unlink(2) is trapped");
        ok(gate_syscall_from_nr(__NR_rename) == GATE_SYS_RENAME, "x86_64: the legacy rename(2) is trapped");
        ok(gate_syscall_from_nr(__NR_creat) == GATE_SYS_CREAT, "x86_64: creat(2) is trapped");
#endif
        ok(gate_syscall_from_nr(452) == GATE_SYS_FCHMODAT2, "fchmodat2 (452) is trapped by number");
        ok(gate_syscall_from_nr(__NR_truncate) == GATE_SYS_TRUNCATE, "truncate(2), a write without open, is trapped");
        ok(gate_syscall_from_nr(__NR_read) == _GATE_SYS_INVALID, "read(2) is not trapped");
        ok(gate_call_decode(__NR_read, a, &c) == -EINVAL, "decoding a syscall that is not trapped fails");
        a[0] = 0177022;
        ok(gate_call_decode(__NR_umask, a, &c) == 0 && c.action == GATE_ACTION_FS_CHANGE && c.mode == 022,
           "umask(2) is trapped, unchecked, and keeps only the permission bits of its mask");
        ok(gate_call_decode(__NR_umask, a, &c) == 0 && c.path == 0 && c.path2 == 0,
           "umask(2) names no path for the policy");
        a[0] = 0x1000;
        ok(gate_call_decode(__NR_chdir, a, &c) == 0 && c.action == GATE_ACTION_FS_CHANGE && c.path == 0,
           "chdir(2) is trapped and unchecked: the policy sees no path of it");
        ok(gate_call_decode(__NR_fchdir, a, &c) == 0 && c.action == GATE_ACTION_FS_CHANGE,
           "fchdir(2) is trapped and unchecked");
}

static void test_decode(void) {
        GateCall c;

        c = decode(__NR_openat, (uint32_t) AT_FDCWD, 0x1000, O_WRONLY | O_CREAT, 0600, 0);
        ok(c.action == GATE_ACTION_OPEN && c.dirfd == AT_FDCWD && c.path == 0x1000 && c.mode == 0600,
           "openat: dirfd AT_FDCWD (as a 32-bit value), path, flags and mode");
        ok(c.follow, "openat without O_NOFOLLOW follows the last symlink");
        c = decode(__NR_openat, 5, 0x1000, O_RDONLY | O_NOFOLLOW, 0, 0);
        ok(c.dirfd == 5 && !c.follow, "openat with O_NOFOLLOW does not follow");
        c = decode(__NR_openat, 5, 0x1000, O_CREAT | O_EXCL, 0, 0);
        ok(!c.follow, "openat with O_CREAT|O_EXCL does not follow (a symlink there is EEXIST)");
#ifdef __x86_64__
        c = decode(__NR_creat, 0x1000, 0644, 0, 0, 0);
        ok(c.action == GATE_ACTION_OPEN && c.flags == (O_CREAT | O_WRONLY | O_TRUNC) && c.mode == 0644,
           "creat is open(O_CREAT|O_WRONLY|O_TRUNC)");
        c = decode(__NR_rmdir, 0x1000, 0, 0, 0, 0);
        ok(c.action == GATE_ACTION_UNLINK && c.flags == AT_REMOVEDIR, "rmdir is unlinkat(AT_REMOVEDIR)");
        c = decode(__NR_lchown, 0x1000, 1, 2, 0, 0);
        ok(c.action == GATE_ACTION_CHOWN && !c.follow, "lchown does not follow");
        c = decode(__NR_chown, 0x1000, 1, 2, 0, 0);
        ok(c.action == GATE_ACTION_CHOWN && c.follow && c.uid == 1 && c.gid == 2, "chown follows");
#endif
        c = decode(__NR_unlinkat, 3, 0x1000, AT_REMOVEDIR, 0, 0);
        ok(c.action == GATE_ACTION_UNLINK && !c.follow && c.flags == AT_REMOVEDIR, "unlinkat does not follow the last component");
        c = decode(__NR_renameat2, 3, 0x1000, 4, 0x2000, RENAME_NOREPLACE);
        ok(c.action == GATE_ACTION_RENAME && c.dirfd == 3 && c.dirfd2 == 4 && c.path2 == 0x2000 &&
           c.flags == RENAME_NOREPLACE && !c.follow, "renameat2: both names, the flags, no following");
        c = decode(__NR_linkat, 3, 0x1000, 4, 0x2000, 0);
        ok(c.action == GATE_ACTION_LINK && !c.follow, "linkat follows only with AT_SYMLINK_FOLLOW");
        c = decode(__NR_linkat, 3, 0x1000, 4, 0x2000, AT_SYMLINK_FOLLOW);
        ok(c.follow, "linkat with AT_SYMLINK_FOLLOW follows");
        c = decode(__NR_symlinkat, 0x3000, 4, 0x1000, 0, 0);
        ok(c.action == GATE_ACTION_SYMLINK && c.target == 0x3000 && c.dirfd == 4 && c.path == 0x1000,
           "symlinkat: the new name is the checked path, the content is only a string");
        c = decode(__NR_fchmodat, 3, 0x1000, 0755, AT_SYMLINK_NOFOLLOW, 0);
        ok(c.follow && c.flags == 0, "fchmodat has no flags argument: it always follows");
        c = decode(452, 3, 0x1000, 0755, AT_SYMLINK_NOFOLLOW, 0);
        ok(c.action == GATE_ACTION_CHMOD && !c.follow, "fchmodat2 honours AT_SYMLINK_NOFOLLOW");
        c = decode(__NR_fchownat, 3, 0x1000, 7, 8, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
        ok(!c.follow && (c.flags & AT_EMPTY_PATH) && c.uid == 7 && c.gid == 8, "fchownat: ids and flags");
        c = decode(__NR_execveat, 9, 0x1000, 0x2000, 0x3000, AT_EMPTY_PATH);
        ok(c.action == GATE_ACTION_EXEC && c.dirfd == 9 && c.argv == 0x2000 && (c.flags & AT_EMPTY_PATH),
           "execveat: dirfd, argv, AT_EMPTY_PATH (fexecve)");
        c = decode(__NR_connect, 3, 0x1000, 110, 0, 0);
        ok(c.action == GATE_ACTION_CONNECT && c.path == 0x1000 && c.size == 110, "connect: the address and its length");
        c = decode(__NR_mknodat, 3, 0x1000, S_IFIFO | 0600, 0, 0);
        ok(c.action == GATE_ACTION_MKNOD && c.mode == (S_IFIFO | 0600), "mknodat: the mode");
        c = decode(__NR_truncate, 0x1000, 77, 0, 0, 0);
        ok(c.action == GATE_ACTION_TRUNCATE && c.size == 77 && c.follow, "truncate: the length, following");
}

static void test_ops(void) {
        FileOp ops[GATE_CALL_OPS_MAX], ops2[GATE_CALL_OPS_MAX];
        size_t n, n2;
        GateCall c;

        ok(gate_open_op(O_RDONLY) == FILE_OP_READ, "open O_RDONLY is a read");
        ok(gate_open_op(O_WRONLY) == FILE_OP_WRITE, "open O_WRONLY is a write");
        ok(gate_open_op(O_RDWR) == FILE_OP_WRITE, "open O_RDWR is a write");
        ok(gate_open_op(O_RDONLY | O_TRUNC) == FILE_OP_WRITE, "open O_RDONLY|O_TRUNC is a write (it truncates)");
        ok(gate_open_op(O_RDONLY | O_APPEND) == FILE_OP_WRITE, "open O_APPEND is a write");
        ok(gate_open_op(O_WRONLY | O_CREAT) == FILE_OP_CREATE, "open O_CREAT is a create");
        ok(gate_open_op(O_RDWR | O_TMPFILE) == FILE_OP_CREATE, "open O_TMPFILE is a create");
        ok(gate_open_op(O_RDONLY | O_DIRECTORY) == FILE_OP_LIST, "open O_DIRECTORY read-only is a list");
        ok(gate_open_op(O_PATH) == FILE_OP_STAT, "open O_PATH is a stat (no content can be read)");
        ok(gate_open_op(O_RDONLY | O_CLOEXEC | O_NOFOLLOW) == FILE_OP_READ, "O_CLOEXEC and O_NOFOLLOW do not change a read");

        c = decode(__NR_renameat2, 3, 0x1000, 4, 0x2000, 0);
        gate_call_ops(&c, ops, &n, ops2, &n2);
        ok(n == 2 && ops[0] == FILE_OP_DELETE && ops[1] == FILE_OP_READ,
           "rename: the old name is a delete and a read (the file stays readable under the new name)");
        ok(n2 == 2 && ops2[0] == FILE_OP_CREATE && ops2[1] == FILE_OP_WRITE, "rename: the new name is a create and a write");
        c = decode(__NR_renameat2, 3, 0x1000, 4, 0x2000, RENAME_EXCHANGE);
        gate_call_ops(&c, ops, &n, ops2, &n2);
        ok(n == 4 && n2 == 4, "rename with RENAME_EXCHANGE: both names are deleted, read, created and written");
        c = decode(__NR_linkat, 3, 0x1000, 4, 0x2000, 0);
        gate_call_ops(&c, ops, &n, ops2, &n2);
        ok(n == 3 && ops[0] == FILE_OP_LINK && ops[1] == FILE_OP_WRITE && ops[2] == FILE_OP_READ && n2 == 1 &&
           ops2[0] == FILE_OP_CREATE, "link: link, write and read on the file, create on the new name");
        c = decode(__NR_symlinkat, 0x3000, 4, 0x1000, 0, 0);
        gate_call_ops(&c, ops, &n, ops2, &n2);
        ok(n == 2 && ops[0] == FILE_OP_LINK && ops[1] == FILE_OP_CREATE && n2 == 0, "symlink: link and create on the new name");
        c = decode(__NR_unlinkat, 3, 0x1000, 0, 0, 0);
        gate_call_ops(&c, ops, &n, ops2, &n2);
        ok(n == 1 && ops[0] == FILE_OP_DELETE && n2 == 0, "unlink is a delete");
        c = decode(__NR_mkdirat, 3, 0x1000, 0755, 0, 0);
        gate_call_ops(&c, ops, &n, ops2, &n2);
        ok(n == 1 && ops[0] == FILE_OP_CREATE, "mkdir is a create");
        c = decode(__NR_fchmodat, 3, 0x1000, 0755, 0, 0);
        gate_call_ops(&c, ops, &n, ops2, &n2);
        ok(n == 1 && ops[0] == FILE_OP_CHMOD, "chmod is a chmod");
        c = decode(__NR_fchownat, 3, 0x1000, 1, 1, 0);
        gate_call_ops(&c, ops, &n, ops2, &n2);
        ok(n == 1 && ops[0] == FILE_OP_CHOWN, "chown is a chown");
        c = decode(__NR_truncate, 0x1000, 0, 0, 0, 0);
        gate_call_ops(&c, ops, &n, ops2, &n2);
        ok(n == 1 && ops[0] == FILE_OP_WRITE, "truncate is a write");
        c = decode(__NR_openat, 3, 0x1000, O_RDWR, 0, 0);
        gate_call_ops(&c, ops, &n, ops2, &n2);
        ok(n == 1 && ops[0] == FILE_OP_WRITE, "openat O_RDWR is checked as a write");
}

static void test_memory(void) {
        long ps = sysconf(_SC_PAGESIZE);
        _cleanup_close_ int mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
        _cleanup_(strv_freep) char **argv = NULL;
        char *page, *s = NULL, *big;
        uint64_t ptrs[4];
        size_t len = 0;
        int r;

        ok(mem >= 0, "/proc/self/mem opens");
        /* Two pages, the second unmapped: data at the very end of the first. */
        page = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ok(page != MAP_FAILED && munmap(page + ps, ps) == 0, "a page followed by an unmapped one");

        memcpy(page + ps - 6, "/a/b\0", 5);
        r = gate_mem_read_string(mem, (uint64_t) (uintptr_t) (page + ps - 6), GATE_PATH_MAX, &s, &len);
        ok(r == 0 && s && streq(s, "/a/b") && len == 4, "a string ending just before an unmapped page is read");
        s = mfree(s);

        memset(page + ps - 4, 'x', 4);
        r = gate_mem_read_string(mem, (uint64_t) (uintptr_t) (page + ps - 4), GATE_PATH_MAX, &s, NULL);
        ok(r == -EFAULT && !s, "a string running into an unmapped page fails closed (-EFAULT)");

        memset(page, 'y', ps);
        r = gate_mem_read_string(mem, (uint64_t) (uintptr_t) page, 100, &s, NULL);
        ok(r == -ENAMETOOLONG && !s, "a string not terminated within its cap fails closed (-ENAMETOOLONG)");
        page[99] = 0;
        r = gate_mem_read_string(mem, (uint64_t) (uintptr_t) page, 100, &s, &len);
        ok(r == 0 && len == 99, "a string of exactly the cap (with its NUL) is read");
        s = mfree(s);
        page[99] = 'y';
        page[100] = 0;
        r = gate_mem_read_string(mem, (uint64_t) (uintptr_t) page, 100, &s, NULL);
        ok(r == -ENAMETOOLONG, "one byte over the cap is refused, not cut");

        big = malloc(GATE_PATH_MAX + 10);
        memset(big, 'z', GATE_PATH_MAX + 9);
        big[GATE_PATH_MAX + 9] = 0;
        r = gate_mem_read_string(mem, (uint64_t) (uintptr_t) big, GATE_PATH_MAX, &s, NULL);
        ok(r == -ENAMETOOLONG, "a path longer than PATH_MAX is refused");
        free(big);

        r = gate_mem_read_string(mem, 0, GATE_PATH_MAX, &s, NULL);
        ok(r == -EFAULT, "a NULL path is -EFAULT");
        r = gate_mem_read_string(mem, UINT64_MAX - 10, GATE_PATH_MAX, &s, NULL);
        ok(r == -EFAULT, "an address beyond the file offset range is -EFAULT");

        ptrs[0] = (uint64_t) (uintptr_t) "rm";
        ptrs[1] = (uint64_t) (uintptr_t) "-rf";
        ptrs[2] = (uint64_t) (uintptr_t) "/";
        ptrs[3] = 0;
        r = gate_mem_read_argv(mem, (uint64_t) (uintptr_t) ptrs, GATE_ARGV_MAX, GATE_ARGV_BYTES_MAX, &argv);
        ok(r == 0 && strv_length(argv) == 3 && streq(argv[0], "rm") && streq(argv[2], "/"), "argv is read");
        argv = strv_free(argv);
        r = gate_mem_read_argv(mem, (uint64_t) (uintptr_t) ptrs, 2, GATE_ARGV_BYTES_MAX, &argv);
        ok(r == -E2BIG && !argv, "more arguments than the cap fail closed (-E2BIG)");
        r = gate_mem_read_argv(mem, (uint64_t) (uintptr_t) ptrs, GATE_ARGV_MAX, 6, &argv);
        ok(r == -E2BIG && !argv, "more argument bytes than the cap fail closed (-E2BIG)");
        r = gate_mem_read_argv(mem, (uint64_t) (uintptr_t) ptrs, GATE_ARGV_MAX, 9, &argv);
        ok(r == 0 && strv_length(argv) == 3, "argument bytes exactly at the cap (NULs included) are read");
        argv = strv_free(argv);
        r = gate_mem_read_argv(mem, 0, GATE_ARGV_MAX, GATE_ARGV_BYTES_MAX, &argv);
        ok(r == 0 && argv && !argv[0], "a NULL argv reads as empty");
        argv = strv_free(argv);

        /* 20 arguments (more than one batch of pointers) whose NULL ends right before the unmapped page. */
        {
                uint64_t *arr = (uint64_t *) (page + ps) - 21;

                for (size_t i = 0; i < 20; i++)
                        arr[i] = (uint64_t) (uintptr_t) (i % 2 ? "x" : "yy");
                arr[20] = 0;
                r = gate_mem_read_argv(mem, (uint64_t) (uintptr_t) arr, GATE_ARGV_MAX, GATE_ARGV_BYTES_MAX, &argv);
                ok(r == 0 && strv_length(argv) == 20 && streq(argv[18], "yy") && streq(argv[19], "x"),
                   "an argv of 20 whose NULL ends the last mapped page is read whole");
                argv = strv_free(argv);
        }

        /* The pointer array itself running into the unmapped page. */
        memcpy(page + ps - 8, &ptrs[0], 8);
        r = gate_mem_read_argv(mem, (uint64_t) (uintptr_t) (page + ps - 8), GATE_ARGV_MAX, GATE_ARGV_BYTES_MAX, &argv);
        ok(r == -EFAULT && !argv, "an argv without its NULL before an unmapped page fails closed");
        munmap(page, ps);
}

/* The same reads through the chunk cache an exec uses. */
static void test_memory_cache(void) {
        long ps = sysconf(_SC_PAGESIZE);
        _cleanup_close_ int mem = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
        _cleanup_(strv_freep) char **argv = NULL;
        GateMemCache c = GATE_MEM_CACHE_NULL;
        size_t n_pages = GATE_MEM_CACHE_CHUNKS_MAX + 8;
        char *page, *s = NULL, *many;
        uint64_t *ptrs;
        size_t len = 0;
        int r;

        /* Three pages, the third unmapped. */
        page = mmap(NULL, 3 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ok(page != MAP_FAILED && munmap(page + 2 * ps, ps) == 0, "cache: two pages followed by an unmapped one");

        gate_mem_cache_reset(&c, mem);
        memcpy(page, "/bin/rm\0-rf\0/\0", 14);
        ptrs = (uint64_t *) (page + 64);
        ptrs[0] = (uint64_t) (uintptr_t) page;
        ptrs[1] = (uint64_t) (uintptr_t) (page + 8);
        ptrs[2] = (uint64_t) (uintptr_t) (page + 12);
        ptrs[3] = 0;
        r = gate_mem_cache_read_string(&c, (uint64_t) (uintptr_t) page, GATE_PATH_MAX, &s, &len);
        ok(r == 0 && streq(s, "/bin/rm") && len == 7, "cache: a filename is read");
        s = mfree(s);
        r = gate_mem_cache_read_argv(&c, (uint64_t) (uintptr_t) ptrs, GATE_ARGV_MAX, GATE_ARGV_BYTES_MAX, &argv);
        ok(r == 0 && strv_length(argv) == 3 && streq(argv[0], "/bin/rm") && streq(argv[1], "-rf") && streq(argv[2], "/"),
           "cache: an argv is read");
        ok(c.n == 1, "cache: a filename, argv array and strings on one page are one chunk read");
        argv = strv_free(argv);

        memcpy(page, "/bin/ls", 7);
        r = gate_mem_cache_read_string(&c, (uint64_t) (uintptr_t) page, GATE_PATH_MAX, &s, NULL);
        ok(r == 0 && streq(s, "/bin/rm"), "cache: without a reset the chunk read before is used");
        s = mfree(s);
        gate_mem_cache_reset(&c, mem);
        r = gate_mem_cache_read_string(&c, (uint64_t) (uintptr_t) page, GATE_PATH_MAX, &s, NULL);
        ok(r == 0 && streq(s, "/bin/ls") && c.n == 1, "cache: after a reset the memory is read as it is now");
        s = mfree(s);

        gate_mem_cache_reset(&c, mem);
        memset(page + ps - 3, 'a', 3);
        memcpy(page + ps, "bc\0", 3);
        r = gate_mem_cache_read_string(&c, (uint64_t) (uintptr_t) (page + ps - 3), GATE_PATH_MAX, &s, &len);
        ok(r == 0 && streq(s, "aaabc") && len == 5 && c.n == 2, "cache: a string across two pages is read from two chunks");
        s = mfree(s);

        memcpy(page + 2 * ps - 6, "/a/b\0", 5);
        gate_mem_cache_reset(&c, mem);
        r = gate_mem_cache_read_string(&c, (uint64_t) (uintptr_t) (page + 2 * ps - 6), GATE_PATH_MAX, &s, &len);
        ok(r == 0 && streq(s, "/a/b"), "cache: a string ending just before an unmapped page is read");
        s = mfree(s);
        memset(page + 2 * ps - 4, 'x', 4);
        gate_mem_cache_reset(&c, mem);
        r = gate_mem_cache_read_string(&c, (uint64_t) (uintptr_t) (page + 2 * ps - 4), GATE_PATH_MAX, &s, NULL);
        ok(r == -EFAULT && !s, "cache: a string running into an unmapped page fails closed (-EFAULT)");
        r = gate_mem_cache_read_string(&c, 0, GATE_PATH_MAX, &s, NULL);
        ok(r == -EFAULT, "cache: a NULL path is -EFAULT");
        memset(page, 'y', ps);
        page[100] = 0;
        r = gate_mem_cache_read_string(&c, (uint64_t) (uintptr_t) page, 100, &s, NULL);
        ok(r == -ENAMETOOLONG && !s, "cache: one byte over the cap is refused, not cut");
        ok(munmap(page, 2 * ps) == 0, "cache: test pages unmapped");

        /* More strings than the cache holds chunks, each on a page of its own. */
        many = mmap(NULL, n_pages * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ptrs = calloc(n_pages + 1, sizeof(uint64_t));
        ok(many != MAP_FAILED && ptrs, "cache: %zu pages with a string each", n_pages);
        for (size_t i = 0; i < n_pages; i++) {
                many[i * ps] = 'a';
                ptrs[i] = (uint64_t) (uintptr_t) (many + i * ps);
        }
        gate_mem_cache_reset(&c, mem);
        r = gate_mem_cache_read_argv(&c, (uint64_t) (uintptr_t) ptrs, GATE_ARGV_MAX, GATE_ARGV_BYTES_MAX, &argv);
        ok(r == -E2BIG && !argv, "cache: an argv spread over more chunks than the cap fails closed (-E2BIG)");
        gate_mem_cache_reset(&c, mem);
        ok(c.n_alloc == 0, "cache: a reset gives back the memory of a big read");
        /* The pointer array takes three chunks at most. */
        ptrs[GATE_MEM_CACHE_CHUNKS_MAX - 3] = 0;
        r = gate_mem_cache_read_argv(&c, (uint64_t) (uintptr_t) ptrs, GATE_ARGV_MAX, GATE_ARGV_BYTES_MAX, &argv);
        ok(r == 0 && strv_length(argv) == GATE_MEM_CACHE_CHUNKS_MAX - 3,
           "cache: one just within the cap (strings and the pointer array) is read");
        argv = strv_free(argv);
        free(ptrs);
        (void) munmap(many, n_pages * ps);
        gate_mem_cache_done(&c);
}

int main(void) {
        test_table();
        test_decode();
        test_ops();
        test_memory();
        test_memory_cache();
        return done_testing();
}
