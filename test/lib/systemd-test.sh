# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# The start every test of loop under a real systemd shares: sourcing this file sources TAP (tap.sh), the
# nspawn harness (nspawn.sh), the staged install (stage.sh) and the test image (test-image.sh), and
# exports LOOP_SOURCE_DIR and LOOP_BUILD_DIR (this checkout and its build/ unless set). Then:
#   systemd_test_prepare         bails out unless systemd-nspawn can boot here, then stages the build
#   systemd_test_config NAME     a fresh config dir in $cfg (removed at exit) with channels.d/ and the
#                                test image's rootfs (cfg/rootfs), named after NAME
#   journald_small_limit         the nspawn_boot argument that gives the machine's journald a small rate
#                                limit of its own (a drop-in, see there)
#   helper_exec MACHINE UNIT CMD...  CMD in the mount namespace of UNIT's main process in MACHINE, as
#                                user loop: what code a helper (loop-tasks@, loop-browser@) runs could do

_systemd_test_lib=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
# shellcheck source=test/lib/tap.sh
. "$_systemd_test_lib/tap.sh"
# shellcheck source=test/lib/nspawn.sh
. "$_systemd_test_lib/nspawn.sh"
# shellcheck source=test/lib/stage.sh
. "$_systemd_test_lib/stage.sh"
# shellcheck source=test/lib/test-image.sh
. "$_systemd_test_lib/test-image.sh"

: "${LOOP_SOURCE_DIR:=$(readlink -f "$_systemd_test_lib/../..")}"
: "${LOOP_BUILD_DIR:=$LOOP_SOURCE_DIR/build}"
export LOOP_BUILD_DIR LOOP_SOURCE_DIR

systemd_test_prepare() {
        nspawn_require || bail_out "integration tests need root and systemd-nspawn (see above)"
        stage_install || bail_out "could not build and install the staging tree"
}

systemd_test_config() {
        cfg=$(mktemp -d "${TMPDIR:-/tmp}/$1-etc.XXXXXX") || bail_out "mktemp failed"
        atexit "rm -rf '$cfg'"
        mkdir -p "$cfg/channels.d"
        build_test_rootfs "$cfg/rootfs" >/dev/null || bail_out "cannot build the test rootfs"
}

# The machine's journald with a rate limit as small as a busy host's can be in effect: journald scales
# RateLimitBurst= up with the free space of the journal's file system (5x at 64 GB, 6x at 1 TB), so a test machine with
# a large disk drops nothing a flood test makes and such a test would pass without the units'
# LogRateLimit* and the services' per-peer limiters. 200 messages of a priority per unit and minute,
# modulated, stays below the thousands a flood of unlimited refusals writes. Prints the nspawn_boot
# argument that binds the drop-in (written into $cfg: call after systemd_test_config).
JOURNALD_TEST_INTERVAL=60s
JOURNALD_TEST_BURST=200
journald_small_limit() {
        printf '[Journal]\nRateLimitIntervalSec=%s\nRateLimitBurst=%s\n' "$JOURNALD_TEST_INTERVAL" "$JOURNALD_TEST_BURST" \
                >"$cfg/journald-loop-test.conf" || return 1
        echo "--bind-ro=$cfg/journald-loop-test.conf:/etc/systemd/journald.conf.d/loop-test.conf"
}

# journal_wait ARGS...: `journalctl ARGS` in the test's container (in_ct) once it shows an entry, for a
# record whose event has happened but which journald may not have stored yet on a loaded machine
# (polled for up to 20 s; prints nothing when none came). Only for records that must be there: a check
# that a record is absent reads the journal once, after `journalctl --sync`.
journal_wait() {
        local out='' i
        for ((i = 0; i < 200; i++)); do
                in_ct journalctl --sync >/dev/null 2>&1
                out=$(in_ct journalctl --no-pager "$@" 2>/dev/null | grep -v '^-- No entries --$')
                [ -n "$out" ] && break
                sleep 0.1
        done
        [ -z "$out" ] || printf '%s\n' "$out"
}

# helper_exec MACHINE UNIT CMD...: 99 when UNIT has no main process.
helper_exec() {
        local m=$1 unit=$2 pid
        shift 2
        pid=$(nspawn_exec "$m" systemctl show -P MainPID -- "$unit")
        [ -n "$pid" ] && [ "$pid" != 0 ] || return 99
        nspawn_exec "$m" env PATH=/usr/local/bin:/usr/bin:/bin nsenter -t "$pid" -m \
                -S "$(nspawn_exec "$m" id -u loop)" -G "$(nspawn_exec "$m" id -g loop)" -- "$@"
}
