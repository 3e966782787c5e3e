#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The engine client (src/engine/engine.c, src/engine/engine-discover.c) against a real Podman service and a real
# dockerd, both started here on private sockets (test/lib/engines.sh) and stopped at the end, with
# nothing left running. The assertions live in the C driver test-engine-client; this script starts and
# kills engines around it and turns its TAP points into ours, prefixed with the engine's name.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"
# shellcheck source=test/lib/engines.sh
. "$lib/engines.sh"

DRIVER=${LOOP_BUILD_DIR:-$(dirname "$(readlink -f "$0")")/../../build}/test/integration/test-engine-client
IMAGE=loop-test-busybox:latest

[ "$(id -u)" = 0 ] || bail_out "needs root: it starts rootful podman and dockerd"
[ -x "$DRIVER" ] || bail_out "no driver at $DRIVER: build first (ninja -C build)"

# Runs the driver and re-emits its points as ours: "ok N - x" -> ok 0 "PREFIX: x".
drive() {
        local prefix=$1 line status=unknown plan=0
        shift
        while IFS= read -r line; do
                case $line in
                "ok "*) ok 0 "$prefix: ${line#ok * - }" ;;
                "not ok "*) ok 1 "$prefix: ${line#not ok * - }" ;;
                "1.."*) plan=1 ;;
                "driver-exit "*) status=${line#driver-exit } ;;
                "#"*) printf '%s\n' "$line" ;;
                *) diag "$prefix: $line" ;;
                esac
        done < <("$DRIVER" "$@" 2>&1; echo "driver-exit $?")
        # A driver that died (a crash, its own alarm) never printed its plan.
        [ "$plan" = 1 ] || { ok 1 "$prefix: the driver ran to its end (exit $status)"; return 1; }
        return 0
}

drive parse parse

# The private podman service path first, before our own engines exist: nothing answers, podman is on
# PATH (LOOP_ENGINE_CANDIDATES points the defaults at nowhere; test/debug only).
drive connect connect-missing
drive connect connect-private

t0=$(date +%s)
engine_start podman || bail_out "podman did not start"
engine_start docker || bail_out "dockerd did not start"
diag "engines up in $(($(date +%s) - t0)) s: $PODMAN_SOCK $DOCKER_SOCK"
BUSYBOX_TAR=$(_engine_busybox_tar) || bail_out "no busybox rootfs"
for kind in podman docker; do
        sock=$PODMAN_SOCK
        [ $kind = docker ] && sock=$DOCKER_SOCK
        engine_import_busybox "$sock" "$IMAGE" || bail_out "busybox import into $kind failed"
done

drive connect connect-fallback "$PODMAN_SOCK"

# Both engines at once: they are independent, and it halves the time on 2 cores.
out_podman=$(mktemp) out_docker=$(mktemp)
atexit "rm -f '$out_podman' '$out_docker'"
(drive podman client "$PODMAN_SOCK" podman "$IMAGE" "$BUSYBOX_TAR" >"$out_podman") &
p1=$!
(drive docker client "$DOCKER_SOCK" docker "$IMAGE" "$BUSYBOX_TAR" >"$out_docker") &
p2=$!
wait $p1 $p2
# Renumber: the subshells counted on their own.
for f in "$out_podman" "$out_docker"; do
        while IFS= read -r line; do
                case $line in
                "ok "*) ok 0 "${line#ok * - }" ;;
                "not ok "*) ok 1 "${line#not ok * - }" ;;
                *) printf '%s\n' "$line" ;;
                esac
        done <"$f"
done

for kind in podman docker; do
        diag "$kind: processes of the engine after the client tests: $(_engine_pids_mentioning "$ENGINE_TEST_DIR/$kind" | wc -l)"
done

# Last: each engine is killed while the driver follows a container's output.
dir=$ENGINE_TEST_DIR
for kind in podman docker; do
        sock=$PODMAN_SOCK
        [ $kind = docker ] && sock=$DOCKER_SOCK
        drive "$kind" follow-killed "$sock" "$IMAGE" "$(engine_pid $kind)"
        # Its conmon / containerd and shim outlive a SIGKILL; engine_stop finds and kills them by pid.
        engine_stop "$kind" 2>/dev/null
        is "$(_engine_pids_mentioning "$dir/$kind")" "" "$kind: nothing of the killed engine is left running"
done
# Docker's data root is checked under its lock: a test running in parallel may have its own dockerd there now.
exec {docker_lock}>"$LOOP_TEST_DOCKER_ROOT.lock" && flock -w "$ENGINE_DOCKER_LOCK_WAIT_S" "$docker_lock"
is "$(grep -cF -e "$dir" -e " $LOOP_TEST_DOCKER_ROOT " -e "$LOOP_TEST_DOCKER_ROOT/" /proc/self/mountinfo)" 0 \
        "no mount of the test engines is left (test dir, docker's data root)"
exec {docker_lock}>&-
ok "$([ ! -e "$dir" ]; echo $?)" "the test directory is gone"
tap_done
