#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Docker API proxy attacked over its socket (dockerproxy-hostile.py): path and encoding tricks,
# header tricks (request smuggling shapes, pipelining, Upgrade), JSON tricks (unicode escapes in keys,
# duplicate keys, deep nesting, truncated bodies), huge bodies and heads, slowloris, a connection
# flood. Each must be refused; none may reach the engine, which the engine's own event stream and
# container list tell (every request that could create a container names it bypass-...); and the proxy
# must still be there and answering at the end.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
here=$(dirname "$(readlink -f "$0")")
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"
# shellcheck source=test/lib/engines.sh
. "$lib/engines.sh"

BUILD=${LOOP_BUILD_DIR:-$here/../../build}
PROXY=$BUILD/services/loop-dockerproxy
IMAGE=loop-test-busybox:latest

[ "$(id -u)" = 0 ] || bail_out "needs root: it starts rootful podman"
[ -x "$PROXY" ] || bail_out "no proxy at $PROXY: build first"

T=$(mktemp -d /tmp/test-dockerproxy-bypass.XXXXXX)
atexit "rm -rf '$T'"
mkdir -p "$T/work"

engine_start podman || bail_out "podman did not start"
engine_import_busybox "$PODMAN_SOCK" "$IMAGE" || bail_out "busybox import failed"

EVENTS_PID=
curl -sN --unix-socket "$PODMAN_SOCK" http://d/v1.41/events >"$T/events" 2>/dev/null &
EVENTS_PID=$!
atexit 'kill $EVENTS_PID 2>/dev/null; wait $EVENTS_PID 2>/dev/null'

LOOP_DOCKERPROXY_ENGINE_SOCKET=$PODMAN_SOCK LOOP_DOCKERPROXY_WORK_DIR=$T/work LOOP_LOG_TARGET=console LOOP_DOCKERPROXY_IDLE_SEC=3600 \
LOOP_RUNTIME_DIR=$T/run \
        systemd-socket-activate -E LOOP_DOCKERPROXY_ENGINE_SOCKET -E LOOP_DOCKERPROXY_WORK_DIR -E LOOP_LOG_TARGET -E LOOP_DOCKERPROXY_IDLE_SEC \
        -E LOOP_RUNTIME_DIR -l "$T/proxy.sock" "$PROXY" hostile >"$T/proxy.log" 2>&1 &
PROXY_PID=$!
atexit 'kill $PROXY_PID 2>/dev/null; wait $PROXY_PID 2>/dev/null'
for _ in $(seq 50); do [ -S "$T/proxy.sock" ] && break; sleep 0.1; done
[ -S "$T/proxy.sock" ] || bail_out "the proxy did not listen"

# A container create that is allowed reaches the engine: the event stream works.
out=$(curl -sS --unix-socket "$T/proxy.sock" -X POST -H 'Content-Type: application/json' \
        -d "{\"Image\":\"$IMAGE\",\"Cmd\":[\"true\"]}" -w ' %{http_code}' "http://d/v1.41/containers/create?name=allowed-canary")
like "$out" " 201$" "an allowed create goes through (the canary)"

while IFS= read -r line; do
        case $line in
        "PASS "*) ok 0 "${line#PASS }" ;;
        "FAIL "*) ok 1 "${line#FAIL }" ;;
        *) diag "$line" ;;
        esac
done < <(python3 "$here/dockerproxy-hostile.py" "$T/proxy.sock" "$IMAGE" 2>&1)

# Keep-alive: curl reuses its connection for the next URL; every request is journaled on its own.
out=$(curl -sS --unix-socket "$T/proxy.sock" -o /dev/null -o /dev/null -o /dev/null -w '%{http_code}:%{num_connects} ' \
        http://d/v1.43/_ping http://d/v1.43/_ping http://d/v1.43/_ping)
is "$out" "200:1 200:0 200:0 " "three requests on one connection are answered on it (keep-alive)"
is "$(grep -c 'allow: GET /v1.43/_ping ' "$T/proxy.log")" 3 "each request on a kept connection is journaled on its own"

sleep 1
kill "$EVENTS_PID" 2>/dev/null
wait "$EVENTS_PID" 2>/dev/null
like "$(cat "$T/events")" "allowed-canary" "the engine's event stream saw the canary"
unlike "$(cat "$T/events")" "bypass-" "the engine's event stream saw no container of the hostile requests"
list=$(engine_api "$PODMAN_SOCK" "http://d/v1.41/containers/json?all=1")
unlike "$list" "bypass-" "the engine has no container of the hostile requests"
kill -0 "$PROXY_PID" 2>/dev/null
ok $? "the proxy process is still running"
out=$(curl -sS --unix-socket "$T/proxy.sock" -o /dev/null -o /dev/null -o /dev/null -w '%{http_code}' http://d/_ping)
is "$out" 200 "the proxy still answers"
unlike "$(grep -ci 'sanitizer\|segfault\|abort' "$T/proxy.log")" '^[1-9]' "the proxy's log shows no crash"

tap_done
