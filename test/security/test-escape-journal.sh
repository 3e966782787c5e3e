#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The escape suite's journal side, on a real systemd (PID 1 in nspawn) with rootful Podman inside: the
# agent's attempts fail and leave the entries the design promises. The gate journals what its policy
# denies (LOOP_SOURCE=local, through loop-gate@NAME); the tripwire journals a tamper record (priority
# crit, MESSAGE_ID in the catalog) when .git is renamed to plant a hook. Seccomp and Landlock refusals go
# to the kernel's audit stream, which belongs to the host and never reaches a journald in a container:
# test-escape.sh checks those records on the host; read-only mounts leave no record (see the README).
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

systemd_test_prepare

M=loop-escj-$$
IMAGE=localhost/loop-test:latest
W=/var/lib/loop/demo/work
TAMPER_ID=dd6b4d5c384b4f3ea77851055307439a
systemd_test_config loop-escj
cat >"$cfg/loop.json" <<EOF
{ "container_image": "$IMAGE", "browser": { "enabled": false }, "container_keep_alive_sec": 0 }
EOF
# No Docker API proxy at /var/run/docker.sock: the probe asserts that no engine socket answers there at
# all (the proxy's own refusals are test-dockerproxy-service's and test-dockerproxy-cli's).
echo '{ "gates": { "docker_proxy": { "enabled": false } } }' >"$cfg/channels.d/demo.json"
chmod 0644 "$cfg/loop.json" "$cfg/channels.d/demo.json"

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
agent() {
        out=$(in_ct loop run -q demo "scenario:sh $1" 2>&1) && st=0 || st=$?
}
gate_denied() { in_ct journalctl -o export -u 'loop-gate@*' LOOP_DECISION=deny | grep -q "^LOOP_TARGET=$1\$"; }
tamper_journaled() { in_ct journalctl -o export LOOP_EVENT=tamper | grep -q '^LOOP_PATH=\.git$'; }

nspawn_boot "$M" --podman --stage "$LOOP_STAGE" --config "$cfg" || bail_out "could not boot systemd with podman"
ok 0 "systemd boots with podman inside"
import_test_image "$(nspawn_root "$M")/run/podman/podman.sock" "$IMAGE" "$cfg/rootfs" >/dev/null
ok $? "the test image is imported into the container's podman"
check "systemd-sysusers creates the loop user" in_ct systemd-sysusers
check "systemctl start loop.target" in_ct systemctl start loop.target
check "journalctl --update-catalog" in_ct journalctl --update-catalog

agent '/usr/local/bin/escape-probe all 2>&1; true'
is "$st" 0 "the probe runs in the agent's container under the gate" || diag "$out"
is "$(grep ' ESCAPED ' <<<"$out")" "" "no attempt escapes"
like "$out" "kcore blocked EPERM" "reading /proc/kcore is denied by the gate (EPERM)"
wait_for 20 gate_denied /proc/kcore
ok $? "...and journaled by loop-gate@demo as a local deny of /proc/kcore"
like "$(in_ct journalctl -o export -u 'loop-gate@*' LOOP_DECISION=deny LOOP_TARGET=/proc/kcore)" "LOOP_SOURCE=local" \
        "...with LOOP_SOURCE=local"

# The tripwire: .git renamed, a hook planted.
in_ct sh -c "mkdir -p $W/.git/hooks && printf '#!/bin/sh\n' >$W/.git/hooks/pre-commit && echo '[core]' >$W/.git/config && chown -R loop: $W/.git"
agent "mv $W/.git $W/.git-moved && mkdir -p $W/.git/hooks && echo evil >$W/.git/hooks/pre-commit && sleep 60; echo survived"
[ "$st" != 0 ]
ok $? "renaming .git to plant a hook fails the run"
unlike "$out" "survived" "...the container is killed"
is "$(in_ct cat $W/.git/hooks/pre-commit)" '#!/bin/sh' "...and the hook is restored"
wait_for 10 tamper_journaled
ok $? "a tamper record reaches the journal with LOOP_PATH=.git"
rec=$(in_ct journalctl -o export LOOP_EVENT=tamper)
like "$rec" "MESSAGE_ID=$TAMPER_ID" "...with the catalog's message id"
like "$rec" "PRIORITY=2" "...at priority crit"
like "$rec" "LOOP_CHANNEL=demo" "...naming the channel"
like "$rec" "LOOP_CONTAINER=[0-9a-f]{12}" "...and the container"
like "$(in_ct journalctl -x --no-pager LOOP_EVENT=tamper)" "The tripwire saw" "journalctl -x explains it from the catalog"

nspawn_stop "$M"
ok $? "the container powers off cleanly"
tap_done
