/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The tripwire (seed 002): the work dir's protected paths are mounted read-only in the container, but the
 * agent can still rename a directory above them (.git) and put its own in its place, whose hooks would
 * run on the human's next commit. So for the life of a run, the runner keeps a snapshot of every
 * protected path, watches them and the directories above them with inotify, and on a change kills the
 * container, reports the path (journaled as tamper) and restores the snapshot. */

#include <stdbool.h>
#include <sys/types.h>

#include "macro.h"

/* Caps on what one snapshot holds; a work dir beyond them is refused rather than half watched. */
#define TRIPWIRE_ENTRIES_MAX 4096U
#define TRIPWIRE_BYTES_MAX (16U * 1024U * 1024U)
/* Watches, those added while following missing paths as they appear included; beyond it the wire trips
 * (an agent creating and removing directories in a loop must not grow the runner without bound). */
#define TRIPWIRE_WATCHES_MAX 8192U

typedef struct Tripwire Tripwire;

/* Snapshots rel_paths (relative to work_dir, clean; a symbolic link as the link; a missing one is recorded
 * as absent and watched from its nearest existing directory, following directories of its path as they
 * appear, so its creation trips the wire, .git/hooks by `git init` too) and prepares the watches. -EFBIG / -E2BIG beyond the caps, -ELOOP when a component above a path is a
 * symbolic link. Nothing protected is fine: the tripwire then watches nothing. */
int tripwire_new(const char *work_dir, char * const *rel_paths, Tripwire **ret);
/* Watches in a thread; on a change it sends SIGKILL to pid (the container's main process, > 0) once. */
int tripwire_arm(Tripwire *t, pid_t pid);
/* Stops watching (the watch thread is joined). Returns the path (relative) of the first change seen,
 * NULL when nothing changed. The string stays valid until tripwire_free(). */
const char *tripwire_disarm(Tripwire *t);
/* Puts every snapshotted path back: content, mode, type; entries added below a snapshotted directory are
 * removed. Walks from the work dir with O_NOFOLLOW: a symlink planted on the way is removed, not
 * followed. Returns the number of entries it had to rewrite or remove, or -errno. */
int tripwire_restore(Tripwire *t);
size_t tripwire_count(const Tripwire *t);
/* The directory the paths are relative to (work_dir as given to tripwire_new()). */
const char *tripwire_root(const Tripwire *t);
Tripwire *tripwire_free(Tripwire *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Tripwire *, tripwire_free);
