#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The socket-activated helpers cost nothing while idle (issue 25): on a real systemd (PID 1 in nspawn,
# the staged install, no container engine), each helper of a default channel -- loop-gate@ (through
# gate.sock and through gate-admin.sock), loop-dockerproxy@, loop-gateway@ (egress) and loop-tasks@ -- is
# started by a connection to its socket, then left alone: after its idle timeout (2 s here, by a drop-in
# of the test) the service is inactive, not failed, no process of it is left in its cgroup (none in
# the machine names its unit in /proc/PID/cgroup), PID 1 keeps its socket listening, and the next
# connection starts it again. Processes gone means no CPU spent: PID 1's own time over a quiet period
# after that is printed (diag), not asserted.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

systemd_test_prepare

M=loop-idle-$$
CH=idle
IDLE_SEC=2
cfg=$(mktemp -d "${TMPDIR:-/tmp}/loop-idle-etc.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$cfg'"
mkdir -p "$cfg/channels.d"
echo '{ "browser": { "enabled": false } }' >"$cfg/loop.json"
echo '{}' >"$cfg/channels.d/$CH.json"
chmod 0644 "$cfg/loop.json" "$cfg/channels.d/$CH.json"

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
state_is() { [ "$(prop "$1" ActiveState)" = "$2" ]; }
invocation_changed() { local i; i=$(prop "$1" InvocationID); [ -n "$i" ] && [ "$i" != "$2" ]; }
# procs_of UNIT: the pids in the machine whose cgroup is UNIT's (v1 and v2 lines alike).
procs_of() {
        in_ct sh -c 'for f in /proc/[0-9]*/cgroup; do grep -qF "/$1" "$f" 2>/dev/null && { p=${f#/proc/}; echo "${p%/cgroup}"; }; done; true' \
                sh "$1"
}
# poke SOCKET: one request on the helper's socket, whatever it answers; the connection is what counts.
poke() { in_ct curl -s -o /dev/null --max-time 10 --unix-socket "/run/loop/$CH/$1" http://localhost/_ping; }
pid1_ticks() { in_ct sh -c 'set -- $(cut -d")" -f2- /proc/1/stat); echo $(( ${12} + ${13} ))'; }

nspawn_boot "$M" --stage "$LOOP_STAGE" --config "$cfg" || bail_out "could not boot systemd"
ok 0 "systemd boots"
check "systemd-sysusers creates the loop user" in_ct systemd-sysusers
# A short idle timeout for every helper, as an operator's drop-in would set it.
for h in gate:GATE dockerproxy:DOCKERPROXY gateway:GATEWAY tasks:TASKS; do
        in_ct sh -c "mkdir -p /etc/systemd/system/loop-${h%%:*}@.service.d &&
                     printf '[Service]\nEnvironment=LOOP_${h#*:}_IDLE_SEC=$IDLE_SEC\n' \
                     >/etc/systemd/system/loop-${h%%:*}@.service.d/90-idle-test.conf"
done
check "systemctl daemon-reload" in_ct systemctl daemon-reload
check "systemctl start loop.target" in_ct systemctl start loop.target

# start_by SERVICE SOCKET-FILE: a connection to the socket starts the service. Its invocation id changes
# with every start: the helper may be done again by the time it is looked at.
start_by() {
        local inv
        inv=$(prop "$1" InvocationID)
        poke "$2"
        wait_for 20 invocation_changed "$1" "$inv"
}

# helper SERVICE SOCKET-UNIT SOCKET-FILE
helper() {
        local svc=$1 sock=$2 file=$3 left
        is "$(prop "$sock" ActiveState)" active "$sock listens"
        wait_for $((IDLE_SEC * 10 + 20)) state_is "$svc" inactive
        ok $? "$svc does not run before a connection"
        start_by "$svc" "$file"
        ok $? "a connection to $file starts $svc"
        wait_for $((IDLE_SEC * 10 + 20)) state_is "$svc" inactive
        ok $? "$svc stops by itself after its idle timeout"
        is "$(prop "$svc" Result)" success "...cleanly (Result=success, not failed or killed)"
        left=$(procs_of "$svc")
        is "$left" "" "...and no process of it is left in its cgroup"
        is "$(prop "$sock" ActiveState)" active "...while $sock keeps listening"
        start_by "$svc" "$file"
        ok $? "...and the next connection starts it again"
        wait_for $((IDLE_SEC * 10 + 20)) state_is "$svc" inactive
        ok $? "...after which it goes idle again"
}

# The look into /proc finds a running helper: a connection held open keeps loop-gate@ running, and its
# main process is among those procs_of names.
in_ct python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(8)' "/run/loop/$CH/gate.sock" &
hold=$!
gate_procs_running() { local m; m=$(prop "loop-gate@$CH.service" MainPID); [ "$m" != 0 ] && grep -qx "$m" <<<"$(procs_of "loop-gate@$CH.service")"; }
wait_for 8 gate_procs_running
ok $? "a running helper's main process is found by its cgroup (what the idle checks look for)"
wait "$hold"

helper "loop-gate@$CH.service" "loop-gate@$CH.socket" gate.sock
helper "loop-gate@$CH.service" "loop-gate-admin@$CH.socket" gate-admin.sock
helper "loop-dockerproxy@$CH.service" "loop-dockerproxy@$CH.socket" docker.sock
helper "loop-gateway@$CH.service" "loop-gateway@$CH.socket" gateway.sock
helper "loop-tasks@$CH.service" "loop-tasks@$CH.socket" tasks.sock

# Nothing runs: PID 1's own CPU time over a quiet period (ticks of 1/CLK_TCK s), for the record.
t0=$(pid1_ticks)
sleep 5
diag "PID 1 CPU over 5 s with every helper idle: $(($(pid1_ticks) - t0)) ticks"
left=""
for s in gate dockerproxy gateway tasks; do left+=$(procs_of "loop-$s@$CH.service"); done
is "$left" "" "with every helper idle, no helper process runs in the machine"
# for test/bench/summary (issue 25), which takes SUMMARY lines from this test's log too
[ -z "$left" ] && [ "$TAP_FAILED" = 0 ] && v=met || v=missed
diag "$(printf 'SUMMARY\thelpers while idle: processes after the idle timeout, on systemd in nspawn\t%s\t0\t%s' "$(wc -w <<<"$left")" "$v")"

tap_done
