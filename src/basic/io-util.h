/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* I/O that survives EINTR and short reads/writes. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads exactly nbytes unless EOF comes first; returns the number of bytes read or -errno. */
ssize_t loop_read(int fd, void *buf, size_t nbytes);
/* Writes all of buf or fails with -errno. */
int loop_write(int fd, const void *buf, size_t nbytes);
/* As loop_read(), from offset on (the file position is left alone). */
ssize_t loop_pread(int fd, void *buf, size_t nbytes, off_t offset);
/* One pread() from offset 0 (retried when interrupted) of a file the kernel makes whole on each read
 * (procfs, cgroupfs): one call gives one consistent snapshot, and a second would make it again. At most
 * size - 1 bytes, NUL-terminated; returns their number or -errno. */
ssize_t read_snapshot(int fd, char *buf, size_t size);

/* All of a stream (a pipe, standard input) up to its end, as text: NUL-terminated in *ret, with its length
 * in *ret_size (may be NULL). More than max bytes is -E2BIG, a NUL byte in it -EINVAL (it would cut the text). */
int read_text_fd(int fd, size_t max, char **ret, size_t *ret_size);

/* Waits until fd is ready for events (poll()), at most until deadline_usec (CLOCK_MONOTONIC; UINT64_MAX:
 * no limit), retried when interrupted; returns the revents (> 0), -ETIMEDOUT, or -errno. */
int fd_wait_until(int fd, short events, uint64_t deadline_usec);

/* Reads a whole regular file, relative to dir_fd (AT_FDCWD for none), refusing files larger than max_size
 * (-EFBIG) and anything that is not a regular file (-EBADFD). With nofollow, a symlink as last component
 * is refused (-ELOOP). The result is NUL-terminated; ret_size excludes the NUL. */
int read_full_file_at(int dir_fd, const char *path, size_t max_size, bool nofollow,
                      char **ret_contents, size_t *ret_size);

/* Writes contents to path atomically: a temporary file in the same directory, fsync, rename. */
int write_file_atomic(const char *path, const void *contents, size_t size, mode_t mode);

/* mkdir -p, the last component owned by uid:gid (when run as root) with mode; parents are created 0755.
 * An existing directory is left as it is. */
int mkdir_owned(const char *path, mode_t mode, uid_t uid, gid_t gid);

/* Moves bytes both ways between two connected stream sockets until both directions have ended (EOF on
 * one side shuts down writing on the other), an error, or idle_timeout_ms without any traffic (-ETIMEDOUT;
 * < 0: no timeout). splice() through a pipe per direction, a copy through a buffer where the fds refuse
 * it; at most one pipe (IO_PUMP_BUFFER_SIZE, grown to IO_PUMP_PIPE_SIZE_MAX once a direction moved
 * IO_PUMP_GROW_AFTER, for at most IO_PUMP_PIPES_GROWN_MAX directions of the process at once) or buffer
 * (IO_PUMP_COPY_BUFFER_SIZE) in flight per direction, so a slow reader throttles its writer. Leaves both
 * fds non-blocking. The stats, if asked for, are filled also on failure. Once one direction has ended,
 * half_closed_timeout_ms (< 0: idle_timeout_ms) without traffic ends the pump normally (0): a peer that
 * closed is usually gone for good, and the other may never close on its own (a kept-alive server behind
 * a tunnel). */
#define IO_PUMP_BUFFER_SIZE (64U * 1024U)       /* a pipe's default size */
#define IO_PUMP_PIPE_SIZE_MAX (1024U * 1024U)   /* /proc/sys/fs/pipe-max-size's default */
#define IO_PUMP_GROW_AFTER (256U * 1024U)
/* 16 MiB of grown pipes, plus the default ones of 256 tunnels (32 MiB), stay below a user's
 * pipe-user-pages-soft (64 MiB) */
#define IO_PUMP_PIPES_GROWN_MAX 16U
#define IO_PUMP_COPY_BUFFER_SIZE (256U * 1024U)
#define IO_PUMP_ROUNDS_MAX 16U                  /* buffers moved one way before the other way's turn */
#define IO_PUMP_DRAINED_BELOW (16U * 1024U)     /* a shorter splice() in found the socket dry */
typedef struct FdPumpStats {
        uint64_t a_to_b, b_to_a;                /* bytes moved */
        size_t pipe_size_max;                   /* the largest pipe a direction had; 0: copied */
} FdPumpStats;
int fd_pump(int a, int b, int idle_timeout_ms, int half_closed_timeout_ms, FdPumpStats *ret_stats);
/* How many pipes of running pumps are grown now. */
unsigned fd_pump_pipes_grown(void);

/* Checks that fd is an AF_UNIX stream socket in listening state (else -ENOTSOCK), and makes it close-on-exec
 * and blocking or not as asked: what every listener a helper is handed goes through. */
int listen_fd_prepare(int fd, bool nonblocking);
