/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Symlinks. */

/* The target of the symlink path, relative to dir_fd (AT_FDCWD for none; "" with an O_PATH fd for the
 * link itself), NUL-terminated, read with one call: -ENAMETOOLONG when longer than PATH_MAX. */
int readlinkat_malloc(int dir_fd, const char *path, char **ret);
