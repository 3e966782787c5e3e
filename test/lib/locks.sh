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
# Docker's data root has its own lock in engines.sh (taken with lock_fifo too). The waits stay well
# inside meson's timeouts.
#
#   lock_fifo VAR FILE WAIT_S   flock FILE on a new fd (its number in VAR), in the order the callers came
#
# A plain flock is not fair: each release wakes every waiter and any of them may win, so under meson's
# parallelism a test could lose round after round to later ones (ten tests queue on nspawn-podman, about
# 1,000 s of holds in CI) and wait past WAIT_S or its own meson timeout. Each waiter leaves a file named by
# its arrival time, pid and start time in FILE.queue/ and asks flock only once it is the oldest live one
# there; a waiter that died (killed while it waited) is skipped and its file removed, even once another
# process has its pid. Callers that do not queue (an older checkout) still
# exclude one another through the flock itself.

TEST_LOCK_WAIT_S=${TEST_LOCK_WAIT_S:-600}
# Sourced more than once (nspawn.sh and a test both may): the locks held so far stay.
declare -p TEST_LOCKS_HELD >/dev/null 2>&1 || declare -A TEST_LOCKS_HELD=()

# _lock_started PID: the start time of process PID (clock ticks after boot; /proc/PID/stat field 22),
# which tells it from a later process given the same pid.
_lock_started() {
        local s
        s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
        s=${s##*) }
        # shellcheck disable=SC2086 # the fields after the command name, split on purpose
        set -- $s
        echo "${20}"
}

lock_fifo() {
        local -n _lock_fifo_fd=$1
        local _lf_file=$2 _lf_q=$2.queue _lf_pid _lf_me _lf_f _lf_id _lf_first _lf_left _lf_fd
        local _lf_deadline=$((SECONDS + $3))
        mkdir -p "$_lf_q" || return 1
        _lf_pid=$BASHPID        # this shell's (in $(...) it would be the substitution's)
        _lf_me=$_lf_q/$(date +%s%N).$_lf_pid.$(_lock_started "$_lf_pid")
        : >"$_lf_me" || return 1
        if ! exec {_lf_fd}>"$_lf_file"; then
                rm -f "$_lf_me"
                return 1
        fi
        while :; do
                _lf_first=
                for _lf_f in "$_lf_q"/*; do
                        [ -e "$_lf_f" ] || continue
                        _lf_id=${_lf_f##*/}
                        _lf_id=${_lf_id#*.}     # PID.START
                        if [ "$_lf_f" = "$_lf_me" ] || [ "$(_lock_started "${_lf_id%.*}")" = "${_lf_id#*.}" ]; then
                                _lf_first=$_lf_f
                                break
                        fi
                        rm -f "$_lf_f"
                done
                _lf_left=$((_lf_deadline - SECONDS))
                [ "$_lf_left" -ge 0 ] || _lf_left=0
                if [ "$_lf_first" = "$_lf_me" ]; then
                        flock -w "$_lf_left" "$_lf_fd" && break
                        _lf_left=0
                fi
                if [ "$_lf_left" -le 0 ]; then
                        rm -f "$_lf_me"
                        exec {_lf_fd}>&-
                        return 1
                fi
                sleep 0.5
        done
        rm -f "$_lf_me"
        _lock_fifo_fd=$_lf_fd
}

test_lock() {
        local name=${1:?test_lock NAME} wait=${2:-$TEST_LOCK_WAIT_S} fd
        [ -n "${TEST_LOCKS_HELD[$name]:-}" ] && return 0
        mkdir -p /run/lock || return 1
        if ! lock_fifo fd "/run/lock/loop-test-$name.lock" "$wait"; then
                echo "locks: the tests before this one held $name for more than $wait s" >&2
                return 1
        fi
        TEST_LOCKS_HELD[$name]=$fd
}
