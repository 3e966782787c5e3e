#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Firings missed while the machine was off, on a real systemd (PID 1 in nspawn): a cron task's timer
# has Persistent=yes, so systemd keeps its last firing in /var/lib/systemd/timers/stamp-UNIT; the
# machine is powered off, the stamp is set back two days (as if it had been off since), and at the next
# boot loop-task-restore makes the transient timer again from the task file, which must fire exactly
# once at boot: one task-fired record with LOOP_TASK=, one message queued for the task, fired_count 1,
# and neither a daemon-reload nor another sync fires it again; a task of the same schedule whose stamp was
# left alone does not fire. A once task whose instant passed while
# the machine was off fires once at boot too, and is done.
#
# /var/lib/loop (the task files and the queue) and /var/lib/systemd/timers (the stamps) are bind mounts
# of temporary directories, so they outlive the machine as a disk would. No engine: the runner the
# queued message starts fails, which leaves the message in the queue; what is checked is the firing.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

systemd_test_prepare
M=loop-tasks-persistent-$$
systemd_test_config loop-tasks-persistent

state=$(mktemp -d "${TMPDIR:-/tmp}/loop-tasks-state.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$state'"
stamps=$(mktemp -d "${TMPDIR:-/tmp}/loop-tasks-stamps.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$stamps'"
chmod 0755 "$state" "$stamps"

echo '{ "browser": { "enabled": false }, "egress": { "enabled": false }, "gates": { "agentgate": { "enabled": false } } }' >"$cfg/loop.json"
echo '{ "description": "persistent tasks", "tasks": { "min_interval_sec": 20 } }' >"$cfg/channels.d/demo.json"
chmod 0644 "$cfg/loop.json" "$cfg/channels.d/"*.json

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
boot() {
        nspawn_boot "$M" --stage "$LOOP_STAGE" --config "$cfg" \
                --bind="$state:/var/lib/loop" --bind="$stamps:/var/lib/systemd/timers" || return 1
        in_ct systemd-sysusers >/dev/null && in_ct systemctl start loop.target
}
task_field() { in_ct loop task show demo "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["task"].get(sys.argv[1]))' "$2"; }
# task-fired records of the task in this boot
firings() { in_ct journalctl --sync; in_ct journalctl -b -o cat LOOP_EVENT=task-fired LOOP_TASK="$1" | grep -c .; }
# distinct messages of the task in the channel's queue (inbox, failed, outbox: a message is in one of them)
messages() {
        in_ct python3 -c '
import glob, json, os, sys
ids = set()
for f in glob.glob("/var/lib/loop/demo/*/*.json"):
    try:
        m = json.load(open(f))
    except Exception:
        continue
    if m.get("task") == sys.argv[1]:
        ids.add(os.path.basename(f))
print(len(ids))' "$1"
}
service_done() { [ "$(prop "loop-task@demo:$1.service" ActiveState)" != activating ] && [ "$(prop "loop-task@demo:$1.service" ActiveState)" != active ]; }
fired_once_at_boot() { [ "$(firings "$1")" -ge 1 ] && service_done "$1"; }

boot || bail_out "could not boot systemd with loop.target"
ok 0 "systemd boots, loop.target starts"

# a daily cron task at an hour twelve hours away: it cannot come due by itself during the test
hour=$(( ($(date +%-H) + 12) % 24 ))
cron=$(in_ct loop task add demo --type cron --schedule "0 $hour * * *" --json -- catch up | python3 -c 'import json,sys; print(json.load(sys.stdin)["task"]["id"])')
like "$cron" '^[0-9a-f]{8}$' "loop task add makes a daily cron task"
is "$(prop "loop-task@demo:$cron.timer" ActiveState)" active "its timer is active"
is "$(prop "loop-task@demo:$cron.timer" Persistent)" yes "...with Persistent=yes"
stamp="$stamps/stamp-loop-task@demo:$cron.timer"
[ -e "$stamp" ]
ok $? "systemd keeps its stamp file under /var/lib/systemd/timers"
is "$(task_field "$cron" fired_count)" 0 "it has not fired"

# the same schedule, its stamp left as it is: nothing was missed, nothing may fire at boot
kept=$(in_ct loop task add demo --type cron --schedule "0 $hour * * *" --json -- nothing missed | python3 -c 'import json,sys; print(json.load(sys.stdin)["task"]["id"])')
like "$kept" '^[0-9a-f]{8}$' "a second task of the same schedule"

# a once task 30 seconds ahead: the machine is off when its instant comes
at=$(date -u -d '+30 seconds' +%Y-%m-%dT%H:%M:%SZ)
once=$(in_ct loop task add demo --type once --schedule "$at" --json -- once while off | python3 -c 'import json,sys; print(json.load(sys.stdin)["task"]["id"])')
like "$once" '^[0-9a-f]{8}$' "loop task add makes a once task 30 s ahead"

nspawn_stop "$M"
ok $? "the machine powers off"
touch -d '2 days ago' "$stamp"
ok $? "the stamp says the last firing was two days ago, as if the machine had been off since"
while [ "$(date -u +%s)" -le "$(date -u -d "$at" +%s)" ]; do sleep 1; done

boot
ok $? "it boots again and loop.target starts"
wait_for 60 fired_once_at_boot "$cron"
ok $? "the missed cron firing is caught up at boot" ||
        diag "$(in_ct journalctl --no-pager -b -u loop-task-restore.service -u "loop-task@demo:$cron.timer" -u "loop-task@demo:$cron.service")"
is "$(firings "$cron")" 1 "...exactly once (one task-fired record with LOOP_TASK=)"
like "$(in_ct journalctl -b -o export LOOP_EVENT=task-fired LOOP_TASK="$cron")" "LOOP_QUEUE_ID=" "...which names the queued message"
is "$(messages "$cron")" 1 "...and one message of the task is in the channel's queue"
is "$(task_field "$cron" fired_count)" 1 "the task file counts one firing"
is "$(prop "loop-task@demo:$cron.timer" ActiveState)" active "the timer stays active for the next day"

is "$(firings "$kept")" 0 "the task whose stamp was left alone does not fire at boot: the catch-up comes from the stamp"
is "$(task_field "$kept" fired_count)" 0 "...its file counts no firing"

check "systemctl daemon-reload" in_ct systemctl daemon-reload
check "loop task sync demo" in_ct loop task sync demo
wait_for 30 service_done "$cron"
is "$(firings "$cron")" 1 "neither a daemon-reload nor another sync fires it again"

wait_for 60 fired_once_at_boot "$once"
ok $? "the once task whose instant passed while off fires at boot"
is "$(firings "$once")" 1 "...exactly once"
is "$(messages "$once")" 1 "...one message queued"
is "$(task_field "$once" done)" True "...and the task is done"
[ -z "$(in_ct systemctl list-timers --all --no-legend --plain "loop-task@demo:$once.timer")" ]
ok $? "...with no timer left"

nspawn_stop "$M"
ok $? "the container powers off cleanly"
tap_done
