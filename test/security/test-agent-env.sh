#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The channel's and the project's envs (the agent writes the project file) reach the agent's processes
# and nothing of the container's root side, on both engines, with the security gate on and off: the
# container's own environment (Config.Env, what the root entrypoint, its tools and `loop seal` start with)
# holds them only encoded in LOOP_AGENT_ENV, and so does the gate's supervisor (the container's PID 1,
# read as root from the host); the agent and a `loop shell` session get them decoded, without the
# encoded list. A malformed LOOP_AGENT_ENV is refused by loop's own code (test-entrypoint-env).
# Needs root; fails, not skips, without it.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/engine-test.sh
. "$lib/engine-test.sh"

engine_test_begin test-agent-env agent-env
build_test_rootfs "$T/rootfs" >/dev/null || bail_out "cannot build the test rootfs"

W=$T/work
# What the configuration sets, each value unique enough to grep for: a name a root tool reads (LANG,
# TMPDIR), an application's own, and one from the project file.
CONFIGURED='LANG=C.agent-lang|TMPDIR=/tmp/agent-tmp|AGENT_ENV_MARK=configured value|PROJECT_ENV_MARK=from the project'
MARKS='C\.agent-lang|/tmp/agent-tmp|AGENT_ENV_MARK|PROJECT_ENV_MARK|configured value|from the project'

write_config() {
        rm -rf "$T/etc" "$W"
        mkdir -p "$T/etc/channels.d" "$W/.loop"
        cat >"$T/etc/loop.json" <<EOF
{
  "engine": { "socket": "$ENGINE_SOCK" },
  "container_image": "$IMAGE",
  "user": "$TEST_USER",
  "container_memory_mb": 256,
  "container_keep_alive_sec": 0,
  "browser": { "enabled": false }
}
EOF
        local envs='"envs": { "LANG": "C.agent-lang", "TMPDIR": "/tmp/agent-tmp", "AGENT_ENV_MARK": "configured value" }'
        echo "{ \"work_dir\": \"$W\", $envs }" >"$T/etc/channels.d/gated.json"
        echo "{ \"work_dir\": \"$W\", $envs, \"gates\": { \"agentgate\": { \"enabled\": false } } }" \
                >"$T/etc/channels.d/ungated.json"
        echo '{ "envs": { "PROJECT_ENV_MARK": "from the project" } }' >"$W/.loop/config.json"
        chmod 0640 "$T"/etc/*.json "$T"/etc/channels.d/*.json
        chown -R "$UID_T:$GID_T" "$W"
}

# inspect LOOP_TYPE: the engine's inspect JSON of the one running container of that loop-type.
inspect() {
        local id
        id=$(engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/json?filters=%7B%22label%22%3A%5B%22loop-type%3D$1%22%5D%7D" |
                python3 -c 'import json,sys; l=json.load(sys.stdin); print(l[0]["Id"] if l else "")')
        [ -n "$id" ] || return 1
        engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/$id/json"
}
config_env() { python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)["Config"]["Env"] or []))'; }
state_pid() { python3 -c 'import json,sys; print(json.load(sys.stdin)["State"]["Pid"])'; }
# has_all TEXT: every configured variable is a line of TEXT.
has_all() {
        local v
        IFS='|' read -ra vs <<<"$CONFIGURED"
        for v in "${vs[@]}"; do
                grep -qxF -- "$v" <<<"$1" || return 1
        done
}

for eng in podman docker; do
        engine_start "$eng" >/dev/null || { ok 1 "$eng: the engine starts"; diag "$(engine_log "$eng" 2>/dev/null | tail -20)"; continue; }
        import_test_image "$ENGINE_SOCK" "$IMAGE" "$T/rootfs" >/dev/null || { ok 1 "$eng: the test image imports"; engine_stop "$eng"; continue; }
        write_config

        for mode in gated ungated; do
                rm -f "$W/env-$mode" "$W/go-$mode"
                # The agent writes its environment, then waits for the test to look at the container.
                "$LOOP" run -q "$mode" "scenario:sh env >$W/env-$mode; while [ ! -e $W/go-$mode ]; do sleep 0.1; done" \
                        >"$T/run.out" 2>"$T/run.err" &
                bg=$!
                wait_for 120 test -s "$W/env-$mode"
                ok $? "$eng/$mode: the agent runs" || diag "$(tail -5 "$T/run.err")"
                agent=$(cat "$W/env-$mode" 2>/dev/null)
                has_all "$agent"
                ok $? "$eng/$mode: the agent has the channel's and the project's envs" || diag "$agent"
                ! grep -q '^LOOP_AGENT_ENV=' <<<"$agent"
                ok $? "$eng/$mode: ...decoded, without the encoded list"

                js=$(inspect agent)
                root_env=$(config_env <<<"$js")
                [ -n "$root_env" ] && ! grep -Eq -- "$MARKS" <<<"$root_env"
                ok $? "$eng/$mode: the container's environment (the root entrypoint's) holds none of them" || diag "$root_env"
                grep -q '^LOOP_AGENT_ENV=' <<<"$root_env"
                ok $? "$eng/$mode: ...only LOOP_AGENT_ENV, encoded"
                if [ "$mode" = gated ]; then
                        # The container's PID 1 is the gate's supervisor, root, which the agent cannot read.
                        pid=$(state_pid <<<"$js")
                        cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)
                        sup_env=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null)
                        like "$cmdline" "syscallwrap" "$eng/$mode: the container's PID 1 is the gate's supervisor"
                        [ -n "$sup_env" ] && ! grep -Eq -- "$MARKS" <<<"$sup_env"
                        ok $? "$eng/$mode: ...whose environment holds none of the configured envs" || diag "$sup_env"
                fi
                touch "$W/go-$mode"
                wait "$bg"
                is "$?" 0 "$eng/$mode: the run ends normally" || diag "$(tail -5 "$T/run.err")"
        done

        # A `loop shell` session runs as the agent from the start (no privdrop): `loop seal --agent-env`.
        sh_out=$("$LOOP" shell ungated -- env 2>"$T/shell.err")
        ok $? "$eng: loop shell runs" || diag "$(tail -5 "$T/shell.err")"
        has_all "$sh_out"
        ok $? "$eng: a loop shell session has the channel's and the project's envs" || diag "$sh_out"
        ! grep -q '^LOOP_AGENT_ENV=' <<<"$sh_out"
        ok $? "$eng: ...decoded, without the encoded list"
        # The shell container lives while a session does.
        rm -f "$W/go-shell" "$W/in-shell"
        "$LOOP" shell ungated -- sh -c "touch $W/in-shell; while [ ! -e $W/go-shell ]; do sleep 0.1; done" \
                >/dev/null 2>&1 </dev/null &
        bg=$!
        wait_for 60 test -e "$W/in-shell"
        root_env=$(inspect shell | config_env)
        [ -n "$root_env" ] && ! grep -Eq -- "$MARKS" <<<"$root_env"
        ok $? "$eng: the shell container's environment holds none of them" || diag "$root_env"
        touch "$W/go-shell"
        wait "$bg"
        "$LOOP" cleanup ungated >/dev/null 2>&1

        engine_stop "$eng"
done

tap_done
