/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Opens the directory path (O_DIRECTORY, not through a symlink as its last component) into *ret_fd;
 * -EPERM when its group or others may write in it: they could plant a file that the caller then trusts. */
int dir_open_unshared(const char *path, int *ret_fd);

/* Symlinks. */

/* The target of the symlink path, relative to dir_fd (AT_FDCWD for none; "" with an O_PATH fd for the
 * link itself), NUL-terminated, read with one call: -ENAMETOOLONG when longer than PATH_MAX. */
int readlinkat_malloc(int dir_fd, const char *path, char **ret);

/* Removes NAME below PARENT_FD and, when it is a directory, everything in it, never following a symlink
 * (one is removed as a file). Errors below NAME are ignored; the result is the removal of NAME itself. */
int rm_rf_at(int parent_fd, const char *name);

/* Writes size bytes of data to path below dir_fd with exactly this mode, never following a symlink:
 * each directory of path is opened with O_NOFOLLOW (created 0700 when missing; "", "." and ".." are
 * refused, -EINVAL, as is an absolute path), the data goes into a new file there that is then renamed over
 * the last component, replacing what was there (a symlink too) instead of writing through it. Files and
 * directories get the caller's file system identity (setfsuid()). A symlink as a directory fails the
 * call (-ELOOP or -ENOTDIR). */
int write_file_beneath(int dir_fd, const char *path, mode_t mode, const void *data, size_t size);

/* Case folding. A directory with FS_CASEFOLD_FL (+F: ext4 -O casefold, tmpfs -o casefold, f2fs) looks
 * names up ignoring case by the kernel's utf8 tables: ".ENV" opens ".env", ".GIT/hooks" is ".git/hooks".
 * Folding needs those tables (CONFIG_UNICODE): casefold_possible() is false only when the kernel says it
 * has none (ext4's feature list without casefold, and no file system listing it), and true when it cannot
 * tell (no /sys). Cached after the first call. */
bool casefold_possible(void);
/* 1 when the directory fd folds case, 0 when not (a file system without these flags too), -errno when
 * that cannot be read (an O_PATH fd is reopened read-only: a directory the caller may not read). A
 * readable fd costs one ioctl. */
int dir_fd_casefolded(int fd);
