# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Real container engines for integration tests, each on a private socket, started and stopped by the
# test, leaving nothing running:
#
#   engine_start podman|docker     start it; exports ENGINE_SOCK and PODMAN_SOCK / DOCKER_SOCK
#                                  (registers engine_stop with tap.sh's atexit when it is loaded)
#   engine_stop [podman|docker]    remove its containers, stop it, kill whatever it left behind,
#                                  unmount and remove its state; no argument: every started engine;
#                                  idempotent; non-zero when something had to be killed
#   engine_pid podman|docker       the engine's main process (for "engine dies mid-stream" tests)
#   engine_log podman|docker       its log file
#   engine_import_busybox SOCK TAG a busybox-static rootfs imported through the API with curl (both
#                                  engines): CMD ["/bin/sh"], PATH=/bin, root and nobody in /etc/passwd;
#                                  TAG is NAME[:TAG], passed whole in repo= (podman 4.3 ignores tag=)
#   engine_api SOCK CURL-ARGS...   curl on the engine's API (http://d/v1.41/...)
#
# Where things live: $ENGINE_TEST_DIR (a fresh mktemp -d per test unless set) holds each engine's
# socket, log, pid and run state. Podman's storage is private to the run too (--root under the test
# dir: podman refuses a persistent root with a changing --runroot). Docker's --data-root is persistent,
# $LOOP_TEST_DOCKER_ROOT (/var/lib/loop-test/docker), so its images stay cached between runs; a flock
# on it keeps two test runs from sharing one data root.
#
# Each engine runs in a network namespace of its own (unshare --net, loopback up): its bridge, its
# iptables rules and its containers' addresses never touch the host's network, and they go away with
# the engine. ENGINE_NETNS=host keeps the host's network instead.
#
# Why the flags (Debian 12, hybrid cgroups, systemd not PID 1 on CI):
#  - podman: CONTAINERS_CONF with runc (crun 1.8 refuses hybrid cgroups), the cgroupfs manager (no
#    systemd), file events, and ulimits this host allows (see shared/recipes/podman-api.sh);
#    network_backend netavark (/etc/cni/net.d would otherwise make a fresh root pick CNI).
#  - dockerd (Debian's docker.io, 20.10): --exec-opt native.cgroupdriver=cgroupfs (no systemd), its
#    own --exec-root and --pidfile (no clash with a system dockerd), a managed containerd under the
#    exec root, the same ulimits. /usr/local/bin/docker is a separate client; no engine runs by default.

# shellcheck source=test/lib/locks.sh
. "$(dirname "${BASH_SOURCE[0]}")/locks.sh"

ENGINE_TEST_DIR=${ENGINE_TEST_DIR:-}
LOOP_TEST_DOCKER_ROOT=${LOOP_TEST_DOCKER_ROOT:-/var/lib/loop-test/docker}
ENGINE_START_TIMEOUT_S=${ENGINE_START_TIMEOUT_S:-60}
ENGINE_STOP_TIMEOUT_S=${ENGINE_STOP_TIMEOUT_S:-20}
# Tests run in parallel and queue for the data root: long enough for the others' Docker parts to finish.
ENGINE_DOCKER_LOCK_WAIT_S=${ENGINE_DOCKER_LOCK_WAIT_S:-600}
ENGINE_NETNS=${ENGINE_NETNS:-private}
ENGINE_TEST_DIR_OWNED=0
ENGINES_STARTED=()

_engine_err() {
        echo "engines: $*" >&2
}

# Called in the test's shell (not in $(...)), so the directory is the same for every later call.
_engine_init() {
        if [ -z "$ENGINE_TEST_DIR" ] || [ ! -d "$ENGINE_TEST_DIR" ]; then
                ENGINE_TEST_DIR=$(mktemp -d "${TMPDIR:-/tmp}/loop-engines.XXXXXX") || return 1
                ENGINE_TEST_DIR_OWNED=1
                export ENGINE_TEST_DIR
        fi
}

_engine_dir() {
        [ -n "$ENGINE_TEST_DIR" ] || return 1
        echo "$ENGINE_TEST_DIR/$1"
}

engine_api() {
        local sock=$1
        shift
        curl -sS --unix-socket "$sock" "$@"
}

_engine_ping() {
        curl -sf --max-time 2 --unix-socket "$1" http://d/_ping >/dev/null 2>&1
}

engine_pid() {
        cat "$(_engine_dir "$1")/pid" 2>/dev/null
}

engine_log() {
        echo "$(_engine_dir "$1")/log"
}

_engine_podman_conf() {
        local nofile nproc
        nofile=$(ulimit -Hn)
        nproc=$(ulimit -Hu)
        [ "$nofile" = unlimited ] || [ "$nofile" -gt 1048576 ] && nofile=1048576
        [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
        cat >"$1" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
[network]
network_backend = "netavark"
EOF
}

# Runs "$@" in the background, in a network namespace of its own unless ENGINE_NETNS=host; the pid of
# the backgrounded process is the engine's (unshare execs, no fork).
_engine_spawn() {
        local log=$1
        shift
        if [ "$ENGINE_NETNS" = host ]; then
                "$@" </dev/null >>"$log" 2>&1 &
        else
                # shellcheck disable=SC2016 # expanded by the inner sh
                unshare --net -- sh -c 'ip link set lo up && exec "$@"' engine "$@" </dev/null >>"$log" 2>&1 &
        fi
        echo $!
}

engine_start() {
        local kind=${1:?engine_start podman|docker} d sock pid i
        _engine_init || return 1
        d=$(_engine_dir "$kind") || return 1
        if [ -e "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then
                _engine_err "$kind is already running (pid $(cat "$d/pid"))"
                return 1
        fi
        mkdir -p "$d" || return 1
        : >"$d/log"
        case $kind in
        podman)
                command -v podman >/dev/null || { _engine_err "podman is not installed (.ci/packages)"; return 1; }
                sock=$d/podman.sock
                _engine_podman_conf "$d/containers.conf"
                mkdir -p "$d/root" "$d/run" "$d/tmp"
                pid=$(CONTAINERS_CONF=$d/containers.conf _engine_spawn "$d/log" \
                        podman --root "$d/root" --runroot "$d/run" --tmpdir "$d/tmp" \
                        system service --time=0 "unix://$sock")
                ;;
        docker)
                command -v dockerd >/dev/null || { _engine_err "dockerd is not installed (docker.io in .ci/packages)"; return 1; }
                sock=$d/docker.sock
                mkdir -p "$LOOP_TEST_DOCKER_ROOT" "$d/exec" || return 1
                # One dockerd per data root; the lock lives as long as this shell or engine_stop.
                if ! lock_fifo ENGINE_DOCKER_LOCK_FD "$LOOP_TEST_DOCKER_ROOT.lock" "$ENGINE_DOCKER_LOCK_WAIT_S"; then
                        _engine_err "another test holds $LOOP_TEST_DOCKER_ROOT.lock"
                        return 1
                fi
                pid=$(_engine_spawn "$d/log" \
                        dockerd -H "unix://$sock" --data-root "$LOOP_TEST_DOCKER_ROOT" --exec-root "$d/exec" \
                        --pidfile "$d/docker.pid" --exec-opt native.cgroupdriver=cgroupfs \
                        --default-ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" \
                        --log-level warn --userland-proxy=false)
                ;;
        *)
                _engine_err "unknown engine '$kind' (podman or docker)"
                return 1 ;;
        esac
        echo "$pid" >"$d/pid"
        echo "$sock" >"$d/sock"
        ENGINES_STARTED+=("$kind")
        if declare -F atexit >/dev/null; then
                atexit "engine_stop $kind"
        fi

        for ((i = 0; i < ENGINE_START_TIMEOUT_S * 10; i++)); do
                _engine_ping "$sock" && break
                if ! kill -0 "$pid" 2>/dev/null; then
                        _engine_err "$kind exited while starting; its log:"
                        tail -n 30 "$d/log" >&2
                        engine_stop "$kind"
                        return 1
                fi
                sleep 0.1
        done
        if ! _engine_ping "$sock"; then
                _engine_err "$kind did not answer on $sock within ${ENGINE_START_TIMEOUT_S}s; its log:"
                tail -n 30 "$d/log" >&2
                engine_stop "$kind"
                return 1
        fi
        # Leftovers of a run that was killed (docker's data root persists).
        _engine_remove_containers "$sock"

        export ENGINE_SOCK=$sock
        case $kind in
        podman) export PODMAN_SOCK=$sock ;;
        docker) export DOCKER_SOCK=$sock ;;
        esac
}

_engine_remove_containers() {
        local sock=$1 id
        for id in $(engine_api "$sock" --max-time 10 "http://d/v1.41/containers/json?all=1" 2>/dev/null |
                    python3 -c 'import json,sys; [print(c["Id"]) for c in json.load(sys.stdin)]' 2>/dev/null); do
                engine_api "$sock" --max-time 30 -X DELETE "http://d/v1.41/containers/$id?force=1&v=1" >/dev/null 2>&1
        done
}

# Processes whose command line names the directory: conmon, containerd, its shims. Each is a process
# of this engine instance; nothing else mentions a mktemp directory of this run.
_engine_pids_mentioning() {
        local dir=$1 p
        for p in /proc/[0-9]*; do
                [ "${p#/proc/}" = "$$" ] && continue
                tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -qF -- "$dir" && echo "${p#/proc/}"
        done
}

_engine_umount_below() {
        local m
        while read -r m; do
                umount -l "$m" 2>/dev/null
        done < <(awk -v d="${1%/}" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r)
}

# The containers of an engine that died without stopping them keep running, reparented; find them by
# their ids in the engine's own state and kill their cgroups' processes (cgroupfs manager layout).
_engine_kill_container_cgroups() {
        local kind=$1 d=$2 state id cg procs=() rc=0
        case $kind in
        podman) state=$d/root/overlay-containers ;;
        docker) state=$LOOP_TEST_DOCKER_ROOT/containers ;;
        esac
        for id in "$state"/*; do
                id=${id##*/}
                [[ $id =~ ^[0-9a-f]{64}$ ]] || continue
                for cg in /sys/fs/cgroup/*/libpod_parent/libpod-"$id" /sys/fs/cgroup/*/docker/"$id"; do
                        [ -f "$cg/cgroup.procs" ] || continue
                        mapfile -t procs <"$cg/cgroup.procs"
                        [ ${#procs[@]} -gt 0 ] || continue
                        _engine_err "$kind left container ${id:0:12} running, killing ${procs[*]}"
                        kill -KILL "${procs[@]}" 2>/dev/null
                        rc=1
                done
        done
        return $rc
}

engine_stop() {
        local kinds=("$@") kind d pid sock i rc=0 left m
        [ ${#kinds[@]} -gt 0 ] || kinds=("${ENGINES_STARTED[@]}")
        for kind in "${kinds[@]}"; do
                [ -n "$ENGINE_TEST_DIR" ] || continue
                d=$ENGINE_TEST_DIR/$kind
                [ -e "$d/pid" ] || continue
                pid=$(cat "$d/pid")
                sock=$(cat "$d/sock" 2>/dev/null)
                if kill -0 "$pid" 2>/dev/null; then
                        _engine_ping "$sock" && _engine_remove_containers "$sock"
                        kill -TERM "$pid" 2>/dev/null
                        for ((i = 0; i < ENGINE_STOP_TIMEOUT_S * 10; i++)); do
                                kill -0 "$pid" 2>/dev/null || break
                                sleep 0.1
                        done
                        if kill -0 "$pid" 2>/dev/null; then
                                _engine_err "$kind ($pid) did not stop within ${ENGINE_STOP_TIMEOUT_S}s, killing it"
                                kill -KILL "$pid" 2>/dev/null
                                rc=1
                        fi
                fi
                wait "$pid" 2>/dev/null
                _engine_kill_container_cgroups "$kind" "$d" || rc=1
                # Whatever it started and left: its containerd, shims, conmons. Podman's exec sessions keep
                # a conmon pair sleeping for --exit-delay (300 s) after the exec ended, by design, so
                # those are killed without a word; anything else is reported.
                for ((i = 0; i < 20; i++)); do
                        mapfile -t left < <(_engine_pids_mentioning "$d")
                        [ ${#left[@]} -eq 0 ] && break
                        [ "$i" = 0 ] && sleep 0.5 && continue
                        local p unexpected=()
                        for p in "${left[@]}"; do
                                tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -q -- '--exit-delay' || unexpected+=("$p")
                        done
                        if [ ${#unexpected[@]} -gt 0 ]; then
                                _engine_err "$kind left processes behind, killing: ${unexpected[*]}"
                                rc=1
                        fi
                        kill -KILL "${left[@]}" 2>/dev/null
                        sleep 0.1
                done
                # Mounts below its state (overlay, netns, shm), deepest first; docker's data root is ours
                # while we hold its lock.
                _engine_umount_below "$d"
                [ "$kind" = docker ] && _engine_umount_below "$LOOP_TEST_DOCKER_ROOT"
                if [ "$kind" = docker ] && [ -n "${ENGINE_DOCKER_LOCK_FD:-}" ]; then
                        exec {ENGINE_DOCKER_LOCK_FD}>&-
                        ENGINE_DOCKER_LOCK_FD=
                fi
                rm -rf "$d"
        done
        # A test dir we made goes when its last engine does (with the cached busybox rootfs).
        if [ "${ENGINE_TEST_DIR_OWNED:-0}" = 1 ] && [ -d "$ENGINE_TEST_DIR" ] &&
           ! compgen -G "$ENGINE_TEST_DIR/*/pid" >/dev/null; then
                rm -rf "$ENGINE_TEST_DIR"
                ENGINE_TEST_DIR=
                ENGINE_TEST_DIR_OWNED=0
        fi
        return $rc
}

# A rootfs of busybox-static, made once per test dir.
_engine_busybox_tar() {
        local tarball r a
        tarball=$(_engine_dir busybox.tar) || return 1
        [ -s "$tarball" ] && { echo "$tarball"; return 0; }
        [ -x /bin/busybox ] || { _engine_err "no /bin/busybox: install busybox-static"; return 1; }
        r=$(mktemp -d "${TMPDIR:-/tmp}/loop-bb.XXXXXX") || return 1
        mkdir -p "$r"/{bin,etc,tmp,proc,sys,dev,root,data}
        chmod 1777 "$r/tmp"
        cp /bin/busybox "$r/bin/busybox" || { rm -rf "$r"; return 1; }
        for a in $("$r/bin/busybox" --list); do
                [ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"
        done
        # A dynamic busybox would not run in an image without libc.
        if ! chroot "$r" /bin/true; then
                _engine_err "/bin/busybox does not run without libraries: install busybox-static"
                rm -rf "$r"
                return 1
        fi
        printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$r/etc/passwd"
        printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
        tar --numeric-owner --owner=0 --group=0 -C "$r" -cf "$tarball" . || { rm -rf "$r"; return 1; }
        rm -rf "$r"
        echo "$tarball"
}

engine_import_busybox() {
        local sock=${1:?engine_import_busybox SOCK TAG} tag=${2:?engine_import_busybox SOCK TAG} tarball out
        _engine_init || return 1
        tarball=$(_engine_busybox_tar) || return 1
        out=$(engine_api "$sock" --max-time 120 -X POST -H 'Content-Type: application/x-tar' \
                --data-binary @"$tarball" \
                "http://d/v1.41/images/create?fromSrc=-&repo=${tag//:/%3A}&changes=CMD%20%5B%22%2Fbin%2Fsh%22%5D&changes=ENV%20PATH%3D%2Fbin") ||
                { _engine_err "import into $sock failed: $out"; return 1; }
        if [[ $out == *'"error'* ]] || [[ $out == *'"message"'* ]]; then
                _engine_err "import into $sock failed: $out"
                return 1
        fi
        engine_api "$sock" -f --max-time 10 "http://d/v1.41/images/$tag/json" >/dev/null ||
                { _engine_err "$tag is not there after the import"; return 1; }
}
