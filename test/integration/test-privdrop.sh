#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# `loop privdrop` as root on the host: the command it executes reads its own /proc/self/status, which must
# show the requested ids and groups, every capability set empty and no_new_privs set, also when the caller
# had inheritable and ambient capabilities; the refusals and env(1)-style exit statuses.
# Needs root (it changes uids); fails, not skips, without it.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"

: "${LOOP_BUILD_DIR:=$(dirname "$(readlink -f "$0")")/../../build}"
LOOP=$LOOP_BUILD_DIR/src/loop

[ "$(id -u)" -eq 0 ] || bail_out "test-privdrop needs root"
[ -x "$LOOP" ] || bail_out "$LOOP is not built"
command -v setpriv >/dev/null || bail_out "setpriv (util-linux) is needed to set up capabilities"

ZERO=0000000000000000
U=4242
G=4343

# field STATUS_TEXT NAME: the value of "NAME:" (tabs between values become spaces, trailing space cut).
field() {
        awk -F'\t' -v n="$2:" '$1 == n { $1 = ""; sub(/^ +/, ""); sub(/ +$/, ""); print; exit }' <<<"$1"
}

# What the dropped process sees of itself: /proc/self/status of `cat`, executed by privdrop.
st=$("$LOOP" privdrop --uid $U --gid $G --groups 5,6,$G -- cat /proc/self/status 2>&1)
ok $? "privdrop --uid $U --gid $G --groups 5,6,$G executes the command" || diag "$st"
is "$(field "$st" Uid)" "$U $U $U $U" "real, effective, saved and fs uid are $U"
is "$(field "$st" Gid)" "$G $G $G $G" "real, effective, saved and fs gid are $G"
is "$(field "$st" Groups)" "5 6 $G" "the supplementary groups are exactly 5 6 $G"
for set in CapInh CapPrm CapEff CapBnd CapAmb; do
        is "$(field "$st" $set)" $ZERO "$set is empty"
done
is "$(field "$st" NoNewPrivs)" 1 "no_new_privs is set"

st=$("$LOOP" privdrop --uid $U --gid $G -- cat /proc/self/status 2>&1)
is "$(field "$st" Groups)" "" "without --groups there are no supplementary groups"

# A caller with inheritable and ambient capabilities (which survive exec as an unprivileged user).
st=$(setpriv --inh-caps +net_raw,+sys_nice --ambient-caps +net_raw,+sys_nice \
        "$LOOP" privdrop --uid $U --gid $G -- cat /proc/self/status 2>&1)
ok $? "privdrop runs with inheritable and ambient capabilities set" || diag "$st"
is "$(field "$st" CapAmb)" $ZERO "the ambient set is cleared"
is "$(field "$st" CapInh)" $ZERO "the inheritable set is cleared"
is "$(field "$st" CapPrm)" $ZERO "the permitted set stays empty across exec"

# Without CAP_SETPCAP (a container given only the entrypoint's capabilities) the bounding set cannot be
# changed: privdrop goes on, everything else is still empty.
st=$(setpriv --bounding-set -setpcap "$LOOP" privdrop --uid $U --gid $G -- cat /proc/self/status 2>&1)
ok $? "privdrop works without CAP_SETPCAP" || diag "$st"
is "$(field "$st" CapBnd)" "$(field "$(setpriv --bounding-set -setpcap cat /proc/self/status)" CapBnd)" \
        "without CAP_SETPCAP the bounding set is left as it was"
for set in CapInh CapPrm CapEff CapAmb; do
        is "$(field "$st" $set)" $ZERO "without CAP_SETPCAP $set is still empty"
done
is "$(field "$st" NoNewPrivs)" 1 "without CAP_SETPCAP no_new_privs is still set"

# The drop is for good: the command cannot become root again.
if out=$("$LOOP" privdrop --uid $U --gid $G -- python3 -c 'import os; os.setuid(0)' 2>&1); then
        ok 1 "the command cannot setuid(0) back"
else
        [[ $out == *PermissionError* ]]
        ok $? "the command cannot setuid(0) back" || diag "$out"
fi

# shellcheck disable=SC2016 # expanded by the command's shell
out=$(FOO='bar baz' "$LOOP" privdrop --uid $U --gid $G -- sh -c 'echo "$FOO"' 2>&1)
is "$out" "bar baz" "the environment is passed on unchanged"

# shellcheck disable=SC2016
out=$("$LOOP" privdrop --uid $U --gid $G sh -c 'echo "$0 $1"' --uid x 2>&1)
is "$out" "--uid x" "options after the command are the command's, even without --"

"$LOOP" privdrop --uid $U --gid $G -- sh -c 'exit 7' >/dev/null 2>&1
is $? 7 "the command's exit status is passed on"

# Refusals: exit 125 and a message that says why.
refused() {
        local name=$1 pattern=$2 out status
        shift 2
        out=$("$LOOP" privdrop "$@" 2>&1) && status=0 || status=$?
        if [ $status -eq 125 ] && [[ $out =~ $pattern ]]; then
                ok 0 "$name"
        else
                ok 1 "$name"
                diag "privdrop $* -> exit status $status, output: $out"
        fi
}
refused "uid 0 is refused" "Refusing to run .* as uid 0" --uid 0 --gid $G -- id
refused "gid 0 is refused" "Refusing to run .* with gid 0" --uid $U --gid 0 -- id
refused "supplementary group 0 is refused" "Refusing supplementary group 0" --uid $U --gid $G --groups 5,0 -- id
refused "a uid that is not a number is refused" 'Invalid --uid "alice"' --uid alice --gid $G -- id
refused "uid -1 is refused" 'Invalid --uid "-1"' --uid -1 --gid $G -- id
refused "uid 4294967295 ((uid_t) -1) is refused" 'Invalid --uid' --uid 4294967295 --gid $G -- id
refused "a gid that is not a number is refused" 'Invalid --gid "1x"' --uid $U --gid 1x -- id
refused "an empty field in --groups is refused" 'Invalid --groups "5,,6"' --uid $U --gid $G --groups 5,,6 -- id
refused "a missing --gid is refused" "needs both --uid and --gid" --uid $U -- id
refused "a missing command is refused" "needs a command" --uid $U --gid $G
refused "an unknown option is refused" "unrecognized option" --uid $U --gid $G --bogus -- id

out=$(setpriv --reuid $U --regid $G --clear-groups "$LOOP" privdrop --uid 4444 --gid 4444 -- id 2>&1)
status=$?
is "$status" 125 "an unprivileged caller gets exit status 125"
like "$out" "needs CAP_SETUID and CAP_SETGID" "  ... and is told it needs root"

st=$("$LOOP" privdrop --allow-root --uid 0 --gid 0 -- cat /proc/self/status 2>&1)
ok $? "--allow-root permits uid 0" || diag "$st"
is "$(field "$st" Uid)" "0 0 0 0" "  ... which runs as uid 0"
is "$(field "$st" CapEff) $(field "$st" CapPrm) $(field "$st" CapBnd)" "$ZERO $ZERO $ZERO" \
        "  ... without any capability"

# Exit statuses as env(1) has them.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/loop-privdrop.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$tmp'"
chmod 0755 "$tmp"
printf '#!/bin/sh\nexit 0\n' >"$tmp/not-executable"
chmod 0644 "$tmp/not-executable"

out=$("$LOOP" privdrop --uid $U --gid $G -- "$tmp/does-not-exist" 2>&1)
is $? 127 "a command that does not exist gives exit status 127"
like "$out" "Failed to execute .*/does-not-exist: No such file or directory" "  ... with the reason"
out=$(PATH=/nonexistent "$LOOP" privdrop --uid $U --gid $G -- no-such-command 2>&1)
is $? 127 "a command not found in \$PATH gives exit status 127"
out=$("$LOOP" privdrop --uid $U --gid $G -- "$tmp/not-executable" 2>&1)
is $? 126 "a command that is not executable gives exit status 126"
like "$out" "Permission denied" "  ... with the reason"

tap_done
