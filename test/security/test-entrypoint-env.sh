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
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"
: "${LOOP_SOURCE_DIR:=$(dirname "$(readlink -f "$0")")/../..}"
ENTRYPOINT=$LOOP_SOURCE_DIR/image/agent/entrypoint

[ "$(id -u)" -eq 0 ] || bail_out "test-entrypoint-env needs root (the entrypoint runs as root)"
command -v dash >/dev/null || bail_out "dash is missing (the image's /bin/sh)"
command -v unshare >/dev/null || bail_out "unshare is missing (util-linux)"

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

tap_done
