#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The docker CLI inside a real agent container, on a private Podman and a private dockerd
# (test/lib/engines.sh): `loop run` starts the agent (the fake agent's "scenario:sh", gate on) with the
# channel's proxy socket, which loop-dockerproxy serves (socket-activated by systemd-socket-activate at
# $LOOP_RUNTIME_DIR/NAME/docker.sock, as loop-dockerproxy@NAME.socket would), bound in as
# /var/run/docker.sock with DOCKER_HOST set. The agent runs, lists and reads the logs of a nested
# container and is refused a privileged one and a bind of /; the nested container carries the channel's
# labels and has no network; the proxy identifies the caller as the agent's container. The static docker
# CLI comes in read-only through the channel's mounts. test-dockerproxy-service does the same on a real
# systemd with Podman.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"
# shellcheck source=test/lib/engines.sh
. "$lib/engines.sh"
# shellcheck source=test/lib/test-image.sh
. "$lib/test-image.sh"

: "${LOOP_BUILD_DIR:=$(dirname "$(readlink -f "$0")")/../../build}"
: "${LOOP_SOURCE_DIR:=$(dirname "$(readlink -f "$0")")/../..}"
export LOOP_BUILD_DIR LOOP_SOURCE_DIR
LOOP=$LOOP_BUILD_DIR/src/loop
PROXY=$LOOP_BUILD_DIR/services/loop-dockerproxy
IMAGE=localhost/loop-test:latest
NESTED=loop-test-busybox:latest
CHANNEL=dproxy
DOCKER_CLI=/usr/local/bin/docker

[ "$(id -u)" -eq 0 ] || bail_out "needs root (it starts engines)"
[ -x "$LOOP" ] && [ -x "$PROXY" ] || bail_out "build first ($LOOP, $PROXY)"
[ -x "$DOCKER_CLI" ] && file -L "$DOCKER_CLI" | grep -q 'statically linked' ||
        bail_out "needs the static docker CLI at $DOCKER_CLI (it runs inside a busybox container)"

T=$(mktemp -d /var/tmp/loop-test-dproxy-agent.XXXXXX) || bail_out "mktemp failed"
atexit "rm -rf '$T'"
chmod 0755 "$T"
export LOOP_STATE_DIR=$T/state LOOP_LOG_TARGET=console LOOP_CONFIG_DIR=$T/etc LOOP_RUNTIME_DIR=$T/run
mkdir -p "$T/docker" "$T/work" "$T/etc/channels.d" "$T/run/$CHANNEL"
cp "$DOCKER_CLI" "$T/docker/docker"
chmod 0755 "$T/docker" "$T/docker/docker" "$T/run" "$T/run/$CHANNEL"
chmod 0777 "$T/work"
build_test_rootfs "$T/rootfs" >/dev/null || bail_out "cannot build the test rootfs"

PROXY_PID=
stop_proxy() {
        [ -n "$PROXY_PID" ] || return 0
        kill "$PROXY_PID" 2>/dev/null
        wait "$PROXY_PID" 2>/dev/null
        PROXY_PID=
}
atexit stop_proxy

run() {
        out=$("$LOOP" run -q "$CHANNEL" "scenario:sh $1" 2>"$T/stderr") && st=0 || st=$?
        err=$(cat "$T/stderr")
}
D='DOCKER_BUILDKIT=0 /opt/docker/docker'

for eng in podman docker; do
        engine_start "$eng" >/dev/null || { ok 1 "$eng: the engine starts"; continue; }
        import_test_image "$ENGINE_SOCK" "$IMAGE" "$T/rootfs" >/dev/null || bail_out "$eng: the test image does not import"
        engine_import_busybox "$ENGINE_SOCK" "$NESTED" || bail_out "$eng: busybox import failed"
        cat >"$T/etc/loop.json" <<EOF
{ "engine": { "socket": "$ENGINE_SOCK" }, "container_image": "$IMAGE", "container_keep_alive_sec": 0,
  "browser": { "enabled": false } }
EOF
        echo "{ \"work_dir\": \"$T/work\", \"mounts\": [ \"$T/docker:/opt/docker:ro\" ] }" >"$T/etc/channels.d/$CHANNEL.json"
        chmod 0644 "$T/etc/loop.json" "$T/etc/channels.d/$CHANNEL.json"

        LOG=$T/proxy-$eng.log
        rm -f "$T/run/$CHANNEL/docker.sock"
        LOOP_DOCKERPROXY_ENGINE_SOCKET=$ENGINE_SOCK LOOP_DOCKERPROXY_WORK_DIR=$T/work LOOP_DOCKERPROXY_IDLE_SEC=3600 \
        LOOP_DOCKERPROXY_NETWORK=none \
                systemd-socket-activate -E LOOP_DOCKERPROXY_ENGINE_SOCKET -E LOOP_DOCKERPROXY_WORK_DIR -E LOOP_LOG_TARGET \
                -E LOOP_DOCKERPROXY_IDLE_SEC -E LOOP_RUNTIME_DIR -E LOOP_DOCKERPROXY_NETWORK \
                -l "$T/run/$CHANNEL/docker.sock" "$PROXY" "$CHANNEL" >"$LOG" 2>&1 &
        PROXY_PID=$!
        for _ in $(seq 50); do [ -S "$T/run/$CHANNEL/docker.sock" ] && break; sleep 0.1; done
        chmod 0666 "$T/run/$CHANNEL/docker.sock" || bail_out "$eng: the proxy did not listen"

        run 'echo "DOCKER_HOST=$DOCKER_HOST"; test -S /var/run/docker.sock && echo socket-there'
        like "$out" "DOCKER_HOST=unix:///var/run/docker.sock" "$eng: the agent has DOCKER_HOST set" || diag "$err"
        like "$out" "socket-there" "$eng: ...and the proxy's socket at /var/run/docker.sock"

        run "$D run --name nested-$eng $NESTED sh -c 'echo nested-hello; ls /sys/class/net'"
        like "$out" "nested-hello" "$eng: docker run inside the agent container runs a nested container" || diag "$out $err"
        is "$(printf '%s\n' "$out" | sed 1d | tr '\n' ' ')" "lo " "$eng: ...which has no network but loopback (the agent has none)"
        run "$D ps -a --format '{{.Names}}'"
        is "$out" "nested-$eng" "$eng: docker ps lists it, and not the agent's own container"
        run "$D logs nested-$eng"
        like "$out" "nested-hello" "$eng: docker logs reads it"
        run "$D run --rm --privileged $NESTED true; echo rc=\$?"
        like "$out" "privileged containers are refused" "$eng: a privileged container is refused inside the agent" ||
                diag "$out $err"
        like "$out" "rc=[1-9]" "$eng: ...with a failing docker run"
        run "$D run --rm -v /:/host $NESTED true"
        like "$out$err" "bind mounts of host system paths" "$eng: a bind of / is refused inside the agent"

        inspect=$(engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/nested-$eng/json")
        like "$inspect" "\"loop-channel\": ?\"$CHANNEL\"" "$eng: the nested container carries the channel's label"
        like "$(grep 'POST /v1\.[0-9.]*/containers/create' "$LOG" | head -1)" "LOOP_CONTAINER=loop-" \
                "$eng: the proxy records the agent's container as the caller"
        like "$(grep 'privileged' "$LOG" | tail -1)" "LOOP_DECISION=deny .*LOOP_STATUS=403" \
                "$eng: the refusal is recorded"

        engine_api "$ENGINE_SOCK" -X DELETE "http://d/v1.41/containers/nested-$eng?force=1" >/dev/null
        stop_proxy
        engine_stop "$eng" >/dev/null 2>&1
done

tap_done
