# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# The start of the tests that run loop's agent containers on both real engines (`loop run` on a private
# Podman and a private dockerd), sourced right after `set -uo pipefail`:
#
#   . "$lib/engine-test.sh"        the libraries they all use (tap.sh, host-users.sh, engines.sh,
#                                  test-image.sh); LOOP_BUILD_DIR and LOOP_SOURCE_DIR (this checkout's
#                                  unless given; exported), LOOP (the built loop), IMAGE (the test image;
#                                  a test may name another) and TEST_USER (the agents' user)
#   engine_test_begin NAME DIR [FILE...]
#                                  NAME needs root and a built loop (and each FILE built): it bails out,
#                                  never skips; T=/var/tmp/loop-test-DIR.XXXXXX (0755: the agent's user
#                                  reaches its work dir below it; removed at exit) with loop's state,
#                                  config (LOOP_CONFIG_DIR=$T/etc) and console log pointed there; the
#                                  test user made (test_user_ensure), its ids in UID_T and GID_T

_engine_test_lib=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=test/lib/tap.sh
. "$_engine_test_lib/tap.sh"
# shellcheck source=test/lib/host-users.sh
. "$_engine_test_lib/host-users.sh"
# shellcheck source=test/lib/engines.sh
. "$_engine_test_lib/engines.sh"
# shellcheck source=test/lib/test-image.sh
. "$_engine_test_lib/test-image.sh"

: "${LOOP_BUILD_DIR:=$(dirname "$(readlink -f "$0")")/../../build}"
: "${LOOP_SOURCE_DIR:=$(dirname "$(readlink -f "$0")")/../..}"
export LOOP_BUILD_DIR LOOP_SOURCE_DIR
LOOP=$LOOP_BUILD_DIR/src/loop
IMAGE=localhost/loop-test:latest
TEST_USER=looptest

engine_test_begin() {
        local name=$1 dir=$2 f
        shift 2
        [ "$(id -u)" -eq 0 ] || bail_out "$name needs root (it starts engines)"
        for f in "$LOOP" "$@"; do
                [ -x "$f" ] || bail_out "$f is not built"
        done
        T=$(mktemp -d "/var/tmp/loop-test-$dir.XXXXXX") || bail_out "mktemp failed"
        atexit "rm -rf '$T'"
        chmod 0755 "$T"
        export LOOP_STATE_DIR=$T/state LOOP_LOG_TARGET=console LOOP_CONFIG_DIR=$T/etc
        test_user_ensure "$TEST_USER" || bail_out "cannot create the test user $TEST_USER"
        UID_T=$(id -u "$TEST_USER")
        GID_T=$(id -g "$TEST_USER")
}
