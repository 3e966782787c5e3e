#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The hardening must not get in the way of an agent's normal work. In real agent containers (`loop run`
# on a private Podman and a private dockerd), with every layer on (seccomp workload profile, masked and
# read-only paths, the Landlock seal) and the security gate on and off, a test image with this host's
# gcc, make and git (test/lib/toolchain.sh): build a C project, run its test suite, install a package
# from a local tarball and run it, commit to the project's git repository, whose hooks and config stay
# read-only.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/engine-test.sh
. "$lib/engine-test.sh"
# shellcheck source=test/lib/toolchain.sh
. "$lib/toolchain.sh"

IMAGE=localhost/loop-workload:latest
engine_test_begin test-workload workload

build_test_rootfs "$T/rootfs" >/dev/null || bail_out "cannot build the test rootfs"
toolchain_add "$T/rootfs" || bail_out "cannot add the toolchain to the test rootfs"

W=$T/work/calc
make_project() {
        rm -rf "$T/work"
        mkdir -p "$T/work"
        toolchain_sample_project "$T/work"
        toolchain_sample_tarball "$W/greet.tar.gz"
        git -C "$W" init -q &&
                git -C "$W" add -A &&
                git -C "$W" -c user.name=host -c user.email=host@example.org commit -qm "initial import" ||
                return 1
        chown -R "$UID_T:$GID_T" "$T/work"
}

run() {
        out=$("$LOOP" run -q "$@" 2>"$T/stderr") && st=0 || st=$?
        err=$(cat "$T/stderr")
}

for eng in podman docker; do
        engine_start "$eng" >/dev/null || { ok 1 "$eng: the engine starts"; diag "$(engine_log "$eng" 2>/dev/null | tail -20)"; continue; }
        import_test_image "$ENGINE_SOCK" "$IMAGE" "$T/rootfs" >/dev/null || { ok 1 "$eng: the test image imports"; engine_stop "$eng"; continue; }
        mkdir -p "$T/etc/channels.d"
        cat >"$T/etc/loop.json" <<EOF
{ "engine": { "socket": "$ENGINE_SOCK" }, "container_image": "$IMAGE", "user": "$TEST_USER",
  "container_memory_mb": 512, "container_keep_alive_sec": 0, "browser": { "enabled": false } }
EOF
        echo "{ \"work_dir\": \"$W\" }" >"$T/etc/channels.d/gated.json"
        echo "{ \"work_dir\": \"$W\", \"gates\": { \"agentgate\": { \"enabled\": false } } }" >"$T/etc/channels.d/ungated.json"
        chmod 0640 "$T"/etc/*.json "$T"/etc/channels.d/*.json

        for mode in gated ungated; do
                make_project || bail_out "cannot make the sample project"

                run "$mode" "scenario:sh make 2>&1 && make check 2>&1 && ./calc '6*7'"
                is "$st" 0 "$eng/$mode: make, make check and the program run" || diag "$out $err"
                like "$out" "PASS: 4 tests, 0 failed" "$eng/$mode: the project's test suite passes"
                like "$out" "6\\*7 = 42" "$eng/$mode: the built program runs"
                [ -x "$W/calc" ]
                ok $? "$eng/$mode: the build output is in the work dir on the host"

                run "$mode" "scenario:sh tar -xzf greet.tar.gz -C /tmp && make -C /tmp/greet install PREFIX=\$HOME/.local >/dev/null 2>&1 && \$HOME/.local/bin/greet"
                is "$st" 0 "$eng/$mode: a package from a local tarball builds and installs into ~/.local" || diag "$out $err"
                like "$out" "hello from greet" "$eng/$mode: ...and the installed program runs"

                run "$mode" "scenario:sh echo '// more' >>src/calc.c && git add -A && git -c user.name=agent -c user.email=agent@example.org commit -qm 'agent work' 2>&1 && git log --oneline | wc -l"
                is "$st" 0 "$eng/$mode: git add and commit work in the project" || diag "$out $err"
                like "$out" "(^|[^0-9])2$" "$eng/$mode: ...the repository has the agent's commit"
                is "$(git -c safe.directory="$W" -C "$W" log -1 --format=%s 2>/dev/null)" "agent work" "$eng/$mode: ...and the host sees it"
                run "$mode" "scenario:sh git config user.name evil 2>&1; echo rc=\$?; echo '#!/bin/sh' >.git/hooks/pre-commit 2>&1; echo rc=\$?"
                like "$out" "rc=[1-9].*rc=[1-9]" "$eng/$mode: ...while .git/config and .git/hooks stay read-only"
        done
        engine_stop "$eng" >/dev/null 2>&1
done

tap_done
