#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Fedora package, as far as Debian can build it: `rpmbuild -bb loop.spec` with Debian's rpm, from a
# tarball of a copy of the source tree (the checkout is never written), with only the Fedora macros
# Debian lacks (test/rpm/macros.fedora, each as Fedora defines it) and --nodeps (Debian's rpm database
# is empty, so BuildRequires cannot be checked); %check runs the unit and generator suites. Then
# rpmlint on the spec and the package (test/rpm/loop.rpmlintrc says why each filter is there), the
# files at Fedora's paths and the scriptlets the systemd macros make. Not tested here: installing the
# package on a Fedora machine.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"
: "${LOOP_SOURCE_DIR:=$(readlink -f "$lib/../..")}"

for t in rpmbuild rpmlint meson git; do
        command -v "$t" >/dev/null ||
                bail_out "$t is missing: apt-get install rpm rpmlint meson git (.ci/install-deps)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/loop-pkg-rpm.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$work'"
spec=$LOOP_SOURCE_DIR/loop.spec
version=$(rpmspec -q --srpm --qf '%{version}' --load="$LOOP_SOURCE_DIR/test/rpm/macros.fedora" "$spec" 2>/dev/null) ||
        bail_out "cannot read the version from loop.spec"
is "$version" "$(cd "$LOOP_SOURCE_DIR" && dpkg-parsechangelog -S Version 2>/dev/null || echo "$version")" \
        "loop.spec and debian/changelog name the same version"

# --- build ----------------------------------------------------------------------------------------
mkdir -p "$work/loop-$version" "$work/top/SOURCES" && (
        cd "$LOOP_SOURCE_DIR" &&
                git ls-files -z --cached --others --exclude-standard |
                while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
                xargs -0 cp --parents -P -t "$work/loop-$version"
) && tar -C "$work" -czf "$work/top/SOURCES/loop-$version.tar.gz" "loop-$version" &&
        cp "$LOOP_SOURCE_DIR/sysusers.d/loop.conf" "$work/top/SOURCES/loop.sysusers" &&
        cp "$LOOP_SOURCE_DIR/tmpfiles.d/loop.conf" "$work/top/SOURCES/loop.tmpfiles" ||
        bail_out "cannot make the source tarball"
rpmbuild --load="$LOOP_SOURCE_DIR/test/rpm/macros.fedora" --define "_topdir $work/top" --nodeps -bb "$spec" \
        >"$work/build.log" 2>&1
ok $? "rpmbuild -bb loop.spec builds the package" ||
        { diag "$(tail -n 40 "$work/build.log")"; bail_out "no package to test"; }
rpm=$(find "$work/top/RPMS" -name "loop-$version-*.rpm" | head -1)
[ -f "$rpm" ] || bail_out "rpmbuild made no loop-$version-*.rpm"
like "$(sed -n '/meson test .*--suite unit --suite generator/,/^Fail:/p' "$work/build.log")" $'\nOk: +[1-9]' \
        "%check runs the unit and generator suites"
unlike "$(grep -E '^(Fail|Timeout):' "$work/build.log")" ":[[:space:]]+[1-9]" "...and none of them fails"

out=$(rpmlint -r "$LOOP_SOURCE_DIR/test/rpm/loop.rpmlintrc" "$spec" "$rpm" 2>&1)
ok $? "rpmlint passes the spec and the package" || diag "$out"
like "$out" " 0 errors, 0 warnings" "...with no error and no warning"

# --- what the package holds -----------------------------------------------------------------------
files=$(rpm -qlp "$rpm")
for f in /usr/bin/loop /usr/lib/systemd/system-generators/loop-generator /usr/lib/systemd/system/loop.target \
        /usr/lib/systemd/system/loop-agent@.service /usr/lib/systemd/system/loop-gateway@.socket \
        /usr/libexec/loop/loop-gate /usr/lib/sysusers.d/loop.conf /usr/lib/tmpfiles.d/loop.conf \
        /usr/lib/systemd/catalog/loop.catalog /usr/share/man/man5/loop.json.5 /usr/share/man/man7/loop.units.7 \
        /usr/share/loop/image/bootstrap /etc/loop/channels.d /var/lib/loop; do
        grep -qxE "$f(\.(gz|bz2|xz|zst))?" <<<"$files"
        ok $? "the package holds $f at Fedora's path"
done
unit=$(rpm2cpio "$rpm" | (cd "$work" && cpio -id --quiet ./usr/lib/systemd/system/loop-agent@.service) &&
        cat "$work/usr/lib/systemd/system/loop-agent@.service")
like "$unit" $'\nExecStart=/usr/bin/loop runner %i' "the units run /usr/bin/loop"

scripts=$(rpm -qp --scripts "$rpm")
user_line=$(grep '^u ' "$LOOP_SOURCE_DIR/sysusers.d/loop.conf")
like "$scripts" "systemd-sysusers --replace=/usr/lib/sysusers.d/loop.conf - <<SYSTEMD_INLINE_EOF" \
        "%pre creates the loop user from the sysusers.d file before the files are laid down"
[[ $scripts == *"$user_line"* ]]
ok $? "...with the same user as sysusers.d/loop.conf"
like "$scripts" "systemd-tmpfiles --replace=/usr/lib/tmpfiles.d/loop.conf --create -" \
        "%pre makes loop's directories from the tmpfiles.d file"
like "$scripts" "systemd-update-helper install-system-units loop.target loop-reconcile.timer" \
        "%post applies the presets to loop.target (%systemd_post)"
like "$scripts" "systemd-update-helper remove-system-units loop.target loop-reconcile.timer loop.slice" \
        "%preun stops loop.target and loop.slice on removal (%systemd_preun)"
unlike "$(rpm -qp --requires "$rpm")" "node|/usr/bin/env" \
        "the image's scripts add no host dependency (they run in the container)"

tap_done
