# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# A real systemd as PID 1 for integration tests: systemd-nspawn boots the host's own OS tree
# (-D / --volatile=yes: tmpfs root, the host's /usr read-only), so no image has to be built and the
# container runs exactly the systemd, podman, ... that CI installed. The tree under test is bound in
# at /usr/local (see stage.sh), which systemd 252 searches for units, generators, sysusers.d,
# tmpfiles.d and catalogs, and the channel configs at /etc/loop (a bind mount on the tmpfs /etc).
#
#   nspawn_require                       fail (not skip) unless root, systemd-nspawn and nsenter exist
#   nspawn_boot NAME [--podman] [--kmsg] [--stage DIR] [--config DIR] [systemd-nspawn args...]
#                                        boot, wait until the system is running; NAME is the
#                                        container's machine and host name. --stage: a stage.sh
#                                        tree, bound read-only at /usr/local; --config: bound
#                                        read-write at /etc/loop (write channel files from the host)
#   nspawn_exec NAME CMD...              CMD in all namespaces of PID 1 (host credentials, clean env)
#   nspawn_run NAME [systemd-run args] CMD...
#                                        CMD as a transient service of the container's systemd
#                                        (its cgroups, its sandboxing); waits, pipes stdio
#   nspawn_stop NAME                     poweroff, wait, remove the cgroups; idempotent; non-zero
#                                        when the shutdown had to be forced or left processes behind
#   nspawn_leader NAME / nspawn_root NAME / nspawn_bus NAME / nspawn_console NAME
#                                        PID 1 (host pid), its root (/proc/PID/root), the system
#                                        bus address for busctl/systemctl --host-side, the console log
#
# --kmsg: the host's /dev/kmsg in the container. nspawn gives a container none, so what generators
# log "to the kernel log" would land on the console; with --kmsg it reaches the real kernel log, which
# `nspawn_exec NAME dmesg` reads (nsenter keeps the host's CAP_SYSLOG). Messages go to the host's
# ring buffer: give what you look for there a name unique to the run.
#
# --podman: a rootful podman inside the container, driven by the container's systemd (podman.socket,
# cgroup_manager=systemd); the host reaches the API at $(nspawn_root NAME)/run/podman/podman.sock.
#
# Boot registers `nspawn_stop NAME` with atexit (tap.sh) when tap.sh is loaded, so a test that dies
# halfway still powers its container off; calling nspawn_stop yourself is fine.
#
# Why the pieces are there (Debian 12, systemd 252 not PID 1 on the host, hybrid cgroups):
#  - --register=no --keep-unit: there is no host systemd/machined to register with. nspawn then
#    creates payload/ and supervisor/ below the caller's cgroup, so each container gets a cgroup of
#    its own first (two containers from one cgroup would collide), which also lets nspawn_stop see
#    and kill anything left behind.
#  - systemd.condition-first-boot=false: the empty volatile /etc would otherwise be a first boot:
#    firstboot wizard plus `preset-all` enabling every installed service (docker, containerd...).
#  - landlock_*: not in nspawn 252's syscall allow-list, and loop uses Landlock.

# shellcheck source=test/lib/locks.sh
. "$(dirname "${BASH_SOURCE[0]}")/locks.sh"
NSPAWN_STATE_DIR=${LOOP_NSPAWN_DIR:-${TMPDIR:-/tmp}/loop-nspawn}
NSPAWN_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Bounds, not expectations: a boot or poweroff ends the wait as soon as it is done. A poweroff stops the
# inner Podman's containers (10 s each that ignores SIGTERM), on a machine loaded by the whole suite.
NSPAWN_BOOT_TIMEOUT_S=${LOOP_NSPAWN_BOOT_TIMEOUT_S:-120}
NSPAWN_STOP_TIMEOUT_S=${LOOP_NSPAWN_STOP_TIMEOUT_S:-90}

_nspawn_err() {
        echo "nspawn: $*" >&2
}

nspawn_require() {
        local missing=() t
        if [ "$(id -u)" != 0 ]; then
                _nspawn_err "integration tests need root (systemd-nspawn, cgroups, nsenter); run them as root"
                return 1
        fi
        for t in systemd-nspawn nsenter systemd-run pgrep; do
                command -v "$t" >/dev/null || missing+=("$t")
        done
        if [ ${#missing[@]} -ne 0 ]; then
                _nspawn_err "missing ${missing[*]}: install systemd-container, util-linux and procps (.ci/install-deps)"
                return 1
        fi
}

# The cgroup directories a container of NAME lives in: the named systemd hierarchy and cgroup2 on a
# hybrid host, the cgroup2 root on a unified one.
_nspawn_cgroups() {
        local name=$1
        if [ -f /sys/fs/cgroup/cgroup.procs ]; then
                echo "/sys/fs/cgroup/loop-nspawn-$name"
                return
        fi
        local h
        for h in systemd unified; do
                [ -d "/sys/fs/cgroup/$h" ] && echo "/sys/fs/cgroup/$h/loop-nspawn-$name"
        done
}

_nspawn_state() {
        echo "$NSPAWN_STATE_DIR/$1"
}

nspawn_leader() {
        cat "$(_nspawn_state "$1")/leader.pid"
}

nspawn_root() {
        echo "/proc/$(nspawn_leader "$1")/root"
}

nspawn_bus() {
        echo "unix:path=$(nspawn_root "$1")/run/dbus/system_bus_socket"
}

nspawn_console() {
        cat "$(_nspawn_state "$1")/console.log" 2>/dev/null
}

nspawn_exec() {
        local name=$1 leader
        shift
        leader=$(nspawn_leader "$name") || return 1
        # env -i: the test's own environment (LOOP_*, meson's variables) must not leak in.
        nsenter -t "$leader" -a env -i PATH="$NSPAWN_PATH" LANG=C.UTF-8 TERM=dumb \
                SYSTEMD_PAGER= SYSTEMD_COLORS=0 SYSTEMD_LOG_COLOR=0 "$@"
}

nspawn_run() {
        local name=$1
        shift
        nspawn_exec "$name" systemd-run --wait --pipe --quiet --collect "$@"
}

# The pid of the container's PID 1 as seen from the host: a child of nspawn that is pid 1 in its own
# pid namespace (nspawn briefly has another child, the "outer child", while it sets things up).
_nspawn_find_leader() {
        local nspawn_pid=$1 p nspid
        for p in $(pgrep -P "$nspawn_pid"); do
                nspid=$(awk '/^NSpid:/ { print $NF }' "/proc/$p/status" 2>/dev/null)
                [ "$nspid" = 1 ] && [ "$(awk '/^NSpid:/ { print NF }' "/proc/$p/status")" -gt 2 ] &&
                        { echo "$p"; return 0; }
        done
        return 1
}

nspawn_boot() {
        local name=${1:?nspawn_boot NAME}
        shift
        local podman=0 kmsg=0 stage='' config='' st cg leader='' state='' i t0
        while [ $# -gt 0 ]; do
                case $1 in
                --podman) podman=1; shift ;;
                --kmsg) kmsg=1; shift ;;
                --stage) stage=$2; shift 2 ;;
                --config) config=$2; shift 2 ;;
                *) break ;;
                esac
        done
        nspawn_require || return 1
        _nspawn_reap
        st=$(_nspawn_state "$name")
        # A leftover of a run that was killed: power it off first.
        [ -e "$st/nspawn.pid" ] && { nspawn_stop "$name" || true; }
        rm -rf "$st" && mkdir -p "$st" || return 1

        # Beyond nspawn's own allow-list, as on a host: Landlock for the seal, pidfd_getfd for the gate's
        # supervisor (it performs the agent's connect() on the agent's socket).
        local args=(--quiet --register=no --keep-unit --volatile=yes -D / --machine="$name"
                    --console=pipe
                    --system-call-filter='landlock_create_ruleset landlock_add_rule landlock_restrict_self pidfd_getfd')
        [ -z "$stage" ] || args+=(--bind-ro="$stage/usr/local:/usr/local")
        [ -z "$config" ] || args+=(--bind="$config:/etc/loop")
        [ $kmsg = 0 ] || args+=(--bind=/dev/kmsg)
        if [ $podman = 1 ]; then
                if ! command -v podman >/dev/null; then
                        _nspawn_err "--podman: podman is not installed on the host"
                        return 1
                fi
                test_lock nspawn-podman || return 1
                _nspawn_podman_conf "$st" || return 1
                # Own network namespace for podman's bridge; keyctl for runc's session keyring; the
                # host's /etc/containers (copied into /etc at boot: netavark writes there) and
                # /etc/alternatives (the iptables link).
                args+=(--private-network --system-call-filter=@keyring
                       --bind-ro=/etc/containers:/run/host-containers --bind-ro=/etc/alternatives
                       --bind-ro="$st/containers.conf:/etc/loop-test/containers.conf")
        fi
        args+=("$@")
        : >"$st/console.log"

        t0=$(date +%s%N)
        for cg in $(_nspawn_cgroups "$name"); do mkdir -p "$cg" || return 1; done
        (
                for cg in $(_nspawn_cgroups "$name"); do echo "$BASHPID" >"$cg/cgroup.procs"; done
                exec systemd-nspawn "${args[@]}" -b systemd.firstboot=off systemd.condition-first-boot=false
        ) </dev/null >"$st/console.log" 2>&1 &
        echo $! >"$st/nspawn.pid"
        echo "$podman" >"$st/podman"
        echo "$$" >"$st/owner.pid"

        for ((i = 0; i < 200; i++)); do
                leader=$(_nspawn_find_leader "$(cat "$st/nspawn.pid")") && break
                kill -0 "$(cat "$st/nspawn.pid")" 2>/dev/null || break
                sleep 0.05
        done
        if [ -z "$leader" ]; then
                _nspawn_err "$name: systemd-nspawn did not start a container; console:"
                cat "$st/console.log" >&2
                nspawn_stop "$name" || true
                return 1
        fi
        echo "$leader" >"$st/leader.pid"
        if declare -F atexit >/dev/null; then
                atexit "nspawn_stop '$name'"
        fi

        for ((i = 0; i < NSPAWN_BOOT_TIMEOUT_S * 20; i++)); do
                state=$(nspawn_exec "$name" systemctl is-system-running 2>/dev/null)
                case $state in running|degraded) break ;; esac
                kill -0 "$leader" 2>/dev/null || break
                sleep 0.05
        done
        case $state in
        running) ;;
        degraded)
                _nspawn_err "$name: system is degraded; failed units:"
                nspawn_exec "$name" systemctl --failed --no-legend >&2 ;;
        *)
                _nspawn_err "$name: system did not finish booting in ${NSPAWN_BOOT_TIMEOUT_S}s (state '$state'); console:"
                tail -n 50 "$st/console.log" >&2
                nspawn_stop "$name" || true
                return 1 ;;
        esac

        if [ $podman = 1 ] && ! _nspawn_podman_start "$name"; then
                nspawn_stop "$name" || true
                return 1
        fi
        echo "$(( ($(date +%s%N) - t0) / 1000000 ))" >"$st/boot.ms"
}

# Containers whose test was killed (SIGKILL leaves no chance to clean up) are powered off by the next
# boot; containers of tests that still run are left alone.
_nspawn_reap() {
        local d owner
        for d in "$NSPAWN_STATE_DIR"/*/; do
                [ -e "$d/nspawn.pid" ] || continue
                owner=$(cat "$d/owner.pid" 2>/dev/null)
                [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null && continue
                _nspawn_err "powering off $(basename "$d"), left behind by a test that is gone"
                nspawn_stop "$(basename "$d")" || true
        done
}

_nspawn_podman_conf() {
        # runc, not crun: crun 1.8 refuses hybrid cgroups while cgroup2 has controllers. Podman's
        # default rootful rlimits (1048576) exceed what this host allows. The container's systemd is
        # the cgroup manager, as on a real host.
        cat >"$1/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "systemd"
events_logger = "file"
CONF
}

_nspawn_podman_start() {
        local name=$1 i
        nspawn_exec "$name" cp -a /run/host-containers /etc/containers || return 1
        # nspawn mounts the v1 controller hierarchies read-only; runc's systemd driver mkdirs there.
        # shellcheck disable=SC2016 # expanded by the container's sh
        nspawn_exec "$name" sh -c 'for m in /sys/fs/cgroup/*; do
                case $m in */systemd|*/unified) ;; *) mount -o remount,bind,rw "$m" ;; esac
        done' || return 1
        nspawn_exec "$name" systemctl set-environment CONTAINERS_CONF=/etc/loop-test/containers.conf || return 1
        nspawn_exec "$name" systemctl start podman.socket || return 1
        for ((i = 0; i < 100; i++)); do
                [ -S "$(nspawn_root "$name")/run/podman/podman.sock" ] && return 0
                sleep 0.05
        done
        _nspawn_err "$name: podman.socket did not create /run/podman/podman.sock"
        return 1
}

nspawn_stop() {
        local name=${1:?nspawn_stop NAME} st np leader='' cg i left=() rc=0 podman=0
        st=$(_nspawn_state "$name")
        [ -e "$st/nspawn.pid" ] || return 0
        np=$(cat "$st/nspawn.pid")
        leader=$(cat "$st/leader.pid" 2>/dev/null)
        podman=$(cat "$st/podman" 2>/dev/null || echo 0)

        # SIGRTMIN+4 to systemd = `systemctl poweroff`; nspawn exits when its PID 1 does.
        [ -z "$leader" ] || kill -s SIGRTMIN+4 "$leader" 2>/dev/null
        for ((i = 0; i < NSPAWN_STOP_TIMEOUT_S * 20; i++)); do
                kill -0 "$np" 2>/dev/null || break
                sleep 0.05
        done
        if kill -0 "$np" 2>/dev/null; then
                _nspawn_err "$name: no clean poweroff within ${NSPAWN_STOP_TIMEOUT_S}s, killing it"
                kill -s SIGKILL "$np" 2>/dev/null
                rc=1
        fi
        wait "$np" 2>/dev/null

        # Nothing may outlive the container: kill what is left in its cgroups, then remove them.
        for cg in $(_nspawn_cgroups "$name"); do
                [ -d "$cg" ] || continue
                mapfile -t left < <(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null)
                if [ ${#left[@]} -gt 0 ]; then
                        _nspawn_err "$name: processes left behind after poweroff, killing: ${left[*]}"
                        kill -s SIGKILL "${left[@]}" 2>/dev/null
                        rc=1
                        sleep 0.1
                fi
                find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null
        done
        # The inner podman's scopes leave empty machine.slice dirs in the host's v1 hierarchies
        # (those are not namespaced). rmdir only removes empty ones.
        if [ "$podman" = 1 ]; then
                for cg in /sys/fs/cgroup/*/machine.slice; do
                        [ -d "$cg" ] && find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null
                done
        fi
        rm -rf "$st"
        return $rc
}
