# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# TAP output for shell tests (meson `protocol : 'tap'`). Source it, then:
#   ok COND_STATUS "name"      # ok when the status is 0:  ok $? "loop.target is loaded"
#   check "name" CMD...         # runs CMD (output goes to diag lines on failure), ok if it succeeds
#   is "got" "expected" "name"  # string equality, shows both on failure
#   like "got" "regex" "name"   # extended regex match
#   skip "name" "reason"        # a point that could not be tested here
#   diag "text"                 # comment line, on stdout ("# text")
#   bail_out "reason"           # "Bail out!" and exit 1: the test cannot go on
#   atexit "shell command"      # cleanup, run in reverse order on exit, also on INT/TERM
#   tap_done                    # prints the plan, exits non-zero when any point failed
# The plan is printed at the end ("1..N"), so tests need not count their points.

TAP_COUNT=0
TAP_FAILED=0
TAP_SKIPPED=0
TAP_ATEXIT=()

diag() {
        local line
        while IFS= read -r line; do
                printf '# %s\n' "$line"
        done <<<"$*"
}

# Report one test point; $1 is an exit status (0 = pass).
ok() {
        local status=$1 name=$2
        TAP_COUNT=$((TAP_COUNT + 1))
        if [ "$status" -eq 0 ]; then
                printf 'ok %d - %s\n' "$TAP_COUNT" "$name"
        else
                printf 'not ok %d - %s\n' "$TAP_COUNT" "$name"
                TAP_FAILED=$((TAP_FAILED + 1))
        fi
        return "$status"
}

check() {
        local name=$1 out status
        shift
        out=$("$@" 2>&1) && status=0 || status=$?
        ok "$status" "$name" || {
                diag "command: $*"
                diag "exit status $status, output:"
                [ -z "$out" ] || diag "$out"
                return 1
        }
}

is() {
        local got=$1 expected=$2 name=$3
        [ "$got" = "$expected" ] && ok 0 "$name" && return 0
        ok 1 "$name"
        diag "expected: '$expected'"
        diag "     got: '$got'"
        return 1
}

like() {
        local got=$1 regex=$2 name=$3
        [[ $got =~ $regex ]] && ok 0 "$name" && return 0
        ok 1 "$name"
        diag "expected to match: $regex"
        diag "              got: '$got'"
        return 1
}

unlike() {
        local got=$1 regex=$2 name=$3
        [[ ! $got =~ $regex ]] && ok 0 "$name" && return 0
        ok 1 "$name"
        diag "expected not to match: $regex"
        diag "                  got: '$got'"
        return 1
}

skip() {
        TAP_COUNT=$((TAP_COUNT + 1))
        TAP_SKIPPED=$((TAP_SKIPPED + 1))
        printf 'ok %d - %s # SKIP %s\n' "$TAP_COUNT" "$1" "${2:-}"
}

bail_out() {
        printf 'Bail out! %s\n' "$*"
        exit 1
}

atexit() {
        TAP_ATEXIT+=("$1")
}

_tap_run_atexit() {
        local i
        for ((i = ${#TAP_ATEXIT[@]} - 1; i >= 0; i--)); do
                eval "${TAP_ATEXIT[i]}" || true
        done
        TAP_ATEXIT=()
}

# wait_for SECONDS CMD...: runs CMD every 0.1 s until it succeeds (0) or SECONDS have passed (1).
wait_for() {
        local t=$1 i
        shift
        for ((i = 0; i < t * 10; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
        return 1
}

tap_done() {
        printf '1..%d\n' "$TAP_COUNT"
        [ "$TAP_SKIPPED" -eq 0 ] || diag "$TAP_SKIPPED of $TAP_COUNT skipped"
        if [ "$TAP_FAILED" -ne 0 ]; then
                diag "$TAP_FAILED of $TAP_COUNT failed"
                exit 1
        fi
        exit 0
}

# Cleanups must run however the test ends: a failed assertion under `set -e`, meson's timeout
# (SIGTERM), ^C. Without the INT/TERM traps bash would die without running the EXIT trap.
trap '_tap_run_atexit' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
