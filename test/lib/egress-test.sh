#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# What the egress tests (test-gateway-container, test-egress-leaks) share; source it after systemd-test.sh
# and define in_ct (a command run inside the machine) before calling the journal helpers:
#   egress_test_ca DIR NAME...     a test CA (DIR/test-ca.pem, ca.key) and one upstream certificate
#                                  (DIR/up.pem, up.key) for every NAME
#   egress_test_rootfs DIR         the test rootfs in DIR/rootfs with curl and the test CA as its trust store,
#                                  and egress-upstream.py (the upstream servers) beside it
#   gw_journal FILTER...           the gateway's journal records, export format
#   gw_record REGEX FILTER...      the same, once one of them matches REGEX (a tunnel's record is written
#                                  when it closes and stored a moment later); what there is after 30 s or more
#                                  otherwise

egress_test_ca() {
        local dir=${1:?egress_test_ca DIR NAME...} san name
        shift
        san=subjectAltName=
        for name in "$@"; do san+="DNS:$name,"; done
        (
                set -e
                cd "$dir"
                openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=loop-test-ca \
                        -keyout ca.key -out test-ca.pem
                openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" -keyout up.key -out up.csr
                printf '%s\n' "${san%,}" >san.ext
                openssl x509 -req -in up.csr -CA test-ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext \
                        -out up.pem
        ) >/dev/null 2>&1
}

egress_test_rootfs() {
        local dir=${1:?egress_test_rootfs DIR}
        cp "$LOOP_SOURCE_DIR/test/integration/egress-upstream.py" "$dir/" || return 1
        build_test_rootfs "$dir/rootfs" >/dev/null || bail_out "cannot build the test rootfs"
        [ -x "$dir/rootfs/usr/bin/curl" ] || bail_out "the test image has no curl (install curl on the host)"
        # The test CA is the image's trust store, where curl looks by default.
        mkdir -p "$dir/rootfs/etc/ssl/certs" && cp "$dir/test-ca.pem" "$dir/rootfs/etc/ssl/certs/ca-certificates.crt" ||
                bail_out "cannot put the test CA into the image"
}

gw_journal() { in_ct journalctl -o export -u 'loop-gateway@*' "$@"; }

gw_record() {
        local re=$1 i rec
        shift
        for ((i = 0; i < 150; i++)); do
                rec=$(gw_journal "$@")
                [[ $rec =~ $re ]] && break
                sleep 0.2
        done
        printf '%s' "$rec"
}
