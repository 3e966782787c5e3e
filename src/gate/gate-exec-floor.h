/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The floor under the gate's command denials. The supervisor checks an exec's filename and argv in the
 * caller's memory, and the kernel reads them again when the call goes on: a sibling thread (or a vfork
 * parent's) can swap them in between. So a command the policy denies whatever its arguments
 * (gate_policy_denied_commands()) is also kept from executing by Landlock, on the file its name resolves
 * to in the agent's PATH: a ruleset that handles only execute and grants it on everything but those files
 * (their siblings and the siblings of the directories on their way get a rule each). The kernel checks
 * the file it really opens, the interpreter of a "#!" script included, whatever any memory says. Names
 * that resolve to a multi-call binary (busybox: one file for every applet) cannot be told apart by file
 * and are left to the gate's check alone (listed in *ret_skipped). */

#include "gate-policy.h"

#define GATE_EXEC_FLOOR_RULES_MAX 65536U        /* Landlock rules of one floor */
#define GATE_EXEC_FLOOR_FILES_MAX 256U          /* denied files */

/* The files the denied commands of p resolve to (absolute, symlinks resolved), searching the directories
 * of path_env (or the usual system ones when NULL) as execvp() would, plus the names that were skipped. */
int gate_exec_floor_files(const GatePolicy *p, const char *path_env, char ***ret_files, char ***ret_skipped);

/* A Landlock ruleset (an fd, close-on-exec) granting execute on everything but files; for
 * landlock_restrict_self() in the agent's process after the privilege drop. -EOPNOTSUPP without Landlock. */
int gate_exec_floor_ruleset(char * const *files, int *ret_fd);

/* Enforces the ruleset on the calling thread (no_new_privs must be set). */
int gate_exec_floor_enforce(int ruleset_fd);
