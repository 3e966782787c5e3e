#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The security gate end to end: a real systemd (PID 1 in nspawn) with rootful Podman inside, the channel's
# loop-gate@ sockets enabled by the generator, and the agent in a real container under `loop syscallwrap`
# (the entrypoint execs it because the gate is on by default). The agent (the fake agent's "scenario:sh")
# runs commands the policy allows, denies and sends to a human; the test answers with `loop gate approve` and
# `loop gate deny`, kills the gate service in the middle of a request, and checks each outcome inside the
# container and each decision in the journal. Commands are named by path: busybox sh runs applets such as
# rm and uname in-process when they are named bare, and command rules only see execs (file rules guard
# files whatever runs; see the README's residual risks).
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

systemd_test_prepare

M=loop-gatect-$$
IMAGE=localhost/loop-test:latest
systemd_test_config loop-gatect

# uname needs a human; reading the work dir's secret.txt too. Everything else: the default document.
cat >"$cfg/loop.json" <<EOF
{ "container_image": "$IMAGE", "browser": { "enabled": false }, "container_keep_alive_sec": 0 }
EOF
cat >"$cfg/channels.d/demo.json" <<'EOF'
{
  "gates": {
    "approval_timeout_sec": 120,
    "agentgate": {
      "command_rules": [ { "commands": [ "uname" ], "decision": "approve", "message": "uname needs a human" } ],
      "file_rules": [ { "paths": [ "/var/lib/loop/demo/work/secret*" ], "operations": [ "read" ],
                        "decision": "approve", "message": "the secret needs a human" } ]
    }
  }
}
EOF
chmod 0644 "$cfg/loop.json" "$cfg/channels.d/demo.json"

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
# agent CMD: `loop run -q demo "scenario:sh CMD"` in the machine; its output in $out, status in $st.
agent() {
        out=$(in_ct loop run -q demo "scenario:sh $1" 2>&1) && st=0 || st=$?
}
# agent_bg CMD FILE: the same in the background, output into FILE inside the machine.
agent_bg() {
        in_ct sh -c "loop run -q demo 'scenario:sh $1' >$2 2>&1; echo status=\$? >>$2" &
}
pending() { [ -n "$(first_id)" ]; }
first_id() { in_ct loop gate list demo --json 2>/dev/null | sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' | head -1; }
done_in() { in_ct grep -q '^status=' "$1"; }
gate_journal() { in_ct journalctl -o export -u 'loop-gate@*' "$@"; }

nspawn_boot "$M" --podman --stage "$LOOP_STAGE" --config "$cfg" "$(journald_small_limit)" ||
        bail_out "could not boot systemd with podman"
ok 0 "systemd boots with podman inside"
like "$(in_ct systemd-analyze cat-config systemd/journald.conf)" "RateLimitBurst=$JOURNALD_TEST_BURST" \
        "journald's own rate limit is small in this machine (burst $JOURNALD_TEST_BURST per $JOURNALD_TEST_INTERVAL), as on a full disk"
import_test_image "$(nspawn_root "$M")/run/podman/podman.sock" "$IMAGE" "$cfg/rootfs" >/dev/null
ok $? "the test image is imported into the container's podman"
check "systemd-sysusers creates the loop user" in_ct systemd-sysusers
check "systemctl start loop.target" in_ct systemctl start loop.target
is "$(prop loop-gate@demo.socket ActiveState)" active "the generator enabled the channel's gate socket"
in_ct test -S /run/loop/demo/gate.sock
ok $? "...listening on /run/loop/demo/gate.sock"

# --- allowed, and the gate is really there ---------------------------------------------------------
agent 'id -u; echo made >/var/lib/loop/demo/work/made.txt && cat /var/lib/loop/demo/work/made.txt; grep Seccomp: /proc/self/status'
is "$st" 0 "an allowed run succeeds under the gate" ||
        diag "$out$(in_ct ls -ldn /var/lib/loop /var/lib/loop/demo /var/lib/loop/demo/work /var/lib/loop/demo/work/.loop; in_ct id loop)"
like "$out" "made" "writing and reading in the work dir is allowed"
like "$out" "Seccomp:[[:space:]]+2" "the agent runs under a seccomp filter"
is "$(in_ct stat -c %U /var/lib/loop/demo/work/made.txt)" loop "a file the agent creates belongs to the agent's user"

# --- denied by the default rules -----------------------------------------------------------------
agent 'cat /etc/shadow; echo rc=$?'
like "$out" "rc=1" "reading /etc/shadow fails"
like "$out" "[Oo]peration not permitted" "...with EPERM from the gate"
agent 'echo evil >>$HOME/.bashrc; echo rc=$?'
like "$out" "rc=[1-9]" "appending to ~/.bashrc fails"
in_ct test ! -e /var/lib/loop/demo/home/.bashrc
ok $? "...and ~/.bashrc is not created"
in_ct mkdir -p /var/lib/loop/demo/work/victim
agent '/bin/rm -rf /var/lib/loop/demo/work/victim/../../../../x-loop-gate-test; echo rc=$?'
like "$out" "rc=[1-9]" "rm -rf of a path that leaves the work dir is denied"
agent 'env rm -rf /x-loop-gate-test; echo rc=$?'
like "$out" "rc=[1-9]" "env rm -rf /x is denied (the wrapper is unwrapped)"
agent 'rm -rf /var/lib/loop/demo/work/victim; echo rc=$?'
like "$out" "rc=0" "rm -rf inside the work dir is allowed"
in_ct test ! -e /var/lib/loop/demo/work/victim
ok $? "...and removes the directory"
in_ct mkdir -p /var/lib/loop/demo/work/victim2
agent 'cd /var/lib/loop/demo/work && /bin/rm -rf victim2; echo rc=$?'
like "$out" "rc=0" "rm -rf of a relative path inside the work dir is allowed (the cwd is read for that rule)"
in_ct test ! -e /var/lib/loop/demo/work/victim2
ok $? "...and removes the directory"
shadow_journaled() { gate_journal LOOP_DECISION=deny | grep -q '^LOOP_TARGET=/etc/shadow$'; }
wait_for 10 shadow_journaled
ok $? "the local deny of /etc/shadow is journaled by loop-gate@demo"
like "$(gate_journal LOOP_DECISION=deny LOOP_TARGET=/etc/shadow)" "LOOP_RULE=file\\[" "...naming the rule that denied it"

# --- what an agent would try on the gate, from inside the container (gate-probe) --------------------
in_ct mkdir -p /var/lib/loop/demo/work/race
in_ct sh -c 'echo allowed >/var/lib/loop/demo/work/race/allowed.txt; chown -R loop: /var/lib/loop/demo/work/race'
probe() { agent "/usr/local/bin/gate-probe $*"; }
probe connect /var/run/docker.sock.host
like "$out" "EPERM" "connecting to the engine's socket path is denied by the gate (EPERM, not ENOENT)"
probe memfd-exec
like "$out" "EPERM" "executing a memfd is denied"
probe io-uring
like "$out" "EPERM" "io_uring_setup is denied"
probe listener
like "$out" "EBUSY" "the agent cannot install a notifying filter of its own"
probe race-path /var/lib/loop/demo/work/race/allowed.txt /etc/shadow 3000
like "$out" "opened-b=0 " "a sibling thread swapping the path during checks never opens /etc/shadow" || diag "$out"
probe race-symlink /var/lib/loop/demo/work/race/link /var/lib/loop/demo/work/race/allowed.txt /etc/shadow 3000
like "$out" "opened-b=0 " "a symlink swapped after the check never opens /etc/shadow" || diag "$out"
agent 'kill -KILL 1; echo rc=$?; grep -c . /proc/1/environ; echo env=$?'
like "$out" "rc=[1-9]" "the agent cannot kill the supervisor (PID 1 of the container)"
like "$out" "env=[1-9]" "...nor read its environment (where the token came in)"

# --- the audit cannot be blinded: a flood of requests without a valid token, then a real deny -----------
shadow_denies() { gate_journal LOOP_DECISION=deny LOOP_TARGET=/etc/shadow | grep -c '^LOOP_TARGET=/etc/shadow$'; }
before=$(shadow_denies)
probe flood-gate /run/loop/gate.sock 25000
like "$out" "answered=2[0-9][0-9][0-9][0-9]" "the agent floods gate.sock with 25000 requests carrying a made-up token" || diag "$out"
agent 'cat /etc/shadow; echo rc=$?'
like "$out" "rc=1" "right after it, a real deny"
more_denies() { [ "$(shadow_denies)" -gt "$before" ]; }
wait_for 20 more_denies
ok $? "...is in the journal: the flood did not make journald drop it" ||
        diag "$(in_ct journalctl -u 'loop-gate@demo' --since -2min | grep -i -E 'suppress|dropped' | tail -3)"
n=$(gate_journal LOOP_REASON=unauthorized | grep -c '^LOOP_REASON=unauthorized$')
[ "$n" -lt 100 ]
ok $? "the flood is journaled as a few records ($n), not one per request"
dropped_journaled() { gate_journal MESSAGE_ID=310a10fada534a7d93b9fbe9549b2cf2 | grep -q '^LOOP_PEER=pid [0-9]* uid'; }
wait_for 20 dropped_journaled
ok $? "...and the rest as counts per burst (gate-audit-dropped with LOOP_DROPPED and LOOP_PEER)"

# --- approvals: a human allows ---------------------------------------------------------------------
agent_bg '/bin/uname -s' /tmp/approve.out
wait_for 60 pending
ok $? "running uname waits for a human (loop gate list shows the request)"
id=$(first_id)
like "$(in_ct loop gate list demo)" "execve.*uname" "...as an execve of uname"
check "loop gate approve $id" in_ct loop gate approve "$id"
wait_for 60 done_in /tmp/approve.out
res=$(in_ct cat /tmp/approve.out)
like "$res" "Linux" "the approved command runs" || diag "$res"
like "$res" "status=0" "...and the run succeeds"
# (waited for: journald may store the record a moment after the agent went on)
like "$(journal_wait -o export -u 'loop-gate@*' LOOP_EVENT=gate-decision LOOP_DECISION=allow LOOP_ACTOR=root)" "LOOP_ACTOR=root" \
        "the approval is journaled with the human who gave it"

# --- approvals: a human denies -----------------------------------------------------------------------
in_ct sh -c 'echo top-secret >/var/lib/loop/demo/work/secret.txt && chown loop: /var/lib/loop/demo/work/secret.txt'
agent_bg 'cat /var/lib/loop/demo/work/secret.txt; echo rc=$?' /tmp/deny.out
wait_for 60 pending
ok $? "reading the secret waits for a human"
like "$(in_ct loop gate list demo)" "file.*secret.txt" "...as a file read of secret.txt"
check "loop gate deny" in_ct loop gate deny "$(first_id)"
wait_for 60 done_in /tmp/deny.out
res=$(in_ct cat /tmp/deny.out)
like "$res" "rc=1" "the denied read fails" || diag "$res"
unlike "$res" "top-secret" "...and the agent never sees the secret"
like "$(journal_wait -o export -u 'loop-gate@*' LOOP_EVENT=gate-decision LOOP_DECISION=deny LOOP_TARGET=/var/lib/loop/demo/work/secret.txt)" \
        "LOOP_TARGET=/var/lib/loop/demo/work/secret.txt" \
        "the human deny is journaled with its target"

# --- the gate service killed in the middle of a request ---------------------------------------------
agent_bg '/bin/uname -s; echo rc=$?' /tmp/killed.out
wait_for 60 pending
ok $? "a request is pending"
check "SIGKILL loop-gate@demo.service" in_ct systemctl kill -s KILL loop-gate@demo.service
wait_for 60 done_in /tmp/killed.out
ok $? "the waiting agent is answered, nothing hangs"
res=$(in_ct cat /tmp/killed.out)
like "$res" "rc=[1-9]" "...with a deny" || diag "$res"
unlike "$res" "Linux" "...so uname did not run"
in_ct systemctl reset-failed loop-gate@demo.service >/dev/null 2>&1
agent_bg '/bin/uname -s' /tmp/again.out
wait_for 60 pending
ok $? "the next request starts the gate service again (socket activation)"
check "loop gate approve" in_ct loop gate approve "$(first_id)"
wait_for 60 done_in /tmp/again.out
like "$(in_ct cat /tmp/again.out)" "Linux" "...and is approved normally"

# --- no token, no secret in the journal -----------------------------------------------------------
n=$(in_ct journalctl -o export | grep -c -a -E '^LOOP_GATE_TOKEN=|Bearer [0-9a-f]{64}')
is "$n" 0 "no gate token reaches the journal"
is "$(in_ct sh -c 'ls /run/loop/demo/gate-tokens | wc -l')" 0 "every container's token is removed after its run"

nspawn_stop "$M"
ok $? "the container powers off cleanly"
tap_done
