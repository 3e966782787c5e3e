#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The escape suite: from inside real agent containers (`loop run` on a private Podman service and a
# private dockerd, test/lib/engines.sh), an agent tries what issue 8 lists: mounts, namespaces, other
# processes, kernel memory and symbols, keyrings, bpf, perf, userfaultfd, io_uring, TIOCSTI, raw and
# packet sockets, modules, the clock, reboot, the read-only root, the host's journal, D-Bus and engine
# sockets, a setuid binary, the pids limit, the work dir's protected and secret files. Every attempt
# must fail. The suite runs twice per engine: with the security gate on, and with it off, so the
# container's own hardening (seccomp workload profile, masked and read-only paths, no capabilities) is
# shown to hold without the gate. The attacks are raw system calls made by escape-probe.c.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/engine-test.sh
. "$lib/engine-test.sh"
# shellcheck source=test/lib/locks.sh
. "$lib/locks.sh"

PROBE=$LOOP_BUILD_DIR/test/security/escape-probe
engine_test_begin test-escape escape "$PROBE"
NR_SYSLOG=$(printf '#include <sys/syscall.h>\nSYS_syslog\n' | cpp -P - | tail -1)
[[ $NR_SYSLOG =~ ^[0-9]+$ ]] || bail_out "cannot find syslog's system call number (cpp: $NR_SYSLOG)"
NR_IO_URING_SETUP=$(printf '#include <sys/syscall.h>\nSYS_io_uring_setup\n' | cpp -P - | tail -1)
[[ $NR_IO_URING_SETUP =~ ^[0-9]+$ ]] || bail_out "cannot find io_uring_setup's system call number (cpp: $NR_IO_URING_SETUP)"
# In the runner's environment, never in a container's: a container that could read a host process's
# environment would find it.
export LOOP_ESCAPE_HOST_MARKER=host-only

build_test_rootfs "$T/rootfs" >/dev/null || bail_out "cannot build the test rootfs"

# The kernel's audit records, as journald would collect them. Landlock writes them only while auditing
# is enabled (auditd or `auditctl -e 1` does that on a real host): on for the test, then as it was.
AUDIT_LOG=$T/kernel-audit.log
test_lock kernel-audit || bail_out "cannot take the kernel-audit lock"
audit_was=$("$lib/kernel-audit" enabled 1) || bail_out "cannot enable kernel auditing"
atexit "'$lib/kernel-audit' enabled '$audit_was' >/dev/null"
"$lib/kernel-audit" listen "$AUDIT_LOG" &
atexit "kill $!"
wait_for 30 grep -q '^listening' "$AUDIT_LOG" || bail_out "the audit listener does not start"

W=$T/work
# The work dir as a project has it: git hooks and config, agent settings, secrets next to the code.
make_work_dir() {
        rm -rf "$W"
        mkdir -p "$W/.git/hooks" "$W/.claude" "$W/.aws" "$W/src"
        echo '#!/bin/sh' >"$W/.git/hooks/pre-commit"
        chmod 0755 "$W/.git/hooks/pre-commit"
        printf '[core]\n\tbare = false\n' >"$W/.git/config"
        echo '{"mcpServers": {}}' >"$W/.mcp.json"
        echo '{}' >"$W/.claude/settings.json"
        echo 'API_TOKEN=SECRET-ENV-MARKER' >"$W/.env"
        echo 'aws_secret_access_key=SECRET-AWS-MARKER' >"$W/.aws/credentials"
        echo '//registry.npmjs.org/:_authToken=SECRET-NPM-MARKER' >"$W/.npmrc"
        chown -R "$UID_T:$GID_T" "$W"
        # A setuid-root program in the work dir: no-new-privileges and the empty bounding set must keep
        # it from becoming root.
        install -m 4755 -o root -g root "$PROBE" "$W/suid-probe"
        mkdir -p "$T/hostdir"
        chmod 0755 "$T/hostdir"
        ln -sfn /run/systemd "$T/hostdir/journal-link"
        rm -rf "$T/shared"
        mkdir -p "$T/shared"
        chmod 1777 "$T/shared"
        install -m 0755 "$PROBE" "$T/shared/tool"
}

write_config() {
        rm -rf "$T/etc"
        mkdir -p "$T/etc/channels.d"
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
        # /run/shared: writable for everyone and mounted read-write, but /run is not a tier Landlock lets
        # anyone write to or execute from, so only the seal stands in the way there.
        echo "{ \"work_dir\": \"$W\", \"mounts\": [ \"$T/shared:/run/shared\" ] }" >"$T/etc/channels.d/gated.json"
        echo "{ \"work_dir\": \"$W\", \"mounts\": [ \"$T/shared:/run/shared\" ], \"gates\": { \"agentgate\": { \"enabled\": false } } }" \
                >"$T/etc/channels.d/ungated.json"
        # Host services named in mounts are refused: the journal, systemd, and the engine's own socket.
        cat >"$T/etc/channels.d/services.json" <<EOF
{ "work_dir": "$W", "gates": { "agentgate": { "enabled": false } },
  "mounts": [ "/run/systemd:/run/systemd", "/var/run:/host-run:ro", "$T/hostdir/journal-link:/j", "$T/hostdir:/hostdir:ro" ] }
EOF
        # A channel that gives .env back and protects one more path.
        cat >"$T/etc/channels.d/tuned.json" <<EOF
{ "work_dir": "$W", "gates": { "agentgate": { "enabled": false } },
  "unmask_paths": [ ".env" ], "protect_paths": [ "src" ] }
EOF
        # A work dir without a repository yet: its .git/hooks is protected below a missing .git.
        echo "{ \"work_dir\": \"$T/fresh\", \"gates\": { \"agentgate\": { \"enabled\": false } } }" >"$T/etc/channels.d/fresh.json"
        # TCP connect() restricted by the seal to one port.
        echo "{ \"work_dir\": \"$W\", \"gates\": { \"agentgate\": { \"enabled\": false } }, \"connect_tcp\": \"8081\" }" \
                >"$T/etc/channels.d/tcp.json"
        # A path cannot be both writable and protected.
        cat >"$T/etc/channels.d/conflict.json" <<EOF
{ "work_dir": "$W", "mounts": [ "$T/hostdir:$W/.git/hooks" ] }
EOF
        chmod 0640 "$T"/etc/*.json "$T"/etc/channels.d/*.json
}

# run CHANNEL ARGS...: loop run -q; output in $out, stderr in $err, status in $st.
run() {
        out=$("$LOOP" run -q "$@" 2>"$T/stderr") && st=0 || st=$?
        err=$(cat "$T/stderr")
}
# line NAME: the probe's line for one attempt.
line() { grep -m1 "^$1 " <<<"$out"; }
blocked() {
        local name=$1 want=${2:-} l
        l=$(line "$name")
        if [ -n "$want" ]; then
                is "$l" "$name blocked $want" "$eng/$mode: $3"
        else
                like "$l" "^$name blocked " "$eng/$mode: $3"
        fi
}

for eng in podman docker; do
        engine_start "$eng" >/dev/null || { ok 1 "$eng: the engine starts"; diag "$(engine_log "$eng" 2>/dev/null | tail -20)"; continue; }
        import_test_image "$ENGINE_SOCK" "$IMAGE" "$T/rootfs" >/dev/null || { ok 1 "$eng: the test image imports"; engine_stop "$eng"; continue; }
        make_work_dir
        write_config

        for mode in gated ungated; do
                run "$mode" "scenario:sh grep -E '^(Seccomp|Seccomp_filters|NoNewPrivs|CapBnd):' /proc/self/status"
                is "$st" 0 "$eng/$mode: the agent runs" || diag "$err"
                like "$out" "Seccomp:[[:space:]]+2" "$eng/$mode: the agent runs under a seccomp filter (the workload profile)"
                # The engine's copy of the profile, the seal's logged copy and, with the gate, the gate's two
                # (its trapped calls, and its logged refusals).
                like "$out" "Seccomp_filters:[[:space:]]+$([ "$mode" = gated ] && echo 4 || echo 2)" \
                        "$eng/$mode: ...the engine's, the seal's logged copy$([ "$mode" = gated ] && echo " and the gate's two")"

                run "$mode" "scenario:sh /usr/local/bin/escape-probe all 2>&1; true"
                [ "$st" = 0 ] || diag "$err"
                escaped=$(grep ' ESCAPED ' <<<"$out")
                is "$escaped" "" "$eng/$mode: no attempt of the probe escapes"

                # Mounts and namespaces.
                blocked mount EPERM "mount is denied"
                blocked umount EPERM "umount of /proc is denied"
                blocked pivot_root EPERM "pivot_root is denied"
                blocked chroot EPERM "chroot is denied"
                blocked open_tree EPERM "open_tree (the new mount API) is denied"
                blocked fsopen EPERM "fsopen is denied"
                blocked unshare-user EPERM "unshare(CLONE_NEWUSER) is denied"
                blocked unshare-mount EPERM "unshare(CLONE_NEWNS) is denied"
                blocked unshare-net EPERM "unshare(CLONE_NEWNET) is denied"
                blocked clone-newuser EPERM "clone(CLONE_NEWUSER) is denied"
                blocked clone-newpid EPERM "clone(CLONE_NEWPID) is denied"
                blocked clone3 ENOSYS "clone3 fails with ENOSYS (its flags are out of a filter's reach)"
                blocked setns EPERM "setns is denied"
                # Other processes.
                blocked ptrace EPERM "ptrace of another process is denied"
                blocked process_vm_writev EPERM "process_vm_writev is denied"
                blocked process_vm_readv EPERM "process_vm_readv is denied"
                blocked kcmp EPERM "kcmp is denied"
                # The kernel.
                blocked kcore "" "/proc/kcore cannot be read"
                blocked kallsyms "" "/proc/kallsyms cannot be read"
                blocked modules-list "" "/proc/modules is masked"
                blocked vmcoreinfo "" "/sys/kernel/vmcoreinfo is masked"
                blocked interrupts "" "/proc/interrupts is masked (per-CPU interrupt counts: a timing side channel)"
                blocked keyctl EPERM "keyctl is denied"
                blocked add_key EPERM "add_key is denied"
                blocked bpf EPERM "bpf is denied"
                blocked perf_event_open EPERM "perf_event_open is denied"
                blocked userfaultfd EPERM "userfaultfd is denied"
                blocked io_uring EPERM "io_uring_setup is denied"
                blocked init_module EPERM "init_module is denied"
                blocked finit_module EPERM "finit_module is denied"
                blocked tiocsti EPERM "TIOCSTI is denied"
                blocked tiocsti-high-bits EPERM "TIOCSTI with high bits set in the request is denied too"
                blocked af_packet EAFNOSUPPORT "AF_PACKET sockets fail with EAFNOSUPPORT"
                blocked raw-inet EPERM "raw IP sockets are denied (no CAP_NET_RAW)"
                blocked socket-x25 EAFNOSUPPORT "an old family below AF_PACKET (x25) is refused by the profile, before the kernel looks for it"
                blocked socketpair-tipc EAFNOSUPPORT "socketpair of another family than AF_UNIX (tipc) is refused by the profile"
                blocked socketpair-inet EAFNOSUPPORT "...AF_INET too (EAFNOSUPPORT, not the kernel's EOPNOTSUPP)"
                blocked msg_oob EOPNOTSUPP "MSG_OOB fails with EOPNOTSUPP"
                blocked map_growsdown EPERM "mmap with MAP_GROWSDOWN is denied"
                blocked execveat EPERM "execveat of a memfd is denied"
                # The host's services.
                blocked journal-socket ENOENT "the journal's socket is not there"
                blocked journal-stdout ENOENT "the journal's stdout socket is not there"
                blocked dev-log ENOENT "/dev/log is not there"
                blocked systemd-private ENOENT "systemd's private socket is not there"
                blocked dbus ENOENT "the D-Bus system bus is not there"
                blocked podman-socket ENOENT "Podman's socket is not there"
                blocked docker-socket ENOENT "Docker's socket is not there"
                # The machine and the file system.
                blocked clock_settime EPERM "setting the clock is denied"
                blocked reboot EPERM "reboot is denied"
                blocked swapoff EPERM "swapoff is denied"
                blocked write-rootfs "" "writing to the read-only root file system fails"
                blocked exec-dev-shm EACCES "a binary copied to /dev/shm (noexec) does not run"
                # Case folding: chattr +F on a directory of its own would let other spellings of .git/hooks
                # and .env pass every name the gate and the tripwire compare.
                blocked casefold EPERM "chattr +F (FS_IOC_SETFLAGS with FS_CASEFOLD_FL) on its own empty directory is denied"
                blocked setflags EPERM "FS_IOC_SETFLAGS is denied whatever it sets (even the flags the directory has)"
                blocked setflags-high-bits EPERM "...also with high bits set in the request"
                blocked setflags32 EPERM "...and FS_IOC32_SETFLAGS, its 32-bit number"

                # The host's PID 1 (and its /proc/1/environ) is out of reach: another PID namespace.
                run "$mode" "scenario:sh readlink /proc/self/ns/pid; tr '\\0' '\\n' </proc/1/environ 2>&1 | grep -c '^LOOP_ESCAPE_HOST_MARKER=' | sed 's/^/marker=/'; true"
                like "$out" "pid:\\[[0-9]+\\]" "$eng/$mode: the agent reads its own PID namespace" || diag "$out $err"
                unlike "$out" "$(readlink /proc/self/ns/pid | sed 's/[][]/\\&/g')" "$eng/$mode: ...which is not the host's (the host's PID 1 is not there)"
                unlike "$out" "marker=[1-9]" "$eng/$mode: ...and /proc/1/environ is not the host's (nor the runner's)"

                # Landlock on its own: a writable mount outside the write tiers.
                run "$mode" "scenario:sh echo x >/run/shared/planted; echo rc=\$?; /run/shared/tool ids; echo rc=\$?"
                like "$out" "rc=[1-9].*rc=[1-9]" "$eng/$mode: Landlock refuses writing to and executing from a writable mount under /run" ||
                        diag "$out"
                [ ! -e "$T/shared/planted" ]
                ok $? "$eng/$mode: ...nothing was planted there"
                unlike "$out" "euid=" "$eng/$mode: ...and the binary there did not run"
                # Refusals leave a trace: the workload profile is loaded with SECCOMP_FILTER_FLAG_LOG and the
                # seal asks Landlock to log after exec, so the kernel writes audit records (journald keeps
                # them with _TRANSPORT=audit). A name of its own (a symlink's name is the process's comm)
                # tells this run's records from any other.
                tag=lpa$RANDOM$RANDOM
                echo original >"$T/shared/$tag.txt"
                chmod 0666 "$T/shared/$tag.txt"
                run "$mode" "scenario:sh ln -s /usr/local/bin/escape-probe /tmp/$tag && /tmp/$tag syslog; /tmp/$tag io-uring; echo x >>/run/shared/$tag.txt; echo rc=\$?"
                like "$out" "syslog blocked EPERM.*io_uring blocked EPERM.*rc=[1-9]" "$eng/$mode: syslog, io_uring and the write under /run are refused" || diag "$out $err"
                wait_for 30 grep -Eq "^type=1326 .*comm=\"$tag\" .*syscall=$NR_SYSLOG .*code=0x50000" "$AUDIT_LOG"
                ok $? "$eng/$mode: ...the seccomp refusal leaves a SECCOMP audit record (type 1326) naming the process and call" ||
                        diag "$(grep -c . "$AUDIT_LOG") records; $(grep -m3 "$tag" "$AUDIT_LOG")"
                # io_uring is refused by the gate's own filter as well (the newest, whose verdict the kernel
                # reports): that filter logs its refusals too.
                wait_for 30 grep -Eq "^type=1326 .*comm=\"$tag\" .*syscall=$NR_IO_URING_SETUP .*code=0x50000" "$AUDIT_LOG"
                ok $? "$eng/$mode: ...so does io_uring_setup, which the gate's filter refuses too when the gate is on" ||
                        diag "$(grep -m3 "$tag" "$AUDIT_LOG")"
                wait_for 30 grep -Eq "^type=1423 .*blockers=fs\.write_file path=\"/run/shared/$tag\.txt\"" "$AUDIT_LOG"
                ok $? "$eng/$mode: ...the Landlock refusal leaves a LANDLOCK_ACCESS audit record (type 1423) naming the path" ||
                        diag "$(grep -m3 "$tag" "$AUDIT_LOG")"
                dom=$(sed -n "s|^type=1423 .*domain=\([0-9a-f]*\) blockers=fs\.write_file path=\"/run/shared/$tag\.txt\".*|\1|p" "$AUDIT_LOG" | head -1)
                grep -Eq "^type=1424 .*domain=${dom:-none} status=allocated .*exe=\"/usr/local/bin/loop\"" "$AUDIT_LOG"
                ok $? "$eng/$mode: ...and its domain's record names loop seal as the program that sealed it" ||
                        diag "$(grep -m3 "domain=${dom:-none}" "$AUDIT_LOG")"

                run "$mode" "scenario:sh loop seal --print"
                like "$out" "landlock_abi [3-9]" "$eng/$mode: the container's kernel has Landlock ABI 3 or later"
                like "$out" "write_exec $W" "$eng/$mode: the work dir is in the write_exec tier"
                unlike "$out" "write_[a-z]* /run" "$eng/$mode: nothing under /run is writable for the agent"

                # /proc with hidepid=2 (Podman; Docker has no option for it): root's processes, the gate's
                # supervisor at PID 1 among them, are out of the agent's sight. By name, /proc/1/... would
                # still open (the supervisor performs the agent's opens, and a process always sees itself),
                # so the gate denies its own /proc entries.
                if [ "$mode" = gated ]; then
                        run "$mode" "scenario:sh cat /proc/1/status >/dev/null 2>&1 && echo pid1-status-read || echo pid1-status-denied"
                        like "$out" "pid1-status-denied" "$eng/$mode: the supervisor's /proc/1/status cannot be read by name"
                fi
                if [ "$eng/$mode" = podman/gated ]; then
                        run "$mode" "scenario:sh ls /proc | grep -qx 1 && echo pid1-listed || echo pid1-hidden; grep -o 'hidepid=[a-z0-9]*' /proc/mounts | head -1"
                        like "$out" "pid1-hidden" "$eng/$mode: the supervisor (PID 1, root) is not listed in the agent's /proc"
                        like "$out" "hidepid=(2|invisible)" "$eng/$mode: .../proc is mounted with hidepid"
                fi

                # Guidance: the skill in the agent's home, the shell helper; words, no permissions.
                run "$mode" "scenario:sh head -2 \$HOME/.claude/skills/loop-sandbox/SKILL.md; loop-explain 'touch: x: Read-only file system'"
                like "$out" "name: loop-sandbox" "$eng/$mode: the sandbox skill is installed in the agent's home"
                like "$out" "EROFS: .*protected" "$eng/$mode: loop-explain explains a refusal and what to do instead"

                run "$mode" "scenario:sh $W/suid-probe ids"
                like "$out" "euid=$UID_T\$" "$eng/$mode: a setuid-root binary runs with the agent's uid (no-new-privileges)" || diag "$out $err"
                run "$mode" "scenario:sh /usr/local/bin/escape-probe pids"
                n=$(sed -n 's/.*pids threads=\([0-9]*\).*/\1/p' <<<"$out")
                ok $((${n:-99999} >= 4096)) "$eng/$mode: the pids limit stops a thread bomb (${n:-?} threads)" || diag "$out"
                like "$out" "stopped-by=EAGAIN" "$eng/$mode: ...with EAGAIN"

                # The work dir's control files are read-only, its secrets masked, the rest writable.
                run "$mode" "scenario:sh echo evil >$W/.git/hooks/pre-commit; echo rc=\$?"
                like "$out" "rc=[1-9]" "$eng/$mode: writing .git/hooks fails"
                run "$mode" "scenario:sh echo evil >$W/.git/hooks/post-checkout; echo rc=\$?"
                like "$out" "rc=[1-9]" "$eng/$mode: adding a hook to .git/hooks fails"
                run "$mode" "scenario:sh echo '{}' >$W/.mcp.json; echo rc=\$?"
                like "$out" "rc=[1-9]" "$eng/$mode: writing .mcp.json fails"
                run "$mode" "scenario:sh echo x >>$W/.git/config; echo rc=\$?; echo x >$W/.claude/settings.json; echo rc=\$?"
                unlike "$out" "rc=0" "$eng/$mode: writing .git/config and .claude/ fails"
                is "$(cat "$W/.git/hooks/pre-commit")" '#!/bin/sh' "$eng/$mode: the hook on the host is unchanged"
                [ ! -e "$W/.git/hooks/post-checkout" ]
                ok $? "$eng/$mode: ...and no hook was added"
                run "$mode" "scenario:sh cat $W/.env $W/.npmrc $W/.aws/credentials; ls -A $W/.aws; echo done"
                unlike "$out" "SECRET-" "$eng/$mode: .env, .npmrc and .aws/credentials cannot be read"
                like "$out" "done" "$eng/$mode: ...the agent just sees them empty"
                run "$mode" "scenario:sh echo made >$W/src/new.c && cat $W/src/new.c"
                like "$out" "made" "$eng/$mode: the rest of the work dir is writable"
                rm -f "$W/src/new.c"

                # Around the read-only mounts: .git renamed away and a new one with a planted hook. The
                # tripwire kills the run, journals it and restores the hooks.
                run "$mode" "scenario:sh mv $W/.git $W/.git-moved && mkdir -p $W/.git/hooks && echo evil >$W/.git/hooks/pre-commit && sleep 60; echo survived"
                [ "$st" != 0 ]
                ok $? "$eng/$mode: renaming .git and planting a hook fails the run (tripwire)"
                unlike "$out" "survived" "$eng/$mode: ...the container is killed at once"
                like "$err" "protected path $W/\.git changed during the run" "$eng/$mode: ...saying which path changed"
                like "$err" "tamper|Protected path" "$eng/$mode: ...and records a tamper event"
                is "$(cat "$W/.git/hooks/pre-commit" 2>/dev/null)" '#!/bin/sh' "$eng/$mode: the hook is restored from the snapshot"
                is "$(cat "$W/.git/config" 2>/dev/null)" "$(printf '[core]\n\tbare = false')" "$eng/$mode: ...and .git/config"
                rm -rf "$W/.git-moved"
                # A protected path that was missing stays missing.
                run "$mode" "scenario:sh mkdir $W/.devcontainer && echo '{}' >$W/.devcontainer/devcontainer.json && sleep 60; echo survived"
                if [ "$mode" = gated ]; then
                        like "$out" "Operation not permitted" "$eng/$mode: creating the missing .devcontainer is refused by the gate"
                else
                        unlike "$out" "survived" "$eng/$mode: creating the missing .devcontainer kills the run (tripwire)"
                fi
                [ ! -e "$W/.devcontainer" ]
                ok $? "$eng/$mode: ...and it is removed again"
        done

        # .git/hooks below a missing .git: what `git init` makes (git is not in the test image; these are
        # the same directories and files) trips the wire like a hook planted in an existing repository.
        rm -rf "$T/fresh"
        mkdir -p "$T/fresh/src"
        chown -R "$UID_T:$GID_T" "$T/fresh"
        run fresh "scenario:sh mkdir -p $T/fresh/.git/objects $T/fresh/.git/refs && mkdir $T/fresh/.git/hooks && echo evil >$T/fresh/.git/hooks/pre-commit && sleep 60; echo survived"
        [ "$st" != 0 ]
        ok $? "$eng: in a work dir without a repository, making .git/hooks (git init) fails the run (tripwire)"
        unlike "$out" "survived" "$eng: ...the container is killed at once"
        like "$err" "protected path $T/fresh/\.git/hooks changed during the run" "$eng: ...saying which path appeared"
        [ ! -e "$T/fresh/.git/hooks" ] && [ -d "$T/fresh/.git/objects" ]
        ok $? "$eng: ...and .git/hooks is removed again, the rest of .git left for a human to look at"

        # The shell container is watched too, for the life of each session.
        sh_out=$("$LOOP" shell ungated -- sh -c "mkdir $W/.devcontainer && echo made && sleep 60; echo survived" 2>"$T/shell.err") && st=0 || st=$?
        [ "$st" != 0 ]
        ok $? "$eng: creating the missing .devcontainer in a loop shell session fails it (tripwire)" || diag "$sh_out $(cat "$T/shell.err")"
        unlike "$sh_out" "survived" "$eng: ...the shell container is killed at once"
        like "$(cat "$T/shell.err")" "protected path $W/\.devcontainer changed" "$eng: ...saying which path changed"
        [ ! -e "$W/.devcontainer" ]
        ok $? "$eng: ...and it is removed again"
        is "$("$LOOP" shell ungated -- sh -c 'echo fine' 2>/dev/null)" fine "$eng: a later shell session runs normally"

        # A loop shell session gets the same container hardening: the probe escapes nowhere there either.
        sh_out=$("$LOOP" shell ungated -- sh -c '/usr/local/bin/escape-probe all 2>&1; grep "^Seccomp_filters:" /proc/self/status' 2>/dev/null)
        like "$sh_out" "kcore blocked" "$eng: the probe runs in a loop shell session" || diag "$sh_out"
        is "$(grep ' ESCAPED ' <<<"$sh_out")" "" "$eng: ...and no attempt escapes"
        like "$sh_out" "Seccomp_filters:[[:space:]]+2" "$eng: ...under the engine's workload profile and the seal's logged copy"
        "$LOOP" cleanup ungated >/dev/null 2>&1

        # "connect_tcp": Landlock (ABI 4) lets the agent connect() to the listed TCP ports only. Nobody
        # listens on either port: an allowed port answers "refused", the other is stopped before that.
        run tcp "scenario:sh loop seal --print | grep connect_tcp; echo A; nc 127.0.0.1 8081 </dev/null 2>&1; echo B; nc 127.0.0.1 8082 </dev/null 2>&1; true"
        like "$out" "connect_tcp 8081" "$eng: connect_tcp reaches the seal" || diag "$out $err"
        like "$out" "A.*Connection refused.*B" "$eng: ...a connection to the listed port goes out (refused only by nobody listening)"
        like "$out" "B.*Permission denied" "$eng: ...a connection to another port is refused by Landlock"
        sh_out=$("$LOOP" shell tcp -- sh -c 'nc 127.0.0.1 8082 </dev/null 2>&1; true' 2>/dev/null)
        like "$sh_out" "Permission denied" "$eng: ...in loop shell sessions too"
        "$LOOP" cleanup tcp >/dev/null 2>&1

        # Host services are never mounted in, whatever the config says.
        run services "scenario:sh ls /run/systemd /host-run /j 2>&1; echo done"
        like "$out" "done" "$eng: a channel whose mounts name host services still runs"
        unlike "$out" "journal|private|socket|stdout" "$eng: ...without /run/systemd or /var/run inside"
        like "$err" "/run/systemd.*would expose systemd's and journald's sockets" "$eng: ...saying which mount was refused and why"
        like "$err" "journal-link:/j: would expose systemd's" "$eng: ...seeing through a symbolic link to /run/systemd"

        # Per-channel tuning: unmask_paths and protect_paths.
        run tuned "scenario:sh cat $W/.env; echo x >$W/src/y; echo rc=\$?"
        like "$out" "SECRET-ENV-MARKER" "$eng: unmask_paths gives .env back"
        like "$out" "rc=[1-9]" "$eng: protect_paths makes src read-only"

        # A writable mount over a protected path: refused by the config check and at run time.
        run conflict hello
        is "$st" 2 "$eng: a channel with a writable mount at .git/hooks does not run"
        like "$err" "protected" "$eng: ...saying the path is protected"
        mkdir -p "$W/.loop"
        echo "{ \"mounts\": [ \"$T/hostdir:$W/.claude\" ] }" >"$W/.loop/config.json"
        chown -R "$UID_T:$GID_T" "$W/.loop"
        run gated "scenario:sh ls -a $W/.claude; echo rc=\$?"
        unlike "$out" "journal-link" "$eng: a project config cannot mount a host directory over .claude"
        like "$out" "rc=" "$eng: ...the agent ran, without that mount"
        like "$err" "is not in the operator's mounts: a project config can only narrow them, ignoring it" \
                "$eng: ...and the run says why"
        rm -rf "$W/.loop"

        engine_stop "$eng" >/dev/null 2>&1
done

out=$(LOOP_CONFIG_DIR=$T/etc "$LOOP" config check 2>&1)
like "$out" "protect_paths.*mount destination $W/.git/hooks is writable but $W/.git/hooks is protected" \
        "loop config check names the writable, protected path"

tap_done
