# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Machine-wide resources that integration tests running in parallel (meson's is_parallel) must not share,
# each behind a lock the test takes before it touches the resource and holds until it exits:
#
#   test_lock NAME [WAIT_S]   take /run/lock/loop-test-NAME.lock (waits up to WAIT_S, default
#                             TEST_LOCK_WAIT_S); idempotent within one test
#
# The resources:
#   kernel-audit     the kernel's audit_enabled switch, which a test turns on and sets back at its end
#   nspawn-podman    the host's cgroup v1 hierarchies, which nspawn shares with the Podman inside a
#                    booted container (its scopes go to the host's machine.slice, which nspawn_stop
#                    prunes)
# Docker's data root has its own lock in engines.sh. The waits stay well inside meson's timeouts.

TEST_LOCK_WAIT_S=${TEST_LOCK_WAIT_S:-600}
# Sourced more than once (nspawn.sh and a test both may): the locks held so far stay.
declare -p TEST_LOCKS_HELD >/dev/null 2>&1 || declare -A TEST_LOCKS_HELD=()

test_lock() {
        local name=${1:?test_lock NAME} wait=${2:-$TEST_LOCK_WAIT_S} fd
        [ -n "${TEST_LOCKS_HELD[$name]:-}" ] && return 0
        mkdir -p /run/lock || return 1
        exec {fd}>"/run/lock/loop-test-$name.lock" || return 1
        if ! flock -w "$wait" "$fd"; then
                echo "locks: another test held $name for more than $wait s" >&2
                exec {fd}>&-
                return 1
        fi
        TEST_LOCKS_HELD[$name]=$fd
}
