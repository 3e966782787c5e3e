#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# loop-gateway on this host, no container (issue 20): its command line (--help is answered, not taken for
# a channel name; a junk LOOP_GATEWAY_IDLE_SEC is refused, not read as the default), and its head
# deadline, one per request head rather than a timeout per read: a client that sends its head a byte a
# second is answered 408 when the 30 s deadline passes, while it is still sending (a timeout per read
# never fires for it: the old gateway held such a connection for as long as the bytes kept coming). The
# gateway runs under systemd-socket-activate, as its socket unit would start it; the client speaks HTTP
# on the gateway's socket itself. About 35 s.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"

: "${LOOP_BUILD_DIR:=$(dirname "$(readlink -f "$0")")/../../build}"
GATEWAY=$LOOP_BUILD_DIR/services/loop-gateway

[ -x "$GATEWAY" ] || bail_out "$GATEWAY is not built"
command -v systemd-socket-activate >/dev/null || bail_out "systemd-socket-activate is needed to run loop-gateway"
command -v python3 >/dev/null || bail_out "python3 is needed for the slow client"

T=$(mktemp -d /tmp/loop-test-gateway-slow-head.XXXXXX) || bail_out "mktemp failed"
atexit "rm -rf '$T'"
echo '{}' >"$T/egress.json"

help=$("$GATEWAY" --help 2>&1); rc=$?
[ $rc -eq 0 ] && [[ "$help" == Usage:* ]]; ok $? "--help prints the usage and succeeds" || diag "rc=$rc: $help"
LOOP_GATEWAY_IDLE_SEC=5x "$GATEWAY" demo --config "$T/egress.json" >"$T/junk.log" 2>&1
[ $? -ne 0 ] && grep -q LOOP_GATEWAY_IDLE_SEC "$T/junk.log"; ok $? "a junk LOOP_GATEWAY_IDLE_SEC is refused with a message" || diag "$(cat "$T/junk.log")"

systemd-socket-activate -E LOOP_LOG_TARGET=console -E LOOP_GATEWAY_IDLE_SEC=300 -l "$T/gateway.sock" \
        "$GATEWAY" demo --config "$T/egress.json" >"$T/gateway.log" 2>&1 &
gw=$!
atexit "kill $gw 2>/dev/null; wait $gw 2>/dev/null"
wait_for 30 test -S "$T/gateway.sock" || bail_out "the gateway's socket did not appear"

# Sends a request head a byte a second for 45 s (never complete: no blank line) and prints what came
# back and how many bytes it had sent by then.
out=$(python3 - "$T/gateway.sock" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
head = b"GET /.loop/ca.pem HTTP/1.1\r\nHost: gateway\r\nX-Slow: " + b"a" * 100
sent, got = 0, b""
s.settimeout(1.0)
for i in range(45):
    try:
        s.send(head[i:i + 1])
        sent += 1
    except OSError:
        break
    try:
        got = s.recv(4096)
        if got or got == b"":
            break
    except socket.timeout:
        pass
print("sent=%d" % sent)
print(got.split(b"\r\n")[0].decode(errors="replace"))
PY
)
diag "client: ${out//$'\n'/ | }"
sent=$(sed -n 's/^sent=//p' <<<"$out")
status=$(sed -n 2p <<<"$out")
is "$status" "HTTP/1.1 408 Request Timeout" "a head sent a byte a second is answered 408"
[ "${sent:-45}" -lt 45 ]; ok $? "  ... while the client is still sending it: the deadline is the head's, not each read's"

kill -0 "$gw" 2>/dev/null; ok $? "the gateway goes on serving"
curl -s --max-time 10 --unix-socket "$T/gateway.sock" -o /dev/null -w '%{http_code}' http://gateway/.loop/ca.pem >"$T/code" 2>/dev/null
is "$(cat "$T/code")" "404" "a prompt request after it is answered (404: no sandbox CA without a state directory)"

tap_done
