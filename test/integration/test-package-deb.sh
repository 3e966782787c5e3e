#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Debian package, built and used as an admin would: `dpkg-buildpackage -us -uc -b` in a copy of the
# source tree (the checkout is never written), lintian, then `apt-get install` of the .deb into a fresh
# machine booted with a real systemd and rootful Podman (nspawn.sh), the smoke path (`loop config check`,
# `systemctl enable --now loop.target`, `loop send`, the result in `loop outbox`), and the README's
# uninstall (`loop cleanup`, `apt-get purge loop`), after which only what Debian keeps may be left.
#
# The machine is the harness's (the host's /usr, a tmpfs for the rest) with two changes that let dpkg
# install into it: /usr is an overlay whose upper directory is the test's (what the package writes
# to /usr lands there, and what purge leaves there can be looked at from the host), and
# /var/lib/dpkg is a copy of the host's database (the package's dependencies are the host's
# installed packages). Nothing is installed on the host.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"
# shellcheck source=test/lib/package-deb.sh
. "$lib/package-deb.sh"

deb_require lintian

M=loop-pkg-$$
IMAGE=localhost/loop-test:latest
work=$(mktemp -d "${TMPDIR:-/tmp}/loop-pkg-deb.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$work'"

# --- build ----------------------------------------------------------------------------------------
deb_source "$work"
ok $? "dpkg-source -b builds the source package" || diag "$(tail -n 20 "$work/source.log")"
deb_binary "$work"
ok $? "dpkg-buildpackage -us -uc -b builds the package" ||
        { diag "$(grep -E -B2 -A12 '^not ok|^Bail out' "$work/build.log" | head -n 80)"
          diag "$(tail -n 40 "$work/build.log")"; bail_out "no package to test"; }
version=$DEB_VERSION
deb=$DEB
like "$(sed -n '/meson test --suite unit --suite generator/,/^Fail:/p' "$work/build.log")" $'\nOk: +[1-9]' \
        "dh_auto_test runs the unit and generator suites"
unlike "$(grep -E '^(Fail|Timeout):' "$work/build.log")" ":[[:space:]]+[1-9]" "...and none of them fails"

out=$(lintian --allow-root --pedantic -I -E --fail-on error,warning "$work/src/loop_${version}.dsc" \
        "$work/src/loop_${version}_"*.changes 2>&1)
ok $? "lintian finds no error or warning" || diag "$out"
is "$(grep -E '^[EWIPX]:' <<<"$out")" "" "lintian --pedantic -I -E has nothing to say either (overrides are justified in debian/)"

contents=$(dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|')
for f in /usr/bin/loop /lib/systemd/system-generators/loop-generator /lib/systemd/system/loop.target \
        /lib/systemd/system/loop-agent@.service /lib/systemd/system/loop-agent@.path \
        /lib/systemd/system/loop-gateway@.socket /lib/systemd/system/loop-reconcile.timer \
        /usr/libexec/loop/loop-gate /usr/lib/sysusers.d/loop.conf /usr/lib/tmpfiles.d/loop.conf \
        /usr/lib/systemd/catalog/loop.catalog /usr/share/man/man1/loop.1.gz \
        /usr/share/man/man5/loop.json.5.gz /usr/share/man/man7/loop.units.7.gz \
        /usr/share/man/man8/loop-generator.8.gz /usr/share/loop/image/bootstrap /usr/share/loop/image/demo \
        /usr/share/loop/image/agent/Containerfile /etc/loop/channels.d/; do
        grep -qxF "$f" <<<"$contents"
        ok $? "the package ships $f"
done

# --- a fresh machine ------------------------------------------------------------------------------
deb_machine_prepare "$work" || bail_out "cannot prepare the machine for the package"

nspawn_boot "$M" "${DEB_BOOT_ARGS[@]}" || bail_out "could not boot systemd with podman"
ok 0 "systemd boots with podman inside"
in_ct() { nspawn_exec "$M" "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
outbox_has() { [ "$(in_ct sh -c 'ls /var/lib/loop/demo/outbox 2>/dev/null' | grep -c '\.json$')" -ge "$1" ]; }
# Every file and directory of the machine's own /etc and /var (not /var/lib/dpkg, a bind mount).
snapshot() { in_ct find /etc /var -xdev | sort; }

in_ct sh -c 'command -v loop' >/dev/null
ok $((!$?)) "there is no loop in the fresh machine"
deb_machine_apt_ready "$M" || bail_out "cannot prepare apt's directories"
before=$(snapshot)

check "apt-get install ./loop_${version}_*.deb" in_ct env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "/srv/loop-debs/${deb##*/}"
is "$(in_ct getent passwd loop | cut -d: -f6,7)" "/var/lib/loop:/usr/sbin/nologin" \
        "the postinst makes the loop system user (sysusers.d)"
is "$(in_ct stat -c '%a %U %G' /var/lib/loop)" "750 root loop" "the postinst makes /var/lib/loop 0750 root:loop (tmpfiles.d)"
is "$(in_ct stat -c '%a %U %G' /run/loop)" "755 root root" "...and /run/loop"
like "$(in_ct journalctl --list-catalog 2>&1)" "527b5e1abf094497acacdb22d6ae6f0e" \
        "the journal catalog is compiled (systemd's dpkg trigger)"
is "$(prop loop.target UnitFileState)" disabled "installing enables nothing: loop.target is the admin's to enable"
is "$(prop loop.target FragmentPath)" /lib/systemd/system/loop.target "systemd knows the package's units"

# --- the smoke path -------------------------------------------------------------------------------
in_ct sh -c "cat >/etc/loop/loop.json" <<EOF
{ "container_image": "$IMAGE", "browser": { "enabled": false }, "container_keep_alive_sec": 600 }
EOF
in_ct sh -c 'cat >/etc/loop/channels.d/demo.json' <<<'{ "description": "the package test" }'
check "loop config check" in_ct loop config check
import_test_image "$(nspawn_root "$M")/run/podman/podman.sock" "$IMAGE" "$work/rootfs" >/dev/null
ok $? "the test image is imported into the machine's podman"
check "systemctl enable --now loop.target" in_ct systemctl enable --now loop.target
is "$(prop loop-agent@demo.path ActiveState)" active "the generator armed the channel's path unit"
id=$(in_ct loop send demo hello)
like "$id" '^[0-9]{20}-[0-9a-f]{8}$' "loop send queues a message"
wait_for 90 outbox_has 1
ok $? "the runner ran it and the result reached the outbox" ||
        diag "$(in_ct loop queue demo 2>&1; in_ct journalctl --no-pager -o cat -u loop-agent@demo.service -n 40 2>&1)"
like "$(in_ct loop outbox demo --json)" '"result": *"hello from the fake agent"' "loop outbox shows the result"
like "$(prop loop-agent@demo.service ExecStart)" "path=/usr/bin/loop ;" "the runner was the package's /usr/bin/loop"
like "$(in_ct journalctl --no-pager -x -u loop-agent@demo.service LOOP_EVENT=queue-done 2>&1)" \
        "A message of channel demo was done" "journalctl -x explains the events with the package's catalog"
[ -n "$(in_ct podman ps -aq --filter label=loop-channel=demo)" ]
ok $? "the finished container is kept for container_keep_alive_sec"
check "apt-get install --reinstall (an upgrade's maintainer scripts)" in_ct env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --reinstall --no-install-recommends "/srv/loop-debs/${deb##*/}"
is "$(prop loop-agent@demo.path ActiveState)/$(prop loop.target ActiveState)" active/active \
        "an upgrade stops nothing: the channel stays armed"

# --- uninstall as the README says -----------------------------------------------------------------
check "loop cleanup" in_ct loop cleanup
is "$(in_ct podman ps -aq --filter label=app=loop-agent)" "" "loop cleanup removes every container loop made"
check "loop image rm" in_ct loop image rm "$IMAGE"
check "apt-get purge loop" in_ct env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q loop
is "$(in_ct systemctl list-units --plain --no-legend --state=active,activating,deactivating,reloading 'loop*')" "" \
        "removing the package stops every unit of loop"
in_ct dpkg-query -W loop >/dev/null 2>&1
ok $((!$?)) "dpkg forgets the package"
after=$(snapshot)
remains=$(comm -13 <(echo "$before") <(echo "$after") | grep -i loop)
is "$remains" "" "purge leaves no file or directory of loop in /etc or /var"
in_ct sh -c 'test -e /run/loop'
ok $((!$?)) "...nor /run/loop"
is "$(in_ct getent passwd loop | cut -d: -f1)" loop "the loop system user stays, as Debian keeps system users"
remains=$(cd "$work/usr-upper" && find . \( -type f -o -type l \) | sed 's|^\.|/usr|' | sort)
is "$remains" "" "purge leaves nothing in /usr"

nspawn_stop "$M"
ok $? "the machine powers off cleanly"
tap_done
