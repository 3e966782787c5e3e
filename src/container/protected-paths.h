/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What an agent or shell container must not see or change (seed 002): kernel files under /proc and /sys
 * masked, the work dir's control files (git hooks and config, agent and editor settings) mounted
 * read-only, its secret files (.env, .npmrc, cloud credentials) masked, and the host's service sockets
 * (systemd, journald, D-Bus, the container engine) never mounted in. The lists are the reference's
 * defaults plus a channel's protect_paths / mask_paths, minus its unmask_paths. */

#include <stdbool.h>

#include "config.h"

typedef enum ProtectedKind {
        PROTECTED_READ_ONLY,            /* below the work dir, mounted read-only over itself */
        PROTECTED_MASKED,               /* below the work dir, /dev/null over a file, an empty tmpfs over a dir */
        PROTECTED_KERNEL,               /* /proc and /sys paths, masked by the engine (MaskedPaths) */
        _PROTECTED_KIND_MAX,
} ProtectedKind;

/* The effective list of kind for config c: defaults and configured entries in order, without
 * duplicates and without what unmask_paths names. Work-dir entries are relative and clean. */
int protected_paths_list(const LoopConfig *c, ProtectedKind kind, char ***ret);

/* The directory the work dir's bind mount brings into the container: parent_dir when the work dir lies
 * inside it, else the work dir; clean and absolute. -EINVAL without an absolute work dir. */
int protected_paths_mount_root(const LoopConfig *c, char **ret);

/* git's control surface of the repository work_dir's .git names, as absolute paths inside root (those
 * outside are not in the container): config, config.worktree, commondir, hooks, info and the alternates
 * of its git dir and of the common dir a worktree's commondir points to, of every module's git dir below
 * modules/ and commondir and config.worktree of every linked worktree; and the .git file itself when it
 * is a pointer (a worktree). Missing paths are listed too: they must stay missing. */
int protected_paths_git(const char *work_dir, const char *root, char ***ret);

/* Everything that must neither change nor appear during a run, absolute: the read-only list (defaults
 * and protect_paths below the work dir), the masked files a host tool runs (.envrc), and git's control
 * surface (protected_paths_git()), minus unmask_paths. *ret_root is the mount root they lie in. */
int protected_paths_guarded(const LoopConfig *c, char **ret_root, char ***ret);

/* Where the guarded symbolic link path leads, as protected_paths_guarded() decides it: every link on the
 * way followed as the kernel would (-ELOOP beyond its 40), a missing rest (a dangling link) joined
 * lexically, ".." there included; spelt below root as root is spelt when it lies there, else the resolved
 * path. For messages: the decision is protected_paths_guarded()'s. */
int protected_path_link_target(const char *root, const char *path, char **ret);

/* The reference's credential files at any depth of work_dir (.env, .env.*, .envrc, .npmrc, .netrc,
 * .pgpass, .pypirc files; .aws, .kube directories), as absolute paths, found by a walk that skips .git and
 * symbolic links, goes PROTECTED_SECRETS_DEPTH_MAX deep and looks at PROTECTED_SECRETS_WALK_MAX entries:
 * returns 1 when it stopped there (the gate's read rules still cover the rest), 0 when it saw everything,
 * -E2BIG beyond PROTECTED_SECRETS_MAX finds. Files that appear later are the gate's to refuse. */
#define PROTECTED_SECRETS_MAX 256U
#define PROTECTED_SECRETS_DEPTH_MAX 12U
#define PROTECTED_SECRETS_WALK_MAX 100000U
int protected_paths_secrets_found(const char *work_dir, char ***ret);

/* The schema's check of one protect_paths / mask_paths entry: a clean relative path below the work dir
 * (no "..", no leading "/", no ':'). NULL when fine, else why not. */
const char *protected_path_check_entry(const char *v);
/* The schema's check of one unmask_paths entry: a work-dir entry as above or an absolute /proc or /sys
 * path. */
const char *protected_path_check_unmask_entry(const char *v);

/* A path cannot be both writable and protected: a read-write mount (mounts without "ro", extra_dirs)
 * whose absolute destination is a protected or masked path, or inside one, would undo the protection.
 * Returns 0 and *ret_reason NULL when the config is fine, or a reason naming both (to be freed). */
int protected_paths_check_config(const LoopConfig *c, char **ret_reason);

/* The host service a bind mount of source (absolute, clean, symlinks resolved) would hand the
 * container: the source is one of the host's service sockets or directories (systemd, journald,
 * D-Bus, the engines, the container runtimes' state), inside one, or a directory containing one.
 * engine_socket: the configured engine socket, may be NULL. NULL when none. */
const char *protected_host_service_exposed(const char *source, const char *engine_socket);
