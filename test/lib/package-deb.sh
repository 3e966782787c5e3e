# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# The Debian package of this tree, built and installed into a fresh nspawn machine (test-package-deb,
# test-ansible). Needs tap.sh, nspawn.sh and test-image.sh loaded (systemd-test.sh loads them).
#
#   deb_require TOOL...      bails out unless root, nspawn, TOOL... (and dpkg-buildpackage, dh, git) are
#                            there and the host has no loop package installed (never touched by a test)
#   deb_source WORK          copies the working tree as it is (uncommitted changes included, ignored files
#                            such as build/ left out) to WORK/src/loop-VERSION and runs dpkg-source -b
#                            there (log: WORK/source.log); sets DEB_VERSION and DEB_SRC
#   deb_binary WORK          dpkg-buildpackage -us -uc -b in it (log: WORK/build.log); sets DEB, the .deb
#   deb_machine_prepare WORK what a machine needs to install DEB with apt: /usr as an overlay whose upper
#                            directory is WORK/usr-upper (what the package writes to /usr lands there), a
#                            copy of the host's dpkg database (the package's dependencies are the host's
#                            installed packages), the .deb under /srv/loop-debs, and the test image rootfs
#                            WORK/rootfs with the package's loop in it; sets DEB_BOOT_ARGS for nspawn_boot
#   deb_machine_apt_ready M  apt's directories in the booted machine M, and no policy-rc.d
# Nothing is installed on the host.

deb_require() {
        local t
        nspawn_require || bail_out "integration tests need root and systemd-nspawn (see above)"
        for t in dpkg-buildpackage dh git "$@"; do
                command -v "$t" >/dev/null ||
                        bail_out "$t is missing: apt-get install the packages of .ci/packages (.ci/install-deps)"
        done
        ! dpkg-query -W -f='${db:Status-Abbrev}' loop 2>/dev/null | grep -q '^i' ||
                bail_out "the package loop is installed on this host; this test must not touch a real install"
}

deb_source() {
        local work=$1
        DEB_VERSION=$(cd "$LOOP_SOURCE_DIR" && dpkg-parsechangelog -S Version) || return 1
        DEB_SRC=$work/src/loop-$DEB_VERSION
        mkdir -p "$DEB_SRC" && (
                cd "$LOOP_SOURCE_DIR" &&
                        git ls-files -z --cached --others --exclude-standard |
                        while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
                        xargs -0 cp --parents -P -t "$DEB_SRC"
        ) || return 1
        (cd "$work/src" && dpkg-source -b "loop-$DEB_VERSION") >"$work/source.log" 2>&1
}

deb_binary() {
        local work=$1
        (cd "$DEB_SRC" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 || return 1
        DEB=$work/src/loop_${DEB_VERSION}_$(dpkg --print-architecture).deb
        [ -f "$DEB" ]
}

deb_machine_prepare() {
        local work=$1
        mkdir -p "$work/usr-upper" "$work/debs" && cp "$DEB" "$work/debs/" || return 1
        cp -a /var/lib/dpkg "$work/dpkg" || return 1
        # The machine's /etc has none of the host's system groups, which the host's stat overrides name (dpkg
        # refuses to run with an override for an unknown group); they are about other packages' files.
        : >"$work/dpkg/statoverride"
        # The test image's loop (its in-container verbs: seal, syscallwrap, privdrop) is the package's, as
        # `loop image build` would put the installed one into the agent image.
        dpkg-deb -x "$DEB" "$work/deb-root" || return 1
        TEST_IMAGE_LOOP=$work/deb-root/usr/bin/loop build_test_rootfs "$work/rootfs" >/dev/null || return 1
        DEB_BOOT_ARGS=(--podman --overlay="/usr:$work/usr-upper:/usr" --bind="$work/dpkg:/var/lib/dpkg"
                --bind-ro="$work/debs:/srv/loop-debs")
}

deb_machine_apt_ready() {
        local m=$1
        # A Debian image made with Docker carries a policy-rc.d that forbids every service action (exit
        # 101), which deb-systemd-invoke obeys; a Debian host has none, and neither has the machine.
        nspawn_exec "$m" rm -f /usr/sbin/policy-rc.d
        nspawn_exec "$m" mkdir -p /etc/apt/apt.conf.d /etc/apt/preferences.d /etc/apt/sources.list.d \
                /var/lib/apt/lists/partial /var/cache/apt/archives/partial /var/log/apt &&
                nspawn_exec "$m" touch /etc/apt/sources.list
}
