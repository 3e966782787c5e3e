#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The installed tree on a real systemd: boot systemd 252 as PID 1 (test/lib/nspawn.sh) with the staged
# install at /usr/local, drop channel files into /etc/loop/channels.d, `systemctl daemon-reload`, and
# check what PID 1 made of loop-generator's output: slices, drop-ins, enablement, `start loop.target`,
# the report of invalid channels, sysusers.d and tmpfiles.d.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"

systemd_test_prepare

M=loop-gen-$$
UNITDIR=/usr/local/lib/systemd/system
GENDIR=/run/systemd/generator
# Invalid channels get names unique to this run: their reports are looked up in the host's kernel log.
RUN=$$-$RANDOM
GOOD=(alpha my-proj cpu noegress)
BROKEN=broken-$RUN
WRONGTYPE=wrongtype-$RUN
BADNAME=bad:name-$RUN

cfg=$(mktemp -d "${TMPDIR:-/tmp}/loop-gen-etc.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$cfg'"
mkdir -p "$cfg/channels.d"

in_ct() { nspawn_exec "$M" "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
slice_of() { echo "loop-$(systemd-escape -- "$1").slice"; }

nspawn_boot "$M" --kmsg --stage "$LOOP_STAGE" --config "$cfg" || bail_out "could not boot systemd in a container"
ok 0 "systemd boots as PID 1 with the staged tree at /usr/local ($(cat "$NSPAWN_STATE_DIR/$M/boot.ms") ms)"

# --- sysusers.d and tmpfiles.d, applied at boot from /usr/local/lib -------------------------------
check "systemd-sysusers runs cleanly" in_ct systemd-sysusers
is "$(in_ct getent passwd loop | cut -d: -f6,7)" "/var/lib/loop:/usr/sbin/nologin" \
        "sysusers.d creates the system user loop, home /var/lib/loop, no login shell"
uid=$(in_ct id -u loop)
like "$uid" '^[0-9]+$' "user loop exists" && [ "$uid" -lt 1000 ]
ok $? "user loop is a system user (uid $uid)"
is "$(in_ct id -gn loop)" loop "user loop's primary group is loop"
is "$(in_ct stat -c '%a %U %G' /var/lib/loop)" "750 root loop" "tmpfiles.d creates /var/lib/loop 0750 root:loop"
is "$(in_ct stat -c '%a %U %G' /run/loop)" "755 root root" "tmpfiles.d creates /run/loop 0755 root:root"

# --- the static units -----------------------------------------------------------------------------
for u in loop.target loop.slice loop-agent@x.service loop-agent@x.path; do
        is "$(prop "$u" LoadState)" loaded "$u is loaded"
done
is "$(prop loop.target FragmentPath)" "$UNITDIR/loop.target" "loop.target comes from $UNITDIR"
is "$(prop loop-agent@x.service FragmentPath)" "$UNITDIR/loop-agent@.service" \
        "loop-agent@x.service comes from the template in $UNITDIR"
is "$(prop loop-agent@x.service ExecStart | grep -o 'path=[^ ;]*')" "path=/usr/local/bin/loop" \
        "loop-agent@.service runs the installed loop binary"
is "$(prop loop-agent@x.service Slice)" loop-x.slice "the template puts the runner into its channel's slice (Slice=loop-%i.slice)"
is "$(in_ct systemctl show -P Wants loop.target)" "" "without channels loop.target wants nothing"

# --- channels appear on daemon-reload -------------------------------------------------------------
echo '{}' >"$cfg/channels.d/alpha.json"
echo '{"work_dir": "/srv/x", "limits": {"memory_max_mb": 512, "tasks_max": 100}}' >"$cfg/channels.d/my-proj.json"
echo '{"limits": {"cpu_quota_percent": 150}}' >"$cfg/channels.d/cpu.json"
echo '{"egress": {"enabled": false}}' >"$cfg/channels.d/noegress.json"
echo '{"work_dir": ' >"$cfg/channels.d/$BROKEN.json"
echo '{"container_memory_mb": "lots"}' >"$cfg/channels.d/$WRONGTYPE.json"
echo '{}' >"$cfg/channels.d/$BADNAME.json"

check "systemctl daemon-reload succeeds with invalid channels present" in_ct systemctl daemon-reload

for c in "${GOOD[@]}"; do
        s=$(slice_of "$c")
        is "$(prop "$s" LoadState)" loaded "channel $c: $s is loaded"
        is "$(prop "$s" FragmentPath)" "$GENDIR/$s" "channel $c: $s is generated into $GENDIR"
        is "$(prop "$s" SourcePath)" "/etc/loop/channels.d/$c.json" "channel $c: $s names the channel file as SourcePath"
        is "$(prop "$s" Slice)" loop.slice "channel $c: $s is a child of loop.slice"
        svc=loop-agent@$c.service
        is "$(prop "$svc" Slice)" "$s" "channel $c: $svc runs in $s"
        is "$(prop "$svc" FragmentPath)" "$UNITDIR/loop-agent@.service" "channel $c: $svc comes from the template"
        like " $(prop "$svc" Environment) " " LOOP_CHANNEL=$c " "channel $c: $svc sets LOOP_CHANNEL=$c"
        is "$(prop "loop-chrome@$c.service" Slice)" "$s" "channel $c: loop-chrome@$c.service runs in $s"
        t=loop-channel@$c.target
        is "$(prop "$t" FragmentPath)" "$GENDIR/$t" "channel $c: $t is generated, in place of the template"
        is "$(prop "$t" SourcePath)" "/etc/loop/channels.d/$c.json" "channel $c: $t names the channel file as SourcePath"
done
# A drop-in only where a channel differs from what the templates say for every channel: the runner of
# my-proj, whose slice's name is escaped; none for the others (the default config dir, no description).
svc='loop-agent@my-proj.service'
is "$(prop "$svc" DropInPaths)" "$GENDIR/$svc.d/50-channel.conf" "channel my-proj: $svc has the generated drop-in"
is "$(prop "$svc" SourcePath)" "/etc/loop/channels.d/my-proj.json" "...which names the channel file as SourcePath"
is "$(prop loop-agent@alpha.service DropInPaths)" "" "channel alpha: loop-agent@alpha.service needs no drop-in"
for svc in loop-gate@alpha.service loop-tasks@alpha.service loop-gateway@alpha.service loop-browser@alpha.service; do
        is "$(prop "$svc" DropInPaths)" "" "channel alpha: $svc needs no drop-in (default settings)"
done
# The Docker API proxy of a default channel takes its settings from the template, which must say what the
# generator writes into a drop-in when a channel differs (my-proj: its work dir): the same values.
proxy_env() { prop "loop-dockerproxy@$1.service" Environment | tr ' ' '\n' | grep -v -e '^LOOP_DOCKERPROXY_WORK_DIR=' -e '^LOOP_CHANNEL=' | sort; }
is "$(prop loop-dockerproxy@alpha.service DropInPaths)" "" "channel alpha: loop-dockerproxy@alpha.service needs no drop-in"
is "$(proxy_env alpha)" "$(proxy_env my-proj)" \
        "...and gets the same settings from the template as the generator writes into my-proj's drop-in"
like "$(proxy_env alpha)" "LOOP_DOCKERPROXY_MASKED_PATHS=/proc/acpi:.*:/sys/module" "...the masked kernel paths among them"
like " $(prop loop-dockerproxy@alpha.service Environment) " " LOOP_DOCKERPROXY_WORK_DIR=/var/lib/loop/alpha/work " \
        "...and its work dir, the default"
# The egress policies, where the templates' LoadCredential= name them, root's only.
for w in gateway browser; do
        is "$(in_ct stat -c '%a %U' "$GENDIR/loop-egress/alpha.$w.json")" "600 root" \
                "channel alpha: the $w's egress policy is in $GENDIR/loop-egress, 0600 root"
done
# PID 1 finds them where the templates' LoadCredential= say (a missing file fails the start: "Failed to set
# up credentials"); `systemctl show` cannot print LoadCredential= in 252, so the services are started.
is "$(in_ct sh -c 'systemctl start loop-gateway@alpha.service && cat /proc/$(systemctl show -P MainPID loop-gateway@alpha.service)/environ | tr "\0" "\n" | grep ^CREDENTIALS_DIRECTORY= >/dev/null && ls "/run/credentials/loop-gateway@alpha.service"' 2>&1)" \
        egress.json "loop-gateway@alpha.service starts with its credential egress.json" ||
        diag "$(in_ct systemctl status --no-pager loop-gateway@alpha.service 2>&1)"
in_ct systemctl stop loop-gateway@alpha.service loop-gateway@alpha.socket
is "$(in_ct stat -c '%a' "$GENDIR/loop-egress")" 700 "$GENDIR/loop-egress is 0700"
# A channel without an egress gateway: no gateway, and the browser loads no policy (the empty assignment
# in its drop-in takes the template's LoadCredential= back, so the service can start).
check "channel noegress: loop-browser@noegress.service starts without an egress policy" \
        in_ct systemctl start loop-browser@noegress.service ||
        diag "$(in_ct systemctl status --no-pager loop-browser@noegress.service 2>&1)"
is "$(in_ct sh -c 'ls /run/credentials/loop-browser@noegress.service 2>/dev/null')" "" "...and loads no credential"
check "channel alpha: loop-browser@alpha.service starts with the browser's policy" \
        in_ct systemctl start loop-browser@alpha.service ||
        diag "$(in_ct systemctl status --no-pager loop-browser@alpha.service 2>&1)"
is "$(in_ct ls /run/credentials/loop-browser@alpha.service)" egress.json "...its credential egress.json"
in_ct systemctl stop loop-browser@noegress.service loop-browser@alpha.service loop-browser@noegress.socket \
        loop-browser@alpha.socket 'loop-chrome@*.service' >/dev/null 2>&1
unlike " $(prop loop-channel@noegress.target Wants) " " loop-gateway@noegress\.socket " \
        "channel noegress: its target does not want the gateway's socket"
is 'loop-my\x2dproj.slice' "$(slice_of my-proj)" "the slice of channel my-proj is named loop-my\\x2dproj.slice"
is "$(prop 'loop-my\x2dproj.slice' MemoryMax)" $((512 * 1024 * 1024)) "limits.memory_max_mb=512 gives MemoryMax=512M"
is "$(prop 'loop-my\x2dproj.slice' TasksMax)" 100 "limits.tasks_max=100 gives TasksMax=100"
is "$(prop loop-cpu.slice CPUQuotaPerSecUSec)" 1.500000s "limits.cpu_quota_percent=150 gives CPUQuota=150%"
is "$(prop loop-alpha.slice MemoryMax)" infinity "a channel without limits has no MemoryMax"
is "$(prop loop-alpha.slice CPUQuotaPerSecUSec)" infinity "a channel without limits has no CPUQuota"

upholds=" $(prop loop.target Upholds) "
for c in "${GOOD[@]}"; do
        like "$upholds" " loop-channel@$c\.target " "loop.target upholds loop-channel@$c.target"
        like " $(prop "loop-channel@$c.target" Wants) " " loop-agent@$c\.path " "...which wants loop-agent@$c.path"
done
for c in "$BROKEN" "$WRONGTYPE" "$BADNAME"; do
        generated=$(in_ct find "$GENDIR" -name "*${c%%-*}*")
        is "$generated" "" "nothing is generated for invalid channel ${c%-"$RUN"}"
done
wants=" $(prop loop-channel@alpha.target Wants) "
for u in loop-agent@alpha.path loop-tasks@alpha.socket loop-tasks-sync@alpha.path loop-gateway@alpha.socket \
         loop-browser@alpha.socket loop-gate@alpha.socket loop-gate-admin@alpha.socket loop-dockerproxy@alpha.socket \
         loop-reconcile.timer; do
        like "$wants" " ${u//./\\.} " "loop-channel@alpha.target wants $u"
done

# The generator logs to /dev/kmsg when systemd runs it (nspawn_boot --kmsg: the host's kernel log).
kmsg=$(in_ct dmesg)
for c in "$BROKEN" "$WRONGTYPE" "$BADNAME"; do
        grep -F "loop-generator" <<<"$kmsg" | grep -qF "/etc/loop/channels.d/$c.json"
        ok $? "invalid channel ${c%-"$RUN"} is reported in the kernel log, naming its file"
done
diag "$(grep -F "$RUN" <<<"$kmsg" | sed 's/^\[[ 0-9.]*\] //')"

# --- loop.target ----------------------------------------------------------------------------------
check "systemctl start loop.target succeeds" in_ct systemctl start loop.target
is "$(prop loop.target ActiveState)" active "loop.target is active"
for c in "${GOOD[@]}"; do
        is "$(prop "loop-agent@$c.path" ActiveState)/$(prop "loop-agent@$c.path" SubState)" active/waiting \
                "starting loop.target starts loop-agent@$c.path, waiting for work"
done
is "$(in_ct stat -c '%a %U' /var/lib/loop/my-proj/inbox)" "751 root" "the path unit creates the channel's inbox 0751"
is "$(in_ct stat -c '%a %U' /var/lib/loop/my-proj)" "751 root" "...and the state dir above it 0751, so the agent's user can pass"
is "$(prop loop-agent@my-proj.service ActiveState)" inactive "the runner does not start while the inbox is empty"
active=$(in_ct systemctl list-units --no-legend --plain --all 'loop-agent@*' | awk '$3 == "active" { print $1 }' | sort)
is "$active" "$(printf 'loop-agent@%s.path\n' "${GOOD[@]}" | sort)" "only the valid channels' path units are active"

# A channel added while loop.target runs is armed by the daemon-reload that generates it (Upholds=),
# with no `systemctl start loop.target`; a channel unit the operator stops stays stopped.
echo '{}' >"$cfg/channels.d/late.json"
chmod 0644 "$cfg/channels.d/late.json"
check "systemctl daemon-reload after adding a channel" in_ct systemctl daemon-reload
late_armed() { [ "$(prop loop-agent@late.path ActiveState)" = active ]; }
wait_for 20 late_armed
ok $? "the new channel's path unit is armed by the reload alone" ||
        diag "$(in_ct systemctl status --no-pager loop-channel@late.target loop-agent@late.path 2>&1)"
check "the operator stops alpha's path unit" in_ct systemctl stop loop-agent@alpha.path
check "and reloads" in_ct systemctl daemon-reload
sleep 2
is "$(prop loop-agent@alpha.path ActiveState)" inactive "a channel unit the operator stopped stays stopped across a reload"
rm -f "$cfg/channels.d/late.json"

check "systemctl stop loop.target succeeds" in_ct systemctl stop loop.target
is "$(prop loop-agent@my-proj.path ActiveState)" inactive "stopping loop.target stops the path units (PartOf=)"

# --- shutdown -------------------------------------------------------------------------------------
nspawn_stop "$M"
ok $? "the container powers off cleanly"
leftover=$(for cg in $(_nspawn_cgroups "$M"); do [ -e "$cg" ] && echo "$cg"; done)
is "$leftover" "" "nothing of the container is left (cgroups removed)"

tap_done
