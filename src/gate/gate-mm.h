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
 * Needs kcmp(KCMP_VM) and the real ids of the caller (ptrace's read check of kcmp uses the real ids).
 * Returns 0 when no other task can run with the caller's address space, 1 when one can (ret_why says
 * which, in a static buffer of the thread's), <0 when it cannot be told (the caller fails closed). */
#define GATE_MM_TASKS_MAX 65536U

int gate_mm_sole(pid_t tid, const char **ret_why);
