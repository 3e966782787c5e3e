/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* no-splice COMMAND...: runs COMMAND with splice(), tee() and vmsplice() failing with ENOSYS, as loop's
 * workload seccomp profile has them in the agent container, so that test/bench/gateway measures
 * `loop relay` the way it copies there. */

#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char *argv[]) {
        scmp_filter_ctx ctx;

        if (argc < 2) {
                fprintf(stderr, "usage: %s COMMAND [ARG...]\n", argv[0]);
                return 2;
        }
        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
            seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(splice), 0) < 0 ||
            seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(tee), 0) < 0 ||
            seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(vmsplice), 0) < 0 || seccomp_load(ctx) < 0) {
                fprintf(stderr, "%s: cannot load the seccomp filter\n", argv[0]);
                return 1;
        }
        seccomp_release(ctx);
        execvp(argv[1], argv + 1);
        fprintf(stderr, "%s: cannot run %s: %m\n", argv[0], argv[1]);
        return 127;
}
