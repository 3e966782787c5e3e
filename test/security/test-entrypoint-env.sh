#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The agent image's entrypoint runs as root before the gate and the seal, with the container's
# environment, which the channel's envs and the project file (the agent writes it) can set. Its PATH is
# the agent's: with a work dir directory first, the old entrypoint ran the agent's "mkdir" (and readlink,
# awk, chown) as root. Run here with Debian's dash, as the image's /bin/sh is (the test image's static
# busybox prefers its applets to PATH, so the container suites cannot show it), in a private mount
# namespace with a tmpfs on /run (where it writes /run/loop-etc) and a home of its own; its final exec of
# /usr/local/bin/loop fails on a host without loop installed, or runs `loop seal` on one with it, harmlessly.
#
# The configured envs never reach that root side: they travel encoded in LOOP_AGENT_ENV, which only loop's
# own code decodes after the privilege drop (`loop privdrop`, `loop syscallwrap`'s child, `loop seal
# --agent-env` for a `loop shell` session). Here with the build's loop on the host: what the command gets,
# and that a value that does not decode stops everything (test-agent-env shows the rest in real containers).
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"
: "${LOOP_SOURCE_DIR:=$(dirname "$(readlink -f "$0")")/../..}"
: "${LOOP_BUILD_DIR:=$(dirname "$(readlink -f "$0")")/../../build}"
ENTRYPOINT=$LOOP_SOURCE_DIR/image/agent/entrypoint
LOOP=$LOOP_BUILD_DIR/src/loop

[ "$(id -u)" -eq 0 ] || bail_out "test-entrypoint-env needs root (the entrypoint runs as root)"
command -v dash >/dev/null || bail_out "dash is missing (the image's /bin/sh)"
command -v unshare >/dev/null || bail_out "unshare is missing (util-linux)"
command -v setpriv >/dev/null || bail_out "setpriv is missing (util-linux)"
[ -x "$LOOP" ] || bail_out "$LOOP is not built"

T=$(mktemp -d /tmp/loop-test-entrypoint.XXXXXX) || bail_out "mktemp failed"
atexit "rm -rf '$T'"
mkdir -p "$T/agent-bin" "$T/home"
for tool in readlink mkdir chmod awk cat cp mv chown stat ls; do
        printf '#!/bin/sh\necho %s >>%s/ran-as-root\nexit 1\n' "$tool" "$T" >"$T/agent-bin/$tool"
        chmod 0755 "$T/agent-bin/$tool"
done

out=$(env -i PATH="$T/agent-bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" HOME="$T/home" \
        AGENT_UID=65534 AGENT_GID=65534 \
        unshare --mount --propagation private --fork -- \
        dash -c 'mount -t tmpfs tmpfs /run && exec dash "$0" /bin/true' "$ENTRYPOINT" 2>&1)
st=$?
[ ! -e "$T/ran-as-root" ]
ok $? "the root entrypoint runs none of the tools the agent's PATH puts first" ||
        diag "ran: $(tr '\n' ' ' <"$T/ran-as-root") (exit $st: $out)"
[ "$(stat -c %u "$T/home")" = 65534 ]
ok $? "...and still gets as far as giving the agent its home (exit $st)" || diag "$out"

# --- LOOP_AGENT_ENV: decoded after the drop, for the command alone ----------------------------------------
encode() { printf '%s\0' "$@" | base64 -w0; }
good=$(encode "FOO=foo value" "LANG=C.agent" "TMPDIR=/tmp/agent" "MULTI=a
b")
out=$(env -i PATH=/usr/bin:/bin LOOP_AGENT_ENV="$good" "$LOOP" privdrop --uid 65534 --gid 65534 -- env 2>&1)
st=$?
ok $((st != 0 || $(grep -c -e '^FOO=foo value$' -e '^LANG=C.agent$' -e '^TMPDIR=/tmp/agent$' -e '^MULTI=a$' <<<"$out") != 4)) \
        "loop privdrop gives the command the decoded variables (exit $st)" || diag "$out"
! grep -q '^LOOP_AGENT_ENV=' <<<"$out"
ok $? "...and not the encoded list"

# The agent's PATH chooses the command, as the entrypoint's PATH=\$AGENT_PATH did before.
printf '#!/bin/sh\necho agent-tool\n' >"$T/agent-bin/agent-tool" && chmod 0755 "$T/agent-bin/agent-tool"
chmod 0755 "$T" "$T/agent-bin"
out=$(env -i PATH=/usr/bin:/bin LOOP_AGENT_ENV="$(encode "PATH=$T/agent-bin:/usr/bin:/bin")" \
        "$LOOP" privdrop --uid 65534 --gid 65534 -- agent-tool 2>&1)
is "$out" agent-tool "a configured PATH is the one the command is looked up in"

for bad in 'Rk9PPWJhcg==' 'not base64!' 'Rk9PAA==' "$good
"; do
        out=$(env -i PATH=/usr/bin:/bin LOOP_AGENT_ENV="$bad" "$LOOP" privdrop --uid 65534 --gid 65534 -- \
                sh -c 'echo agent-ran' 2>&1)
        st=$?
        ok $((st != 125)) "loop privdrop with a malformed LOOP_AGENT_ENV ('${bad:0:12}') stops with 125 (exit $st)"
        ! grep -q agent-ran <<<"$out"
        ok $? "...without running the command" || diag "$out"
done
like "$out" "LOOP_AGENT_ENV" "...and says which variable is wrong"

out=$(env -i PATH=/usr/bin:/bin LOOP_AGENT_ENV='Rk9PPWJhcg==' LOOP_GATE_POLICY_FILE=/nonexistent \
        "$LOOP" syscallwrap --uid 65534 --gid 65534 -- sh -c 'echo agent-ran' 2>&1)
st=$?
ok $((st != 125)) "loop syscallwrap with a malformed LOOP_AGENT_ENV stops with 125 (exit $st)"
like "$out" "LOOP_AGENT_ENV" "...before anything else, saying so" || diag "$out"

# loop seal --agent-env: a `loop shell` session, which runs as the agent from the start (what it gives
# the command: test-agent-env, in a container; on this host the seal cannot open every mount as 65534).
if "$LOOP" seal --print >/dev/null 2>&1; then
        out=$(cd / && env -i PATH=/usr/bin:/bin HOME=/ LOOP_AGENT_ENV='Rk9PAA==' \
                setpriv --reuid 65534 --regid 65534 --clear-groups "$LOOP" seal --agent-env -- sh -c 'echo agent-ran' 2>&1)
        st=$?
        ok $((st != 125)) "loop seal --agent-env with a malformed LOOP_AGENT_ENV stops with 125 (exit $st)"
        ! grep -q agent-ran <<<"$out"
        ok $? "...without running the command" || diag "$out"
        like "$out" "LOOP_AGENT_ENV" "...saying why"
        out=$(cd / && env -i PATH=/usr/bin:/bin HOME=/ LOOP_AGENT_ENV="$good" "$LOOP" seal --agent-env -- \
                sh -c 'echo agent-ran' 2>&1)
        st=$?
        ok $((st != 125)) "loop seal --agent-env refuses to run as root (exit $st)"
        ! grep -q agent-ran <<<"$out"
        ok $? "...without running the command" || diag "$out"
else
        skip "loop seal --agent-env" "this kernel has no Landlock ABI 3 (loop seal --print fails)"
fi

tap_done
