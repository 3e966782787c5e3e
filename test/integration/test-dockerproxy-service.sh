#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Docker API proxy end to end: a real systemd (PID 1 in nspawn) with rootful Podman inside;
# loop-generator enables loop-dockerproxy@demo.socket; `loop run` starts the agent in a real container
# with the socket at /var/run/docker.sock and DOCKER_HOST set; the agent (the fake agent's "scenario:sh")
# uses the real docker CLI (the host's static /usr/local/bin/docker, bound in read-only) to run, list,
# log, exec into (approved by a human with `loop gate approve`, through loop-gate@demo) and build, and
# is refused a privileged container. The nested container lands in the channel's slice; every request
# is a journal entry naming the agent's container; the service exits when idle and its unit's
# `systemd-analyze security` exposure is at most 2.0. A nested container with a bind is started with
# the channel's containers frozen (the unit may write cgroup.freeze in loop.slice).
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

DOCKER_CLI=/usr/local/bin/docker
nspawn_require || bail_out "integration tests need root and systemd-nspawn (see above)"
[ -x "$DOCKER_CLI" ] && file -L "$DOCKER_CLI" | grep -q 'statically linked' ||
        bail_out "needs the static docker CLI at $DOCKER_CLI (it runs inside a busybox container)"
stage_install || bail_out "could not build and install the staging tree"

M=loop-dproxy-$$
IMAGE=localhost/loop-test:latest
systemd_test_config loop-dproxy

cat >"$cfg/loop.json" <<EOF
{ "container_image": "$IMAGE", "browser": { "enabled": false }, "container_keep_alive_sec": 0 }
EOF
# The docker CLI comes in read-only; exec is left to the built-in rule, which asks a human.
cat >"$cfg/channels.d/demo.json" <<'EOF'
{ "mounts": [ "/opt/loop-test-docker:/opt/docker:ro" ],
  "gates": { "approval_timeout_sec": 120, "docker_proxy": { "build": true } } }
EOF
chmod 0644 "$cfg/loop.json" "$cfg/channels.d/demo.json"

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
D='DOCKER_BUILDKIT=0 /opt/docker/docker'
agent() {
        out=$(in_ct loop run -q demo "scenario:sh $1" 2>&1) && st=0 || st=$?
}
agent_bg() {
        in_ct sh -c "loop run -q demo 'scenario:sh $1' >$2 2>&1; echo status=\$? >>$2" &
}
done_in() { in_ct grep -q '^status=' "$1"; }
first_id() { in_ct loop gate list demo --json 2>/dev/null | sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' | head -1; }
pending() { [ -n "$(first_id)" ]; }
proxy_journal() { in_ct journalctl --sync; in_ct journalctl -o export -u 'loop-dockerproxy@demo' "$@"; }
# proxy_record FILTER...: the same once one is there (journald may store a record after the proxy answered)
proxy_record() { journal_wait -o export -u 'loop-dockerproxy@demo' "$@"; }

nspawn_boot "$M" --podman --stage "$LOOP_STAGE" --config "$cfg" "$(journald_small_limit)" \
        --bind-ro="$DOCKER_CLI:/opt/loop-test-docker/docker" || bail_out "could not boot systemd with podman"
ok 0 "systemd boots with podman inside"
like "$(in_ct systemd-analyze cat-config systemd/journald.conf)" "RateLimitBurst=$JOURNALD_TEST_BURST" \
        "journald's own rate limit is small in this machine (burst $JOURNALD_TEST_BURST per $JOURNALD_TEST_INTERVAL), as on a full disk"
import_test_image "$(nspawn_root "$M")/run/podman/podman.sock" "$IMAGE" "$cfg/rootfs" >/dev/null
ok $? "the test image is imported into the container's podman"
check "systemd-sysusers creates the loop user" in_ct systemd-sysusers
check "systemctl start loop.target" in_ct systemctl start loop.target

# --- the socket ---------------------------------------------------------------------------------------
is "$(prop loop-dockerproxy@demo.socket ActiveState)" active "the generator enabled loop-dockerproxy@demo.socket"
is "$(in_ct stat -c '%a %U:%G' /run/loop/demo/docker.sock)" "666 root:root" \
        "docker.sock is 0666 (the proxy checks who calls)"
is "$(prop loop-dockerproxy@demo.service ActiveState)" inactive "the service does not run before a connection"

# --- what the agent does with it ----------------------------------------------------------------------
agent 'echo "DOCKER_HOST=$DOCKER_HOST"; test -S /var/run/docker.sock && echo socket-there'
like "$out" "DOCKER_HOST=unix:///var/run/docker.sock" "the agent has DOCKER_HOST set"
like "$out" "socket-there" "...and the proxy's socket at /var/run/docker.sock"
is "$(prop loop-dockerproxy@demo.service User)" root "the service runs (socket activation), as root for the engine's socket"

agent "$D run --name nested-one --entrypoint /bin/sh $IMAGE -c 'echo nested-hello'"
like "$out" "nested-hello" "docker run inside the agent container runs a nested container" || diag "$out"
agent "$D ps -a --format '{{.Names}} {{.Labels}}'"
like "$out" "nested-one" "docker ps lists it"
unlike "$out" "loop-[a-z]+-[0-9a-f]{6}" "...and not the agent's own container (only nested ones are listed)"
agent "$D logs nested-one"
like "$out" "nested-hello" "docker logs reads it"
like "$(in_ct podman inspect --format '{{.HostConfig.CgroupParent}}' nested-one)" "loop-demo.slice" \
        "the nested container's cgroup parent is the channel's slice"
agent "$D run --rm --privileged --entrypoint /bin/true $IMAGE; echo rc=\$?"
like "$out" "privileged containers are refused" "a privileged container is refused inside the agent" || diag "$out"
like "$out" "rc=[1-9]" "...with a failing docker run"
agent "$D run --rm -v /:/host --entrypoint /bin/true $IMAGE; echo rc=\$?"
like "$out" "bind mounts of host system paths" "a bind of / is refused inside the agent"

# build from the local image, in the agent's /tmp
# (with a plain /etc/passwd and /etc/group: the agent image's are links into /run, to which Podman cannot
# add the uid and gid of a nested container that binds the work dir, below)
agent "mkdir -p /tmp/ctx && printf 'FROM $IMAGE\nRUN echo built-in-agent >/built && rm -f /etc/passwd /etc/group && echo root:x:0:0:root:/:/bin/sh >/etc/passwd && echo root:x:0: >/etc/group\n' >/tmp/ctx/Dockerfile && $D build -q -t demo-built-by-agent /tmp/ctx && $D run --rm --entrypoint /bin/cat demo-built-by-agent /built"
like "$out" "built-in-agent" "docker build inside the agent builds an image from the local base, and it runs" || diag "$out"

# exec: the built-in rule asks a human, through loop-gate@demo with the agent container's token
agent "$D run -d --name nested-long --entrypoint /bin/sleep $IMAGE 300"

# a bind of the work dir: the unit's proxy freezes the channel's containers (the agent's, nested-long)
# in loop.slice across the pin check and the start (and Podman's attach, which mounts too)
# (it runs as the agent, which the proxy forces on containers that bind host paths)
agent "mkdir -p pinned && echo pinned-data >pinned/f && $D run --rm -v \$PWD/pinned:/data --entrypoint /bin/sh demo-built-by-agent -c 'cat /data/f; id -u'"
like "$out" "pinned-data" "a nested container with a bind of the work dir runs, started by the unit's proxy" || {
        diag "$out"
        agent "$D create --name pin-diag -v \$PWD/pinned:/data --entrypoint /bin/cat demo-built-by-agent /data/f && $D start pin-diag; $D rm -f pin-diag; $D run --rm --entrypoint /bin/ls demo-built-by-agent -l /etc/passwd"
        diag "$out"
}
like "$out" "pinned-data[[:space:]]+$(in_ct id -u loop | tr -d '\r')([[:space:]]|\$)" "...as the agent's uid (loop's), whatever the image says"
frozen=$(proxy_record LOOP_FROZEN=2)
like "$frozen" "LOOP_PATH=/v[0-9.]+/containers/[0-9a-f]+/start" \
        "...with the agent's container and the running nested one frozen (LOOP_FROZEN=2 in the journal)" ||
        diag "$(proxy_journal | grep -a -E 'LOOP_(FROZEN|PATH|REASON)' | tail -20)"
like "$frozen" "LOOP_FROZEN_US=[0-9]+" "...and for how long (LOOP_FROZEN_US)"
agent_bg "$D exec nested-long echo exec-approved" /tmp/exec.out
wait_for 60 pending
ok $? "docker exec waits for a human (loop gate list shows it)"
like "$(in_ct loop gate list demo)" "docker.*POST .*/containers/[0-9a-f]{64}/exec" \
        "...as a docker request naming the endpoint (and the container's id the request was resolved to)"
check "loop gate approve (exec create)" in_ct loop gate approve "$(first_id)"
wait_for 60 pending
ok $? "exec start asks too"
check "loop gate approve (exec start)" in_ct loop gate approve "$(first_id)"
wait_for 60 done_in /tmp/exec.out
like "$(in_ct cat /tmp/exec.out)" "exec-approved" "the approved exec runs in the nested container"
agent_bg "$D exec nested-long echo exec-denied" /tmp/exec2.out
wait_for 60 pending
check "loop gate deny" in_ct loop gate deny "$(first_id)"
wait_for 60 done_in /tmp/exec2.out
res=$(in_ct cat /tmp/exec2.out)
like "$res" "not approved" "a denied exec is refused with the gate's answer" || diag "$res"
unlike "$res" "exec-denied" "...and does not run"

# --- the journal ---------------------------------------------------------------------------------------
deny=$(proxy_record LOOP_DECISION=deny LOOP_STATUS=403)
for f in LOOP_CHANNEL=demo 'LOOP_CONTAINER=loop-[a-z]+-[0-9a-f]{6}' LOOP_KIND=docker LOOP_METHOD=POST \
         'LOOP_PATH=/v[0-9.]+/containers/create' 'LOOP_RULE=body\[[0-9]+\]' LOOP_LATENCY_NS=[0-9]+ \
         'MESSAGE_ID=26a10ae3739a4d5181b59cd9f48a917f'; do
        like "$deny" "$f" "a refused request's journal entry has $f"
done
like "$(proxy_record LOOP_DECISION=allow LOOP_STATUS=201)" "LOOP_PATH=/v[0-9.]+/containers/create" \
        "an allowed create is journaled with the engine's 201"
like "$(proxy_record LOOP_DECISION=allow LOOP_ACTOR=root)" "LOOP_PATH=/v[0-9.]+/exec/[0-9a-f]+/start" \
        "an approved request is journaled with the human who approved it"
like "$(proxy_record LOOP_DECISION=deny LOOP_ACTOR=root)" "LOOP_PATH=/v[0-9.]+/containers/[0-9a-f]{64}/exec" \
        "a request a human denied is journaled with the human who denied it"
unlike "$(proxy_journal)" "nested-hello|exec-approved|X-Registry-Auth" "no body or header reaches the journal"

# --- who may call ----------------------------------------------------------------------------------
code=$(in_ct setpriv --reuid 65534 --regid 65534 --clear-groups \
        curl -s -o /dev/null -w '%{http_code}' --unix-socket /run/loop/demo/docker.sock http://d/_ping)
is "$code" 403 "a host process that is neither root nor in the channel's containers is refused"

# --- a flood of refused callers does not blind the journal ---------------------------------------------
# Anyone who reaches the socket can be refused as fast as they can ask: the proxy journals a few per peer,
# the rest as counts, and journald's rate limit is far above it (LogRateLimitBurst=), so the real
# decision right after the flood is journaled.
is "$(prop loop-dockerproxy@demo.service LogRateLimitIntervalUSec)/$(prop loop-dockerproxy@demo.service LogRateLimitBurst)" \
        1s/1000000 "loop-dockerproxy@.service lifts journald's rate limit far above what it logs"
FLOOD=25000
in_ct sh -c "yes 'url = \"http://d/_ping\"
output = /dev/null' | head -n $((2 * FLOOD)) >/tmp/flood.curl"
cursor=$(proxy_journal -n 1 | sed -n 's/^__CURSOR=//p')
in_ct setpriv --reuid 65534 --regid 65534 --clear-groups curl -s -K /tmp/flood.curl --unix-socket /run/loop/demo/docker.sock
in_ct curl -s -o /dev/null --unix-socket /run/loop/demo/docker.sock http://d/containers/after-the-flood/json
after_flood_journaled() {
        proxy_journal --after-cursor "$cursor" | grep -a -q -E '^LOOP_PATH=(/v[0-9.]+)?/containers/after-the-flood/json'
}
wait_for 30 after_flood_journaled
ok $? "after $FLOOD refused requests, the next real decision is in the journal"
caller_counts() {
        proxy_journal --after-cursor "$cursor" LOOP_RULE=caller | awk -v one=0 -v dropped=0 -v counts=0 '
                /^$/ { if (seen) { if (d != "") { dropped += d; counts++ } else one++ } seen = 0; d = "" }
                /^LOOP_RULE=caller$/ { seen = 1 }
                /^LOOP_DROPPED=/ { d = substr($0, 14) }
                END { if (seen) { if (d != "") { dropped += d; counts++ } else one++ } print one, dropped, counts }'
}
flood_counted() { read -r one dropped _ <<<"$(caller_counts)"; [ $((one + dropped)) -eq $FLOOD ]; }
wait_for 30 flood_counted
read -r one dropped counts <<<"$(caller_counts)"
# PROXY_REFUSED_PER_WINDOW (3) one by one in each 10 s window the flood spans, each with its count record
# (the last window's may have held none back): a loaded machine's flood may span many
ok "$([ "$one" -le $((3 * (counts + 1))) ] && echo 0 || echo 1)" \
        "the refused caller's requests are journaled a few one by one ($one, at most 3 a window; $counts counts)"
is "$((one + dropped))" "$FLOOD" "...and the rest as counts per burst (LOOP_DROPPED: $dropped)"

# --- idle exit and hardening -----------------------------------------------------------------------
in_ct mkdir -p /run/systemd/system/loop-dockerproxy@demo.service.d
in_ct sh -c 'printf "[Service]\nEnvironment=LOOP_DOCKERPROXY_IDLE_SEC=2\n" >/run/systemd/system/loop-dockerproxy@demo.service.d/90-idle.conf'
in_ct systemctl daemon-reload
in_ct systemctl stop loop-dockerproxy@demo.service
in_ct curl -s -o /dev/null --unix-socket /run/loop/demo/docker.sock http://d/_ping
service_inactive() { [ "$(prop loop-dockerproxy@demo.service ActiveState)" = inactive ]; }
wait_for 30 service_inactive
ok $? "the service exits when idle"
is "$(in_ct curl -s --unix-socket /run/loop/demo/docker.sock http://d/_ping)" OK "...and the next connection starts it again"

# --- a proxy killed with the channel frozen: ExecStopPost= (loop-dockerproxy --thaw) thaws it ---------
cgroot=/sys/fs/cgroup
[ "$(in_ct stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] || cgroot=/sys/fs/cgroup/unified
read -r npid nid <<<"$(in_ct podman inspect --format '{{.State.Pid}} {{.Id}}' nested-long)"
ncg=$(in_ct sed -n 's/^0:://p' "/proc/$npid/cgroup" | sed "s|\(${nid}[^/]*\).*|\1|")
in_ct sh -c "echo '$ncg' >/run/loop-dockerproxy/demo/frozen-cgroups && echo 1 >'$cgroot$ncg/cgroup.freeze'"
is "$(in_ct cat "$cgroot$ncg/cgroup.freeze")" 1 "a nested container frozen, as a proxy dying mid-start would leave it"
in_ct systemctl kill -s KILL loop-dockerproxy@demo.service
service_failed() { [ "$(prop loop-dockerproxy@demo.service ActiveState)" = failed ]; }
wait_for 30 service_failed
ok $? "the killed service ends (failed, ExecStopPost= run)"
is "$(in_ct cat "$cgroot$ncg/cgroup.freeze")" 0 "...is thawed by the unit's ExecStopPost= when the proxy is killed"
in_ct podman rm -f nested-one nested-long >/dev/null 2>&1

sec=$(in_ct systemd-analyze security --no-pager loop-dockerproxy@demo.service 2>&1)
exposure=$(sed -n 's/.*Overall exposure level for loop-dockerproxy@demo.service: *\([0-9.]*\).*/\1/p' <<<"$sec")
diag "systemd-analyze security loop-dockerproxy@demo.service: exposure $exposure"
awk -v e="${exposure:-99}" 'BEGIN { exit !(e <= 2.0) }'
ok $? "the exposure of loop-dockerproxy@.service is at most 2.0 ($exposure)" || diag "$sec"

nspawn_stop "$M"
ok $? "the container powers off cleanly"
tap_done
