#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Red team of the scheduled tasks: what loop-tasks@NAME writes (it talks to the agent, as user loop) is
# all the timers' writer (loop task sync, root) reads. On a real systemd (PID 1 in nspawn, the staged
# install, no container engine): a task file rewritten by a process taken over in loop-tasks@demo to fire
# every second (its calendar event, its interval) gets no timer; a channel taken out of the configuration
# has its task's firing refused (nothing queued) and its timers removed; files made beyond tasks.max get no
# timer. And a task-fired record forged by another local user (any user may log loop's MESSAGE_ID and
# LOOP_* fields) is shown by `loop logs` with the uid that wrote it, loop's own records without. An agent
# changing its tasks in a loop gets at most 60 changes a minute.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

systemd_test_prepare

M=loop-taskfiles-$$
cfg=$(mktemp -d "${TMPDIR:-/tmp}/loop-taskfiles-etc.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$cfg'"
mkdir -p "$cfg/channels.d"
echo '{ "egress": { "enabled": false } }' >"$cfg/loop.json"
echo '{ "tasks": { "max": 3 } }' >"$cfg/channels.d/demo.json"
echo '{}' >"$cfg/channels.d/gone.json"
chmod 0644 "$cfg/loop.json" "$cfg/channels.d/"*.json

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
# as_helper UNIT CMD...: CMD in UNIT's mount namespace as user loop (what code run by the helper can do)
as_helper() { helper_exec "$M" "$@"; }
make_token() {
        local ch=$1 tok
        tok=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
        in_ct sh -c "install -d -m 0700 -o loop -g loop /run/loop/$ch/tasks-tokens &&
                     printf %s $tok >/run/loop/$ch/tasks-tokens/ctr-$ch && chown loop:loop /run/loop/$ch/tasks-tokens/ctr-$ch &&
                     chmod 0400 /run/loop/$ch/tasks-tokens/ctr-$ch && printf %s $tok >/tmp/tasks-token-$ch && chmod 0400 /tmp/tasks-token-$ch"
}
# schedule CHANNEL ARGS_JSON: the task's id, scheduled through the channel's helper as its agent would
schedule() {
        local out
        out=$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}' \
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"schedule_task\",\"arguments\":$2}}" |
                in_ct loop mcp --channel-id "$1" --socket "/run/loop/$1/tasks.sock" --token-file "/tmp/tasks-token-$1")
        [[ $out == *'"isError":false'* ]] || { diag "$out"; return 1; }
        grep -oE '"id\\?": *\\?"[0-9a-f]{8}' <<<"$out" | grep -oE '[0-9a-f]{8}$' | head -n1
}
timer_loaded() { [ "$(prop "loop-task@$1.timer" LoadState)" = loaded ]; }
# rewrite CHANNEL ID SED: the task file edited in place by a process of loop-tasks@CHANNEL (user loop)
rewrite() {
        as_helper "loop-tasks@$1.service" sed -i -E "$3" "/var/lib/loop/$1/tasks/$2.json"
}

nspawn_boot "$M" --stage "$LOOP_STAGE" --config "$cfg" || bail_out "could not boot systemd"
ok 0 "systemd boots"
check "systemd-sysusers creates the loop user" in_ct systemd-sysusers
in_ct sh -c "mkdir -p /etc/systemd/system/loop-tasks@.service.d &&
             printf '[Service]\nEnvironment=LOOP_TASKS_IDLE_SEC=3600\n' >/etc/systemd/system/loop-tasks@.service.d/90-idle-test.conf"
check "systemctl daemon-reload" in_ct systemctl daemon-reload
check "systemctl start loop.target" in_ct systemctl start loop.target
for ch in demo gone; do
        make_token "$ch"
        ok $? "a container token of channel $ch"
done

cron=$(schedule demo '{"type":"cron","schedule":"*/5 * * * *","prompt":"cron plan"}')
like "$cron" '^[0-9a-f]{8}$' "a cron task of channel demo is scheduled ($cron)"
every=$(schedule demo '{"type":"interval","schedule":"5m","prompt":"interval plan"}')
like "$every" '^[0-9a-f]{8}$' "an interval task of channel demo is scheduled ($every)"
gone=$(schedule gone '{"type":"interval","schedule":"5m","prompt":"left behind"}')
like "$gone" '^[0-9a-f]{8}$' "an interval task of channel gone is scheduled ($gone)"
check "loop task sync demo gone makes their timers" in_ct loop task sync demo gone
timer_loaded "demo:$cron"
ok $? "the cron task has its timer"
timer_loaded "demo:$every"
ok $? "the interval task has its timer"
timer_loaded "gone:$gone"
ok $? "the task of channel gone has its timer"

# the helper taken over: the file keeps its schedule, the timer it names fires every second
rewrite demo "$cron" 's/"on_calendar": *"[^"]*"/"on_calendar": "*-*-* *:*:*"/'
ok $? "loop-tasks@demo's user rewrites the cron task's calendar event to every second"
rewrite demo "$every" 's/"interval_sec": *[0-9]+/"interval_sec": 1/'
ok $? "loop-tasks@demo's user rewrites the interval task's interval to 1 s"
in_ct loop task sync demo >/dev/null 2>&1
timer_loaded "demo:$cron"
ok $((!$?)) "the rewritten cron task gets no timer (calendar now: $(prop "loop-task@demo:$cron.timer" TimersCalendar))"
timer_loaded "demo:$every"
ok $((!$?)) "the rewritten interval task gets no timer (now: $(prop "loop-task@demo:$every.timer" TimersMonotonic))"
out=$(journal_wait LOOP_EVENT=task-refused LOOP_TASK="$cron" -o cat)
like "$out" "calendar event is not the one its schedule says" "the refusal is journaled with the reason"

# the helper taken over writes task files beyond tasks.max (3): copies of a valid one under new ids
valid=$(schedule demo '{"type":"interval","schedule":"10m","prompt":"valid plan"}')
like "$valid" '^[0-9a-f]{8}$' "a third task of channel demo is scheduled ($valid)"
for id in 0000000a 0000000b 0000000c; do
        as_helper "loop-tasks@demo.service" sh -c "sed 's/$valid/$id/' /var/lib/loop/demo/tasks/$valid.json >/var/lib/loop/demo/tasks/$id.json"
        ok $? "loop-tasks@demo's user writes task file $id.json beyond tasks.max"
done
in_ct loop task sync demo >/dev/null 2>&1
timers=$(in_ct systemctl list-units --all --no-legend --plain 'loop-task@demo:*.timer' | grep -c '^loop-task@demo:')
is "$timers" 3 "the channel's valid tasks beyond tasks.max get no timer (3 of 4)"

# channel gone is taken out of the configuration; its timer elapses (its service started as the timer would)
rm -f "$cfg/channels.d/gone.json"
in_ct systemctl start "loop-task@gone:$gone.service" >/dev/null 2>&1
queued=$(in_ct sh -c "find /var/lib/loop/gone -path /var/lib/loop/gone/tasks -prune -o -type f -name '*.json' -print | wc -l")
is "$queued" 0 "the firing of a removed channel's task queues nothing"
timer_loaded "gone:$gone"
ok $((!$?)) "the firing removes the timers of the removed channel"

# a local user (nobody) writes a task-fired record of channel demo, fields and all
printf '%s\n' 'MESSAGE=Task 0000000f of channel demo fired: message forged-by-nobody queued.' \
        MESSAGE_ID=eace450e3e3e4ecf9606f0fce6c183e1 LOOP_EVENT=task-fired LOOP_CHANNEL=demo LOOP_TASK=0000000f |
        in_ct setpriv --reuid=65534 --regid=65534 --clear-groups logger --journald
ok $? "uid 65534 logs a record with task-fired's MESSAGE_ID and LOOP_* fields"
journal_wait MESSAGE_ID=eace450e3e3e4ecf9606f0fce6c183e1 _UID=65534 >/dev/null
out=$(in_ct loop logs demo)
like "$(grep -F forged-by-nobody <<<"$out")" '\[written by uid 65534\]' "loop logs shows the forged record with the uid that wrote it" ||
        diag "$out"
line=$(grep -F "gets no timer" <<<"$out" | head -n1)
like "$line" 'task-refused' "loop logs shows loop's own record (the sync's refusal)"
unlike "$line" 'written by' "...without a writer's uid"
like "$(in_ct loop logs demo --json | grep -F forged-by-nobody)" '"uid":65534' "loop logs --json gives the writer's uid"

# an agent changing a task in a loop: each change was a round of the root sync and timers made again
out=$(in_ct python3 -c '
import json, socket, sys
token = open("/tmp/tasks-token-demo").read().strip()
ok = refused = 0
for i in range(80):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("/run/loop/demo/tasks.sock")
    s.sendall((json.dumps({"token": token, "op": "toggle", "args": {"id": sys.argv[1]}}) + "\n").encode())
    a = json.loads(s.makefile().readline())
    s.close()
    if a.get("ok"):
        ok += 1
    elif "too many changes" in a.get("error", ""):
        refused += 1
print(ok, refused)' "$valid")
read -r changed refused <<<"$out"
ok $(( !(changed >= 1 && changed <= 60) )) "loop-tasks@demo makes at most 60 changes a minute ($changed of 80 made)"
ok $(( !(refused >= 20) )) "...and refuses the rest, saying why ($refused refused)"
# the count is journaled when the minute ends, or when the helper stops
in_ct systemctl stop loop-tasks@demo.service
like "$(journal_wait LOOP_EVENT=task-refused LOOP_REASON=rate LOOP_CHANNEL=demo -o cat)" \
        "changes of the tasks of channel demo refused" "the refused changes are journaled in one record"

tap_done
