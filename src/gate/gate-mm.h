/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Whether anything but the caller of an exec can change its filename and argv before the kernel copies
 * them. The kernel reads both again after the gate has answered CONTINUE, from memory every task sharing
 * the caller's address space can write: a thread of the caller's, or a task made with CLONE_VM. The tasks
 * that share it are found in /proc (kcmp(KCMP_VM) against every task of the pid namespace); each must be
 * provably unable to run before the copy: a task blocked in clone(CLONE_VM|CLONE_VFORK) or vfork()
 * waiting for its child, which does not return before that child's exec has copied its arguments and
 * left the address space (glibc's posix_spawn, Python's subprocess from a single-threaded parent).
 *
 * A walk of /proc misses a task made meanwhile whose pid it had passed: after each walk the pids handed out
 * since it began (the pid namespace's /proc/sys/kernel/ns_last_pid) are looked at too, until none is
 * new. The whole runs twice and both must find the same sharers, each blocked both times (a sharer seen
 * blocked wakes when its vfork child ends; the second pass sees it). A wrap-around of the pids during a
 * pass, more than GATE_MM_TASKS_MAX tasks, or new tasks through 16 rounds fail closed.
 *
 * proc_fd is /proc (O_RDONLY|O_DIRECTORY), kept by the caller and used by one thread at a time: the walk
 * sets its position and reads its entries from where the tasks begin, which spares it the open and the
 * sixty-odd entries that are no task's.
 * Needs kcmp(KCMP_VM) and the real ids of the caller (ptrace's read check of kcmp uses the real ids).
 * Returns 0 when no other task can run with the caller's address space, 1 when one can (ret_why says
 * which, in a static buffer of the thread's), <0 when it cannot be told (the caller fails closed). */
#define GATE_MM_TASKS_MAX 65536U

int gate_mm_sole(int proc_fd, pid_t tid, const char **ret_why);

/* Whether every page of the caller's memory in addrs (the pages an exec's filename, argv pointer array and
 * argv strings were read from) can be changed by no one but the caller, which gate_mm_sole() leaves as the
 * only task of its address space (so no page can be replaced meanwhile: no munmap, mremap or mmap of
 * another task reaches it), and which left no I/O pending on them (the gate's filter refuses Linux AIO and
 * io_uring, whose reads complete into the caller's memory after the call returned). /proc/PID/pagemap tells, per page, without privileges: a page present or
 * swapped that is neither a file's nor shared anonymous memory (bit 61 clear) is private anonymous memory,
 * which another process can only ever see a copy of. Any other page is decided on its mapping, from
 * /proc/PID/maps: only a private mapping of a regular file that no task of the agent can write (its owner
 * another uid than agent_uid, no group or other write bit, so no ACL entry grants it either) passes:
 * string literals of a program's or a library's .rodata (glibc's system() passes "/bin/sh", "sh", "-c").
 * A file the agent could write passes when it is the caller's running program (/proc/PID/exe): the
 * kernel refuses writes to it while it runs (ETXTBSY).
 * The file is the VMA's own (its device and inode), opened by the path maps gives below root_fd and
 * compared; a shared mapping (MAP_SHARED anonymous memory, SysV or POSIX shm, a memfd), a file the agent
 * can write, a deleted file, a special mapping, or a file page of an anonymous mapping fails.
 * addrs need not be sorted nor distinct, at most GATE_MM_PAGES_MAX of them. proc_dir_fd is /proc/TID of
 * the caller. Returns 1 when all are private, 0 when one is not (ret_why says which, in a static buffer of
 * the thread's), <0 when it cannot be told (the caller fails closed). */
#define GATE_MM_PAGES_MAX 1024U

int gate_mm_private(int proc_dir_fd, int root_fd, uid_t agent_uid, const uint64_t *addrs, size_t n,
                    const char **ret_why);

/* How gate_mm_private() looks up the mapping of a page: AUTO, in production, asks with PROCMAP_QUERY and
 * reads the text of /proc/PID/maps on a kernel without it (before Linux 6.11); QUERY only asks (-ENOTTY or
 * -EINVAL without it) and TEXT only reads the text, so that a test can compare the two ways on one
 * kernel. */
typedef enum GateMmMaps {
        GATE_MM_MAPS_AUTO,
        GATE_MM_MAPS_QUERY,
        GATE_MM_MAPS_TEXT,
} GateMmMaps;

int gate_mm_private_way(GateMmMaps way, int proc_dir_fd, int root_fd, uid_t agent_uid, const uint64_t *addrs,
                        size_t n, const char **ret_why);
