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
