#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# loop-generator as a tool an admin runs by hand (issue 24 item 8): --help and --version answer instead
# of taking the option for an output dir, and --dryrun prints what would be generated (units and links
# in full, files only root may read by name only), says why a channel is skipped, and writes nothing.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"

GEN=${1:?usage: test-generator-cli.sh LOOP_GENERATOR LOOP}
LOOP=${2:?usage: test-generator-cli.sh LOOP_GENERATOR LOOP}
cfg=$(mktemp -d "${TMPDIR:-/tmp}/loop-gen-cli.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$cfg'"
mkdir -p "$cfg/channels.d"
echo '{ "anthropic_api_key": "sk-ant-never-printed-0123456789" }' >"$cfg/loop.json"
chmod 0600 "$cfg/loop.json"
echo '{ "egress": { "rules": [ { "host": "api.test", "decision": "credential", "credential": { "header": "Authorization", "dummy": "ghp_dummy0123", "secret": "ghp_SECRET_never_printed" } } ] } }' \
        >"$cfg/channels.d/demo.json"
echo '{ "work_dir": 5 }' >"$cfg/channels.d/broken.json"
chmod 0644 "$cfg"/channels.d/*.json

out=$("$GEN" --help 2>&1) && st=0 || st=$?
is "$st" 0 "--help exits 0"
like "$out" "NORMAL_DIR .*--dryrun" "--help prints the usage and the options"
out=$("$GEN" --version 2>&1)
like "$out" "^loop-generator [0-9]" "--version prints the version"
out=$("$GEN" --frobnicate 2>&1) && st=0 || st=$?
is "$st" 1 "an unknown option is refused"

before=$(ls -d /tmp/loop-generator-dryrun.* 2>/dev/null | wc -l)
LOOP_CONFIG_DIR=$cfg "$GEN" --dryrun >"$cfg/out" 2>"$cfg/err" && st=0 || st=$?
is "$st" 0 "--dryrun exits 0 with an invalid channel present"
out=$(cat "$cfg/out")
like "$out" "---loop-demo.slice---" "--dryrun prints the channel's slice"
like "$out" "---loop-channel@demo.target---.*Wants=loop-agent@demo.path" "...its units in full"
like "$out" "---loop-agent@demo.service.d/50-channel.conf---.*Environment=\"LOOP_CONFIG_DIR=$cfg\"" "...and drop-ins"
like "$out" "---loop.target.wants/loop-reconcile.timer---.*-> .*/loop-reconcile.timer" "...and links with their targets"
like "$out" "---loop-egress/demo.gateway.json---.*mode 0600: not shown" "a file only root may read is named, not shown"
unlike "$out" "ghp_SECRET_never_printed|sk-ant-never-printed" "no secret is printed"
like "$(cat "$cfg/err")" "broken.json: invalid, skipping channel broken: work_dir" "a skipped channel is said with its reason"
unlike "$out" "broken" "nothing is generated for it"
is "$(ls -d /tmp/loop-generator-dryrun.* 2>/dev/null | wc -l)" "$before" "--dryrun leaves no directory behind"
out=$("$GEN" --dryrun /tmp 2>&1) && st=0 || st=$?
is "$st" 1 "--dryrun takes no output directories"

# `loop channels` beside it: its columns fit a long name and a name in UTF-8 (shown escaped if invalid).
echo '{}' >"$cfg/channels.d/caf$(printf '\xc3\xa9')-l$(printf '\xc3\xa4')uft.json"
echo '{}' >"$cfg/channels.d/a-rather-long-channel-name-for-the-table.json"
chmod 0644 "$cfg"/channels.d/*.json
table=$(LOOP_CONFIG_DIR=$cfg "$LOOP" channels 2>/dev/null)
starts=$(python3 -c '
import re, sys
print(len({re.search(r" (STATE|valid|invalid) ", l).start() for l in sys.stdin.read().splitlines()}))' <<<"$table")
is "$starts" 1 "loop channels: the STATE column starts at the same character on every line" || diag "$table"

tap_done
