#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The work dir as a way onto the host (issue 19): from inside real agent containers on Podman and Docker,
# with the gate on and off, an agent tries to make the human's next git command, editor or shell run its
# code: a .git/commondir pointing at a copy of the repository with core.fsmonitor and a hook, module and
# info files, an alternates file, the parent repository of a worktree (parent_dir), editor and direnv
# files. Each attempt must fail (the gate refuses it, or a read-only mount does, or the tripwire kills the
# run and removes what appeared), and the host's `git status`, run as the human would, runs nothing.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/engine-test.sh
. "$lib/engine-test.sh"

engine_test_begin test-escape-workdir workdir
command -v git >/dev/null || bail_out "git is needed on the host"

build_test_rootfs "$T/rootfs" >/dev/null || bail_out "cannot build the test rootfs"

W=$T/work
M=$T/main
PWNED=$T/mark/pwned
# The human's git on the host: the work dir's owner, no options of ours.
host_git() { runuser -u "$TEST_USER" -- env HOME="$T/human" git "$@"; }

# A real repository with one commit and one submodule-like module dir, a .vscode with settings; a main
# checkout with a linked worktree inside it (parent_dir).
make_trees() {
        rm -rf "$W" "$M" "$T/mark" "$T/human"
        mkdir -p "$W/src" "$M" "$T/human" "$T/mark"
        echo 'int main(void) { return 0; }' >"$W/src/main.c"
        git init -q "$W" && git -C "$W" add -A &&
                git -C "$W" -c user.name=host -c user.email=host@example.org commit -qm init || return 1
        mkdir -p "$W/.git/modules/sub/hooks" "$W/.vscode"
        echo 'ref: refs/heads/main' >"$W/.git/modules/sub/HEAD"
        printf '[core]\n\tbare = false\n' >"$W/.git/modules/sub/config"
        echo '{}' >"$W/.vscode/settings.json"
        mkdir -p "$W/api"
        echo 'TOKEN=SECRET-LOCAL-MARKER' >"$W/.env.local"
        echo 'TOKEN=SECRET-API-MARKER' >"$W/api/.env"
        echo main >"$M/README"
        git init -q "$M" && git -C "$M" add -A &&
                git -C "$M" -c user.name=host -c user.email=host@example.org commit -qm init &&
                git -C "$M" worktree add -q "$M/wt" 2>/dev/null || return 1
        chown -R "$UID_T:$GID_T" "$W" "$M" "$T/human" "$T/mark"
}

write_config() {
        rm -rf "$T/etc"
        mkdir -p "$T/etc/channels.d"
        cat >"$T/etc/loop.json" <<EOF
{ "engine": { "socket": "$ENGINE_SOCK" }, "container_image": "$IMAGE", "user": "$TEST_USER",
  "container_memory_mb": 256, "container_keep_alive_sec": 0, "browser": { "enabled": false } }
EOF
        echo "{ \"work_dir\": \"$W\" }" >"$T/etc/channels.d/gated.json"
        echo "{ \"work_dir\": \"$W\", \"gates\": { \"agentgate\": { \"enabled\": false } } }" >"$T/etc/channels.d/ungated.json"
        echo "{ \"work_dir\": \"$M/wt\", \"parent_dir\": \"$M\" }" >"$T/etc/channels.d/wt-gated.json"
        echo "{ \"work_dir\": \"$M/wt\", \"parent_dir\": \"$M\", \"gates\": { \"agentgate\": { \"enabled\": false } } }" \
                >"$T/etc/channels.d/wt-ungated.json"
        # The races of the gate's checks: a socket path and a command denied outright (copies of the
        # host's false and true, mounted where the agent's PATH finds them; busybox applets are one file).
        cat >"$T/etc/channels.d/race.json" <<EOF
{ "work_dir": "$W", "mounts": [ "$T/tools:/opt/tools:ro" ],
  "envs": { "PATH": "/opt/tools:/usr/local/bin:/usr/bin:/bin" },
  "gates": { "agentgate": {
    "path_rules": [ { "pattern": "$W/race-no.sock", "decision": "deny" } ],
    "command_rules": [ { "commands": [ "denied-tool" ], "decision": "deny" },
                       { "commands": [ "gate-probe" ], "args_patterns": [ "no-arg" ], "decision": "deny" } ] } } }
EOF
        chmod 0640 "$T"/etc/*.json "$T"/etc/channels.d/*.json
}
mkdir -p "$T/tools"
install -m 0755 "$(type -P false)" "$T/tools/denied-tool"
install -m 0755 "$(type -P true)" "$T/tools/allow1-tool"

run() {
        out=$("$LOOP" run -q "$@" 2>"$T/stderr") && st=0 || st=$?
        err=$(cat "$T/stderr")
}

# The agent's payload in DIR: a program the human's git would run (fsmonitor, hook), which leaves a mark.
payload() { echo "printf '#!/bin/sh\\necho pwned >$PWNED\\n' >$1/evil.sh && chmod +x $1/evil.sh"; }

for eng in podman docker; do
        engine_start "$eng" >/dev/null || { ok 1 "$eng: the engine starts"; diag "$(engine_log "$eng" 2>/dev/null | tail -20)"; continue; }
        import_test_image "$ENGINE_SOCK" "$IMAGE" "$T/rootfs" >/dev/null || { ok 1 "$eng: the test image imports"; engine_stop "$eng"; continue; }
        write_config

        for mode in gated ungated; do
                make_trees || bail_out "cannot make the test repositories"
                # How long a run that plants a hook goes on after it: ungated, the tripwire must kill it first,
                # which a loaded machine may take seconds to do (a killed run does not wait the time out).
                linger=5
                [ "$mode" = ungated ] && linger=60
                # .git/hooks a symlink to a .githooks nobody has made yet (dangling): what it will lead
                # to is guarded as a missing protected path (tried in the control-surface run below).
                rm -rf "$W/.git/hooks" && ln -s ../.githooks "$W/.git/hooks" && chown -h "$UID_T:$GID_T" "$W/.git/hooks"

                # The issue's attack: a copy of the repository in the tree with core.fsmonitor and a
                # pre-commit hook, and .git/commondir pointing at it; .git/config and .git/hooks untouched.
                run "$mode" "scenario:sh $(payload "$W") && mkdir -p $W/evil/hooks && cp -r $W/.git/objects $W/.git/refs $W/.git/HEAD $W/evil/ &&
                        printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = $W/evil.sh\\n' >$W/evil/config &&
                        cp $W/evil.sh $W/evil/hooks/pre-commit && echo ready &&
                        echo ../evil >$W/.git/commondir; echo rc=\$?; sleep $linger; echo survived"
                grep -q fsmonitor "$W/evil/config" 2>/dev/null && [ -x "$W/evil/hooks/pre-commit" ]
                ok $? "$eng/$mode: the agent prepares a repository copy with fsmonitor and a hook" || diag "$out $err"
                if [ "$mode" = gated ]; then
                        like "$(tr '\n' ' ' <<<"$out")" "rc=[1-9].*survived" "$eng/$mode: writing .git/commondir is refused by the gate"
                else
                        unlike "$out" "survived" "$eng/$mode: writing .git/commondir kills the run (tripwire)"
                        like "$err" "protected path $W/\\.git/commondir changed" "$eng/$mode: ...naming .git/commondir"
                fi
                [ ! -e "$W/.git/commondir" ]
                ok $? "$eng/$mode: ...and there is no .git/commondir on the host after the run"
                host_git -C "$W" status --short >/dev/null 2>&1
                host_git -C "$W" -c user.name=human -c user.email=h@example.org commit -q --allow-empty -m human >/dev/null 2>&1
                [ ! -e "$PWNED" ]
                ok $? "$eng/$mode: the human's git status and git commit on the host run none of the agent's code"
                rm -f "$PWNED"

                # The rest of git's control surface: existing files are read-only, missing ones stay missing.
                # With the gate on, in the same run, the target of the dangling .git/hooks -> ../.githooks
                # (made by the agent, the human's next commit would run its hook); without it the tripwire
                # kills the run that makes it, output and all, so that attempt has a run of its own.
                githooks="$(payload "$W") && mkdir -p $W/.githooks && cp $W/evil.sh $W/.githooks/pre-commit; echo rc=\$?; sleep $linger; echo survived"
                run "$mode" "scenario:sh echo x >>$W/.git/modules/sub/config; echo rc=\$?; echo x >$W/.git/modules/sub/hooks/post-checkout; echo rc=\$?;
                        echo x >>$W/.git/info/exclude; echo rc=\$?; echo x >>$W/.vscode/settings.json; echo rc=\$?; echo done$([ "$mode" = gated ] && echo "; $githooks")"
                like "$(tr '\n' ' ' <<<"$out")" "rc=[1-9].*rc=[1-9].*rc=[1-9].*rc=[1-9].*done" \
                        "$eng/$mode: a module's config and hooks, .git/info and .vscode/settings.json cannot be written" ||
                        diag "$(tr '\n' ' ' <<<"$out") $err"
                is "$(cat "$W/.git/modules/sub/config")" "$(printf '[core]\n\tbare = false')" "$eng/$mode: ...the module's config is unchanged"
                if [ "$mode" = gated ]; then
                        like "$(tr '\n' ' ' <<<"$out")" "done.*rc=[1-9].*survived" \
                                "$eng/$mode: creating .githooks, the target of a dangling .git/hooks, is refused by the gate" ||
                                diag "$(tr '\n' ' ' <<<"$out") $err"
                else
                        run "$mode" "scenario:sh $githooks"
                        unlike "$out" "survived" "$eng/$mode: creating .githooks, the target of a dangling .git/hooks, kills the run (tripwire)" ||
                                diag "$(tr '\n' ' ' <<<"$out") $err"
                        like "$err" "protected path $W/\\.githooks changed" "$eng/$mode: ...naming .githooks"
                fi
                host_git -C "$W" -c user.name=human -c user.email=h@example.org commit -q --allow-empty -m human >/dev/null 2>&1
                [ ! -e "$W/.githooks/pre-commit" ] && [ ! -e "$PWNED" ]
                ok $? "$eng/$mode: ...there is no .githooks/pre-commit on the host and the human's git commit runs nothing" ||
                        diag "$(ls -la "$W/.githooks" 2>&1)"
                rm -f "$PWNED"
                for f in ".git/objects/info/alternates" ".git/config.worktree" ".envrc"; do
                        run "$mode" "scenario:sh echo /tmp >$W/$f; echo rc=\$?; sleep 5; echo survived"
                        [ ! -e "$W/$f" ]
                        ok $? "$eng/$mode: creating $f fails or is undone (the gate refuses it, or the tripwire kills the run)" ||
                                diag "$out $err"
                done
                run "$mode" "scenario:sh rm -rf $W/.vscode; mkdir -p $W/.vscode; echo '{\"tasks\":[{\"runOptions\":{\"runOn\":\"folderOpen\"}}]}' >$W/.vscode/tasks.json; echo rc=\$?; sleep 5; echo survived"
                [ ! -e "$W/.vscode/tasks.json" ] && [ -e "$W/.vscode/settings.json" ]
                ok $? "$eng/$mode: .vscode cannot be replaced by one with a folderOpen task" || diag "$out $err"

                # Secrets deeper in the tree are masked like the root's .env; one that appears during the
                # run is the gate's to refuse (no mount can follow it).
                run "$mode" "scenario:sh cat $W/.env.local $W/api/.env; echo done"
                unlike "$out" "SECRET-" "$eng/$mode: .env.local and api/.env cannot be read (masked)" || diag "$out"
                like "$out" "done" "$eng/$mode: ...the agent sees them empty"
                if [ "$mode" = gated ]; then
                        (sleep 2; mkdir -p "$W/late" && echo 'TOKEN=SECRET-LATE-MARKER' >"$W/late/.env" &&
                                chown -R "$UID_T:$GID_T" "$W/late") &
                        run "$mode" "scenario:sh while [ ! -e $W/late/.env ]; do sleep 0.2; done; cat $W/late/.env; echo rc=\$?"
                        wait
                        unlike "$out" "SECRET-" "$eng/$mode: a .env created on the host during the run cannot be read (gate)" ||
                                diag "$out"
                        like "$out" "rc=[1-9]" "$eng/$mode: ...the read is refused"
                fi

                # A worktree (parent_dir): its .git file points into the main checkout's repository,
                # which must be as protected as the work dir's own.
                run "wt-$mode" "scenario:sh $(payload "$M/wt"); echo '#!/bin/sh' >$M/.git/hooks/pre-commit; echo rc=\$?;
                        printf '[core]\\n\\tfsmonitor = $M/wt/evil.sh\\n' >>$M/.git/config; echo rc=\$?;
                        echo gitdir: $W/.git >$M/wt/.git; echo rc=\$?; echo done"
                like "$(tr '\n' ' ' <<<"$out")" "rc=[1-9].*rc=[1-9].*rc=[1-9].*done" \
                        "$eng/$mode: a worktree's agent cannot write the main repository's hooks and config, nor its .git file" ||
                        diag "$out $err"
                [ ! -e "$M/.git/hooks/pre-commit" ] && ! grep -q fsmonitor "$M/.git/config"
                ok $? "$eng/$mode: ...the main repository is unchanged on the host"
                host_git -C "$M/wt" status --short >/dev/null 2>&1
                [ ! -e "$PWNED" ]
                ok $? "$eng/$mode: ...and the human's git status in the worktree runs nothing"
                rm -f "$PWNED"

                # A repository whose .git/hooks is a symlink into the tree (a tracked .githooks, there
                # now): the host's git follows it, so what it points at is protected as .git/hooks is.
                rm -rf "$W/.githooks" && mkdir "$W/.githooks" && chown "$UID_T:$GID_T" "$W/.githooks"
                run "$mode" "scenario:sh $(payload "$W") && cp $W/evil.sh $W/.githooks/pre-commit; echo rc=\$?; echo done"
                like "$(tr '\n' ' ' <<<"$out")" "rc=[1-9].*done" \
                        "$eng/$mode: no hook can be planted through a .git/hooks that is a symlink into the tree" || diag "$out $err"
                [ ! -e "$W/.githooks/pre-commit" ]
                ok $? "$eng/$mode: ...there is no pre-commit hook on the host"
                host_git -C "$W" -c user.name=human -c user.email=h@example.org commit -q --allow-empty -m human >/dev/null 2>&1
                [ ! -e "$PWNED" ]
                ok $? "$eng/$mode: ...and the human's git commit runs nothing"
                rm -f "$PWNED"

                # A .git that is itself a symlink to the repository elsewhere in the tree (repo's checkouts).
                make_trees || bail_out "cannot make the test repositories"
                mv "$W/.git" "$W/.repo-git" && ln -s .repo-git "$W/.git" && chown -h "$UID_T:$GID_T" "$W/.git"
                run "$mode" "scenario:sh $(payload "$W") && cp $W/evil.sh $W/.git/hooks/pre-commit; echo rc=\$?; echo done"
                like "$(tr '\n' ' ' <<<"$out")" "rc=[1-9].*done" \
                        "$eng/$mode: no hook can be planted through a .git that is a symlink" || diag "$out $err"
                host_git -C "$W" -c user.name=human -c user.email=h@example.org commit -q --allow-empty -m human >/dev/null 2>&1
                [ ! -e "$W/.repo-git/hooks/pre-commit" ] && [ ! -e "$PWNED" ]
                ok $? "$eng/$mode: ...there is no hook on the host and the human's git commit runs nothing"
                rm -f "$PWNED"
        done

        # Races against the gate's checks, from a real container: a sibling thread flips the socket
        # address or the command's filename between the check and the kernel's own read.
        make_trees || bail_out "cannot make the test repositories"
        run race "scenario:sh cd $W && gate-probe race-connect $W/race-ok.sock $W/race-no.sock 3000; gate-probe race-connect $W/race-ok.sock $W/race-no.sock 3000 family"
        diag "$eng: $(tr '\n' ' ' <<<"$out")"
        like "$out" "connect-wins=0 allowed=[1-9][0-9]* refused=[1-9]" "$eng: flipping the socket address never connects to the denied socket" ||
                diag "$err"
        like "$out" "connect-wins=0 allowed=0 refused=3000" "$eng: flipping the address family never does either"
        # The same for datagrams sent by address: the supervisor sends them with the address it read once.
        run race "scenario:sh cd $W && gate-probe dgram-send $W/race-no.sock sendto; gate-probe race-send $W/race-ok.sock $W/race-no.sock 3000 sendto; gate-probe race-send $W/race-ok.sock $W/race-no.sock 3000 sendmsg"
        diag "$eng: $(tr '\n' ' ' <<<"$out")"
        like "$out" "^EPERM" "$eng: a datagram sent by address to the denied socket is refused" || diag "$err"
        like "$(tr '\n' ' ' <<<"$out")" "send-wins=0 allowed=[1-9][0-9]* refused=[1-9][0-9]* send-wins=0 allowed=[1-9][0-9]* refused=[1-9]" \
                "$eng: flipping the address of a sendto and of a sendmsg never delivers to the denied socket (both sides seen)"
        run race "scenario:sh gate-probe race-exec /opt/tools/allow1-tool /opt/tools/denied-tool 1500 fork; gate-probe race-exec /opt/tools/allow1-tool /opt/tools/denied-tool 1500 vfork"
        diag "$eng: $(tr '\n' ' ' <<<"$out")"
        like "$(tr '\n' ' ' <<<"$out")" "exec-wins=0 .*exec-wins=0 " \
                "$eng: flipping the filename (fork and vfork) never runs the command denied outright" || diag "$err"
        # An argument rule: a sibling thread flips gate-probe's argument to the denied one, in a forked
        # child beside its exec and in a vfork child's parent; the kernel's copy must never be it.
        run race "scenario:sh gate-probe race-argv 1500 fork; gate-probe race-argv 1500 vfork"
        diag "$eng: $(tr '\n' ' ' <<<"$out")"
        like "$(tr '\n' ' ' <<<"$out")" "argv-wins=0 allowed=0 refused=1500 argv-wins=0 allowed=0 refused=1500" \
                "$eng: flipping an argument to a denied one (fork and vfork) never wins: the exec is refused" || diag "$err"
        # The same argument in memory another process writes without sharing the address space (shared
        # anonymous memory inherited over fork, a memfd, a file's page cache; the container's seccomp
        # profile refuses SysV shm, and POSIX shm is a file): refused too.
        run race "scenario:sh cd $W && gate-probe race-argv-shared 1500 anon; gate-probe race-argv-shared 1500 anon-array; gate-probe race-argv-shared 1500 memfd; gate-probe race-argv-shared 1500 file"
        diag "$eng: $(tr '\n' ' ' <<<"$out")"
        like "$(tr '\n' ' ' <<<"$out")" "^(argv-wins=0 allowed=0 refused=1500 ){4}$" \
                "$eng: flipping an argument in shared memory or a file's page (anon, array, memfd, file) never wins: the exec is refused" || diag "$err"
        # Ordinary spawns of an argument-ruled command from a single-threaded parent (glibc's posix_spawn,
        # vfork as Python's subprocess makes it; the test image has no Python) still run, and the rule
        # still refuses the denied argument.
        run race "scenario:sh gate-probe spawn 100 ok-arg; gate-probe exit-arg no-arg; echo rc=\$?"
        like "$(tr '\n' ' ' <<<"$out")" "spawn-ok=100 vfork-ok=100 .*rc=12[67]" \
                "$eng: posix_spawn and vfork of an argument-ruled command still work, and the rule still denies" || diag "$out $err"
        engine_stop "$eng" >/dev/null 2>&1
done

tap_done
