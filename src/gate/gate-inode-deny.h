/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

#include "gate-policy.h"

/* The files under a directory (the work dir) whose reading the policy denies or leaves to a human by
 * their name, recorded by inode when the gate starts: a second name they had before the run (a hard
 * link), or a name they get from a renamed directory, is still them. The supervisor fstat()s the file it
 * opened for reading and refuses one in the set, whatever the name it was opened by.
 *
 * Bounded: the walk visits at most GATE_INODE_DENY_WALK_MAX entries and records at most
 * GATE_INODE_DENY_MAX files; beyond either the gate does not start (-E2BIG), since a file not recorded
 * would be readable under another name. Symlinks are not followed, other file systems (the masks mounted
 * over secrets files) are not entered. */
#define GATE_INODE_DENY_WALK_MAX 1000000U
#define GATE_INODE_DENY_MAX 65536U

typedef struct GateInodeDeny GateInodeDeny;

int gate_inode_deny_build(const GatePolicy *p, const char *root, GateInodeDeny **ret);
/* The rule that denied the file's reading by its name, or NULL when it is not recorded. */
const char *gate_inode_deny_find(const GateInodeDeny *s, dev_t dev, ino_t ino);
size_t gate_inode_deny_size(const GateInodeDeny *s);
GateInodeDeny *gate_inode_deny_free(GateInodeDeny *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(GateInodeDeny *, gate_inode_deny_free);
