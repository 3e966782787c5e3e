# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Install the tree under test the way a package would, below /usr/local, for nspawn.sh to bind in:
#   stage_install        sets LOOP_STAGE to a directory whose usr/local/ holds bin/loop,
#                        lib/systemd/system/*, lib/systemd/system-generators/loop-generator,
#                        lib/sysusers.d/loop.conf, lib/tmpfiles.d/loop.conf, ...
#
# A build of its own (LOOP_BUILD_DIR/test-stage/build, kept between runs so only changes are rebuilt)
# because every installed path must point below /usr/local: ExecStart=/usr/local/bin/loop, the
# generator's symlink targets in /usr/local/lib/systemd/system. /usr/local/lib/... is on systemd
# 252's search path for units, generators, sysusers.d, tmpfiles.d and catalogs, so booting with
# --bind-ro=$LOOP_STAGE/usr/local:/usr/local is all it takes (checked by test-systemd-generator.sh).
# Config and state keep their real places (/etc/loop, /var/lib/loop), as a distribution build has.
#
# LOOP_SOURCE_DIR defaults to the checkout this file is in, LOOP_BUILD_DIR to its build/.

: "${LOOP_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${LOOP_BUILD_DIR:=$LOOP_SOURCE_DIR/build}"

_stage_setup() {
        local b=$1
        [ -f "$b/build.ninja" ] && return 0
        rm -rf "$b"
        meson setup "$b" "$LOOP_SOURCE_DIR" \
                --prefix=/usr/local --sysconfdir=/etc --localstatedir=/var \
                -Dsystemdsystemunitdir=/usr/local/lib/systemd/system \
                -Dsystemdsystemgeneratordir=/usr/local/lib/systemd/system-generators \
                -Dsysusersdir=/usr/local/lib/sysusers.d \
                -Dtmpfilesdir=/usr/local/lib/tmpfiles.d \
                -Dcatalogdir=/usr/local/lib/systemd/catalog \
                -Dtests=false
}

stage_install() {
        local top=$LOOP_BUILD_DIR/test-stage b root log sum status=0
        b=$top/build
        root=$top/root
        log=$top/stage.log
        mkdir -p "$top" || return 1
        (
                # One staging at a time, should two test runs share the build dir.
                flock 9
                {
                        rm -rf "$root.new"
                        _stage_setup "$b" && meson install -C "$b" --destdir "$root.new" --quiet || {
                                # A build dir from an older tree or meson can be beyond repair: start over.
                                echo "stage: retrying with a new build directory"
                                rm -rf "$b" "$root.new"
                                _stage_setup "$b" && meson install -C "$b" --destdir "$root.new" --quiet
                        } || exit 1
                        # Tests running in parallel have an earlier root bound into their containers:
                        # never change one in place. Each distinct install is a root of its own, named
                        # by its contents; roots of other installs older than a day are pruned.
                        sum=$(cd "$root.new" && { find . -printf '%p %m %l\n' | sort
                                                       find . -type f -print0 | sort -z | xargs -0 sha256sum
                                                     } | sha256sum | cut -c1-16) || exit 1
                        if [ -d "$root-$sum" ]; then
                                rm -rf "$root.new"
                        else
                                mv "$root.new" "$root-$sum" || exit 1
                        fi
                        find "$top" -maxdepth 1 -name 'root-*' ! -name "root-$sum" -mtime +0 \
                                -exec rm -rf {} + 2>/dev/null
                        echo "$root-$sum" >"$top/current.$$"
                } >"$log" 2>&1
        ) 9>"$top/lock" || status=$?
        if [ $status -ne 0 ]; then
                echo "stage: building or installing the staging tree failed; $log:" >&2
                tail -n 40 "$log" >&2
                return 1
        fi
        LOOP_STAGE=$(cat "$top/current.$$") && rm -f "$top/current.$$" || return 1
        if [ ! -d "$LOOP_STAGE/usr/local" ]; then
                echo "stage: $LOOP_STAGE/usr/local missing after meson install" >&2
                return 1
        fi
}
