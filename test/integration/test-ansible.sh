#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Ansible role (ansible/roles/loop through ansible/site.yml) with Debian's ansible-core, converging a
# fresh machine booted with a real systemd and rootful Podman: the package built from this tree
# (package-deb.sh) is installed by the role, loop.json and one file a channel come from the inventory, the
# key becomes the systemd credential loop.anthropic_api_key (never a file the loop group reads), the
# channels run without a manual `systemctl start`, a message sent to one is answered, a second run
# changes nothing, a channel added later runs at once, and a channel that left the inventory is stopped,
# its containers removed and its file gone. ansible-lint checks the role on the host.
#
# ansible-playbook runs inside the machine with the local connection (the machine's /usr is the host's,
# as an overlay: Debian's ansible-core is there); the role is bound in read-only.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"
# shellcheck source=test/lib/package-deb.sh
. "$lib/package-deb.sh"

deb_require ansible-playbook

M=loop-ansible-$$
IMAGE=localhost/loop-test:latest
SECRET=sk-ant-test-ansible-credential-$$
work=$(mktemp -d "${TMPDIR:-/tmp}/loop-ansible.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$work'"

if command -v ansible-lint >/dev/null; then
        out=$(cd "$LOOP_SOURCE_DIR" && ANSIBLE_NOCOLOR=1 ansible-lint --nocolor ansible/ 2>&1)
        ok $? "ansible-lint passes the role and the playbook (production profile)" || diag "$out"
else
        skip "ansible-lint is not installed (Debian's ansible-lint)"
fi

deb_source "$work" && deb_binary "$work" || { diag "$(tail -n 40 "$work/build.log")"; bail_out "no package"; }
deb_machine_prepare "$work" || bail_out "cannot prepare the machine for the package"
nspawn_boot "$M" "${DEB_BOOT_ARGS[@]}" --bind-ro="$LOOP_SOURCE_DIR/ansible:/srv/ansible" ||
        bail_out "could not boot systemd with podman"
in_ct() { nspawn_exec "$M" "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
deb_machine_apt_ready "$M" || bail_out "cannot prepare apt's directories"
import_test_image "$(nspawn_root "$M")/run/podman/podman.sock" "$IMAGE" "$work/rootfs" >/dev/null ||
        bail_out "cannot import the test image into the machine's podman"

# inventory CHANNEL...: the inventory with these channels (each with a description), the package, the
# settings and the key.
inventory() {
        local c
        {
                cat <<EOF
loop:
  hosts:
    localhost:
      ansible_connection: local
      ansible_become: false
      ansible_python_interpreter: /usr/bin/python3
  vars:
    loop_package_deb: /srv/loop-debs/${DEB##*/}
    loop_config:
      container_image: $IMAGE
      browser: { enabled: false }
      container_keep_alive_sec: 600
    loop_secrets:
      anthropic_api_key: $SECRET
    loop_channels:
EOF
                for c in "$@"; do
                        echo "      $c: { description: \"channel $c\" }"
                done
        } | in_ct sh -c 'cat >/root/inventory.yml'
}
# converge: one run of site.yml; its output in $out, the recap's changed= in $changed.
converge() {
        out=$(in_ct env LC_ALL=C.UTF-8 ANSIBLE_NOCOLOR=1 ANSIBLE_ROLES_PATH=/srv/ansible/roles \
                ansible-playbook -i /root/inventory.yml /srv/ansible/site.yml 2>&1)
        local st=$?
        changed=$(sed -n 's/^localhost *:.* changed=\([0-9]*\).*/\1/p' <<<"$out")
        [ "$st" = 0 ] || diag "$(tail -n 30 <<<"$out")"
        return "$st"
}
outbox_has() { [ "$(in_ct sh -c "ls /var/lib/loop/$1/outbox 2>/dev/null" | grep -c '\.json$')" -ge 1 ]; }

# --- a fresh machine converges -----------------------------------------------------------------------
inventory demo other
converge
ok $? "the role converges a fresh machine"
is "$(in_ct dpkg-query -W -f='${Status}' loop 2>&1)" "install ok installed" "...installing the package"
is "$(in_ct stat -c '%a %U %G' /etc/loop/loop.json /etc/loop/channels.d/demo.json /etc/loop/channels.d/other.json)" \
        "$(printf '640 root loop\n640 root loop\n640 root loop')" "loop.json and one file a channel, 0640 root:loop"
check "loop config check accepts what the role wrote" in_ct loop config check --strict
is "$(in_ct stat -c '%a %U %G' /etc/credstore /etc/credstore/loop.anthropic_api_key)" \
        "$(printf '700 root root\n600 root root')" "the key is the credential loop.anthropic_api_key, root's alone"
in_ct grep -rqF "$SECRET" /etc/loop
ok $((!$?)) "the key is in no file under /etc/loop"
in_ct grep -qF "$SECRET" /run/systemd/generator/loop-egress/demo.gateway.json
ok $? "the generator handed the credential to the channel's egress gateway"
is "$(prop loop.target UnitFileState)/$(prop loop.target ActiveState)" enabled/active "loop.target is enabled and started"
is "$(prop loop-agent@demo.path ActiveState)/$(prop loop-agent@other.path ActiveState)" active/active \
        "every channel's inbox watch is armed"
id=$(in_ct loop send demo hello)
like "$id" '^[0-9]{20}-[0-9a-f]{8}$' "loop send queues a message"
wait_for 90 outbox_has demo
ok $? "the channel answers: the result reaches the outbox" ||
        diag "$(in_ct loop queue demo 2>&1; in_ct journalctl --no-pager -o cat -u loop-agent@demo.service -n 40 2>&1)"

converge
ok $? "a second run succeeds"
is "$changed" 0 "...and changes nothing"

# --- a new channel ------------------------------------------------------------------------------------
inventory demo other late
converge
ok $? "a run with a new channel succeeds"
is "$(prop loop-agent@late.path ActiveState)" active "the new channel's inbox watch is armed (no manual start)"
in_ct loop send late hi >/dev/null
wait_for 90 outbox_has late
ok $? "...and the new channel answers"

# --- a channel leaves the inventory -------------------------------------------------------------------
[ -n "$(in_ct podman ps -aq --filter label=loop-channel=demo)" ]
ok $? "setup: demo's finished container is kept (container_keep_alive_sec)"
inventory other late
converge
ok $? "a run without channel demo succeeds"
in_ct test -e /etc/loop/channels.d/demo.json
ok $((!$?)) "demo's channel file is removed"
is "$(in_ct podman ps -aq --filter label=loop-channel=demo)" "" "demo's containers are removed"
is "$(in_ct systemctl list-units --plain --no-legend --state=active,activating '*@demo.*' 'loop-demo.slice')" "" \
        "none of demo's units runs"
is "$(prop loop-agent@demo.path ActiveState)" inactive "...its inbox watch is stopped"
is "$(prop loop-agent@other.path ActiveState)/$(prop loop-agent@late.path ActiveState)" active/active \
        "the other channels stay armed"
converge
ok $? "one more run succeeds"
is "$changed" 0 "...and changes nothing"

nspawn_stop "$M"
ok $? "the machine powers off cleanly"
tap_done
