#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A channel under a real systemd (PID 1 in nspawn) with rootful Podman inside, driven by its systemd
# (cgroup_manager=systemd): `loop send` queues, loop-agent@.path starts loop-agent@.service, the runner
# processes the messages in order resuming the channel's session, each container runs as a transient
# scope in the channel's slice, stopping the service stops the container and keeps the message, a
# SIGKILLed runner leaves its message to be retried with its attempt counted, a poison message ends in
# failed/, finished containers are kept for container_keep_alive_sec and removed by loop-reconcile, a
# container removed behind loop's back is noticed, a lost registry is restored from the engine, and the
# journal has the story (LOOP_EVENT, LOOP_SCOPE, ...).
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

systemd_test_prepare

M=loop-svc-$$
IMAGE=localhost/loop-test:latest
systemd_test_config loop-svc

cat >"$cfg/loop.json" <<EOF
{ "container_image": "$IMAGE", "browser": { "enabled": false }, "container_keep_alive_sec": 4 }
EOF
echo '{ "description": "the service test", "max_attempts": 2 }' >"$cfg/channels.d/demo.json"
chmod 0644 "$cfg/loop.json" "$cfg/channels.d/demo.json"

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
Q=/var/lib/loop/demo
count() { in_ct sh -c "ls $Q/$1 2>/dev/null | grep -c '\\.json\$'"; }
# wait_for SECONDS CMD...: poll until CMD succeeds.
outbox_has() { [ "$(count outbox)" -ge "$1" ]; }
container_running() { [ -n "$(in_ct podman ps -q --filter label=loop-channel=demo)" ]; }
no_container() { [ -z "$(in_ct podman ps -aq --filter label=loop-channel=demo)" ]; }
no_running_container() { [ -z "$(in_ct podman ps -q --filter label=loop-channel=demo)" ]; }
all_containers() { in_ct podman ps -aq --no-trunc --filter label=loop-channel=demo; }
runner_inactive() { [ "$(prop loop-agent@demo.service ActiveState)" != active ] && [ "$(prop loop-agent@demo.service ActiveState)" != activating ] && [ "$(prop loop-agent@demo.service ActiveState)" != deactivating ]; }
registered_running() { [[ "$(in_ct loop status demo --json)" =~ \"status\":\ *\"running\" ]]; }
scope_journaled() { in_ct journalctl -o cat LOOP_CHANNEL=demo LOOP_EVENT=container-registered | grep -q libpod; }

nspawn_boot "$M" --podman --stage "$LOOP_STAGE" --config "$cfg" || bail_out "could not boot systemd with podman"
ok 0 "systemd boots with podman inside"
import_test_image "$(nspawn_root "$M")/run/podman/podman.sock" "$IMAGE" "$cfg/rootfs" >/dev/null
ok $? "the test image is imported into the container's podman"
check "systemd-sysusers creates the loop user" in_ct systemd-sysusers
check "systemctl start loop.target" in_ct systemctl start loop.target
is "$(prop loop-agent@demo.path ActiveState)" active "the channel's path unit waits for work"
is "$(prop loop-reconcile.timer ActiveState)" active "loop.target starts the registry's reconcile timer"
like "$(in_ct systemctl cat loop-reconcile.timer)" "OnUnitActiveSec=30s" "...which reconciles every 30 s"

# --- queued work starts the runner ----------------------------------------------------------------
id1=$(in_ct loop send demo hello)
like "$id1" '^[0-9]{20}-[0-9a-f]{8}$' "loop send prints the message id"
wait_for 90 outbox_has 1
ok $? "the path unit started the runner and the result reached the outbox" ||
        diag "$(in_ct loop queue demo 2>&1; in_ct journalctl --no-pager -o cat -u loop-agent@demo.service -n 40 2>&1)"
is "$(count inbox)" 0 "the message left the inbox"
res=$(in_ct loop outbox demo --json)
like "$res" '"result": *"hello from the fake agent"' "loop outbox shows the result"
wait_for 60 runner_inactive
is "$(prop loop-agent@demo.service Result)" success "the runner exits successfully when the inbox is empty"
is "$(in_ct cat $Q/session)" sess-1 "the channel's session id is kept"

in_ct loop send demo "second message" >/dev/null
in_ct loop send demo "third message" >/dev/null
wait_for 90 outbox_has 3
ok $? "two more messages are processed"
order=$(in_ct loop outbox demo --json | grep -o '"prompt": *"[^"]*"' | sed 's/.*: *//' | tr -d '"' | paste -sd,)
is "$order" "hello,second message,third message" "results come in the order the messages were sent"
calls=$(in_ct cat /var/lib/loop/demo/home/.fake-agent/calls 2>/dev/null)
like "$calls" "--resume \\| sess-1" "later messages resume the channel's session"

# --- the container is a scope in the channel's slice ----------------------------------------------
in_ct loop send demo "scenario:sleep 30" >/dev/null
wait_for 60 container_running
ok $? "a long run starts"
cid=$(in_ct podman ps -q --no-trunc --filter label=loop-channel=demo | head -1)
scope=$(in_ct systemctl list-units --plain --no-legend 'libpod-*.scope' | awk '{ print $1 }' | grep -F "${cid:0:12}" | head -1)
[ -z "$scope" ] && scope=libpod-$cid.scope
is "$(prop "$scope" Slice)" loop-demo.slice "the container runs as a scope in loop-demo.slice"
like "$(in_ct systemctl status loop-demo.slice --no-pager 2>&1)" "$scope|libpod" "systemctl status loop-demo.slice shows it"
wait_for 10 scope_journaled
journal=$(journal_wait -o export LOOP_CHANNEL=demo LOOP_EVENT=container-registered)
like "$journal" "LOOP_SCOPE=libpod-" "the journal records the container's scope"
like "$(in_ct loop status demo --json)" '"status": *"running"' "the registry has the container as running"

# Stopping the service stops its container; the message stays queued with its attempt counted. The path
# unit goes first: while it is armed and the inbox is not empty, systemd would start the runner again.
check "systemctl stop loop-agent@demo.path" in_ct systemctl stop loop-agent@demo.path
check "systemctl stop loop-agent@demo.service" in_ct systemctl stop loop-agent@demo.service
wait_for 30 no_running_container
ok $? "stopping the service stops the container"
like "$(in_ct loop status demo --json)" '"status": *"pending-removal"' "...and the registry schedules its removal"
is "$(count inbox)" 1 "the interrupted message stays in the inbox"
like "$(in_ct sh -c "cat $Q/inbox/*.json")" '"attempts": *1' "with its attempt counted"

# --- a runner killed with SIGKILL: the message is retried, not lost -------------------------------
check "systemctl stop loop.target (no restart behind our back)" in_ct systemctl stop loop.target
check "start the runner again" in_ct systemctl start --no-block loop-agent@demo.service
wait_for 60 container_running
ok $? "the queued message runs again"
# Killed once its container is in the registry as running: the next runner must take that entry over
# (an agent whose runner is gone may also end on its own; either way it is kept for container_keep_alive_sec
# from the next runner's start, not the grace a live run's container gets).
wait_for 30 registered_running
ok $? "...and the registry has its container as running"
check "SIGKILL the runner" in_ct systemctl kill -s KILL --kill-who=main loop-agent@demo.service
wait_for 30 runner_inactive
is "$(count inbox)" 1 "after SIGKILL the message is still queued"
like "$(in_ct sh -c "cat $Q/inbox/*.json")" '"attempts": *2' "with both attempts counted"
container_running
ok $? "the killed runner's container is still running (it is not in the service's cgroup)"
in_ct systemctl reset-failed loop-agent@demo.service >/dev/null 2>&1
check "start the runner once more" in_ct systemctl start loop-agent@demo.service
wait_for 30 no_running_container
ok $? "the next runner stops the container the killed one left running"
like "$(journal_wait -o cat -u loop-agent@demo.service LOOP_EVENT=container-status)" "left running by an earlier runner" \
        "...and journals it"
is "$(count inbox)" 0 "a message past max_attempts leaves the inbox..."
is "$(count failed)" 1 "...for failed/, with the reason"
like "$(in_ct loop queue demo)" "gave up after 2 attempts" "loop queue shows why it failed"

# --- the registry under systemd: keep-alive removal, reconcile, restore ---------------------------
# loop.target is stopped (and with it the timer), so the reconcile passes below are the test's own.
is "$(prop loop-reconcile.timer ActiveState)" inactive "stopping loop.target stops the reconcile timer"
[ -n "$(all_containers)" ]
ok $? "stopped containers are kept for container_keep_alive_sec"
sleep 4.5
check "systemctl start loop-reconcile.service" in_ct systemctl start loop-reconcile.service
wait_for 10 no_container
ok $? "the reconcile pass removes containers whose keep-alive is over" || {
        diag "left: $(in_ct podman ps -a --format '{{.ID}} {{.Names}} {{.State}} {{.Status}}' --filter label=loop-channel=demo 2>&1)"
        diag "registry at $(in_ct date +%s): $(in_ct cat $Q/registry.json 2>&1)"
        diag "$(in_ct journalctl --no-pager -o short-unix -u loop-reconcile.service -u loop-agent@demo.service -n 40 2>&1)"
}
like "$(journal_wait -o cat -u loop-reconcile.service LOOP_EVENT=container-removed LOOP_REASON=keep-alive-expired)" "removed" \
        "journalctl -u loop-reconcile LOOP_EVENT=container-removed shows the removals"
# journald reads a record's unit from its sender's cgroup, gone once a oneshot has exited: each record
# names its unit itself, so `journalctl -u` does not lose a oneshot's last words.
like "$(journal_wait -o cat OBJECT_SYSTEMD_UNIT=loop-reconcile.service LOOP_EVENT=container-removed)" "removed" \
        "...each record names its unit (OBJECT_SYSTEMD_UNIT), found when journald saw its sender exit first"

in_ct loop send demo hello >/dev/null
in_ct systemctl start loop-agent@demo.service
wait_for 60 runner_inactive
gone=$(all_containers | head -1)
[ -n "$gone" ]
ok $? "a finished run leaves its container pending removal"
check "remove it behind loop's back (podman rm)" in_ct podman rm -f "$gone"
check "a reconcile pass" in_ct systemctl start loop-reconcile.service
if ! like "$(journal_wait -o export -u loop-reconcile.service LOOP_REASON=vanished)" "LOOP_CONTAINER=$gone" \
        "reconcile notices the container removed behind loop's back"; then
        diag "removed $gone; now: $(all_containers | tr '\n' ' ')"
        diag "$(in_ct journalctl --no-pager -o cat -u loop-reconcile.service -u loop-agent@demo.service -n 30 2>&1)"
fi
unlike "$(in_ct cat $Q/registry.json)" "$gone" "...and drops it from the registry"

in_ct loop send demo hello >/dev/null
in_ct systemctl start loop-agent@demo.service
wait_for 60 runner_inactive
kept=$(all_containers | head -1)
check "lose the registry file" in_ct rm -f $Q/registry.json
check "restart the runner" in_ct systemctl start loop-agent@demo.service
wait_for 60 runner_inactive
like "$(in_ct cat $Q/registry.json)" "$kept" "the runner restores the registry from the engine's labelled containers"
like "$(journal_wait -o cat -u loop-agent@demo.service --grep 'restored from the engine')" "restored from the engine: 1 container" \
        "...and says so"
like "$(in_ct loop status demo --json)" '"status": *"pending-removal"' "...with the container's status"

# A killed runner's container whose agent then ended on its own (it was registered as running, the engine
# has it exited): the next runner takes it over with the channel's keep-alive from its start, not the grace
# of a minute a live run's container gets before its run reads its output.
in_ct loop send demo "scenario:sleep 30" >/dev/null
in_ct systemctl start --no-block loop-agent@demo.service
wait_for 60 registered_running
ok $? "another long run is registered as running"
orphan=$(in_ct podman ps -q --no-trunc --filter label=loop-channel=demo | head -1)
check "SIGKILL its runner" in_ct systemctl kill -s KILL --kill-who=main loop-agent@demo.service
wait_for 30 runner_inactive
check "its agent ends on its own" in_ct podman stop -t 0 "$orphan"
check "drop its message (nothing to retry)" in_ct sh -c "rm -f $Q/inbox/*.json"
in_ct systemctl reset-failed loop-agent@demo.service >/dev/null 2>&1
t0=$(in_ct date +%s)
check "start the runner" in_ct systemctl start loop-agent@demo.service
remove_at=$(in_ct cat $Q/registry.json | python3 -c '
import json, sys
for e in json.load(sys.stdin).get("containers", []):
    if e.get("id") == sys.argv[1]:
        print(e.get("status"), e.get("remove_at_usec", 0) // 1000000)' "$orphan")
is "${remove_at% *}" pending-removal "the exited container of the killed runner is pending removal"
ok $(( ${remove_at#* } <= t0 + 4 + 20 ? 0 : 1 )) "...due within container_keep_alive_sec of the runner's start, not a minute later" ||
        diag "remove at ${remove_at#* }, runner started at $t0; registry: $(in_ct cat $Q/registry.json)"

# --- status and cleanup ---------------------------------------------------------------------------
st=$(in_ct loop status demo --json)
like "$st" '"slice": *"loop-demo.slice"' "loop status shows the channel's slice"
like "$st" '"done": *5' "loop status counts the results"
like "$st" '"failed": *1' "loop status counts the failed messages"
like "$st" '"session": *"sess-1"' "loop status shows the session"
in_ct loop send demo "scenario:sleep 30" >/dev/null
in_ct systemctl start --no-block loop-agent@demo.service
wait_for 60 container_running
like "$(in_ct loop status demo)" "in libpod-.*\.scope" "loop status shows a running container with its scope"
check "loop cleanup demo" in_ct loop cleanup demo
ok $(no_container && echo 0 || echo 1) "loop cleanup removes the channel's containers"
in_ct systemctl stop loop-agent@demo.service >/dev/null 2>&1

# --- journal --------------------------------------------------------------------------------------
in_ct journalctl --sync
for ev in queue-taken run-started container-registered container-status run-finished queue-done queue-failed; do
        n=$(in_ct journalctl -o cat -u loop-agent@demo.service LOOP_EVENT=$ev | wc -l)
        ok $((n == 0)) "journalctl -u loop-agent@demo LOOP_EVENT=$ev finds entries ($n)"
done

# Commands run from a terminal (not as a service) journal their audit events too.
n=$(in_ct journalctl -o cat LOOP_EVENT=queue-queued LOOP_CHANNEL=demo | wc -l)
ok $((n == 0)) "loop send on a terminal journals queue-queued as well ($n)"

nspawn_stop "$M"
ok $? "the container powers off cleanly"
tap_done
