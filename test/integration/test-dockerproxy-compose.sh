#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# docker-compose (Debian 12's, 1.29) through loop-dockerproxy against real engines, a private Podman
# service and a private dockerd (test/lib/engines.sh), the proxy socket-activated by
# systemd-socket-activate as its socket unit would be, the client on the host side as in
# test-dockerproxy-cli. A two-service project with a named volume and a network of its own (the
# project named after the channel, as a channel's volumes and networks must be): up, ps, logs, down -v.
# With gates.docker_proxy.nested_network (LOOP_DOCKERPROXY_NETWORK=engine) the project's network is
# really joined: one service reaches the other by its name. Without it (the default behind the egress
# gateway) the services get no network, and the project still comes up and down: the proxy drops
# compose's network connects as it drops the create's networks.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"
# shellcheck source=test/lib/engines.sh
. "$lib/engines.sh"

BUILD=${LOOP_BUILD_DIR:-$(dirname "$(readlink -f "$0")")/../../build}
PROXY=$BUILD/services/loop-dockerproxy
IMAGE=loop-test-busybox:latest
CHANNEL=composetest
COMPOSE=$(command -v docker-compose) || bail_out "no docker-compose (docker-compose in .ci/packages)"

[ "$(id -u)" = 0 ] || bail_out "needs root: it starts rootful podman and dockerd"
[ -x "$PROXY" ] || bail_out "no proxy at $PROXY: build first"

T=$(mktemp -d /tmp/test-dockerproxy-compose.XXXXXX)
chmod 755 "$T"
atexit "rm -rf '$T'"
mkdir -p "$T/work" "$T/project" "$T/run"

PROXY_PID=
start_proxy() {         # SOCKET ENGINE_SOCKET LOG NETWORK
        LOOP_DOCKERPROXY_ENGINE_SOCKET=$2 LOOP_DOCKERPROXY_WORK_DIR=$T/work LOOP_LOG_TARGET=console \
        LOOP_DOCKERPROXY_IDLE_SEC=3600 LOOP_RUNTIME_DIR=$T/run LOOP_DOCKERPROXY_NETWORK=$4 \
                systemd-socket-activate -E LOOP_DOCKERPROXY_ENGINE_SOCKET -E LOOP_DOCKERPROXY_WORK_DIR \
                -E LOOP_DOCKERPROXY_NETWORK -E LOOP_LOG_TARGET -E LOOP_DOCKERPROXY_IDLE_SEC -E LOOP_RUNTIME_DIR \
                -l "$1" "$PROXY" "$CHANNEL" >>"$3" 2>&1 &
        PROXY_PID=$!
        for _ in $(seq 50); do [ -S "$1" ] && return 0; sleep 0.1; done
        return 1
}
stop_proxy() {
        [ -n "$PROXY_PID" ] || return 0
        kill "$PROXY_PID" 2>/dev/null
        wait "$PROXY_PID" 2>/dev/null
        PROXY_PID=
}
atexit stop_proxy

cat >"$T/project/docker-compose.yml" <<YAML
version: "3.7"
services:
  db:
    image: $IMAGE
    command: ["sh", "-c", "echo db-ready > /data/state; echo db-started; exec httpd -f -p 8080 -h /data"]
    volumes: ["data:/data"]
    networks: ["net"]
  web:
    # depends_on orders the starts, it does not wait for db's httpd: web asks until it answers
    image: $IMAGE
    command: ["sh", "-c", "echo web-started; until wget -q -O - http://db:8080/state; do sleep 1; done; exec sleep 300"]
    depends_on: ["db"]
    networks: ["net"]
volumes:
  data: {}
networks:
  net: {}
YAML

for kind in podman docker; do
        engine_start "$kind" >/dev/null || { ok 1 "$kind: the engine starts"; continue; }
        engine_import_busybox "$ENGINE_SOCK" "$IMAGE" || bail_out "busybox import into $kind failed"
        for network in engine none; do
        LOG=$T/proxy-$kind-$network.log
        PSOCK=$T/$kind-$network-proxy.sock
        start_proxy "$PSOCK" "$ENGINE_SOCK" "$LOG" "$network" || bail_out "the proxy did not listen"
        dc() { (cd "$T/project" && DOCKER_HOST=unix://$PSOCK COMPOSE_PROJECT_NAME=$CHANNEL timeout 120 "$COMPOSE" "$@"); }
        kind=${kind%% *}
        [ "$network" = none ] && kind="$kind (no network)"

        out=$(dc up -d 2>&1)
        ok $? "$kind: docker-compose up -d starts the project through the proxy" || diag "$out"
        out=$(dc ps 2>&1)
        like "$out" "${CHANNEL}_db_1 .* Up" "$kind: docker-compose ps lists the db service up" || diag "$out"
        like "$out" "${CHANNEL}_web_1 .* Up" "$kind: ...and the web service"
        for _ in $(seq 30); do dc logs web 2>/dev/null | grep -q db-ready && break; sleep 1; done
        out=$(dc logs 2>&1)
        like "$out" "db-started" "$kind: docker-compose logs shows the db service's output" || diag "$out"
        if [ "$network" = engine ]; then
                like "$out" "web_1 .*db-ready" "$kind: web reached db by its name on the project's network, which served the named volume's file"
        else
                like "$(grep 'POST /v1\.[0-9]*/networks/[^ ]*/connect' "$LOG" | tail -1)" "LOOP_STATUS=200 .*connect is dropped" \
                        "$kind: compose's network connect is dropped, and recorded so" || diag "$(grep connect "$LOG")"
                like "$(engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/${CHANNEL}_web_1/json")" '"NetworkMode": ?"none"' \
                        "$kind: ...and the service has no network"
        fi
        inspect=$(engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/${CHANNEL}_db_1/json")
        like "$inspect" "\"loop-channel\": ?\"$CHANNEL\"" "$kind: the project's containers carry the channel's label"
        like "$(engine_api "$ENGINE_SOCK" "http://d/v1.41/volumes/${CHANNEL}_data")" "\"loop-channel\": ?\"$CHANNEL\"" \
                "$kind: ...its volume too"
        like "$(engine_api "$ENGINE_SOCK" "http://d/v1.41/networks/${CHANNEL}_net")" "\"loop-channel\": ?\"$CHANNEL\"" \
                "$kind: ...and its network"
        out=$(dc down -v 2>&1)
        ok $? "$kind: docker-compose down -v removes the project" || diag "$out"
        like "$(engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/json?all=1")" '^\[\]$' "$kind: ...its containers are gone"
        unlike "$(engine_api "$ENGINE_SOCK" "http://d/v1.41/volumes")" "${CHANNEL}_data" "$kind: ...its volume"
        unlike "$(engine_api "$ENGINE_SOCK" "http://d/v1.41/networks")" "${CHANNEL}_net" "$kind: ...and its network"
        is "$(grep -c 'LOOP_STATUS=403' "$LOG")" 0 "$kind: the proxy refused nothing compose asked" ||
                diag "$(grep 'LOOP_STATUS=403' "$LOG" | head -5)"
        stop_proxy
        done
        kind=${kind%% *}
        engine_stop "$kind" >/dev/null 2>&1
done

tap_done
