#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The real-systemd harness (test/lib/nspawn.sh) that every integration test stands on: it boots
# systemd as PID 1, runs commands beside it and under it, powers off without leaving anything
# behind, and (--podman) gives a rootful podman driven by that systemd.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"
# shellcheck source=test/lib/nspawn.sh
. "$lib/nspawn.sh"

nspawn_require || bail_out "integration tests need root and systemd-nspawn (see above)"

gone() {
        local name=$1 leader=$2 cg
        kill -0 "$leader" 2>/dev/null && { diag "PID 1 ($leader) still runs"; return 1; }
        for cg in $(_nspawn_cgroups "$name"); do
                [ -e "$cg" ] && { diag "$cg still exists"; return 1; }
        done
        [ -e "$NSPAWN_STATE_DIR/$name" ] && { diag "$NSPAWN_STATE_DIR/$name still exists"; return 1; }
        return 0
}

M=loop-harness-$$
nspawn_boot "$M" || bail_out "could not boot systemd in a container"
ok 0 "nspawn_boot boots a container ($(cat "$NSPAWN_STATE_DIR/$M/boot.ms") ms)"
is "$(nspawn_exec "$M" systemctl is-system-running)" running "the container's system is running, no unit failed"
is "$(nspawn_exec "$M" cat /proc/1/comm)" systemd "PID 1 in the container is systemd"
is "$(nspawn_exec "$M" hostname)" "$M" "the container's host name is its machine name"
is "$(nspawn_exec "$M" findmnt -n -o FSTYPE /)" tmpfs "the container's root is a tmpfs (--volatile=yes)"
is "$(LOOP_HARNESS_PROBE=leaked nspawn_exec "$M" printenv LOOP_HARNESS_PROBE)" "" \
        "nspawn_exec does not leak the test's environment"
like "$(nspawn_run "$M" cat /proc/self/cgroup)" 'name=systemd:/system\.slice/run-[^/]*\.service|0::/system\.slice/run-[^/]*\.service' \
        "nspawn_run runs a transient service of the container's systemd"
like "$(nspawn_run "$M" -p DynamicUser=yes id -u)" '^[1-9][0-9]*$' "nspawn_run passes systemd-run options"
leader=$(nspawn_leader "$M")
nspawn_stop "$M"
ok $? "nspawn_stop powers the container off cleanly"
gone "$M" "$leader"
ok $? "nothing of the container is left: PID 1, cgroups, state"
nspawn_stop "$M"
ok $? "nspawn_stop on a stopped container does nothing"

P=loop-harness-podman-$$
if ! command -v podman >/dev/null; then
        skip "nspawn_boot --podman gives a working rootful podman" "podman is not installed"
else
        nspawn_boot "$P" --podman || bail_out "could not boot systemd with podman in a container"
        ok 0 "nspawn_boot --podman boots a container ($(cat "$NSPAWN_STATE_DIR/$P/boot.ms") ms)"
        is "$(nspawn_exec "$P" podman info --format '{{.Host.CgroupManager}} {{.Host.OCIRuntime.Name}}')" \
                "systemd runc" "podman info answers: the container's systemd manages podman's cgroups, runtime runc"
        sock=$(nspawn_root "$P")/run/podman/podman.sock
        is "$(curl -sS --max-time 10 --unix-socket "$sock" http://d/_ping)" OK \
                "the host reaches the container's podman API through podman.socket"
        leader=$(nspawn_leader "$P")
        nspawn_stop "$P"
        ok $? "nspawn_stop powers the podman container off cleanly"
        gone "$P" "$leader"
        ok $? "nothing of the podman container is left"
fi

tap_done
