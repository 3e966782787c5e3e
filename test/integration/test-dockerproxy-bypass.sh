#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Docker API proxy attacked over its socket (dockerproxy-hostile.py): path and encoding tricks,
# header tricks (request smuggling shapes, pipelining, Upgrade), JSON tricks (unicode escapes in keys,
# duplicate keys, deep nesting, truncated bodies), huge bodies and heads, slowloris, a connection
# flood; versions that either engine's router reads differently, endpoints outside the allow-list,
# start bodies, builds while off, pulls and imports. Each must be refused; none may reach the engine,
# which the engine's own event stream and container list tell (every request that could create a
# container names it bypass-...); and the proxy must still be there and answering at the end. On a
# private Podman and a private dockerd, one after the other.
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

[ "$(id -u)" = 0 ] || bail_out "needs root: it starts rootful podman and dockerd"
[ -x "$PROXY" ] || bail_out "no proxy at $PROXY: build first"

T=$(mktemp -d /tmp/test-dockerproxy-bypass.XXXXXX)
atexit "rm -rf '$T'"
mkdir -p "$T/work"

# shellcheck disable=SC2317 # called by atexit
stop_bg() {
        [ -n "${EVENTS_PID:-}" ] && { kill "$EVENTS_PID" 2>/dev/null; wait "$EVENTS_PID" 2>/dev/null; }
        [ -n "${PROXY_PID:-}" ] && { kill "$PROXY_PID" 2>/dev/null; wait "$PROXY_PID" 2>/dev/null; }
        EVENTS_PID= PROXY_PID=
}
atexit stop_bg

# Both engines: their routers read versions, paths and parameters each in its own way.
for kind in podman docker; do
        engine_start "$kind" || bail_out "$kind did not start"
        sock=$PODMAN_SOCK
        [ "$kind" = docker ] && sock=$DOCKER_SOCK
        engine_import_busybox "$sock" "$IMAGE" || bail_out "busybox import into $kind failed"

        # From a time before the canary (since=): the stream sees it however late curl connects.
        curl -sN --unix-socket "$sock" "http://d/v1.41/events?since=$(($(date +%s) - 1))" >"$T/events-$kind" 2>/dev/null &
        EVENTS_PID=$!

        rm -f "$T/proxy.sock"
        LOOP_DOCKERPROXY_ENGINE_SOCKET=$sock LOOP_DOCKERPROXY_WORK_DIR=$T/work LOOP_LOG_TARGET=console LOOP_DOCKERPROXY_IDLE_SEC=3600 \
        LOOP_RUNTIME_DIR=$T/run \
                systemd-socket-activate -E LOOP_DOCKERPROXY_ENGINE_SOCKET -E LOOP_DOCKERPROXY_WORK_DIR -E LOOP_LOG_TARGET -E LOOP_DOCKERPROXY_IDLE_SEC \
                -E LOOP_RUNTIME_DIR -l "$T/proxy.sock" "$PROXY" hostile >"$T/proxy-$kind.log" 2>&1 &
        PROXY_PID=$!
        for _ in $(seq 50); do [ -S "$T/proxy.sock" ] && break; sleep 0.1; done
        [ -S "$T/proxy.sock" ] || bail_out "the proxy did not listen"

        # A container create that is allowed reaches the engine: the event stream works.
        out=$(curl -sS --unix-socket "$T/proxy.sock" -X POST -H 'Content-Type: application/json' \
                -d "{\"Image\":\"$IMAGE\",\"Cmd\":[\"true\"]}" -w ' %{http_code}' "http://d/v1.41/containers/create?name=allowed-canary")
        like "$out" " 201$" "$kind: an allowed create goes through (the canary)"

        while IFS= read -r line; do
                case $line in
                "PASS "*) ok 0 "$kind: ${line#PASS }" ;;
                "FAIL "*) ok 1 "$kind: ${line#FAIL }" ;;
                *) diag "$line" ;;
                esac
        done < <(python3 "$here/dockerproxy-hostile.py" "$T/proxy.sock" "$IMAGE" 2>&1)

        # Keep-alive: curl reuses its connection for the next URL; every request is journaled on its own.
        out=$(curl -sS --unix-socket "$T/proxy.sock" -o /dev/null -o /dev/null -o /dev/null -w '%{http_code}:%{num_connects} ' \
                http://d/v1.41/_ping http://d/v1.41/_ping http://d/v1.41/_ping)
        is "$out" "200:1 200:0 200:0 " "$kind: three requests on one connection are answered on it (keep-alive)"
        is "$(grep -c 'allow: GET /v1.41/_ping ' "$T/proxy-$kind.log")" 3 "$kind: each request on a kept connection is journaled on its own"

        # A container made on the engine itself after the hostile requests: once the stream shows it, it
        # has shown whatever those requests made the engine do (an absence is only looked for after it).
        engine_api "$sock" -X POST -H 'Content-Type: application/json' -d "{\"Image\":\"$IMAGE\",\"Cmd\":[\"true\"]}" \
                "http://d/v1.41/containers/create?name=late-canary" >/dev/null
        wait_for 60 grep -q late-canary "$T/events-$kind"
        ok $? "$kind: the engine's event stream caught up with the requests (a later container is in it)"
        kill "$EVENTS_PID" 2>/dev/null
        wait "$EVENTS_PID" 2>/dev/null
        EVENTS_PID=
        like "$(cat "$T/events-$kind")" "allowed-canary" "$kind: the engine's event stream saw the canary"
        unlike "$(cat "$T/events-$kind")" "bypass-" "$kind: the engine's event stream saw no container of the hostile requests"
        list=$(engine_api "$sock" "http://d/v1.41/containers/json?all=1")
        unlike "$list" "bypass-" "$kind: the engine has no container of the hostile requests"
        kill -0 "$PROXY_PID" 2>/dev/null
        ok $? "$kind: the proxy process is still running"
        out=$(curl -sS --unix-socket "$T/proxy.sock" -o /dev/null -o /dev/null -o /dev/null -w '%{http_code}' http://d/_ping)
        is "$out" 200 "$kind: the proxy still answers"
        unlike "$(grep -ci 'sanitizer\|segfault\|abort' "$T/proxy-$kind.log")" '^[1-9]' "$kind: the proxy's log shows no crash"
        # a malformed request is recorded with what it began with, as a deny (issue 17, class 9)
        like "$(grep -m1 'PRI \* HTTP/2.0' "$T/proxy-$kind.log")" "LOOP_DECISION=deny" \
                "$kind: a request that never parsed is recorded as a deny, with its first line"
        stop_bg
done

tap_done
