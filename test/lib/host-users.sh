# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Users the host-side tests need, made by the tests themselves (CI runs on a machine where loop was
# never installed):
#
#   test_user_ensure NAME   an unprivileged system user NAME to run agents as (home
#                           /var/lib/loop-test/NAME, no login shell), made once per machine
#   loop_user_ensure        the loop system user and group, made from this tree's sysusers.d/loop.conf
#                           by systemd-sysusers, exactly as the packages make them
#
# Both are serialised by one lock, so tests running in parallel do not race useradd. test/run-all
# removes the users a run made (see its end); a test never removes them, since a parallel one may use them.

TEST_USERS_LOCK=${TEST_USERS_LOCK:-/run/lock/loop-test-users.lock}

_host_users_locked() {
        local fd rc
        mkdir -p "$(dirname "$TEST_USERS_LOCK")" || return 1
        exec {fd}>"$TEST_USERS_LOCK" || return 1
        flock -w 60 "$fd" || { exec {fd}>&-; return 1; }
        "$@"
        rc=$?
        exec {fd}>&-
        return $rc
}

_test_user_add() {
        getent passwd "$1" >/dev/null && return 0
        mkdir -p /var/lib/loop-test || return 1
        useradd --system --create-home --home-dir "/var/lib/loop-test/$1" --shell /usr/sbin/nologin "$1"
}

test_user_ensure() {
        _host_users_locked _test_user_add "${1:?test_user_ensure NAME}"
}

_loop_user_add() {
        local conf
        getent passwd loop >/dev/null && return 0
        conf=${LOOP_SOURCE_DIR:-$(dirname "${BASH_SOURCE[0]}")/../..}/sysusers.d/loop.conf
        [ -r "$conf" ] || { echo "host-users: cannot read $conf" >&2; return 1; }
        systemd-sysusers "$conf"
}

loop_user_ensure() {
        _host_users_locked _loop_user_add
}
