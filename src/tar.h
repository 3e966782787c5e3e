/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Writing tar archives in memory (ustar, with PAX headers for long names), for the engine's archive and
 * build endpoints. */

#include <stddef.h>
#include <sys/types.h>

#include "macro.h"

#define TAR_SIZE_MAX (2ULL * 1024 * 1024 * 1024)

typedef struct TarWriter TarWriter;

int tar_writer_new(TarWriter **ret);
TarWriter *tar_writer_free(TarWriter *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(TarWriter *, tar_writer_free);

int tar_add_file(TarWriter *t, const char *name, mode_t mode, uid_t uid, gid_t gid, const void *data, size_t size);
int tar_add_directory(TarWriter *t, const char *name, mode_t mode, uid_t uid, gid_t gid);
int tar_add_symlink(TarWriter *t, const char *name, const char *target);
/* Adds a directory tree from disk (regular files, dirs, symlinks; nothing else), names relative to root,
 * owned by 0:0. Symlinks are stored, never followed. */
int tar_add_tree(TarWriter *t, int dir_fd, const char *prefix);
/* Ends the archive; the buffer stays owned by the writer. */
int tar_finish(TarWriter *t, const void **ret_data, size_t *ret_size);
