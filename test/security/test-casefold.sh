#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A work dir in a directory that folds case (+F), as a human may have made one: the kernel opens .env for
# .ENV there and .git/hooks for .GIT/HOOKS, while the gate's rules name .env and .git/hooks. `loop
# syscallwrap` on this host (as test-syscallwrap runs it) must decide those spellings as the names they
# open: reading .ENV is reading .env, writing .GIT/HOOKS/pre-commit is writing the guarded hook, creating
# .Mcp.Json where .mcp.json is guarded and missing is creating it, and a non-ASCII name there (which the
# kernel folds by Unicode rules, U+00DF as "ss") is refused. Outside the folding directory the same
# spellings are other names and stay allowed. (That the agent cannot make a directory fold is
# test-escape's and test-syscallwrap's: FS_IOC_SETFLAGS is refused.)
#
# The folding file system is the test's own: tmpfs -o casefold (Linux 6.13) mounted in its temp dir, else
# an ext4 image made with -O casefold on a loop device. A kernel without CONFIG_UNICODE folds nothing (no
# file system can have such a directory there): the test is skipped, saying so.
# Needs root; fails, not skips, without it.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"
# shellcheck source=test/lib/host-users.sh
. "$lib/host-users.sh"

: "${LOOP_BUILD_DIR:=$(dirname "$(readlink -f "$0")")/../../build}"
LOOP=$LOOP_BUILD_DIR/src/loop
PROBE_BUILT=$LOOP_BUILD_DIR/test/integration/gate-probe
TEST_USER=looptest

[ "$(id -u)" -eq 0 ] || bail_out "test-casefold needs root"
for f in "$LOOP" "$PROBE_BUILT"; do [ -x "$f" ] || bail_out "$f is not built"; done
command -v setpriv >/dev/null || bail_out "setpriv (util-linux) is needed"
command -v chattr >/dev/null || bail_out "chattr (e2fsprogs) is needed"

T=$(mktemp -d /var/tmp/loop-test-casefold.XXXXXX) || bail_out "mktemp failed"
atexit "rm -rf '$T'"
chmod 0755 "$T"
mkdir "$T/fs"

# A file system that can fold: tmpfs first, an ext4 image else.
if mount -t tmpfs -o casefold,mode=0755,size=16m tmpfs "$T/fs" 2>/dev/null; then
        atexit "umount -l '$T/fs'"
        how="tmpfs -o casefold"
elif command -v mkfs.ext4 >/dev/null && truncate -s 64M "$T/ext4.img" && mkfs.ext4 -q -O casefold "$T/ext4.img" 2>/dev/null &&
        mount -o loop "$T/ext4.img" "$T/fs" 2>/dev/null; then
        atexit "umount -l '$T/fs'"
        how="ext4 -O casefold on a loop device"
else
        echo "1..0 # SKIP this kernel folds no names (neither tmpfs -o casefold nor ext4 -O casefold mounts: no CONFIG_UNICODE)"
        exit 0
fi
chmod 0755 "$T/fs"

test_user_ensure "$TEST_USER" || bail_out "cannot create the test user $TEST_USER"
U=$(id -u "$TEST_USER")
G=$(id -g "$TEST_USER")

# The human's folding work dir (+F on it while empty), and a plain one beside it on the host's file system.
W=$T/fs/work
P=$T/plain
H=$T/home
mkdir "$W" "$P" "$H"
chattr +F "$W" || bail_out "chattr +F on an empty directory of $how failed"
mkdir -p "$W/.git/hooks" "$W/src"
echo '#!/bin/sh' >"$W/.git/hooks/pre-commit"
chmod 0755 "$W/.git/hooks/pre-commit"
echo 'API_TOKEN=SECRET-ENV-MARKER' >"$W/.env"
echo 'plain' >"$P/.ENV"
chown -R "$U:$G" "$W" "$P" "$H"
[ "$(cat "$W/.ENV" 2>/dev/null)" = 'API_TOKEN=SECRET-ENV-MARKER' ] ||
        bail_out "$W does not fold case: .ENV does not open .env ($how)"
diag "folding work dir on $how"

PROBE=$T/gate-probe
install -m 0755 "$PROBE_BUILT" "$PROBE"

cat >"$T/policy.json" <<JSON
{
  "default_decision": "allow",
  "file_rules": [
    {"paths": ["$W/.git/hooks", "$W/.git/hooks/**", "$W/.mcp.json"],
     "operations": ["write", "create", "delete", "chmod", "link"], "decision": "deny", "message": "guarded"},
    {"paths": ["**/.env"], "operations": ["read"], "decision": "deny", "message": "secrets are not read"}
  ]
}
JSON
chmod 0644 "$T/policy.json"

CAPS=-all,+chown,+dac_override,+fowner,+setuid,+setgid
export LOOP_LOG_TARGET=console LOOP_CHANNEL_ID=demo LOOP_GATE_POLICY_FILE=$T/policy.json
export LOOP_GATE_SOCKET=$T/run/demo/gate.sock LOOP_RUNTIME_DIR=$T/run
unset LOOP_GATE_TOKEN LOOP_GATE_VERBOSE
mkdir -p "$T/run"

# wrap CMD...: runs CMD as the agent under the gate; stdout in $out, stderr in $err.
wrap() {
        out=$(cd "$H" && HOME=$H timeout 120 setpriv --bounding-set "$CAPS" --inh-caps -all \
                "$LOOP" syscallwrap --uid "$U" --gid "$G" -- "$@" 2>"$T/stderr")
        err=$(cat "$T/stderr")
}

wrap "$PROBE" open "$W/.env" r
is "$out" EPERM "reading .env in the folding work dir is denied (as written)"
wrap "$PROBE" open "$W/.ENV" r
is "$out" EPERM "reading .ENV there is reading .env: denied"
wrap "$PROBE" open "$W/.GIT/HOOKS/pre-commit" w
is "$out" EPERM "writing .GIT/HOOKS/pre-commit is writing the guarded hook: denied"
grep -qx '#!/bin/sh' "$W/.git/hooks/pre-commit"
ok $? "  ... the hook is as it was"
wrap "$PROBE" open "$W/.Mcp.Json" c
is "$out" EPERM "creating .Mcp.Json where the guarded .mcp.json is missing is denied"
[ ! -e "$W/.mcp.json" ]
ok $? "  ... and nothing by that name appeared"
wrap "$PROBE" open "$W/caf$(printf '\303\251')" c
is "$out" EPERM "creating a name with non-ASCII characters in the folding directory is denied"
grep -E '^\{.*\}$' <<<"$err" | grep -qE '"rule_id":"casefold".*"decision":"deny"'
ok $? "  ... by the casefold rule, in the decision record" || diag "$err"
wrap "$PROBE" open "$W/src/Main.c" c
is "$out" ok "other names in the folding directory stay writable"
wrap "$PROBE" open "$P/.ENV" r
is "$out" ok "outside the folding directory .ENV is another file than .env: reading it is allowed"

tap_done
