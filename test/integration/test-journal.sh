#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The audit stream on a real journald: boot systemd 252 as PID 1 (test/lib/nspawn.sh) with the staged
# install at /usr/local, run audit-emit (every audit event once, through the real audit_log(), with a
# registered secret) as a service of the container's systemd, and look with journalctl and `loop logs`:
# field matches, the stable LOOP_* fields, no secret anywhere in the journal, the caps, the installed
# catalog behind `journalctl -x`, and the console when there is no journal.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

EMIT_HOST=$LOOP_BUILD_DIR/test/integration/audit-emit
EMIT=/opt/loop-test/audit-emit
LOOP_HOST=$LOOP_BUILD_DIR/src/loop

nspawn_require || bail_out "integration tests need root and systemd-nspawn (see above)"
[ -x "$EMIT_HOST" ] || bail_out "$EMIT_HOST is not built"
stage_install || bail_out "could not build and install the staging tree"

M=loop-journal-$$
RUN=$$-$RANDOM
CH=audit-$RUN
CH2=other-$RUN
SECRET="sk-test-$RUN-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
EVENTS=(container-registered container-status container-removed run-started run-turn run-tool-use
        run-finished run-failed run-retried queue-queued queue-taken queue-done queue-retry queue-failed
        runner-started runner-stopped runner-waiting gate-pending gate-decision gate-audit-dropped
        gate-answer-refused dockerproxy-request gateway-request gateway-failed tamper task-created task-changed
        task-removed task-fired task-refused browser-action browser-refused)
N=${#EVENTS[@]}

in_ct() { nspawn_exec "$M" "$@"; }
# audit-emit CHANNEL [big] as a service: its stderr is the journal stream, so log.c picks the journal.
emit() {
        in_ct systemd-run --wait --quiet --collect --unit="audit-emit-$1" --setenv=AUDIT_EMIT_SECRET="$SECRET" \
                "$EMIT" "$@"
}
jsync() { in_ct journalctl --sync; }
# json_get FIELD: that field of each JSON object on stdin, one per line.
json_get() {
        python3 -c '
import json, sys
for line in sys.stdin:
    if line.strip():
        v = json.loads(line).get(sys.argv[1])
        print(json.dumps(v) if not isinstance(v, str) else v.replace("\n", "\\n"))' "$1"
}

# --- no journal on this host: loop logs says so ----------------------------------------------------
if [ ! -e /run/systemd/journal/socket ] && [ -z "$(find /var/log/journal /run/log/journal -name '*.journal' 2>/dev/null)" ]; then
        out=$("$LOOP_HOST" logs 2>&1) && st=0 || st=$?
        is "$st" 1 "without journald and journal files, loop logs fails"
        like "$out" "No journal: systemd-journald is not running" "... and says there is no journal"
else
        skip "loop logs without a journal" "this host has a journal"
        skip "loop logs without a journal says so" "this host has a journal"
fi

nspawn_boot "$M" --stage "$LOOP_STAGE" --bind-ro="$EMIT_HOST:$EMIT" ||
        bail_out "could not boot systemd in a container"
ok 0 "systemd boots as PID 1 with the staged tree at /usr/local"

check "audit-emit logs every event as a service" emit "$CH"
check "audit-emit logs for a second channel, with a 100 KiB field" emit "$CH2" big
check "journalctl --sync" jsync

# --- field matches ---------------------------------------------------------------------------------
j=$(in_ct journalctl -o json --all LOOP_EVENT=run-finished LOOP_CHANNEL="$CH")
is "$(grep -c . <<<"$j")" 1 "journalctl LOOP_EVENT=run-finished LOOP_CHANNEL=$CH finds one entry"
is "$(json_get MESSAGE_ID <<<"$j")" ed10c01f497d4bbaaf05f935915d9b22 "it has the MESSAGE_ID of run-finished"
is "$(json_get PRIORITY <<<"$j")" 6 "it has PRIORITY=6 (info)"
is "$(json_get SYSLOG_IDENTIFIER <<<"$j")" audit-emit "it has SYSLOG_IDENTIFIER of the program"
is "$(json_get _SYSTEMD_UNIT <<<"$j")" "audit-emit-$CH.service" "it comes from the service's unit"
is "$(json_get MESSAGE <<<"$j")" "Test event run-finished of $CH, secret [REDACTED]." \
        "MESSAGE is the formatted text with the secret redacted"
for kv in "LOOP_CHANNEL=$CH" \
          LOOP_CONTAINER=c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00 \
          "LOOP_CONTAINER_NAME=loop-$CH-agent-1" LOOP_CONTAINER_TYPE=agent \
          "LOOP_SCOPE=loop-$CH-agent-1.scope" LOOP_SESSION=7d0b4a4e-session LOOP_QUEUE_ID=q-0001; do
        is "$(json_get "${kv%%=*}" <<<"$j")" "${kv#*=}" "run-finished carries $kv"
done
is "$(json_get LOOP_PROMPT <<<"$j")" "deploy with key [REDACTED] please" \
        "a registered secret inside an extra field is redacted"
is "$(json_get LOOP_GITHUB_TOKEN <<<"$j")" "[REDACTED]" "an extra field named *TOKEN* is redacted"
is "$(json_get LOOP_DETAIL <<<"$j")" 'line one\nline two' "a value with a newline arrives whole (binary-safe)"

for e in "${EVENTS[@]}"; do
        n=$(in_ct journalctl -o cat LOOP_EVENT="$e" LOOP_CHANNEL="$CH" | grep -c .)
        is "$n" 1 "journalctl LOOP_EVENT=$e finds the event"
done
is "$(in_ct journalctl -o cat LOOP_EVENT=run-failed LOOP_CHANNEL="$CH" -p err | grep -c .)" 1 \
        "run-failed was logged at err priority (journalctl -p err finds it)"
is "$(in_ct journalctl -o cat -u "audit-emit-$CH.service" LOOP_CHANNEL="$CH" | grep -c .)" "$N" \
        "journalctl -u UNIT with a field match returns the unit's $N audit entries"

# --- no secret anywhere ----------------------------------------------------------------------------
n=$(in_ct journalctl -o export | grep -c -a -F -- "$SECRET")
is "$n" 0 "the secret appears nowhere in journalctl -o export"
n=$(in_ct journalctl -o export | grep -c -a -F -- "unregistered-but-named")
is "$n" 0 "the value of a *TOKEN* field appears nowhere in journalctl -o export"
n=$(in_ct journalctl -o export | grep -c -a -F -- "[REDACTED]")
[ "$n" -ge 32 ]
ok $? "the entries are there, redacted ($n fields with [REDACTED])"

# --- caps --------------------------------------------------------------------------------------------
big=$(in_ct journalctl -o json --all LOOP_EVENT=run-tool-use LOOP_CHANNEL="$CH2" MESSAGE="Big tool output." | json_get LOOP_OUTPUT)
is "${#big}" 65536 "a 100 KiB field reaches the journal cut to 64 KiB"
like "${big: -20}" 'o\.\.\.\[truncated\]$' "... ending in the truncation marker"

# --- the catalog -------------------------------------------------------------------------------------
check "journalctl --update-catalog" in_ct journalctl --update-catalog
listed=$(in_ct journalctl --list-catalog)
n=0
for id in 09f96a1d11d245c4b7711f4eb9008c40 94ace96791574393ae4385606ae00990 d3d36da54c284b098f1e75bdadfc1f91 \
          055ae6920c2947079e3a0dc52d1376ad abbfc22c99484017888e6f8988870bd2 c1e3df5484db4b8a871ea47edbc9a02f \
          ed10c01f497d4bbaaf05f935915d9b22 b110b9403d6a4b31a3336cf7fe3fffb4 f0f69fef7903467c8df599623952c084 \
          26f90c0c30bd4935be6183e9e452023f 19e5cd3edacf46158f308b5a4f188e82 527b5e1abf094497acacdb22d6ae6f0e \
          87391ca293524ab9866f346f66244810 f2a7300555124baea2194ff09e90c4b7 25ccc022b5f04f01b49324da6040c205 \
          b5cbb1d781a841edbbb971dcadfe8542 ac51ea316b31483ba54348f5beb30dbc 1c67da5fa187464598968c5d0c4d6ccd \
          310a10fada534a7d93b9fbe9549b2cf2 26a10ae3739a4d5181b59cd9f48a917f 2a348c56c2a442e385ec9c08d6be8992 \
          83d2dd1882844e24bc53aec0a867aff8 dd6b4d5c384b4f3ea77851055307439a af26b38832074c25917cbcb3043b8861 \
          f035af493c1148c5ba87ec56dfc0896b de6abbeabb534479ad110e38ee0863ff 636d514c73344fd7a8819510dcc8288a \
          e318a8bd02a940e1bdd4e7a1dcc93c0d eace450e3e3e4ecf9606f0fce6c183e1 6f1d807081df4dcba02ac96b96808d6d \
          8d28bfc4736ee64dfa1b2f73f251ba3d f7585af101dd66e1d014fe855869f45c; do
        grep -q "^$id loop: " <<<"$listed" && n=$((n + 1))
done
is "$n" "$N" "the installed catalog has all $N MESSAGE_IDs (journalctl --list-catalog)" || diag "$(grep loop <<<"$listed")"
x=$(in_ct journalctl -x --no-pager LOOP_EVENT=run-failed LOOP_CHANNEL="$CH")
like "$x" "Subject: A run failed on channel $CH" "journalctl -x explains run-failed, with the channel filled in"
like "$x" "Defined-By: loop" "... as defined by loop"
like "$x" "journalctl -u loop-agent@$CH" "... and the body tells the operator where to look"

# --- loop logs ---------------------------------------------------------------------------------------
out=$(in_ct loop logs "$CH" --json)
is "$(grep -c . <<<"$out")" "$N" "loop logs NAME --json returns the channel's $N entries"
is "$(json_get LOOP_EVENT <<<"$out" | tr '\n' ' ')" "${EVENTS[*]} " "... in the order they were logged"
is "$(json_get LOOP_CHANNEL <<<"$out" | sort -u)" "$CH" "... all of channel $CH"
fin=$(grep '"LOOP_EVENT":"run-finished"' <<<"$out")
is "$(json_get LOOP_SESSION <<<"$fin")/$(json_get LOOP_SCOPE <<<"$fin")/$(json_get message_id <<<"$fin")" \
        "7d0b4a4e-session/loop-$CH-agent-1.scope/ed10c01f497d4bbaaf05f935915d9b22" \
        "an entry has every LOOP_* field, the message_id and the rest"
like "$(json_get time <<<"$fin")" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{6}Z$' "... and an ISO 8601 time"
is "$(grep -c -F -- "$SECRET" <<<"$out")" 0 "loop logs shows no secret"

out=$(in_ct loop logs "$CH")
is "$(grep -c . <<<"$out")" "$N" "loop logs NAME prints one line per event"
like "$(grep run-finished <<<"$out")" \
        "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} $CH run-finished: Test event run-finished of $CH, secret \\[REDACTED\\]\\.$" \
        "a line is: time channel event: message"
is "$(in_ct loop logs "$CH" -n 3 --json | json_get LOOP_EVENT | tr '\n' ' ')" "${EVENTS[*]: -3} " \
        "loop logs -n 3 shows the last three events"
is "$(in_ct loop logs --event run-finished --json | json_get LOOP_CHANNEL | sort | tr '\n' ' ')" \
        "$(printf '%s\n' "$CH" "$CH2" | sort | tr '\n' ' ')" "loop logs --event run-finished without NAME covers every channel"
like "$(in_ct loop logs "nosuch-$RUN")" "^-- No entries --$" "loop logs of a channel without events says so"
out=$(in_ct loop logs --event nope 2>&1) && st=0 || st=$?
is "$st/$(grep -c 'Unknown event' <<<"$out")" "1/1" "loop logs --event with an unknown event fails clearly"

# The agent's text in a run-turn: loop logs shows terminal escapes, C1 controls and bidi overrides escaped.
check "audit-emit logs an agent's text with terminal escapes" emit "hostile-$RUN" hostile
check "journalctl --sync" jsync
out=$(in_ct loop logs "hostile-$RUN" --event run-turn | tail -n 1)
like "$out" 'hostile \\x1b\[2J\\x1b\]0;owned\\x07\\x1b\]52;c;Y3VybCBldmlsfHNo\\x07 \\u009b31m \\u202eend$' \
        "loop logs shows the agent's escape sequences escaped"
is "$(LC_ALL=C grep -cP '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80\xae' <<<"$out")" 0 \
        "...and no byte the terminal would act on"

# -f: follow from now (a service of the container, so nothing outlives it), then log one more run.
check "loop logs -f starts" in_ct systemd-run --quiet --collect --unit="follow-$RUN" -p RuntimeMaxSec=60 \
        -p StandardOutput=file:/tmp/follow.out loop logs "$CH" -f -n 0 --json
# It must have seeked to the end before the new events come: it has once it waits on the journal (the
# inotify descriptor sd_journal_wait() makes after the seek); a fixed second was not always enough.
follow_waits() {
        in_ct sh -c 'p=$(systemctl show -P MainPID "$1") && [ "${p:-0}" != 0 ] &&
                     for f in /proc/$p/fd/*; do [ "$(readlink "$f")" = "anon_inode:inotify" ] && exit 0; done; exit 1' \
                sh "follow-$RUN.service"
}
wait_for 60 follow_waits
ok $? "loop logs -f waits for new entries"
is "$(in_ct systemctl is-active "follow-$RUN.service")" active "loop logs -f keeps running"
check "audit-emit logs again while loop logs -f follows" in_ct systemd-run --wait --quiet --collect \
        --unit="audit-emit-again-$RUN" --setenv=AUDIT_EMIT_SECRET="$SECRET" "$EMIT" "$CH"
for ((i = 0; i < 100; i++)); do
        [ "$(in_ct grep -c . /tmp/follow.out)" -ge "$N" ] && break
        sleep 0.1
done
check "loop logs -f stops" in_ct systemctl stop "follow-$RUN.service"
follow=$(in_ct cat /tmp/follow.out)
is "$(grep -c . <<<"$follow")" "$N" "loop logs -f -n 0 prints the $N new events and none of the old"
is "$(json_get LOOP_CHANNEL <<<"$follow" | sort -u)" "$CH" "... as JSON objects of channel $CH"
is "$(grep -c -F -- "$SECRET" <<<"$follow")" 0 "... without the secret"

# --- without a journal: the console ----------------------------------------------------------------
CH3=console-$RUN
err=$(in_ct systemd-run --wait --quiet --collect --pipe -E LOOP_LOG_TARGET=console \
        --setenv=AUDIT_EMIT_SECRET="$SECRET" "$EMIT" "$CH3" 2>&1 >/dev/null)
is "$(grep -c . <<<"$err")" "$N" "LOOP_LOG_TARGET=console: the events are $N lines on stderr"
like "$(grep '^run-finished: ' <<<"$err")" "^run-finished: Test event run-finished of $CH3, secret \\[REDACTED\\]\\. \\[LOOP_CHANNEL=$CH3 " \
        "... one line per event: event, message, fields"
is "$(grep -c -F -- "$SECRET" <<<"$err")" 0 "... without the secret"
jsync
like "$(in_ct loop logs "$CH3")" "^-- No entries --$" "... and nothing of them in the journal"

# --- shutdown ----------------------------------------------------------------------------------------
nspawn_stop "$M"
ok $? "the container powers off cleanly"
leftover=$(for cg in $(_nspawn_cgroups "$M"); do [ -e "$cg" ] && echo "$cg"; done)
is "$leftover" "" "nothing of the container is left (cgroups removed)"

tap_done
