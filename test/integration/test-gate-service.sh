#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The security gate's host side under a real systemd (PID 1 in nspawn, no container engine needed):
# loop-generator enables loop-gate@NAME.socket and loop-gate-admin@NAME.socket for channels whose gate
# is on; a caller with a container's token (curl on gate.sock, as the in-container supervisor does)
# waits until `loop gate approve` answers; a bad token, a timeout, the rate limit, a removed token
# file and a killed service all end in a deny (the last one as a broken connection, which callers
# take as a deny); the session cache answers repeats; socket activation starts the service again;
# the journal has every decision, also those the supervisor made locally and reported (POST
# /api/gate/audit: authenticated, validated, capped per container); `systemd-analyze security` rates
# the service at most 2.0.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

systemd_test_prepare

M=loop-gate-$$
cfg=$(mktemp -d "${TMPDIR:-/tmp}/loop-gate-etc.XXXXXX") || bail_out "mktemp failed"
out=$(mktemp -d "${TMPDIR:-/tmp}/loop-gate-out.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$cfg' '$out'"
mkdir -p "$cfg/channels.d"
echo '{ "browser": { "enabled": false } }' >"$cfg/loop.json"
# demo: humans answer; pending limit 2 per container. quick: a 2 s approval timeout. nogate: gate off.
# loud: gates.audit.verbose, so reported allows are journaled too.
cat >"$cfg/channels.d/demo.json" <<'EOF'
{ "gates": { "approval_timeout_sec": 120, "rate_limits": { "pending": 2, "per_minute": 1000, "total": 1000 } } }
EOF
echo '{ "gates": { "approval_timeout_sec": 2 } }' >"$cfg/channels.d/quick.json"
echo '{ "gates": { "agentgate": { "enabled": false } } }' >"$cfg/channels.d/nogate.json"
echo '{ "gates": { "audit": { "verbose": true } } }' >"$cfg/channels.d/loud.json"
chmod 0644 "$cfg/loop.json" "$cfg"/channels.d/*.json

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
token_new() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
# token_add CHANNEL CONTAINER TOKEN: what the runner does (gate_token_write()), by hand.
token_add() {
        in_ct sh -c "d=/run/loop/$1/gate-tokens && mkdir -p \$d && chown loop:loop \$d && chmod 0700 \$d &&
                     printf %s '$3' >\$d/.new && chown loop:loop \$d/.new && chmod 0400 \$d/.new && mv \$d/.new \$d/$2"
}
# ask CHANNEL TOKEN BODY: the container's request; prints the reply (empty when the connection broke).
ask() {
        in_ct curl -s --max-time 150 --unix-socket "/run/loop/$1/gate.sock" \
                -H "Authorization: Bearer $2" -H 'Content-Type: application/json' -d "$3" \
                http://localhost/api/gate/container-approval
}
body() { printf '{"kind":"%s","target":"%s","message":"test","cache_key":"%s","rule":"cmd[0]","pid":%d}' "$1" "$2" "$3" "${4:-7}"; }
n_pending() { in_ct loop gate list "$1" --json | grep -c '"id":'; }
pending_is() { [ "$(n_pending "$1")" -ge "$2" ]; }
none_pending() { [ "$(n_pending "$1")" = 0 ]; }
first_id() { in_ct loop gate list "$1" --json | sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' | head -1; }
# report CHANNEL TOKEN BODY [COUNT]: the supervisor's fire-and-forget audit POST, COUNT times on one
# connection; prints the HTTP status of each.
report() {
        local args=() i
        for ((i = 0; i < ${4:-1}; i++)); do args+=(-o /dev/null http://localhost/api/gate/audit); done
        in_ct curl -s -w '%{http_code}\n' --max-time 120 --unix-socket "/run/loop/$1/gate.sock" \
                -H "Authorization: Bearer $2" -H 'Content-Type: application/json' -d "$3" "${args[@]}"
}
# record DECISION TARGET PID [CLAIMED-CHANNEL]: a body as gate_audit_record_json() makes it; TARGET is JSON.
record() {
        printf '{"ts":1700000000000000000,"channel":"%s","pid":%d,"kind":"file","syscall":"openat","op":"read",%s' \
                "${4:-demo}" "$3" "\"target\":\"$2\",\"rule_id\":\"default\",\"decision\":\"$1\",\"event\":\"local\","
        printf '"prompted_who":"","latency_ns":4200,"errno":%d,"message":"host secrets"}' "$([ "$1" = deny ] && echo 13 || echo 0)"
}
# local_entries PID [MATCH...]: the journal's local decisions of that pid, -o export.
local_entries() {
        local pid=$1
        shift
        in_ct journalctl --sync
        in_ct journalctl -u 'loop-gate@*' LOOP_SOURCE=local LOOP_PID="$pid" "$@" -o export
}
has_field() { grep -qxF -- "$2" <<<"$1"; }
jfield() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read() or "{}").get(sys.argv[1], ""))' "$1"; }

nspawn_boot "$M" --stage "$LOOP_STAGE" --config "$cfg" || bail_out "could not boot systemd"
ok 0 "systemd boots"
check "systemd-sysusers creates the loop user" in_ct systemd-sysusers
check "systemctl start loop.target" in_ct systemctl start loop.target

# --- the generator enables the sockets --------------------------------------------------------------
is "$(prop loop-gate@demo.socket ActiveState)" active "loop-gate@demo.socket listens"
is "$(prop loop-gate-admin@demo.socket ActiveState)" active "loop-gate-admin@demo.socket listens"
is "$(prop loop-gate@nogate.socket ActiveState)" inactive "a channel with its gate off has no gate socket"
is "$(in_ct stat -c '%a %U:%G' /run/loop/demo/gate.sock)" "666 root:root" "gate.sock is 0666: the token authenticates"
is "$(in_ct stat -c '%a %U:%G' /run/loop/demo/gate-admin.sock)" "660 root:loop" "gate-admin.sock is 0660 root:loop"
is "$(prop loop-gate@demo.service ActiveState)" inactive "the service does not run before a connection"

T1=$(token_new)
T2=$(token_new)
TQ=$(token_new)
check "a container token is installed as the runner does" token_add demo loop-demo-aaaaaa "$T1"
token_add demo loop-demo-bbbbbb "$T2"
token_add quick loop-quick-cccccc "$TQ"

# --- a human approves ---------------------------------------------------------------------------------
ask demo "$T1" "$(body execve 'git push origin main' 'execve:git:push origin')" >"$out/r1" &
a1=$!
wait_for 30 pending_is demo 1
ok $? "a request with a valid token becomes pending (socket activation started the service)"
is "$(prop loop-gate@demo.service ActiveState)" active "the service runs while a request waits"
is "$(prop loop-gate@demo.service User)" loop "it runs as user loop"
list=$(in_ct loop gate list demo)
like "$list" "demo/[0-9]+-[0-9a-f]{8} +loop-demo-aaaaaa +execve .*git push origin main" "loop gate list shows it with a channel-qualified id"
id=$(first_id demo)
# The id is bound to what was shown: its digest is SHA-256 over container, kind and target.
digest_of() { printf '%s\0%s\0%s\0' "$1" "$2" "$3" | sha256sum | cut -c1-8; }
is "${id##*-}" "$(digest_of loop-demo-aaaaaa execve 'git push origin main')" \
        "the id carries the digest of the request's container, kind and target"
wrong="${id%-*}-$(digest_of loop-demo-aaaaaa execve 'git push origin evil')"
r=$(in_ct loop gate approve "$wrong" 2>&1)
st=$?
ok "$([ $st -ne 0 ] && echo 0 || echo 1)" "loop gate approve with the digest of another target is refused" || diag "$r"
like "$r" "does not name what is pending" "...with a clear error"
is "$(n_pending demo)" 1 "...and the request still waits"
# journald may store the record a moment after loop answered: wait for it, then read the unit's lines.
e=$(journal_wait -u loop-gate@demo LOOP_EVENT=gate-answer-refused -o export)
like "$(in_ct journalctl -u loop-gate@demo -o cat)" "Refused root's answer \"once\" to $wrong" "...and the refusal is journaled"
like "$e" "(^|$(printf '\n'))MESSAGE_ID=f035af493c1148c5ba87ec56dfc0896b" "...as an audit record with its catalog MESSAGE_ID" || diag "$e"
for f in "LOOP_DECISION=deny" "LOOP_REASON=digest-mismatch" "LOOP_KIND=execve" "LOOP_TARGET=git push origin main" \
        "LOOP_GATE_ID=$wrong" "LOOP_PENDING_GATE_ID=$id" "LOOP_ACTOR=root" "LOOP_ANSWER=once" "LOOP_CONTAINER=loop-demo-aaaaaa"; do
        grep -qxF "$f" <<<"$e"
        ok $? "...with $f"
done
r=$(in_ct curl -s -o /dev/null -w '%{http_code}' --max-time 10 --unix-socket /run/loop/demo/gate-admin.sock \
        -d '{"answer":"session"}' "http://localhost/api/gate/pending/${wrong#demo/}")
is "$r" 409 "the admin endpoint answers 409 to a mismatched digest (session answer)"
r=$(in_ct loop gate deny "${id%-*}" 2>&1)
ok "$([ $? -ne 0 ] && echo 0 || echo 1)" "an id without its digest is refused too (deny)" || diag "$r"
is "$(n_pending demo)" 1 "...and the request still waits for the right id"
check "loop gate approve $id" in_ct loop gate approve "$id"
wait $a1
is "$(jfield decision <"$out/r1")" allow "the waiting caller gets allow"
is "$(jfield actor <"$out/r1")" root "with the human who answered as actor"
is "$(jfield reason <"$out/r1")" once "and reason once"

# --- bad tokens -------------------------------------------------------------------------------------
r=$(ask demo "$(token_new)" "$(body execve 'ls' '')")
is "$(jfield decision <<<"$r")/$(jfield reason <<<"$r")" deny/unauthorized "an unknown token is denied as unauthorized"
r=$(in_ct curl -s --max-time 10 --unix-socket /run/loop/demo/gate.sock -d "$(body execve ls '')" http://localhost/api/gate/container-approval)
is "$(jfield decision <<<"$r")" deny "no Authorization header is a deny"
r=$(ask demo "$T1" '{"kind":"execve","target":')
is "$(jfield decision <<<"$r")/$(jfield reason <<<"$r")" deny/bad-request "a malformed body is a deny"
r=$(in_ct curl -s -o /dev/null -w '%{http_code}' --max-time 10 --unix-socket /run/loop/demo/gate.sock -X 'BAD METHOD' http://localhost/)
is "$r" 400 "a request that is not valid HTTP is answered 400"

# --- timeout --------------------------------------------------------------------------------------------
t0=$(date +%s)
r=$(ask quick "$TQ" "$(body file '/w/.loop/config.json' 'file:write:/w/.loop/config.json')")
t1=$(date +%s)
is "$(jfield decision <<<"$r")/$(jfield actor <<<"$r")/$(jfield reason <<<"$r")" deny/timeout/timeout \
        "an unanswered request is denied at the approval timeout, recorded as a timeout"
ok $(( t1 - t0 <= 10 ? 0 : 1 )) "the timeout is the configured 2 s, not more ($((t1 - t0)) s)"

# --- the session cache --------------------------------------------------------------------------------
ask demo "$T1" "$(body connect /run/x.sock connect:/run/x.sock)" >"$out/r2" &
a2=$!
wait_for 30 pending_is demo 1
check "loop gate approve --session" in_ct loop gate approve "$(first_id demo)" --session
wait $a2
is "$(jfield reason <"$out/r2")" session "the session answer allows"
r=$(ask demo "$T1" "$(body connect /run/x.sock connect:/run/x.sock)")
is "$(jfield decision <<<"$r")/$(jfield actor <<<"$r")" allow/cache "the same key is answered by the session cache"
r=$(in_ct timeout 3 curl -s --unix-socket /run/loop/demo/gate.sock -H "Authorization: Bearer $T2" \
        -d "$(body connect /run/x.sock connect:/run/x.sock)" http://localhost/api/gate/container-approval)
is "$r" "" "the cache is per container: another container's request waits (cut off here: caller-gone)"

# --- rate limit: pending 2 per container ----------------------------------------------------------------
wait_for 10 none_pending demo
ask demo "$T1" "$(body execve 'make a' 'execve:make:a')" >"$out/p1" &
p1=$!
ask demo "$T1" "$(body execve 'make b' 'execve:make:b')" >"$out/p2" &
p2=$!
wait_for 30 pending_is demo 2
r=$(ask demo "$T1" "$(body execve 'make c' 'execve:make:c')")
is "$(jfield decision <<<"$r")/$(jfield reason <<<"$r")" deny/rate-limit-pending "a third concurrent request is denied by the pending limit"
for id in $(in_ct loop gate list demo --json | sed -n 's/.*"id": *"\([^"]*\)".*/\1/p'); do
        in_ct loop gate deny "$id" >/dev/null
done
wait $p1 $p2
is "$(jfield decision <"$out/p1")/$(jfield actor <"$out/p1")/$(jfield reason <"$out/p1")" deny/root/deny "loop gate deny denies, with the human as actor"

# --- removing the container's token denies its pending requests -------------------------------------
ask demo "$T2" "$(body execve 'rm -rf x' 'execve:rm:-rf x')" >"$out/r3" &
a3=$!
wait_for 30 pending_is demo 1
check "the container's token file is removed" in_ct rm /run/loop/demo/gate-tokens/loop-demo-bbbbbb
wait $a3
is "$(jfield decision <"$out/r3")/$(jfield reason <"$out/r3")" deny/container-removed "its pending request is denied: container-removed"

# --- killing the service mid-request ---------------------------------------------------------------------
ask demo "$T1" "$(body execve 'curl evil' 'execve:curl:evil')" >"$out/r4" &
a4=$!
wait_for 30 pending_is demo 1
check "SIGKILL loop-gate@demo.service" in_ct systemctl kill -s KILL loop-gate@demo.service
wait $a4
st=$?
unlike "$(cat "$out/r4")" '"allow"' "the caller whose service died gets no allow (a broken connection: deny)"
ok $(( st != 0 ? 0 : 1 )) "curl reports the broken connection (exit $st), nothing hangs"
ask demo "$T1" "$(body execve 'curl again' 'execve:curl:again')" >"$out/r5" &
a5=$!
wait_for 30 pending_is demo 1
ok $? "the next request starts the service again through the socket"
check "and is answered" in_ct loop gate deny "$(first_id demo)"
wait $a5
is "$(jfield decision <"$out/r5")" deny "the restarted service answers"

# --- stopping the service tells waiting callers ------------------------------------------------------
ask demo "$T1" "$(body execve 'sleep 1' 'execve:sleep:1')" >"$out/r6" &
a6=$!
wait_for 30 pending_is demo 1
check "systemctl stop loop-gate@demo.service" in_ct systemctl stop loop-gate@demo.service
wait $a6
is "$(jfield decision <"$out/r6")/$(jfield reason <"$out/r6")" deny/service-stopping "a stopped service denies what waits: service-stopping"

# --- access to the admin socket ------------------------------------------------------------------------
r=$(in_ct setpriv --reuid=nobody --regid=nogroup --clear-groups loop gate list demo 2>&1)
like "$r" "root or members of group loop" "a user outside group loop cannot use loop gate"

# --- decisions the supervisor made locally: POST /api/gate/audit ---------------------------------------
TF=$(token_new)
TL=$(token_new)
token_add demo loop-demo-ffffff "$TF"
token_add loud loop-loud-dddddd "$TL"

is "$(report demo "$T1" "$(record deny /etc/shadow 4242 evil)")" 200 "a local deny is taken with 200"
e=$(local_entries 4242)
is "$(grep -c '^LOOP_SOURCE=local$' <<<"$e")" 1 "it is one journal entry, LOOP_SOURCE=local"
for f in LOOP_DECISION=deny LOOP_ACTOR=policy LOOP_CONTAINER=loop-demo-aaaaaa LOOP_CHANNEL=demo LOOP_PID=4242 \
         LOOP_KIND=file LOOP_TARGET=/etc/shadow LOOP_RULE=default LOOP_SYSCALL=openat LOOP_OP=read LOOP_ERRNO=13 \
         LOOP_LATENCY_NS=4200 'LOOP_RULE_MESSAGE=host secrets' LOOP_EVENT=gate-decision PRIORITY=4 \
         MESSAGE_ID=1c67da5fa187464598968c5d0c4d6ccd; do
        has_field "$e" "$f"
        ok $? "the local deny's entry has $f"
done
has_field "$e" LOOP_CHANNEL=evil
ok $(( $? != 0 ? 0 : 1 )) "the channel comes from the service instance, not the body (which said evil)"
has_field "$e" LOOP_CLAIMED_CHANNEL=evil
ok $? "... the body's claim is only noted, as LOOP_CLAIMED_CHANNEL"
like "$(grep '^MESSAGE=' <<<"$e")" "^MESSAGE=Gate deny \(local\): file read /etc/shadow \(container loop-demo-aaaaaa, rule default" \
        "its MESSAGE says what was denied and where"

n_decisions() { in_ct journalctl --sync; in_ct journalctl -u 'loop-gate@*' LOOP_EVENT=gate-decision -o cat | grep -c .; }
before=$(n_decisions)
is "$(report demo "$(token_new)" "$(record deny /etc/shadow 4343)")" 401 "a report with an unknown token is 401"
r=$(in_ct curl -s -o /dev/null -w '%{http_code}' --max-time 10 --unix-socket /run/loop/demo/gate.sock \
        -d "$(record deny /etc/shadow 4343)" http://localhost/api/gate/audit)
is "$r" 401 "a report without Authorization is 401"
is "$(local_entries 4343)" "" "neither is journaled"
is "$(n_decisions)" "$before" "... not even as an unauthorized decision"

is "$(report demo "$T1" '{"pid":4444,"kind":"file","target":')" 400 "a report that is not JSON is 400"
is "$(report demo "$T1" "$(record deny /etc/shadow 4444 | sed 's/"kind":"file"/"kind":"docker"/')")" 400 \
        "a report of an unknown kind is 400"
is "$(report demo "$T1" "$(record deny /etc/shadow 4444 | sed 's/"pid":4444/"pid":"4444"/')")" 400 \
        "a report with a pid that is a string is 400"
is "$(report demo "$T1" "$(record deny /etc/shadow 4444 | sed 's/"event":"local"/"event":"approval"/')")" 400 \
        "a report of an approval (journaled already) is 400"
is "$(local_entries 4444)" "" "no bad report is journaled"
is "$(prop loop-gate@demo.service ActiveState)" active "the service keeps running after bad reports"

is "$(report demo "$T1" "$(record allow /etc/hostname 4545)")" 200 "a local allow is taken with 200"
is "$(local_entries 4545)" "" "... and dropped: gates.audit.verbose is off for demo, whatever the container says"
is "$(report loud "$TL" "$(record allow /etc/hostname 4545 loud)")" 200 "a local allow on a channel with gates.audit.verbose"
e=$(journal_wait -u 'loop-gate@*' LOOP_SOURCE=local LOOP_PID=4545 -o export)
has_field "$e" LOOP_DECISION=allow && has_field "$e" PRIORITY=6 && has_field "$e" LOOP_CONTAINER=loop-loud-dddddd
ok $? "... is journaled, at info priority"

is "$(report demo "$T1" "$(record deny '/tmp/x\u001b[2J\nApproved: rm -rf \u202e/txt.sh' 4646)")" 200 \
        "a deny of a target with control and bidi characters is taken"
m=$(journal_wait -u 'loop-gate@*' LOOP_SOURCE=local LOOP_PID=4646 -o cat)
is "$(grep -c . <<<"$m")" 1 "its MESSAGE is one line: the newline in the target is escaped"
like "$m" '/tmp/x\\x1b\[2J\\nApproved: rm -rf \\u202e/txt\.sh' "the escape, newline and bidi override are shown escaped"
is "$(tr -d '\n' <<<"$m" | LC_ALL=C grep -c $'[\x1b]\|\xe2\x80\xae')" 0 "no raw control or bidi character reaches MESSAGE"

# A flood: 1000 reports on one connection while a human answers an approval of the same channel.
report demo "$TF" "$(record deny /etc/shadow 5000)" 1000 >"$out/flood" &
fl=$!
ask demo "$T1" "$(body execve 'make flood' 'execve:make:flood')" >"$out/r7" &
a7=$!
wait_for 30 pending_is demo 1
ok $? "an approval request becomes pending while a container floods reports"
check "and is answered" in_ct loop gate approve "$(first_id demo)"
wait $a7
is "$(jfield decision <"$out/r7")/$(jfield actor <"$out/r7")" allow/root "the approval is not held up by the flood"
wait $fl
is "$(grep -c '^200$' "$out/flood")" 1000 "all 1000 reports of the flood are answered 200"
dropped_sum() {
        in_ct journalctl --sync
        in_ct journalctl -u 'loop-gate@*' LOOP_EVENT=gate-audit-dropped LOOP_CONTAINER=loop-demo-ffffff -o export |
                sed -n 's/^LOOP_DROPPED=//p' | awk '{ s += $1 } END { print s + 0 }'
}
flood_done() { [ $(( $(local_entries 5000 | grep -c '^LOOP_SOURCE=local$') + $(dropped_sum) )) -ge 1000 ]; }
wait_for 10 flood_done
n=$(local_entries 5000 | grep -c '^LOOP_SOURCE=local$')
d=$(dropped_sum)
# one summary for each window (a second) that held reports back; the last window may have held none
w=$(in_ct journalctl -u 'loop-gate@*' LOOP_EVENT=gate-audit-dropped LOOP_CONTAINER=loop-demo-ffffff -o cat | grep -c .)
diag "flood: $n of 1000 reports journaled, $d held back in $w summaries"
ok $(( n >= 200 && n <= 200 * (w + 1) && d > 0 ? 0 : 1 )) \
        "the flood is capped: $n of 1000 journaled, at most 200 in each second ($w summarised)"
is "$((n + d))" 1000 "gate-audit-dropped summaries count the rest ($d)"
s=$(in_ct journalctl -u 'loop-gate@*' LOOP_EVENT=gate-audit-dropped LOOP_CONTAINER=loop-demo-ffffff -o export)
has_field "$s" LOOP_CHANNEL=demo && has_field "$s" LOOP_LIMIT=200 && has_field "$s" MESSAGE_ID=310a10fada534a7d93b9fbe9549b2cf2
ok $? "a summary names the channel, the container and the limit"

# --- the journal ----------------------------------------------------------------------------------------
in_ct journalctl --sync
denies=$(journal_wait -u 'loop-gate@*' LOOP_DECISION=deny -o export)
for reason in unauthorized bad-request timeout rate-limit-pending container-removed service-stopping deny; do
        like "$denies" "LOOP_REASON=$reason" "journalctl -u 'loop-gate@*' LOOP_DECISION=deny shows reason $reason"
done
like "$denies" "LOOP_ACTOR=timeout" "a timeout is recorded with actor timeout"
allow=$(journal_wait -u 'loop-gate@*' LOOP_DECISION=allow LOOP_ACTOR=root -o export)
for f in LOOP_CHANNEL=demo LOOP_CONTAINER=loop-demo-aaaaaa LOOP_PID=7 LOOP_KIND=execve \
         'LOOP_TARGET=git push origin main' 'LOOP_RULE=cmd\[0\]' LOOP_LATENCY_NS=[0-9]+ MESSAGE_ID=1c67da5fa187464598968c5d0c4d6ccd; do
        like "$allow" "$f" "an approval's journal entry has $f"
done
like "$(in_ct journalctl -u 'loop-gate@*' LOOP_EVENT=gate-pending -o export)" "LOOP_GATE_ID=demo/[0-9]+" \
        "pending requests are journaled with their id"
exported=$(in_ct journalctl -u 'loop-gate@*' -o export)
unlike "$exported" "$T1" "no token reaches the journal"
unlike "$exported" "$TF" "no token of an audit report reaches the journal"

# --- hardening -----------------------------------------------------------------------------------------
sec=$(in_ct systemd-analyze security --no-pager loop-gate@demo.service 2>&1)
exposure=$(sed -n 's/.*Overall exposure level for loop-gate@demo.service: *\([0-9.]*\).*/\1/p' <<<"$sec")
diag "systemd-analyze security loop-gate@demo.service: exposure $exposure"
awk -v e="${exposure:-99}" 'BEGIN { exit !(e <= 2.0) }'
ok $? "the exposure of loop-gate@.service is at most 2.0 ($exposure)" || diag "$sec"

nspawn_stop "$M"
tap_done
