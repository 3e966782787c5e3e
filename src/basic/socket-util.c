/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "macro.h"
#include "socket-util.h"

int sockaddr_un_set_path(struct sockaddr_un *ret, const char *path) {
        size_t n;

        assert(ret);
        if (!path || !*path)
                return -EINVAL;
        n = strlen(path);
        if (n >= sizeof ret->sun_path)
                return -ENAMETOOLONG;
        *ret = (struct sockaddr_un) { .sun_family = AF_UNIX };
        memcpy(ret->sun_path, path, n + 1);
        return 0;
}

int unix_connect(const char *path, int extra_flags, uint64_t timeout_usec) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa;
        int r;

        r = sockaddr_un_set_path(&sa, path);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | extra_flags, 0);
        if (fd < 0)
                return -errno;
        if (timeout_usec > 0) {
                struct timeval tv = {
                        .tv_sec = (time_t) (timeout_usec / 1000000U),
                        .tv_usec = (suseconds_t) (timeout_usec % 1000000U),
                };
                if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
                    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0)
                        return -errno;
        }
        if (connect(fd, (const struct sockaddr *) &sa, sizeof sa) < 0)
                return -errno;
        return TAKE_FD(fd);
}
