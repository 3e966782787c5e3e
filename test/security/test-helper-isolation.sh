#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The helpers of every channel run as one user, loop. On a real systemd (PID 1 in nspawn, the staged
# install, no container engine), with two channels demo and other: loop-tasks@demo, loop-browser@demo and
# loop-gate@demo, as a process taken over in them would (their mount namespace, user loop), cannot read other's tokens
# or task files nor reach other's sockets (the tasks helper's, and the Chrome bridge's where CDP would
# be); loop-tasks@demo and loop-browser@demo cannot answer their own channel's gate either (its admin
# socket refuses the helpers' user). Their own channel still works: a task is scheduled through
# loop-tasks@demo, and loop-browser@demo runs.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

systemd_test_prepare

M=loop-isolation-$$
cfg=$(mktemp -d "${TMPDIR:-/tmp}/loop-isolation-etc.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$cfg'"
mkdir -p "$cfg/channels.d"
echo '{ "egress": { "enabled": false } }' >"$cfg/loop.json"
echo '{}' >"$cfg/channels.d/demo.json"
echo '{}' >"$cfg/channels.d/other.json"
chmod 0644 "$cfg/loop.json" "$cfg/channels.d/"*.json

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
# as_helper UNIT CMD...: CMD in UNIT's mount namespace as user loop (what code run by the helper sees)
as_helper() { helper_exec "$M" "$@"; }
# fails UNIT 'SHELL TEST': the test ran in the helper's view and failed (not: nsenter could not get there)
fails() {
        local out
        out=$(as_helper "$1" sh -c "$2 >/dev/null 2>&1; echo rc=\$?")
        [[ $out =~ rc=[1-9] ]]
}
# a container token of CHANNEL for HELPER (tasks, browser), where the runner writes it (0700/0400, loop)
make_token() {
        local ch=$1 helper=$2 tok
        tok=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
        in_ct sh -c "install -d -m 0700 -o loop -g loop /run/loop/$ch/$helper-tokens &&
                     printf %s $tok >/run/loop/$ch/$helper-tokens/ctr-$ch && chown loop:loop /run/loop/$ch/$helper-tokens/ctr-$ch &&
                     chmod 0400 /run/loop/$ch/$helper-tokens/ctr-$ch && printf %s $tok >/tmp/$helper-token-$ch && chmod 0400 /tmp/$helper-token-$ch"
}
mcp_tasks() {
        printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}' "$2" |
                in_ct loop mcp --channel-id "$1" --socket "/run/loop/$1/tasks.sock" --token-file "/tmp/tasks-token-$1"
}

nspawn_boot "$M" --stage "$LOOP_STAGE" --config "$cfg" || bail_out "could not boot systemd"
ok 0 "systemd boots"
check "systemd-sysusers creates the loop user" in_ct systemd-sysusers
# the helpers stay up while the test looks into them (they exit when idle)
for h in gate:GATE tasks:TASKS browser:BROWSER; do
        in_ct sh -c "mkdir -p /etc/systemd/system/loop-${h%%:*}@.service.d &&
                     printf '[Service]\nEnvironment=LOOP_${h#*:}_IDLE_SEC=3600\n' \
                     >/etc/systemd/system/loop-${h%%:*}@.service.d/90-idle-test.conf"
done
check "systemctl daemon-reload" in_ct systemctl daemon-reload
check "systemctl start loop.target" in_ct systemctl start loop.target
for ch in demo other; do
        make_token "$ch" tasks && make_token "$ch" browser
        ok $? "container tokens of channel $ch for the tasks and the browser"
done
out=$(mcp_tasks other '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"schedule_task","arguments":{"type":"manual","prompt":"other secret plan"}}}')
like "$out" '"isError":false' "a task of channel other is scheduled (its files and tokens exist)" || diag "$out"

out=$(mcp_tasks demo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"schedule_task","arguments":{"type":"manual","prompt":"demo plan"}}}')
like "$out" '"isError":false' "loop-tasks@demo schedules a task of its own channel" || diag "$out"
check "loop-browser@demo starts" in_ct systemctl start loop-browser@demo.service
is "$(prop loop-browser@demo.service ActiveState)" active "loop-browser@demo runs (its namespace is set up)"

# what loop-chrome@other's bridge makes for its CDP socket (no engine here to run it)
in_ct install -d -m 0700 -o loop -g loop /run/loop/other/chrome
ok $? "channel other's Chrome bridge directory (0700, user loop) is made"
check "loop-gate@demo starts" in_ct systemctl start loop-gate@demo.service
for unit in loop-tasks@demo.service loop-browser@demo.service loop-gate@demo.service; do
        is "$(prop "$unit" ActiveState)" active "$unit is running"
        as_helper "$unit" test -d /run/loop/demo
        ok $? "$unit: its own channel's runtime directory is there"
        fails "$unit" 'cat /run/loop/other/tasks-tokens/ctr-other'
        ok $? "$unit: another channel's tasks token cannot be read"
        fails "$unit" 'cat /run/loop/other/browser-tokens/ctr-other'
        ok $? "$unit: another channel's browser token cannot be read"
        fails "$unit" 'cat /var/lib/loop/other/tasks/*.json'
        ok $? "$unit: another channel's task files cannot be read"
        fails "$unit" 'test -S /run/loop/other/tasks.sock'
        ok $? "$unit: another channel's tasks socket is not there to connect to"
        fails "$unit" 'test -S /run/loop/other/gate.sock'
        ok $? "$unit: another channel's gate socket is not there to connect to"
        fails "$unit" 'test -e /run/loop/other/chrome'
        ok $? "$unit: another channel's Chrome bridge directory (its CDP socket) is not there"
done
# The gate's admin socket (0660 root:loop) is in each helper's view of its own channel, and the helpers run
# as user loop: one taken over answered the agent's own asks for a human's approval.
admin_status() { "$@" curl -s -o /dev/null -w '%{http_code}' --unix-socket /run/loop/demo/gate-admin.sock http://gate/api/gate/pending; }
is "$(admin_status in_ct)" 200 "root reads loop-gate@demo's pending requests"
for unit in loop-tasks@demo.service loop-browser@demo.service; do
        is "$(admin_status as_helper "$unit")" 403 "$unit: its own channel's gate admin socket refuses the helpers' user"
done
as_helper loop-browser@demo.service sh -c 'test -w /var/lib/loop/demo/screenshots'
ok $? "loop-browser@demo: its screenshots directory is writable"

tap_done
