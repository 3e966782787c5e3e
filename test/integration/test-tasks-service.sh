#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Scheduled tasks under a real systemd (PID 1 in nspawn) with rootful Podman inside: the official MCP
# client (@modelcontextprotocol/sdk from npm) drives `loop mcp` over stdio, which asks the channel's
# socket-activated loop-tasks@demo with a container token. A task of each type is created; the
# timers appear in `systemctl list-timers`; the interval and once tasks fire, their prompts are queued
# with LOOP_TASK= and run by the runner (the fake agent), the results are in `loop outbox`; edit,
# toggle and cancel change the timers; another channel's token sees and touches nothing of demo's;
# daemon-reload and a reboot of the machine (state kept on a bind mount) keep every task and timer.
#
# The SDK is installed with npm into a temp dir (the only network access of the test), unless
# LOOP_TEST_MCP_SDK_DIR names a directory that has node_modules/@modelcontextprotocol/sdk already.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"
# shellcheck source=test/lib/mcp-client.sh
. "$lib/mcp-client.sh"


command -v node >/dev/null || bail_out "node is not installed (nodejs)"
systemd_test_prepare

M=loop-tasks-$$
IMAGE=localhost/loop-test:latest
systemd_test_config loop-tasks

mcp_client_prepare loop-tasks || bail_out "cannot prepare the MCP client"
client=$MCP_CLIENT_DIR

# /var/lib/loop outlives the machine: the reboot below keeps the task files as a disk would.
state=$(mktemp -d "${TMPDIR:-/tmp}/loop-tasks-state.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$state'"
chmod 0755 "$state"

cat >"$cfg/loop.json" <<EOF2
{ "container_image": "$IMAGE", "browser": { "enabled": false }, "container_keep_alive_sec": 0,
  "gates": { "agentgate": { "enabled": false } }, "egress": { "enabled": false } }
EOF2
echo '{ "description": "tasks", "tasks": { "min_interval_sec": 5, "max": 6 } }' >"$cfg/channels.d/demo.json"
echo '{ "description": "another channel" }' >"$cfg/channels.d/other.json"
chmod 0644 "$cfg/loop.json" "$cfg/channels.d/"*.json

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
# mcp CHANNEL TOKEN_FILE 'TOOL ARGS'...: the SDK client against CHANNEL's socket with that token.
mcp() {
        local ch=$1 tok=$2
        shift 2
        in_ct node /opt/mcp-client/client.mjs /usr/local/bin/loop "$ch" "/run/loop/$ch/tasks.sock" "$tok" "$@"
}
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2]))' "$1" "$2"; }
# a container token, where the runner would write it (0700/0400, user loop), and a copy for the client
make_token() {
        local ch=$1 ctr=$2 tok
        tok=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
        in_ct sh -c "install -d -m 0700 -o loop -g loop /run/loop/$ch/tasks-tokens &&
                     printf %s $tok >/run/loop/$ch/tasks-tokens/$ctr && chown loop:loop /run/loop/$ch/tasks-tokens/$ctr &&
                     chmod 0400 /run/loop/$ch/tasks-tokens/$ctr && printf %s $tok >/tmp/token-$ch && chmod 0400 /tmp/token-$ch"
}
timers() { in_ct systemctl list-timers --all --no-legend --plain 'loop-task@*' 2>/dev/null; }
timer_of() { timers | grep -q "loop-task@demo:$1.timer"; }
no_timer_of() { ! timer_of "$1"; }
outbox_has_task() { in_ct loop outbox demo --json 2>/dev/null | grep -q "\"task\": *\"$1\""; }
outbox_has_prompt() { in_ct loop outbox demo --json 2>/dev/null | grep -q "\"prompt\": *\"$1\""; }

boot() {
        nspawn_boot "$M" --podman --stage "$LOOP_STAGE" --config "$cfg" \
                --bind-ro="$client:/opt/mcp-client" --bind="$state:/var/lib/loop" || return 1
        import_test_image "$(nspawn_root "$M")/run/podman/podman.sock" "$IMAGE" "$cfg/rootfs" >/dev/null &&
                in_ct systemd-sysusers && in_ct systemctl start loop.target
}

boot || bail_out "could not boot systemd with podman and loop.target"
ok 0 "systemd boots with podman, loop.target starts"
is "$(prop loop-tasks@demo.socket ActiveState)" active "loop-tasks@demo.socket listens (enabled by the generator)"
is "$(prop loop-tasks-sync@demo.path ActiveState)" active "loop-tasks-sync@demo.path watches the task files"
check "make a container token for demo" make_token demo ctr-demo
check "make a container token for other" make_token other ctr-other

# --- the MCP client creates a task of each type -------------------------------------------------------
at=$(date -u -d '+20 seconds' +%Y-%m-%dT%H:%M:%SZ)
out=$(mcp demo /tmp/token-demo \
        'schedule_task {"type":"interval","schedule":"10s","prompt":"tick"}' \
        'schedule_task {"type":"cron","schedule":"* * * * *","prompt":"cron prompt"}' \
        "schedule_task {\"type\":\"once\",\"schedule\":\"$at\",\"prompt\":\"once prompt\"}" \
        'schedule_task {"type":"manual","prompt":"manual prompt"}' \
        'schedule_task {"type":"interval","schedule":"2s","prompt":"too often"}' \
        'schedule_task {"type":"cron","schedule":"0 0 1 * mon","prompt":"ambiguous"}')
ok $? "the SDK client talks to loop mcp" || diag "$out"
head=$(sed -n 1p <<<"$out")
like "$head" '"tools":\["schedule_task","list_tasks","show_task","cancel_task","edit_task","toggle_task"\]' \
        "tools/list offers the six task tools"
like "$head" '"schemas":true' "...each with an object inputSchema"
interval=$(field "$(sed -n 2p <<<"$out")" id)
cron=$(field "$(sed -n 3p <<<"$out")" id)
once=$(field "$(sed -n 4p <<<"$out")" id)
manual=$(field "$(sed -n 5p <<<"$out")" id)
for t in "$interval" "$cron" "$once" "$manual"; do
        like "$t" '^[0-9a-f]{8}$' "schedule_task answers with a task id ($t)"
done
like "$(sed -n 6p <<<"$out")" '"isError":true.*shorter than this channel.s minimum' \
        "an interval below tasks.min_interval_sec is an isError result saying why"
like "$(sed -n 7p <<<"$out")" '"isError":true.*day of month OR the day of week' \
        "a cron expression systemd cannot express is refused with the reason"
like "$(journal_wait -o export LOOP_EVENT=task-created LOOP_TASK="$interval")" "LOOP_ACTOR=container:ctr-demo" \
        "task-created is journaled with LOOP_TASK= and the container"
like "$(journal_wait -o cat LOOP_EVENT=task-refused LOOP_CHANNEL=demo)" "min_interval_sec" "the refusal is journaled too"

# --- timers ---------------------------------------------------------------------------------------
wait_for 30 timer_of "$interval"
ok $? "the interval task's timer is in systemctl list-timers" || diag "$(timers; in_ct journalctl --no-pager -n 30 -u loop-tasks-sync.service)"
wait_for 30 timer_of "$cron"
ok $? "the cron task's timer is in systemctl list-timers"
# The once task is due 20 s after it was made: on a loaded machine its timer may have fired and removed
# itself by now. systemd's own record of starting the timer says it was made all the same.
once_timer_made() { timer_of "$1" || in_ct journalctl -o cat -u "loop-task@demo:$1.timer" | grep -q '^Started '; }
wait_for 30 once_timer_made "$once"
ok $? "the once task gets a timer (in systemctl list-timers, or started and fired already)"
no_timer_of "$manual"
ok $? "the manual task has no timer"
like "$(in_ct systemctl cat "loop-task@demo:$cron.timer")" "OnCalendar=\\*-\\*-\\* \\*:\\*:00" "the cron timer says OnCalendar=*-*-* *:*:00"
like "$(in_ct systemctl cat "loop-task@demo:$cron.timer")" "Persistent=yes" "...with Persistent=yes"
like "$(in_ct systemctl cat "loop-task@demo:$interval.timer")" "OnUnitActiveSec=10s" "the interval timer is monotonic"

# --- firings reach the runner ---------------------------------------------------------------------
wait_for 150 outbox_has_task "$interval"
ok $? "the interval task fired, its prompt ran and the result is in loop outbox" ||
        diag "$(in_ct loop queue demo 2>&1; in_ct journalctl --no-pager -o cat -n 30 'LOOP_EVENT=task-fired' 2>&1; timers)"
like "$(in_ct loop outbox demo --json)" '"result": *"echo: tick"' "the fake agent answered the task's prompt"
like "$(journal_wait -o export LOOP_EVENT=task-fired LOOP_TASK="$interval")" "LOOP_QUEUE_ID=" "task-fired names the queued message"
like "$(journal_wait -o export -u loop-agent@demo.service LOOP_EVENT=run-finished LOOP_TASK="$interval")" "LOOP_TASK=$interval" \
        "the runner's records carry LOOP_TASK="
wait_for 150 outbox_has_task "$once"
ok $? "the once task fired a few seconds after its time and its result is in loop outbox"
wait_for 30 no_timer_of "$once"
ok $? "...and its timer removed itself"
like "$(mcp demo /tmp/token-demo "show_task {\"id\":\"$once\"}" | sed -n 2p)" '\\"done\\":true' "show_task says the once task is done"
wait_for 150 outbox_has_task "$cron"
ok $? "the cron task fired within its minute and its result is in loop outbox"

# --- edit, toggle, cancel -------------------------------------------------------------------------
out=$(mcp demo /tmp/token-demo "edit_task {\"id\":\"$interval\",\"prompt\":\"tock\"}" \
        "cancel_task {\"id\":\"$cron\"}" 'list_tasks {}')
like "$(sed -n 2p <<<"$out")" '"isError":false.*tock' "edit_task changes the prompt"
like "$(sed -n 3p <<<"$out")" '"isError":false.*cancelled' "cancel_task cancels"
unlike "$(sed -n 4p <<<"$out")" "$cron" "list_tasks no longer has the cancelled task"
wait_for 30 no_timer_of "$cron"
ok $? "the cancelled task's timer is gone"
wait_for 150 outbox_has_prompt tock
ok $? "the edited prompt runs at the next firing"
out=$(mcp demo /tmp/token-demo "toggle_task {\"id\":\"$interval\"}")
like "$(sed -n 2p <<<"$out")" '\\"enabled\\":false' "toggle_task disables the interval task"
wait_for 30 no_timer_of "$interval"
ok $? "a disabled task's timer is stopped"
like "$(journal_wait -o export LOOP_EVENT=task-changed LOOP_TASK="$interval" LOOP_CHANGE=disabled)" "LOOP_ACTOR=container:ctr-demo" \
        "task-changed is journaled"

# --- the operator's CLI ---------------------------------------------------------------------------
check "loop task run demo MANUAL" in_ct loop task run demo "$manual"
wait_for 150 outbox_has_task "$manual"
ok $? "loop task run queues a manual task's prompt, which runs"
like "$(in_ct loop task list demo)" "$manual +manual +enabled" "loop task list shows the tasks"
like "$(in_ct loop task list demo --json)" '"created_by": *"container:ctr-demo"' "loop task list --json says who made them"
tid=$(in_ct loop task add demo --type interval --schedule 1h --json -- operator prompt | python3 -c 'import json,sys; print(json.load(sys.stdin)["task"]["id"])')
like "$tid" '^[0-9a-f]{8}$' "loop task add creates a task"
timer_of "$tid"
ok $? "...whose timer root makes at once"
check "loop task disable" in_ct loop task disable demo "$tid"
no_timer_of "$tid"
ok $? "loop task disable stops its timer"
check "loop task enable" in_ct loop task enable demo "$tid"
timer_of "$tid"
ok $? "loop task enable starts it again"
in_ct loop task add demo --type interval --schedule 1s -- too often >/dev/null 2>&1
ok $((! $?)) "loop task add obeys the minimum interval too"

# --- another channel's token ----------------------------------------------------------------------
out=$(mcp demo /tmp/token-other 'list_tasks {}' "show_task {\"id\":\"$manual\"}" "cancel_task {\"id\":\"$manual\"}" \
        "toggle_task {\"id\":\"$tid\"}")
like "$(sed -n 2p <<<"$out")" '"isError":true.*no valid token' "another channel's token cannot list demo's tasks"
like "$(sed -n 3p <<<"$out")" '"isError":true' "...nor show one"
like "$(sed -n 4p <<<"$out")" '"isError":true' "...nor cancel one"
like "$(sed -n 5p <<<"$out")" '"isError":true' "...nor toggle one"
like "$(in_ct loop task show demo "$manual")" "manual prompt" "demo's task is still there"
out=$(mcp other /tmp/token-other 'list_tasks {}' "cancel_task {\"id\":\"$manual\"}")
like "$(sed -n 2p <<<"$out")" '"isError":false' "the other channel lists its own tasks"
unlike "$(sed -n 2p <<<"$out")" '\\"id\\"' "...and none of demo's are among them"
like "$(sed -n 3p <<<"$out")" '"isError":true.*no task' "...and cannot cancel demo's task through its own socket"
out=$(mcp demo /tmp/no-such-token 'list_tasks {}')
like "$(sed -n 2p <<<"$out")" '"isError":true.*not available' "without a token loop mcp answers that tasks are unavailable"

# --- daemon-reload and reboot keep them -----------------------------------------------------------
check "systemctl daemon-reload" in_ct systemctl daemon-reload
timer_of "$tid"
ok $? "daemon-reload keeps the timers"
check "the operator task is the only enabled one with a timer; re-enable the interval task" \
        in_ct loop task enable demo "$interval"
before=$(in_ct loop task list demo --json | python3 -c 'import json,sys; print(sorted(t["id"] for t in json.load(sys.stdin)["tasks"]))')
nspawn_stop "$M"
ok $? "the machine powers off"
boot
ok $? "it boots again and loop.target starts"
after=$(in_ct loop task list demo --json | python3 -c 'import json,sys; print(sorted(t["id"] for t in json.load(sys.stdin)["tasks"]))')
is "$after" "$before" "every task survives the reboot"
wait_for 30 timer_of "$tid"
ok $? "loop-task-restore makes the timers again at boot" || diag "$(in_ct journalctl --no-pager -b -u loop-task-restore.service)"
timer_of "$interval"
ok $? "...for every enabled task"
no_timer_of "$manual"
ok $? "...and none for a manual one"

nspawn_stop "$M"
ok $? "the container powers off cleanly"
tap_done
