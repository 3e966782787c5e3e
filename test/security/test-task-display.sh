#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A task's prompt and name are the agent's text (schedule_task and edit_task through `loop mcp` end in the
# same tasks_request() as `loop task add`); `loop task show` and `loop task list` print them to the
# operator's terminal. Terminal escapes (clear the screen, set the title, OSC 52 into the clipboard), C1
# controls (U+009B is CSI on some terminals), DEL and bidi overrides must come out escaped, never as the
# bytes themselves. No root, no systemd: the CLI on a channel of a temp config and state dir.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"

: "${LOOP_BUILD_DIR:=$(dirname "$(readlink -f "$0")")/../../build}"
LOOP=$LOOP_BUILD_DIR/src/loop
[ -x "$LOOP" ] || bail_out "$LOOP is not built"

tmp=$(mktemp -d) || bail_out "mktemp failed"
atexit "rm -rf '$tmp'"
trap '_tap_run_atexit' EXIT
mkdir -p "$tmp/cfg/channels.d" "$tmp/state"
echo '{}' >"$tmp/cfg/channels.d/demo.json"
export LOOP_CONFIG_DIR=$tmp/cfg LOOP_STATE_DIR=$tmp/state LOOP_LOG_LEVEL=err

# ESC [2J (clear), OSC 0 (title) ended by BEL, OSC 52 (clipboard), C1 CSI, DEL; the name with RLO (U+202E)
prompt=$(printf 'hello \033[2J\033]0;owned\007\033]52;c;Y3VybCBldmlsfHNo\007 \302\23331m x\177 end')
name=$(printf 'nightly \342\200\256txt.exe')
# a byte the terminal would act on: C0 but the newline, DEL, C1 (UTF-8 C2 80..9F), bidi controls
raw='[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\x8e\x8f\xaa-\xae]|\xe2\x81[\xa6-\xa9]'
has_raw() { LC_ALL=C grep -qaP "$raw"; }

id=$("$LOOP" task add demo --type manual --name "$name" --json -- "$prompt" |
     python3 -c 'import json,sys; print(json.load(sys.stdin)["task"]["id"])')
like "$id" '^[0-9a-f]{8}$' "a task whose prompt and name hold terminal controls is recorded as it is"

out=$("$LOOP" task show demo "$id")
! has_raw <<<"$out"
ok $? "loop task show prints no control, escape or bidi character of the prompt or name" ||
        diag "$(LC_ALL=C od -c <<<"$out" | head -20)"
like "$out" 'prompt: hello \\x1b\[2J\\x1b\]0;owned\\x07' "...it shows them escaped (\\x1b)"
like "$out" 'name: nightly \\u202etxt\.exe' "...and the bidi override in the name as \\u202e"

out=$("$LOOP" task list demo)
! has_raw <<<"$out"
ok $? "loop task list prints no control, escape or bidi character of the prompt" ||
        diag "$(LC_ALL=C od -c <<<"$out" | head -20)"
like "$out" "$id +manual +enabled +- +hello \\\\x1b" "...it shows the prompt's start escaped"

out=$("$LOOP" task show demo "$id" --json)
like "$out" '"prompt": *"hello \\u001b\[2J' "loop task show --json keeps the prompt, JSON-escaped"
! has_raw <<<"$out"
ok $? "loop task show --json prints no C1 or bidi character as itself either (JSON escapes \\u009b, \\u202e)" ||
        diag "$(LC_ALL=C od -c <<<"$out" | head -20)"
like "$out" '"name": *"nightly \\u202etxt\.exe"' "...the name's bidi override as \\u202e"
is "$(python3 -c 'import json,sys; t = json.load(sys.stdin)["task"]; print(t["prompt"] == sys.argv[1], t["name"] == sys.argv[2])' \
        "$prompt" "$name" <<<"$out")" "True True" "...and the JSON reads back to the prompt and name as they were"
out=$("$LOOP" task list demo --json)
! has_raw <<<"$out"
ok $? "loop task list --json prints none as itself" || diag "$(LC_ALL=C od -c <<<"$out" | head -20)"

tap_done
