#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# `systemd-analyze verify` over every unit we ship, as installed, and over what loop-generator makes of
# a channel, on a real systemd (test/lib/nspawn.sh): the installed ExecStart= binaries and every unit
# they refer to exist there. Any output at all fails: verify prints only problems.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

systemd_test_prepare

M=loop-verify-$$
UNITDIR=/usr/local/lib/systemd/system
GENDIR=/run/systemd/generator

cfg=$(mktemp -d "${TMPDIR:-/tmp}/loop-verify-etc.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$cfg'"
mkdir -p "$cfg/channels.d"
echo '{"work_dir": "/srv/x", "limits": {"memory_max_mb": 512, "cpu_quota_percent": 50, "tasks_max": 100}}' \
        >"$cfg/channels.d/verify-me.json"

in_ct() { nspawn_exec "$M" "$@"; }

# verify checks that every Documentation=man:... page exists by running man(1), which needs man-db's
# configuration: the volatile /etc has none, so the host's is bound in.
if [ ! -e /etc/manpath.config ] || ! command -v man >/dev/null; then
        bail_out "man-db is not installed: verify cannot check Documentation=man:... (.ci/packages has it)"
fi
nspawn_boot "$M" --stage "$LOOP_STAGE" --config "$cfg" --bind-ro=/etc/manpath.config ||
        bail_out "could not boot systemd in a container"

verify() {
        local out status
        out=$(in_ct systemd-analyze verify "$@" 2>&1) && status=0 || status=$?
        [ $status -eq 0 ] && [ -z "$out" ] && return 0
        diag "systemd-analyze verify $* -> exit status $status"
        [ -z "$out" ] || diag "$out"
        return 1
}

units=$(cd "$LOOP_STAGE$UNITDIR" && ls)
[ -n "$units" ]
ok $? "units are installed into $UNITDIR" || diag "$(ls -R "$LOOP_STAGE/usr/local")"
for u in $units; do
        verify "$UNITDIR/$u"
        ok $? "$u passes systemd-analyze verify"
done

# What the generator made of verify-me at boot. verify loads a unit name through the same search path
# as PID 1, /run/systemd/generator included, so the runner instance comes with its generated drop-in.
slice='loop-verify\x2dme.slice'
is "$(in_ct systemctl show -P DropInPaths loop-agent@verify-me.service)" \
        "$GENDIR/loop-agent@verify-me.service.d/50-channel.conf" "the generated drop-in is in place"
verify "$GENDIR/$slice"
ok $? "the generated $slice passes systemd-analyze verify"
verify loop-agent@verify-me.service
ok $? "loop-agent@verify-me.service with its generated drop-in passes systemd-analyze verify"
verify loop-agent@verify-me.path
ok $? "loop-agent@verify-me.path passes systemd-analyze verify"
verify "$GENDIR/loop-channel@verify-me.target"
ok $? "the generated loop-channel@verify-me.target (in place of the template) passes systemd-analyze verify"

exposure=$(in_ct systemd-analyze security --no-pager loop-agent@verify-me.service 2>&1 | tail -n 1)
diag "systemd-analyze security: ${exposure#→ }"

nspawn_stop "$M"
ok $? "the container powers off cleanly"

tap_done
