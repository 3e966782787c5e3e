/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* AF_UNIX stream sockets by path: the one place that fills a sockaddr_un and connects. */

#include <stdint.h>
#include <sys/un.h>

/* *ret for path (a file system name, never abstract): -EINVAL for an empty path, -ENAMETOOLONG when it does
 * not fit sun_path with its NUL. */
int sockaddr_un_set_path(struct sockaddr_un *ret, const char *path);

/* A stream socket connected to path, close-on-exec, plus extra_flags (SOCK_NONBLOCK); with timeout_usec > 0
 * its reads and writes time out after that long (SO_RCVTIMEO/SO_SNDTIMEO). Returns the fd, or -errno
 * (-ENOENT/-ECONNREFUSED: nobody listens; -EAGAIN: a non-blocking connect found the backlog full). */
int unix_connect(const char *path, int extra_flags, uint64_t timeout_usec);
