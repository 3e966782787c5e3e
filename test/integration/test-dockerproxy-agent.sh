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
#
# The bind-pin race (issue 6): inside the agent, a loop keeps swapping a bind source directory of the
# work dir for a symlink to a host directory holding a marker, while the agent starts a nested container
# with that bind again and again; the proxy freezes the channel's containers (the agent's, a second
# nested one) across its pin check and the start, so no start ever mounts the host directory, and the
# records say how many were frozen. A proxy that died with the channel frozen is thawed by the next one
# (and by --thaw, the unit's ExecStopPost=); a proxy that cannot freeze refuses the start (403 bind-pin).
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/engine-test.sh
. "$lib/engine-test.sh"

PROXY=$LOOP_BUILD_DIR/services/loop-dockerproxy
IMAGE=localhost/loop-test:latest
NESTED=loop-test-busybox:latest
CHANNEL=dproxy
DOCKER_CLI=/usr/local/bin/docker
TEST_USER=looptest      # the agent's user: never root, and no loop system user needed

[ "$(id -u)" -eq 0 ] || bail_out "needs root (it starts engines)"
[ -x "$LOOP" ] && [ -x "$PROXY" ] || bail_out "build first ($LOOP, $PROXY)"
[ -x "$DOCKER_CLI" ] && file -L "$DOCKER_CLI" | grep -q 'statically linked' ||
        bail_out "needs the static docker CLI at $DOCKER_CLI (it runs inside a busybox container)"

test_user_ensure "$TEST_USER" || bail_out "cannot create the test user $TEST_USER"
T=$(mktemp -d /var/tmp/loop-test-dproxy-agent.XXXXXX) || bail_out "mktemp failed"
RACE_STARTS=${RACE_STARTS:-40}
if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then CGROOT=/sys/fs/cgroup; else CGROOT=/sys/fs/cgroup/unified; fi
atexit "rm -rf '$T'"
chmod 0755 "$T"
export LOOP_STATE_DIR=$T/state LOOP_LOG_TARGET=console LOOP_CONFIG_DIR=$T/etc LOOP_RUNTIME_DIR=$T/run
mkdir -p "$T/docker" "$T/work" "$T/etc/channels.d" "$T/run/$CHANNEL"
cp "$DOCKER_CLI" "$T/docker/docker"
chmod 0755 "$T/docker" "$T/docker/docker" "$T/run" "$T/run/$CHANNEL"
chmod 0777 "$T/work"
build_test_rootfs "$T/rootfs" >/dev/null || bail_out "cannot build the test rootfs"
# exec and archives are asked of a human by the built-in rules; this channel allows them (the proxy's own
# checks come first either way)
cat >"$T/policy.json" <<'EOF'
{"http_rules": [{"methods": ["POST"], "paths": ["^/containers/[^/]+/exec$", "^/exec/[^/]+/start$"], "decision": "allow"},
                {"methods": ["PUT", "HEAD"], "paths": ["^/containers/[^/]+/archive$"], "decision": "allow"}]}
EOF

# The unified cgroup of a container (by name) that the proxy would freeze: its init's 0:: line, up to the
# component that names its id.
container_cgroup() {
        local inspect id pid cg
        inspect=$(engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/$1/json")
        id=$(grep -o '"Id": *"[0-9a-f]*"' <<<"$inspect" | head -1 | grep -o '[0-9a-f]\{64\}')
        pid=$(grep -o '"Pid": *[0-9]*' <<<"$inspect" | head -1 | grep -o '[0-9]*$')
        [ -n "$id" ] && [ -n "$pid" ] && [ "$pid" -gt 0 ] || return 1
        cg=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
        # shellcheck disable=SC2001
        echo "$CGROOT$(sed "s|\(${id}[^/]*\).*|\1|" <<<"$cg")"
}

PROXY_PID=
start_proxy() {         # [WRAPPER...]: the proxy under systemd-socket-activate, run by WRAPPER if given
        rm -f "$T/run/$CHANNEL/docker.sock"
        LOOP_DOCKERPROXY_ENGINE_SOCKET=$ENGINE_SOCK LOOP_DOCKERPROXY_WORK_DIR=$T/work LOOP_DOCKERPROXY_IDLE_SEC=3600 \
        LOOP_DOCKERPROXY_NETWORK=none LOOP_DOCKERPROXY_POLICY=$T/policy.json \
                "$@" systemd-socket-activate -E LOOP_DOCKERPROXY_ENGINE_SOCKET -E LOOP_DOCKERPROXY_WORK_DIR -E LOOP_LOG_TARGET \
                -E LOOP_DOCKERPROXY_IDLE_SEC -E LOOP_RUNTIME_DIR -E LOOP_DOCKERPROXY_NETWORK -E LOOP_DOCKERPROXY_POLICY \
                -l "$T/run/$CHANNEL/docker.sock" "$PROXY" "$CHANNEL" >>"$LOG" 2>&1 &
        PROXY_PID=$!
        for _ in $(seq 50); do [ -S "$T/run/$CHANNEL/docker.sock" ] && break; sleep 0.1; done
        chmod 0666 "$T/run/$CHANNEL/docker.sock"
}
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
        echo "{ \"work_dir\": \"$T/work\", \"user\": \"$TEST_USER\", \"mounts\": [ \"$T/docker:/opt/docker:ro\" ] }" \
                >"$T/etc/channels.d/$CHANNEL.json"
        chmod 0644 "$T/etc/loop.json" "$T/etc/channels.d/$CHANNEL.json"

        LOG=$T/proxy-$eng.log
        : >"$LOG"
        start_proxy
        [ -S "$T/run/$CHANNEL/docker.sock" ] || bail_out "$eng: the proxy did not listen"

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

        nested_id=$(grep -o '"Id": *"[0-9a-f]*"' <<<"$inspect" | head -1 | grep -o '[0-9a-f]\{64\}')
        like "$(grep "POST /v1\.[0-9.]*/containers/$nested_id/start" "$LOG" | head -1)" "LOOP_DECISION=allow" \
                "$eng: a container without binds starts as before..." || diag "$(grep "/start" "$LOG")"
        unlike "$(grep "POST /v1\.[0-9.]*/containers/$nested_id/start" "$LOG" | head -1)" "LOOP_FROZEN=" \
                "$eng: ...without freezing anything"

        # --- issue 17, class 8: no setuid-root file on the host through a bind of the work dir. The
        # directory is world-writable; the nested container asks for root, SETUID/SETGID and group 0, and
        # runs as the agent (looptest) all the same; so does an exec as root into it; docker cp into it
        # (the engine writes as root what the archive names) is refused ---
        S=$T/work/suid-$eng
        mkdir -p "$S"
        chmod 0777 "$S"
        agent_uid=$(id -u "$TEST_USER") agent_gid=$(id -g "$TEST_USER")
        run "$D run --rm -u 0 --cap-add SETUID --cap-add SETGID --group-add 0 -v $S:/w $NESTED sh -c 'echo uid=\$(id -u) groups=\$(id -G) end; touch /w/f; chmod 4755 /w/f; chgrp 0 /w/f; chmod 6755 /w/f; ls -ln /w/f'"
        like "$out" "uid=$agent_uid groups=$agent_gid end" "$eng: a nested container binding the work dir runs as the agent's uid:gid, though it asked for root and group 0" ||
                diag "$out $err"
        is "$(stat -c %u:%g "$S/f" 2>&1)" "$agent_uid:$agent_gid" \
                "$eng: the file it made in a world-writable bind is the agent's on the host, not root's"
        run "$D run -d --name suid-$eng -v $S:/w $NESTED sleep 600 >/dev/null; $D exec -u 0 suid-$eng sh -c 'id -u; touch /w/e; chmod 4755 /w/e'"
        like "$out" "^$agent_uid\$" "$eng: an exec as root into a container binding the work dir runs as the agent" ||
                diag "$out $err"
        is "$(stat -c %u "$S/e" 2>&1)" "$agent_uid" "$eng: ...and the file it made is the agent's on the host"
        run "echo x >/tmp/cp-src; $D cp /tmp/cp-src suid-$eng:/w/cp; echo rc=\$?"
        like "$out" "cannot be copied into a container that binds host paths.*rc=1" \
                "$eng: docker cp into a container binding the work dir is refused" || diag "$out $err"
        ok "$([ ! -e "$S/cp" ]; echo $?)" "$eng: ...and writes nothing there"
        like "$(grep "PUT /v1\.[0-9.]*/containers/[0-9a-f]*/archive" "$LOG" | tail -1)" \
                "LOOP_RULE=bind-owner .*LOOP_DECISION=deny .*LOOP_STATUS=403" "$eng: ...with 403, rule bind-owner, recorded"
        root_setuid=$(find "$S" -user 0 -perm /6000 | head -1)
        is "$root_setuid" "" "$eng: no setuid or setgid file owned by root is left in the work dir"
        engine_api "$ENGINE_SOCK" -X DELETE "http://d/v1.41/containers/suid-$eng?force=1" >/dev/null

        # --- the bind-pin race: a swap loop in the agent against its own starts ---
        W=$T/work/race-$eng
        mkdir -p "$W/src" "$T/host-$eng"
        echo clean-directory >"$W/src/clean"
        echo HOST-MARKER >"$T/host-$eng/marker"
        ln -s "$T/host-$eng" "$W/link"
        chmod -R a+rwX "$W"
        cat >"$W/race.sh" <<RACE
cd $W || exit 1
$D create --name race-$eng -v $W/src:/data $NESTED sh -c 'cat /data/*' >/dev/null || echo create-failed
$D run -d --name idle-$eng -v $W/src:/idle $NESTED sleep 600 >/dev/null || echo idle-failed
( while [ ! -e stop ]; do mv src src.d; mv link src; mv src link; mv src.d src; sleep 0.03; done ) &
i=0
while [ \$i -lt $RACE_STARTS ]; do $D start -a race-$eng 2>&1; echo "rc=\$?"; i=\$((i+1)); done >results
touch stop
wait
echo race-done
RACE
        run "sh $W/race.sh"
        like "$out" "race-done" "$eng: the agent raced $RACE_STARTS starts against a loop swapping their bind source" ||
                diag "$out $err"
        results=$(cat "$W/results" 2>/dev/null)
        unlike "$results" "HOST-MARKER" "$eng: no start mounted the host directory the symlink pointed at"
        clean=$(grep -c '^clean-directory$' <<<"$results")
        # an attach refused is "unable to upgrade" to the CLI; the records below say it was the pin
        pinned=$(grep -c -E 'checked again at start|unable to upgrade to tcp, received 403' <<<"$results")
        is "$((clean + pinned))" "$RACE_STARTS" \
                "$eng: each start ran with the work dir's own directory or was refused by its pin" ||
                diag "$(sort <<<"$results" | uniq -c)"
        diag "$eng: $clean of $RACE_STARTS starts ran, $pinned were refused by their pin"
        # the pins are checked before the freeze too (a refusal then freezes nothing), and again frozen
        race_id=$(engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/race-$eng/json" | grep -o '"Id": *"[0-9a-f]*"' |
                head -1 | grep -o '[0-9a-f]\{64\}')
        # the CLI's start -a: an attach (Podman's mounts the binds, initialising the container; Docker's
        # mounts nothing and is not frozen), then a start
        frozen_calls=start
        [ "$eng" = podman ] && frozen_calls='start|attach'
        starts=$(grep -E "POST /v1\.[0-9.]*/containers/($race_id|race-$eng)/($frozen_calls) " "$LOG" |
                 grep -v 'checked again at start)')
        is "$(grep -c 'LOOP_FROZEN=2 ' <<<"$starts")" "$(grep -c . <<<"$starts")" \
                "$eng: each start past the first pin check froze the agent's container and the running nested one" ||
                diag "$starts"
        like "$(grep 'LOOP_DECISION=allow' <<<"$starts" | head -1)" "LOOP_FROZEN_US=[0-9]+" "$eng: ...and for how long"
        diag "$eng: frozen for $(grep 'LOOP_DECISION=allow' <<<"$starts" | grep -o 'LOOP_FROZEN_US=[0-9]*' | cut -d= -f2 |
              sort -n | sed -n '1p;$p' | tr '\n' ' ')us (the shortest and longest allowed start)"
        # refused by the pin, or by the policy judging the binds again (a source caught mid-swap)
        is "$(grep -E "POST /v1\.[0-9.]*/containers/($race_id|race-$eng)/(start|attach) " "$LOG" | grep 'LOOP_STATUS=403' |
              grep -vc -E 'LOOP_RULE=bind-pin|checked again at start')" 0 "$eng: every refused start or attach was refused over its binds"
        ok "$([ ! -e "$T/run/$CHANNEL/dockerproxy/frozen-cgroups" ]; echo $?)" "$eng: no record of frozen cgroups is left"
        IDLE_CG=$(container_cgroup "idle-$eng")
        [ -n "$IDLE_CG" ] && [ -e "$IDLE_CG/cgroup.freeze" ] || bail_out "$eng: the nested container's cgroup is not found"
        is "$(cat "$IDLE_CG/cgroup.freeze")" 0 "$eng: the running nested container is thawed after the starts"

        run "$D update --restart always idle-$eng; $D restart -t 1 idle-$eng && echo restarted"
        like "$out" "may not get a restart policy" \
                "$eng: a container with binds may not get a restart policy (the engine would mount them unchecked)"
        like "$out" "restarted" "$eng: a restart of a container with binds runs..." || diag "$out $err"
        idle_id=$(engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/idle-$eng/json" | grep -o '[0-9a-f]\{64\}' | head -n 1)
        like "$(grep "POST /v1\.[0-9.]*/containers/$idle_id/restart" "$LOG")" "LOOP_FROZEN=[12] " \
                "$eng: ...with the channel frozen"

        # --- a proxy that died with the channel frozen: the next one thaws it; so does --thaw ---
        stop_proxy
        IDLE_CG=$(container_cgroup "idle-$eng")
        [ -n "$IDLE_CG" ] && [ -e "$IDLE_CG/cgroup.freeze" ] || bail_out "$eng: the nested container's cgroup is not found"
        echo "${IDLE_CG#"$CGROOT"}" >"$T/run/$CHANNEL/dockerproxy/frozen-cgroups"
        echo 1 >"$IDLE_CG/cgroup.freeze"
        start_proxy
        curl -sS --unix-socket "$T/run/$CHANNEL/docker.sock" -o /dev/null http://d/_ping   # it starts on a connection
        for _ in $(seq 50); do [ -e "$T/run/$CHANNEL/dockerproxy/frozen-cgroups" ] || break; sleep 0.1; done
        is "$(cat "$IDLE_CG/cgroup.freeze")" 0 "$eng: a proxy thaws at its start what a dead one's record lists"
        ok "$([ ! -e "$T/run/$CHANNEL/dockerproxy/frozen-cgroups" ]; echo $?)" "$eng: ...and removes the record"
        stop_proxy
        echo "${IDLE_CG#"$CGROOT"}" >"$T/run/$CHANNEL/dockerproxy/frozen-cgroups"
        echo 1 >"$IDLE_CG/cgroup.freeze"
        LOOP_RUNTIME_DIR=$T/run "$PROXY" --thaw "$CHANNEL" >>"$LOG" 2>&1
        is "$(cat "$IDLE_CG/cgroup.freeze")" 0 "$eng: loop-dockerproxy --thaw (the unit's ExecStopPost=) thaws it too"

        # --- fail closed: a proxy that cannot write cgroup.freeze refuses the start ---
        # shellcheck disable=SC2016 # expanded by the inner sh
        start_proxy unshare -m -- sh -c 'mount -o remount,bind,ro "$0" && exec "$@"' "$CGROOT"
        run "$D start race-$eng; echo rc=\$?"
        like "$out" "cannot be frozen for this start.*rc=1" "$eng: a start the channel cannot be frozen for is refused" ||
                diag "$out $err"
        like "$(grep "POST /v1\.[0-9.]*/containers/$race_id/start" "$LOG" | tail -1)" \
                "LOOP_RULE=bind-pin .*LOOP_DECISION=deny .*LOOP_STATUS=403" "$eng: ...with 403, rule bind-pin, recorded"
        is "$(cat "$IDLE_CG/cgroup.freeze")" 0 "$eng: ...and nothing is left frozen"
        is "$(engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/race-$eng/json" | grep -o '"Running": *[a-z]*' | grep -o '[a-z]*$')" \
                false "$eng: ...and the container did not start"

        for n in nested race idle; do
                engine_api "$ENGINE_SOCK" -X DELETE "http://d/v1.41/containers/$n-$eng?force=1" >/dev/null
        done
        stop_proxy
        engine_stop "$eng" >/dev/null 2>&1
done

tap_done
