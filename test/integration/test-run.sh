#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# `loop run` end to end on BOTH real engines (a private podman service and a private dockerd): a test
# image (busybox, the real entrypoint, loop, a scripted fake agent) runs every path of seed 001's
# lifecycle, and the checks look from inside the container: uid, capabilities, read-only root, limits,
# env, mounts, copied files. Then the failures: agent errors and retries, a crash, no result, a missing
# image, a missing engine, an invalid channel, Ctrl-C, the timeout, an engine dying mid-run.
# Needs root; fails, not skips, without it.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/engine-test.sh
. "$lib/engine-test.sh"

engine_test_begin test-run run
HOME_T=$(getent passwd "$TEST_USER" | cut -d: -f6)
mkdir -p "$HOME_T" && chown "$UID_T:$GID_T" "$HOME_T"
echo '{"copied": "from the host"}' >"$HOME_T/.claude.json"
chown "$UID_T:$GID_T" "$HOME_T/.claude.json"

build_test_rootfs "$T/rootfs" >/dev/null || bail_out "cannot build the test rootfs"

# run CHANNEL ARGS...: loop run with the test config; output in $out, stderr in $err, status in $st.
run() {
        out=$("$LOOP" run "$@" 2>"$T/stderr") && st=0 || st=$?
        err=$(cat "$T/stderr")
        [ "$st" = 0 ] || diag "loop run $* -> $st: $(tail -5 "$T/stderr")"
}

containers_left() {
        engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/json?all=1&filters=%7B%22label%22%3A%5B%22app%3Dloop-agent%22%5D%7D" |
                grep -o '"Id"' | wc -l
}

write_config() {
        local eng=$1
        rm -rf "$T/etc" "$T/work"
        mkdir -p "$T/etc/channels.d" "$T/work/sub" "$T/hostdir"
        chown -R "$UID_T:$GID_T" "$T/work"
        echo "from the host dir" >"$T/hostdir/file.txt"
        cat >"$T/etc/loop.json" <<EOF
{
  "engine": { "socket": "$ENGINE_SOCK" },
  "container_image": "$IMAGE",
  "user": "$TEST_USER",
  "anthropic_api_key": "sk-test-dummy",
  "container_memory_mb": 256,
  "container_keep_alive_sec": 0,
  "browser": { "enabled": false }
}
EOF
        cat >"$T/etc/channels.d/demo.json" <<EOF
{
  "work_dir": "$T/work",
  "envs": { "CUSTOM_VAR": "custom value", "TILDE_VAR": "~/cache", "NUMBER_VAR": 42 },
  "mounts": [ "$T/hostdir:/hostdir:ro", "loop-test-vol-$eng:/vol", "/nonexistent/path:/nothing" ]
}
EOF
        cat >"$T/etc/channels.d/slow.json" <<EOF
{ "work_dir": "$T/work", "container_timeout_sec": 3 }
EOF
        cat >"$T/etc/channels.d/kept.json" <<EOF
{ "work_dir": "$T/work", "container_keep_alive_sec": 10 }
EOF
        echo '{ "container_memory_mb": "lots" }' >"$T/etc/channels.d/broken.json"
        chmod 0640 "$T"/etc/*.json "$T"/etc/channels.d/*.json
        export LOOP_CONFIG_DIR=$T/etc
}

for eng in podman docker; do
        engine_start "$eng" >/dev/null || { ok 1 "$eng: the engine starts"; diag "$(engine_log "$eng" 2>/dev/null | tail -20)"; continue; }
        import_test_image "$ENGINE_SOCK" "$IMAGE" "$T/rootfs" >/dev/null || { ok 1 "$eng: the test image imports"; engine_stop "$eng"; continue; }
        write_config "$eng"

        # --- the happy path ---
        run demo hello
        is "$st" 0 "$eng: loop run demo hello succeeds"
        like "$out" "Hello" "$eng: the agent's turn is printed as it streams"
        like "$err" "session: sess-" "$eng: the session id is printed"
        is "$(containers_left)" 0 "$eng: the container is removed after the run"
        [ ! -e "$T/work/.loop/mcp-demo.json" ]
        ok $? "$eng: the MCP config is removed after the run"
        # Two runs of a channel share that path: one that ends must not take away the next one's file.
        "$LOOP" run -q demo "scenario:sleep 3" >/dev/null 2>&1 &
        bg=$!
        for ((i = 0; i < 600; i++)); do [ -e "$T/work/.loop/mcp-demo.json" ] && break; sleep 0.1; done
        cp -p "$T/work/.loop/mcp-demo.json" "$T/work/.loop/.mcp-next" && mv "$T/work/.loop/.mcp-next" "$T/work/.loop/mcp-demo.json"
        wait "$bg"
        [ -e "$T/work/.loop/mcp-demo.json" ]
        ok $? "$eng: a run leaves the MCP config another run of the channel wrote meanwhile"
        rm -f "$T/work/.loop/mcp-demo.json"

        run -q demo hello
        is "$st" 0 "$eng: a quiet run (batch mode: wait, then read the output) succeeds"
        is "$out" "hello from the fake agent" "$eng: ...and prints only the result"
        run -q demo scenario:huge-line
        is "$st" 0 "$eng: batch mode skips a 2 MB line too"

        # the agent's text on the operator's terminal: escaped, never acted on
        run demo scenario:escapes
        is "$st" 0 "$eng: a run whose agent writes terminal escapes succeeds"
        like "$out" 'turn hi \\x1b\]52;c;Y3VybA==\\x07 \\x1b\[2J \\u009b31m \\u202eend' "$eng: ...its turn is printed escaped"
        like "$out" 'result hi \\x1b\]52;c;Y3VybA==\\x07' "$eng: ...and so is its result"
        is "$(LC_ALL=C grep -cP '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80\xae' <<<"$out")" 0 \
                "$eng: ...no byte of it the terminal would act on"

        run --json demo hello
        is "$st" 0 "$eng: --json succeeds"
        bad=$(grep -vc '^{.*}$' <<<"$out")
        is "$bad" 0 "$eng: --json prints one JSON event per line"
        like "$out" '"type":"result"' "$eng: --json includes the result event"

        # --- what the agent sees ---
        run demo scenario:env
        is "$st" 0 "$eng: the env scenario succeeds"
        like "$out" "uid=$UID_T\\(" "$eng: the agent runs as the channel's user ($UID_T)"
        like "$out" "gid=$GID_T\\(" "$eng: ...with its group"
        like "$out" "CapEff:[[:space:]]+0000000000000000" "$eng: the agent has no effective capabilities"
        like "$out" "CapBnd:[[:space:]]+0000000000000000" "$eng: the agent's bounding set is empty"
        like "$out" "CapPrm:[[:space:]]+0000000000000000" "$eng: the agent has no permitted capabilities"
        like "$out" "NoNewPrivs:[[:space:]]+1" "$eng: no_new_privs is set"
        like "$out" "HOME=$HOME_T" "$eng: HOME is the host user's home path"
        like "$out" "HOST_USER=$TEST_USER" "$eng: HOST_USER is the host user"
        like "$out" "CHANNEL_ID=demo" "$eng: CHANNEL_ID is the channel"
        like "$out" "PATH=$HOME_T/.local/bin:" "$eng: PATH starts with the user's local bin"
        like "$out" "TZ=[A-Za-z]" "$eng: TZ is set"
        # The egress gateway is on by default: the agent holds only a dummy key (here, without systemd, no
        # gateway gave it one of its own: nothing can spend it).
        like "$out" "ANTHROPIC_API_KEY=sk-loop-no-gateway" "$eng: the agent holds a dummy key, not the real one"
        unlike "$out" "sk-test-dummy" "$eng: ...and never the configured one"
        like "$out" "CUSTOM_VAR=custom value" "$eng: custom envs are passed"
        like "$out" "TILDE_VAR=$HOME_T/cache" "$eng: ~ in custom envs is expanded"
        like "$out" "NUMBER_VAR=42" "$eng: non-string envs are stringified"

        run demo "scenario:sh touch /rootfs-probe 2>&1; echo rc=\$?"
        like "$out" "rc=[1-9]" "$eng: the root file system is read-only"
        run demo "scenario:sh touch /tmp/p && echo tmp-ok"
        like "$out" "tmp-ok" "$eng: /tmp is writable"
        run demo "scenario:sh cat $HOME_T/.claude.json"
        like "$out" "from the host" "$eng: ~/.claude.json is copied into the container"
        run demo "scenario:sh stat -c %u $HOME_T/.claude.json"
        like "$out" "$UID_T" "$eng: the copied file belongs to the agent"
        # It is written into the channel's home on the host as the agent's user, never through a symlink
        # the agent left there: one at the name is replaced, the file it names is left alone.
        echo "root's file" >"$T/victim" && chmod 0666 "$T/victim"
        ln -sfn "$T/victim" "$LOOP_STATE_DIR/demo/home/.claude.json"
        run demo "scenario:sh cat $HOME_T/.claude.json"
        like "$out" "from the host" "$eng: ~/.claude.json replaces a symlink the agent planted in its home"
        is "$(cat "$T/victim")" "root's file" "$eng: ...and nothing is written through the symlink"
        is "$(stat -c '%F %u' "$LOOP_STATE_DIR/demo/home/.claude.json")" "regular file $UID_T" \
                "$eng: ...the file in the channel's home on the host is the agent's"
        run demo "scenario:sh cat /hostdir/file.txt; touch /hostdir/x 2>&1; echo rc=\$?"
        like "$out" "from the host dir" "$eng: a configured host mount is visible"
        like "$out" "rc=[1-9]" "$eng: a :ro mount is read-only"
        run demo "scenario:sh stat -c %u /vol"
        like "$out" "$UID_T" "$eng: a named volume is chowned to the agent (CHOWN_PATHS)"
        like "$err" "/nonexistent/path" "$eng: a mount with a missing host path is skipped with a notice"
        run demo "scenario:sh pwd; echo hi > $T/work/sub/written; cat $T/work/sub/written"
        like "$out" "$T/work" "$eng: the agent starts in the work dir"
        [ "$(cat "$T/work/sub/written" 2>/dev/null)" = hi ]
        ok $? "$eng: the agent writes to the work dir on the host"
        run demo "scenario:sh cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/pids.max 2>/dev/null; true"
        like "$out" "4096" "$eng: the pids limit is set"
        run demo "scenario:sh cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max 2>/dev/null; true"
        like "$out" "268435456" "$eng: the memory limit is container_memory_mb"

        # The project config, at run time.
        mkdir -p "$T/work/.loop" && echo '{"envs": {"PROJECT_VAR": "from the project"}}' >"$T/work/.loop/config.json"
        run demo scenario:env
        like "$out" "PROJECT_VAR=from the project" "$eng: the project config is merged at run time"
        rm -f "$T/work/.loop/config.json"

        # --- the stream and the retries ---
        run demo scenario:huge-line
        is "$st" 0 "$eng: a 2 MB line in the output is skipped and the run succeeds"
        run demo scenario:no-result
        is "$st" 1 "$eng: no result event is an error (exit 1)"
        like "$err" "without a result" "$eng: ...saying so"
        run demo scenario:is-error
        is "$st" 1 "$eng: an is_error result is an error"
        like "$err" "session: sess-" "$eng: ...that still reports the session id"
        rm -f "$LOOP_STATE_DIR/demo/home/.fake-agent/calls"
        run demo scenario:too-long
        is "$st" 0 "$eng: \"Prompt is too long\" is compacted and retried successfully"
        calls=$(cat "$LOOP_STATE_DIR/demo/home/.fake-agent/calls" 2>/dev/null)
        like "$calls" "/compact" "$eng: ...by running /compact on the session"
        run demo scenario:crash
        is "$st" 1 "$eng: an agent crash is an error"
        like "$err" "exit status 3" "$eng: ...naming the exit status"
        is "$(containers_left)" 0 "$eng: no container is left after the failures"

        # --- the registry: a finished container is kept for container_keep_alive_sec, then removed ---
        run kept hello
        is "$st" 0 "$eng: a run on a channel with container_keep_alive_sec=10 succeeds"
        is "$(containers_left)" 1 "$eng: ...and its stopped container is kept for its logs"
        st_json=$("$LOOP" status kept --json 2>/dev/null)
        like "$st_json" '"status": *"pending-removal"' "$eng: loop status shows it pending removal"
        like "$st_json" '"remove_at_usec"' "$eng: ...with the time of its removal"
        like "$(cat "$LOOP_STATE_DIR/kept/registry.json" 2>/dev/null)" '"type": *"agent"' \
                "$eng: the channel's registry file records the container and its type"
        "$LOOP" reconcile kept 2>"$T/rec.err"
        is "$(containers_left)" 1 "$eng: loop reconcile keeps it before its time"
        # Past its time by the registry's own clock (a fixed sleep would be too short or needlessly long;
        # the keep-alive is long enough that a loaded machine still runs the reconcile above before it).
        remove_at=$(python3 -c 'import json, sys
print(max([e.get("remove_at_usec", 0) for e in json.load(open(sys.argv[1])).get("containers", [])] + [0]))' \
                "$LOOP_STATE_DIR/kept/registry.json" 2>/dev/null)
        past_remove_at() { [ "$(date +%s%6N)" -gt "${remove_at:-0}" ]; }
        wait_for 30 past_remove_at
        "$LOOP" reconcile kept 2>"$T/rec.err"
        is "$?" 0 "$eng: loop reconcile succeeds"
        is "$(containers_left)" 0 "$eng: ...and removes the container once its keep-alive is over"
        like "$(cat "$T/rec.err")" "keep-alive-expired" "$eng: ...and says so"
        like "$(cat "$LOOP_STATE_DIR/kept/registry.json")" '"containers": *\[[[:space:]]*\]' "$eng: ...and drops it from the registry"
        # A container removed behind loop's back is dropped from the registry by the next reconcile.
        run kept hello
        kid=$(engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/json?all=1&filters=%7B%22label%22%3A%5B%22loop-channel%3Dkept%22%5D%7D" |
                grep -o '"Id":"[0-9a-f]*"' | head -1 | cut -d'"' -f4)
        engine_api "$ENGINE_SOCK" -X DELETE "http://d/v1.41/containers/$kid?force=1" >/dev/null
        "$LOOP" reconcile kept 2>"$T/rec.err"
        like "$(cat "$T/rec.err")" "gone from the engine" "$eng: reconcile notices a container removed behind loop's back"
        unlike "$(cat "$LOOP_STATE_DIR/kept/registry.json")" "${kid:-none}" "$eng: ...and drops it from the registry"
        # Restore: a lost registry file is rebuilt from the engine's labelled containers, without events.
        run kept hello
        rm -f "$LOOP_STATE_DIR/kept/registry.json"
        "$LOOP" reconcile kept 2>"$T/rec.err"
        like "$(cat "$T/rec.err")" "restored from the engine: 1 container" "$eng: a lost registry is restored from the engine"
        unlike "$(cat "$T/rec.err")" "registered" "$eng: ...without registration events"
        like "$("$LOOP" status kept --json 2>/dev/null)" '"status": *"pending-removal"' "$eng: ...with the container's status"
        "$LOOP" cleanup kept >/dev/null 2>&1
        is "$(containers_left)" 0 "$eng: loop cleanup removes the kept container"

        # --- under the gate (on by default), files the agent creates honour its umask and identity ---
        run -q demo "scenario:sh umask 027; echo x >$T/work/umask-test; mkdir $T/work/umask-dir; stat -c '%a %u' $T/work/umask-test $T/work/umask-dir"
        like "$out" "640 $UID_T.*750 $UID_T" "$eng: a file and a dir created under the gate get the agent's umask and owner"
        rm -rf "$T/work/umask-test" "$T/work/umask-dir"

        # --- loop shell: the channel's one shell container, as the agent user ---
        shells() {
                engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/json?all=1&filters=%7B%22label%22%3A%5B%22loop-type%3Dshell%22%5D%7D" |
                        grep -o '"Id":"[0-9a-f]*"' | cut -d'"' -f4 | sort -u
        }
        sh_out=$(printf 'id -u\necho "home=$HOME"\nexit 3\n' | "$LOOP" shell kept 2>"$T/shell.err")
        sh_st=$?
        like "$sh_out" "^$UID_T" "$eng: loop shell runs the shell as the agent user (stdin piped)" || diag "$(tail -5 "$T/shell.err")"
        like "$sh_out" "home=$HOME_T" "$eng: ...with the agent's HOME"
        is "$sh_st" 3 "$eng: ...and exits with the shell's status"
        first=$(shells)
        is "$(echo "$first" | grep -c .)" 1 "$eng: one shell container exists"
        like "$("$LOOP" status kept --json 2>/dev/null)" '"type": *"shell"[^}]*"status": *"pending-removal"' \
                "$eng: after the last session it is stopped, pending removal"
        is "$("$LOOP" shell kept -- sh -c 'echo again' 2>/dev/null)" again "$eng: loop shell -- CMD runs CMD"
        is "$(shells)" "$first" "$eng: a later shell reuses the same container (its removal cancelled)"
        # Two terminals at once: the lock makes them share one container.
        "$LOOP" shell kept -- sh -c 'sleep 2; cat /etc/hostname' >"$T/sh1" 2>/dev/null &
        p1=$!
        "$LOOP" shell kept -- sh -c 'sleep 2; cat /etc/hostname' >"$T/sh2" 2>/dev/null &
        p2=$!
        wait $p1 $p2
        [ -s "$T/sh1" ] && [ "$(cat "$T/sh1")" = "$(cat "$T/sh2")" ]
        ok $? "$eng: two concurrent shells run in the same container" || diag "$(cat "$T/sh1" "$T/sh2")"
        is "$(shells | grep -c .)" 1 "$eng: ...and no second shell container is made"
        # A session is an exec beside the entrypoint: it waits for the entrypoint's last step
        # (/run/loop-etc/ready), so it never runs before the agent user, HOME and the egress relay are there.
        # Seen through the container's root from here: taken away, a new session waits; given back, it runs.
        # (A session held open keeps the container running meanwhile.)
        sid=$(shells)
        # wait_shell_ready: until the shell container runs and its entrypoint is done; $ready is the file.
        wait_shell_ready() {
                local spid
                for _ in $(seq 300); do
                        spid=$(engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/$sid/json" |
                               python3 -c 'import json, sys; print(json.load(sys.stdin)["State"]["Pid"])')
                        ready=/proc/$spid/root/run/loop-etc/ready
                        [ "${spid:-0}" -gt 0 ] && [ -e "$ready" ] && return 0
                        sleep 0.1
                done
                return 1
        }
        # waiting_for_ready PID: that `loop shell` is in its wait for the ready file (it watches the
        # container's main process through a pidfd meanwhile, and only then).
        waiting_for_ready() {
                local fd
                for fd in "/proc/$1/fd/"*; do [ "$(readlink "$fd" 2>/dev/null)" = 'anon_inode:[pidfd]' ] && return 0; done
                return 1
        }
        "$LOOP" shell kept -- sleep 120 >/dev/null 2>&1 &
        hold=$!
        wait_shell_ready
        [ -e "$ready" ]
        ok $? "$eng: the shell container's entrypoint says it is done (/run/loop-etc/ready)"
        rm -f "$ready"
        "$LOOP" shell kept -- sh -c 'echo ran' >"$T/sh3" 2>"$T/sh3.err" &
        p3=$!
        wait_for 60 waiting_for_ready "$p3"
        sleep 0.5
        kill -0 "$p3" 2>/dev/null && [ ! -s "$T/sh3" ]
        ok $? "$eng: a session does not start before the entrypoint is done" || diag "$(cat "$T/sh3" "$T/sh3.err")"
        touch "$ready"
        wait "$p3"
        is "$(cat "$T/sh3")" ran "$eng: ...and runs once it is" || diag "$(cat "$T/sh3.err")"
        rm -f "$ready"
        "$LOOP" shell kept -- sh -c 'echo ran' >"$T/sh4" 2>"$T/sh4.err" &
        p4=$!
        # killed while the session waits, not before it has looked (it would start the container again)
        wait_for 60 waiting_for_ready "$p4"
        engine_api "$ENGINE_SOCK" -X POST "http://d/v1.41/containers/$sid/kill" >/dev/null
        wait "$p4"
        sh_st=$?
        ok $((sh_st != 0 ? 0 : 1)) "$eng: a container that ends while a session waits fails the session" ||
                diag "$(cat "$T/sh4" "$T/sh4.err")"
        like "$(cat "$T/sh4.err")" "stopped while it started" "$eng: ...saying so"
        wait "$hold"
        # One terminal's session ends while another's is being opened: the opening one holds the channel's
        # registry lock until its exec runs, so the ending one does not stop the container under it. (The
        # ready file taken away keeps the opening one inside its open while the other session ends.)
        "$LOOP" shell kept -- sleep 2 >/dev/null 2>&1 &
        pa=$!
        wait_shell_ready
        rm -f "$ready"
        "$LOOP" shell kept -- sh -c 'echo opened' >"$T/sh5" 2>"$T/sh5.err" &
        pb=$!
        sleep 4
        touch "$ready"
        wait "$pb"
        is "$(cat "$T/sh5")" opened "$eng: a session opened while another ends runs (the ending one leaves the container running)" ||
                diag "$(cat "$T/sh5.err")"
        wait "$pa"
        tty_out=$(script -qec "$LOOP shell kept -- sh -c 'tty; stty size'" /dev/null </dev/null 2>&1 | tr -d '\r')
        like "$tty_out" "/dev/pts/" "$eng: with a terminal, the shell gets a pseudo-terminal"
        is "$("$LOOP" shell kept -- sh -c 'touch /usr/x 2>/dev/null || echo ro' 2>/dev/null)" ro "$eng: the shell container's root is read-only"
        "$LOOP" cleanup kept >/dev/null 2>&1
        is "$(shells | grep -c .)" 0 "$eng: loop cleanup removes the shell container"

        # --- the runs that cannot start ---
        run --image localhost/no-such-image:1 demo hello
        is "$st" 2 "$eng: a missing image fails with exit 2"
        like "$err" "loop image build" "$eng: ...telling how to build it"
        run broken hello
        is "$st" 2 "$eng: an invalid channel is refused"
        like "$err" "container_memory_mb" "$eng: ...naming the bad key"
        run nosuch hello
        is "$st" 2 "$eng: an unknown channel is refused"
        LOOP_ENGINE_SOCKET=/nonexistent.sock run demo hello
        is "$st" 0 "$eng: engine.socket in config wins over LOOP_ENGINE_SOCKET"

        # --- stopping ---
        "$LOOP" run demo "scenario:sleep 60" >/dev/null 2>"$T/int.err" &
        pid=$!
        for _ in $(seq 600); do [ "$(containers_left)" -gt 0 ] && break; sleep 0.1; done
        sleep 1
        kill -INT "$pid"
        wait "$pid"
        is "$?" 130 "$eng: Ctrl-C ends loop run with status 130"
        is "$(containers_left)" 0 "$eng: ...and removes the container"

        # The reader of its output goes away (`loop run demo x | head -2`): SIGPIPE interrupts the run like
        # Ctrl-C instead of killing loop mid-write, so nothing is left behind.
        # (--json: the agent's init event is written at once, while the run goes on for 3 s.)
        { "$LOOP" run --json demo "scenario:sleep 3" 2>"$T/pipe.err"; echo $? >"$T/pipe.st"; } | true
        is "$(cat "$T/pipe.st")" 141 "$eng: loop run whose reader went away exits 128+SIGPIPE"
        [ ! -e "$T/work/.loop/mcp-demo.json" ]
        ok $? "$eng: ...and removes the run's MCP config from the work dir"
        unlike "$(cat "$LOOP_STATE_DIR/demo/registry.json" 2>/dev/null)" '"status": *"running"' \
                "$eng: ...and the registry does not say the container is running"
        is "$(containers_left)" 0 "$eng: ...and the container is gone"

        run slow "scenario:sleep 60"
        is "$st" 2 "$eng: a run past container_timeout_sec fails"
        like "$err" "did not finish within 3 s" "$eng: ...saying why"
        is "$(containers_left)" 0 "$eng: ...and removes the container"

        # The engine dies mid-run: a clear error, no hang (the test's own timeout bounds it).
        "$LOOP" run demo "scenario:sleep 60" >/dev/null 2>"$T/dead.err" &
        pid=$!
        for _ in $(seq 600); do [ "$(containers_left)" -gt 0 ] && break; sleep 0.1; done
        sleep 1
        kill -KILL "$(engine_pid "$eng")"
        timeout 60 tail --pid="$pid" -f /dev/null
        wait "$pid"
        st=$?
        ok $((st == 0)) "$eng: an engine that dies mid-run fails the run (status $st)"
        like "$(cat "$T/dead.err")" "[Ee]ngine|output|connect" "$eng: ...with a message about the engine"
        engine_stop "$eng" >/dev/null 2>&1

        # Nothing answers at all.
        sed -i "s|\"socket\": \"[^\"]*\"|\"socket\": \"$T/no-engine.sock\"|" "$T/etc/loop.json"
        run demo hello
        is "$st" 2 "$eng: a configured engine socket that does not answer fails with exit 2"
        like "$err" "no-engine.sock" "$eng: ...naming the socket"
done

tap_done
