/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Symlinks. */

/* The target of the symlink path, relative to dir_fd (AT_FDCWD for none; "" with an O_PATH fd for the
 * link itself), NUL-terminated, read with one call: -ENAMETOOLONG when longer than PATH_MAX. */
int readlinkat_malloc(int dir_fd, const char *path, char **ret);

/* Removes NAME below PARENT_FD and, when it is a directory, everything in it, never following a symlink
 * (one is removed as a file). Errors below NAME are ignored; the result is the removal of NAME itself. */
int rm_rf_at(int parent_fd, const char *name);
