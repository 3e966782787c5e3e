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

/* Reading tar archives in memory, as Go's archive/tar reads them (the engines extract build contexts
 * with it): ustar (its prefix field), GNU long names and link names ('L', 'K'), PAX records ('x': path
 * and linkpath; a PAX size or a base-256 size is refused), global headers ('g') skipped. The archive
 * ends at its first zero block. */

#define TAR_READ_NAME_MAX 4096U         /* bytes of an entry's name or link target */

typedef struct TarEntry {
        char *name;             /* as stored (not normalised) */
        char *linkname;         /* symlinks and hard links, else NULL */
        char type;              /* '0' (also '\0' and '7'), '1', '2', '5', ... */
        const void *data;       /* regular files: into the archive */
        size_t size;
} TarEntry;

void tar_entry_done(TarEntry *e);

/* Reads the entry at *offset and moves *offset past it: 1 and the entry, 0 at the end of the archive,
 * -EBADMSG for what cannot be read, -ENOMEM. */
int tar_read_next(const void *data, size_t size, size_t *offset, TarEntry *ret);
