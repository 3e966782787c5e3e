#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# An admin's first week (issue 24), on a real systemd (PID 1 in nspawn) with rootful Podman inside:
#   - the engine stopped in the middle of a queue of five messages: the runner waits for it inside the
#     service (STATUS=, `loop status`, a runner-waiting record), the path unit never fails, and once the
#     engine is back all five results arrive, none failed, none twice, no attempt counted for the wait;
#   - a runner started while the engine is away waits for it instead of burning the start limit;
#   - a message whose run fails waits before its next attempt, longer each time (journaled);
#   - a run that cannot start says why: in the queue entry, in failed/, and in the journal under
#     LOOP_CHANNEL= (so `loop logs NAME` and `journalctl LOOP_CHANNEL=NAME` find it);
#   - an unknown key is warned about by every command that runs the channel, not only config check;
#   - a CA file the config names that is not there fails `loop config check` and the run, at once;
#   - `loop send` to a channel whose inbox nobody watches warns, and `loop status` says so.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

systemd_test_prepare

M=loop-recovery-$$
IMAGE=localhost/loop-test:latest
systemd_test_config loop-recovery

# The engine named explicitly, as an admin's config does: without it loop would start a private Podman
# service when the system one is away.
printf '%s\n' "{ \"container_image\": \"$IMAGE\", \"browser\": { \"enabled\": false }, \"container_keep_alive_sec\": 0," \
        '  "engine": { "socket": "/run/podman/podman.sock" } }' >"$cfg/loop.json"
echo '{ "description": "recovery", "max_attempts": 3, "retry_delay_sec": 1 }' >"$cfg/channels.d/demo.json"
echo '{ "description": "no image", "max_attempts": 2, "retry_delay_sec": 1, "container_image": "localhost/not-there:1" }' \
        >"$cfg/channels.d/noimg.json"
echo '{ "description": "a typo", "work_dri": "/srv/typo" }' >"$cfg/channels.d/typo.json"
echo '{ "description": "CA file missing", "egress": { "ca_file": "/etc/loop/missing-ca.pem" } }' >"$cfg/channels.d/badca.json"
chmod 0644 "$cfg/loop.json" "$cfg"/channels.d/*.json

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
count() { in_ct sh -c "ls /var/lib/loop/$1/$2 2>/dev/null | grep -c '\\.json\$'"; }
outbox_has() { [ "$(count demo outbox)" -ge "$1" ]; }
container_running() { [ -n "$(in_ct podman ps -q --filter label=loop-channel=demo)" ]; }
runner_waits() { [[ $(prop loop-agent@demo.service StatusText) == *"Waiting for the container engine"* ]]; }
runner_inactive() { [[ $(prop loop-agent@demo.service ActiveState) =~ ^(inactive|failed)$ ]]; }
failed_has() { [ "$(count "$1" failed)" -ge "$2" ]; }
engine_stop() { in_ct systemctl stop podman.socket podman.service; }

nspawn_boot "$M" --podman --stage "$LOOP_STAGE" --config "$cfg" || bail_out "could not boot systemd with podman"
ok 0 "systemd boots with podman inside"
import_test_image "$(nspawn_root "$M")/run/podman/podman.sock" "$IMAGE" "$cfg/rootfs" >/dev/null
ok $? "the test image is imported into the container's podman"
check "systemd-sysusers creates the loop user" in_ct systemd-sysusers
check "systemctl start loop.target" in_ct systemctl start loop.target

# --- the engine stopped in the middle of a queue of five ---------------------------------------------
in_ct loop send demo "scenario:sleep 6" >/dev/null
for i in 2 3 4 5; do in_ct loop send demo "message $i" >/dev/null; done
wait_for 60 container_running
ok $? "the first of five messages runs"
check "the engine stops in the middle of the run" engine_stop
wait_for 60 runner_waits
ok $? "the runner says it waits for the engine" ||
        diag "$(in_ct journalctl --no-pager -o cat -u loop-agent@demo.service -n 30 2>&1)"
like "$(in_ct loop status demo)" "Waiting for the container engine at /run/podman/podman.sock" \
        "loop status says the runner waits for the engine, and where"
rec=$(journal_wait -o cat LOOP_CHANNEL=demo LOOP_EVENT=runner-waiting LOOP_REASON=engine-away)
like "$rec" "^Runner of channel demo waits for the container engine at /run/podman/podman.sock" \
        "a runner-waiting record says so in the journal"
sleep 15
unlike "$(prop loop-agent@demo.path ActiveState)" "^failed$" "15 s later the path unit has not failed"
is "$(prop loop-agent@demo.service NRestarts)" 0 "...and the runner was not restarted"
like "$(prop loop-agent@demo.service ActiveState)" "^(active|activating)$" "...it is still there, waiting"
check "the engine starts again" in_ct systemctl start podman.socket
wait_for 120 outbox_has 5
ok $? "all five results arrive after the engine is back" ||
        diag "$(in_ct loop queue demo 2>&1; in_ct journalctl --no-pager -o cat -u loop-agent@demo.service -n 40 2>&1)"
is "$(count demo failed)" 0 "none of them failed"
prompts=$(in_ct loop outbox demo --json | grep -o '"prompt": *"[^"]*"' | sed 's/^"prompt": *//' | tr -d '"' | sort | paste -sd,)
is "$prompts" "message 2,message 3,message 4,message 5,scenario:sleep 6" "each message has exactly one result"
attempts=$(in_ct loop outbox demo --json | grep -o '"attempts": *[0-9]*' | sed 's/^"attempts": *//' | sort -u | paste -sd,)
is "$attempts" 1 "the wait for the engine counted no attempt against any message"
like "$(journal_wait -o cat LOOP_CHANNEL=demo LOOP_EVENT=runner-waiting LOOP_REASON=engine-back)" "answers again" \
        "the journal says when the engine is back"
wait_for 60 runner_inactive

# --- a runner started while the engine is away ----------------------------------------------------
check "the engine stops" engine_stop
in_ct loop send demo "while away" >/dev/null
wait_for 60 runner_waits
ok $? "a runner started with no engine waits for it"
is "$(prop loop-agent@demo.service ActiveState)" activating "...before it says it is ready (Type=notify)"
sleep 12
unlike "$(prop loop-agent@demo.path ActiveState)" "^failed$" "the path unit does not fail while the engine is away"
check "the engine starts again" in_ct systemctl start podman.socket
wait_for 120 outbox_has 6
ok $? "the message queued while the engine was away runs once it is back"

# --- a failing message backs off ------------------------------------------------------------------
in_ct loop send demo "scenario:crash" >/dev/null
wait_for 120 failed_has demo 1
ok $? "a message that fails every time ends in failed/ after max_attempts"
retries=$(journal_wait -o cat LOOP_CHANNEL=demo LOOP_EVENT=queue-retry)
like "$retries" "attempt 2 of 3 in 1 s" "the second attempt waits retry_delay_sec"
like "$retries" "attempt 3 of 3 in 2 s" "...and the third twice as long"

# --- a run that cannot start says why, under its channel ------------------------------------------
in_ct loop send noimg "anything" >/dev/null
wait_for 120 failed_has noimg 1
ok $? "a message whose run cannot start ends in failed/"
like "$(in_ct loop queue noimg 2>&1)" "not-there:1 is not on the engine" "loop queue shows the real reason"
like "$(journal_wait -o cat LOOP_CHANNEL=noimg LOOP_EVENT=run-failed)" "could not start: .*not-there:1 is not on the engine" \
        "the run-failed record carries the reason"
like "$(in_ct loop logs noimg 2>&1)" "not-there:1 is not on the engine" "loop logs NAME shows it"
like "$(journal_wait -o cat LOOP_CHANNEL=noimg -p err -u loop-agent@noimg.service)" "not on the engine" \
        "the runner's own error line carries LOOP_CHANNEL too"

# --- a file the configuration names is not there ---------------------------------------------------
out=$(in_ct loop config check badca 2>&1) && st=0 || st=$?
is "$st" 1 "loop config check fails for a channel whose egress.ca_file is missing"
like "$out" "egress.ca_file: /etc/loop/missing-ca.pem cannot be loaded: No such file or directory" "...and says which file and why"
out=$(in_ct loop run badca "anything" 2>&1) && st=0 || st=$?
is "$st" 2 "loop run fails at once for it (the run could not start)"
like "$out" "egress.ca_file /etc/loop/missing-ca.pem of channel badca cannot be loaded" "...with the reason"

# --- a typo is said by every command that runs the channel -----------------------------------------
out=$(in_ct loop run -q typo "hello" 2>&1)
like "$out" "typo.json: work_dri: unknown key, ignoring \(did you mean \"work_dir\"\?\)" \
        "loop run warns about an unknown key in the channel's file, with the likely key"
like "$(in_ct loop send typo "hello" 2>&1)" "work_dri: unknown key" "so does loop send"

# --- an inbox nobody watches ----------------------------------------------------------------------
check "loop-agent@demo.path stops" in_ct systemctl stop loop-agent@demo.path
out=$(in_ct loop send demo "unwatched" 2>&1)
like "$out" "loop-agent@demo.path is inactive.*stays queued" "loop send warns that nothing runs the message yet"
like "$(in_ct loop status demo)" "inbox watch inactive" "loop status says the inbox is not watched"
like "$out" "systemctl start loop-agent@demo.path" "...and says how to arm it"
check "systemctl start loop-agent@demo.path" in_ct systemctl start loop-agent@demo.path
wait_for 120 outbox_has 7
ok $? "...and it runs once the channel is armed again"

nspawn_stop "$M"
ok $? "the container powers off cleanly"
tap_done
