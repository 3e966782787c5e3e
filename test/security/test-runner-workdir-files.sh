#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# What the runner writes on the host into the agent's work dir: the run's MCP config, in .loop/ (which the
# agent may write), through a temporary name and a rename. From inside a real agent container (Podman and
# Docker), the agent leaves a FIFO under that temporary name, then a hard link to a file of its work dir:
# the gate refuses both; without the gate they are made, and the next run must start all the same (the
# runner's open of the FIFO waited for a reader for ever) and must not write through the link. And what
# it reads there: the project file, with the agent's identity (a hard link to a root-only file refused).
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/engine-test.sh
. "$lib/engine-test.sh"

# a run the runner never starts would wait for ever: this is far beyond what one takes
RUN_TIMEOUT_S=${RUN_TIMEOUT_S:-120}
engine_test_begin test-runner-workdir-files runner-files
build_test_rootfs "$T/rootfs" >/dev/null || bail_out "cannot build the test rootfs"

W=$T/work
TMPNAME=$W/.loop/.mcp-demo.json.tmp

run() {
        out=$(timeout "$RUN_TIMEOUT_S" "$LOOP" run -q demo "$@" 2>"$T/stderr") && st=0 || st=$?
        err=$(cat "$T/stderr")
}

# The project file is the agent's: the runner (root) reads it with the agent's identity. A hard link in
# .loop to a file only root can read (the agent makes one where fs.protected_hardlinks is 0, or to a file
# it may write but not read) must not be read for it: before, its values came back in the runner's
# messages. This fails before the engine is needed: the socket is one that does not exist.
mkdir -p "$T/etc/channels.d" "$W/.loop"
chown -R "$TEST_USER:" "$W"
echo '{ "mounts": ["ROOT-ONLY-SECRET"] }' >"$T/root-only.json"
chmod 0600 "$T/root-only.json"
ln "$T/root-only.json" "$W/.loop/config.json"
echo "{ \"engine\": { \"socket\": \"$T/no-engine.sock\" }, \"user\": \"$TEST_USER\" }" >"$T/etc/loop.json"
echo "{ \"work_dir\": \"$W\" }" >"$T/etc/channels.d/demo.json"
run "scenario:sh echo never"
like "$err" "config.json: cannot be read: Permission denied" \
        "the runner reads a project file linked to a root-only file as the agent: refused" || diag "$st $out $err"
unlike "$err$out" "ROOT-ONLY-SECRET" "...and nothing of that file comes back" || diag "$err"
rm -f "$W/.loop/config.json"

# The operator's loop.json for a run on the engine at $ENGINE_SOCK.
write_loop_json() {
        cat >"$T/etc/loop.json" <<EOF
{ "engine": { "socket": "$ENGINE_SOCK" }, "container_image": "$IMAGE", "user": "$TEST_USER",
  "container_memory_mb": 256, "container_keep_alive_sec": 0, "browser": { "enabled": false },
  "egress": { "enabled": false } }
EOF
}

for eng in podman docker; do
        engine_start "$eng" >/dev/null || { ok 1 "$eng: the engine starts"; diag "$(engine_log "$eng" 2>/dev/null | tail -20)"; continue; }
        import_test_image "$ENGINE_SOCK" "$IMAGE" "$T/rootfs" >/dev/null || { ok 1 "$eng: the test image imports"; engine_stop "$eng"; continue; }
        # PATH is the agent's: a project file putting a work dir directory first must not make the root
        # entrypoint run the agent's "awk" (or mkdir, chown, cat) as root, before the gate and the seal.
        rm -rf "${T:?}/etc" "${W:?}"
        mkdir -p "$T/etc/channels.d" "$W/.loop" "$W/bin"
        for tool in awk mkdir chown cat; do
                printf '#!/bin/sh\nid -u >>%s/bin/ran-as\nPATH=/usr/bin:/bin exec %s "$@"\n' "$W" "$tool" >"$W/bin/$tool"
                chmod 0755 "$W/bin/$tool"
        done
        echo "{ \"envs\": { \"PATH\": \"$W/bin:/usr/local/bin:/usr/bin:/bin\" } }" >"$W/.loop/config.json"
        chown -R "$TEST_USER:" "$W"
        write_loop_json
        echo "{ \"work_dir\": \"$W\" }" >"$T/etc/channels.d/demo.json"
        run 'scenario:sh echo "path=$PATH"'
        like "$out" "path=$W/bin:" "$eng: the agent gets the project's PATH" || diag "$st $err"
        ! grep -qx 0 "$W/bin/ran-as" 2>/dev/null
        ok $? "$eng: ...but the root entrypoint runs none of the work dir's tools" ||
                diag "ran as: $(tr '\n' ' ' <"$W/bin/ran-as" 2>/dev/null)"

        for mode in gated ungated; do
                rm -rf "${T:?}/etc" "${W:?}"
                mkdir -p "$T/etc/channels.d" "$W"
                echo 'the agent notes' >"$W/notes.txt"
                chown -R "$TEST_USER:" "$W"
                write_loop_json
                if [ "$mode" = gated ]; then
                        echo "{ \"work_dir\": \"$W\" }" >"$T/etc/channels.d/demo.json"
                else
                        echo "{ \"work_dir\": \"$W\", \"gates\": { \"agentgate\": { \"enabled\": false } } }" \
                                >"$T/etc/channels.d/demo.json"
                fi

                # the gate refuses the FIFO and the link; without it, the runner must hold on its own
                run "scenario:sh mkfifo $TMPNAME; echo rc=\$?"
                if [ "$mode" = gated ]; then
                        like "$out" "rc=[1-9]" "$eng/$mode: the gate refuses the agent a FIFO in .loop" || diag "$st $err"
                        # as a run without the gate would have left it
                        rm -f "$TMPNAME" && mkfifo "$TMPNAME" && chown "$TEST_USER:" "$TMPNAME"
                else
                        [ -p "$TMPNAME" ]
                        ok $? "$eng/$mode: the agent leaves a FIFO under the MCP config's temporary name in .loop" ||
                                diag "$st $out $err"
                fi
                run "scenario:sh echo second run"
                like "$out" "second run" "$eng/$mode: the next run starts all the same (a FIFO there does not block the runner)" ||
                        diag "exit status $st: $err"

                run "scenario:sh ln -f $W/notes.txt $TMPNAME; echo rc=\$?"
                if [ "$mode" = gated ]; then
                        like "$out" "rc=[1-9]" "$eng/$mode: the gate refuses the agent a hard link in .loop" || diag "$st $err"
                        runuser -u "$TEST_USER" -- ln -f "$W/notes.txt" "$TMPNAME"
                else
                        [ "$(stat -c %i "$TMPNAME" 2>/dev/null)" = "$(stat -c %i "$W/notes.txt")" ]
                        ok $? "$eng/$mode: the agent leaves a hard link to its notes under the temporary name" ||
                                diag "$st $out $err"
                fi
                run "scenario:sh echo third run"
                like "$out" "third run" "$eng/$mode: the next run starts" || diag "exit status $st: $err"
                is "$(cat "$W/notes.txt")" "the agent notes" "$eng/$mode: ...and its MCP config is not written through the link"
        done
        engine_stop "$eng" >/dev/null 2>&1
done

tap_done
