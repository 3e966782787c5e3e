/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* libFuzzer target: the gate's walk of a send's control messages (gate_send_control(), gate-send.h),
 * the bytes the supervisor read once from the caller's msg_control. The input is those bytes. What must
 * hold whatever they are: the answer is success or one of the kernel's own errors for a bad control
 * buffer (EINVAL, EPERM, EBADF), never more than GATE_SEND_FDS_MAX fds are taken, the walk reads nothing
 * outside the buffer (ASan), and every fd taken is closed by gate_send_msg_done(), on success as on
 * failure (no fd of the caller's kept by the supervisor). */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate-send.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_PID 42
#define FUZZ_UID 1000
#define FUZZ_GID 1000
#define FUZZ_BAD_FD 99          /* an fd "the caller does not have" */

static int take(void *userdata, int fd) {
        int *null_fd = userdata;

        if (fd == FUZZ_BAD_FD || fd < 0)
                return -EBADF;
        fd = fcntl(*null_fd, F_DUPFD_CLOEXEC, 3);
        return fd < 0 ? -errno : fd;
}

/* The lowest fd number free: the same before and after an input, or an fd was kept. */
static int lowest_free(void) {
        int fd = fcntl(0, F_DUPFD_CLOEXEC, 0);

        if (fd < 0)
                fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
                close(fd);
        return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static int null_fd = -1;
        GateSendMsg m = GATE_SEND_MSG_NULL;
        int before, r;

        if (size > GATE_SEND_CONTROL_MAX)
                return 0;
        if (null_fd < 0) {
                null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (null_fd < 0)
                        abort();
        }
        before = lowest_free();
        /* An exact-size allocation: ASan sees a read past the buffer. */
        m.control = malloc(MAX(size, (size_t) 1));
        if (!m.control)
                return 0;
        memcpy(m.control, data, size);
        m.control_len = size;

        r = gate_send_control(&m, FUZZ_PID, FUZZ_UID, FUZZ_GID, 7, take, &null_fd);
        if (r != 0 && r != -EINVAL && r != -EPERM && r != -EBADF && r != -ENOMEM && r != -EMFILE)
                abort();
        if (m.n_fds > GATE_SEND_FDS_MAX)
                abort();
        for (size_t i = 0; i < m.n_fds; i++)
                if (fcntl(m.fds[i], F_GETFD) < 0)
                        abort();
        gate_send_msg_done(&m);
        if (lowest_free() != before)
                abort();
        return 0;
}
