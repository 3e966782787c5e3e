#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The egress gateway's guards attacked as the agent would (issue: red team 2), on this host, no container:
# the gateway runs under systemd-socket-activate as its socket unit would start it, with a state
# directory (sandbox CA, token key); the client registers a container as the runner does (root), then
# hands its own TCP connections over as the relay does, with that container's token.
#
#   - the path rules of an intercepted host decide on the normalised path, as those of plain HTTP do:
#     "/pub/../secret" and "/pub/%2e%2e/secret" inside a tunnel were matched raw against "^/pub/" and
#     allowed, while the upstream reads them as /secret
#   - a path only holds the characters RFC 3986 allows: a backslash (which WHATWG URL parsers, Node's
#     among them, read as "/") and a dot-segment with parameters ("..;", which Tomcat reads as "..")
#     took "/pub/..\secret" and "/pub/..;/secret" past "^/pub/"
#
# Nothing leaves the machine: the rules name "localhost", which the gateway resolves to loopback and
# refuses to connect to (address-blocked). A request the policy allowed gets that refusal; one the
# policy refused gets the policy's (or bad-path's): the answer tells which guard decided. About 5 s.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/tap.sh
. "$lib/tap.sh"

: "${LOOP_BUILD_DIR:=$(dirname "$(readlink -f "$0")")/../../build}"
GATEWAY=${LOOP_TEST_GATEWAY:-$LOOP_BUILD_DIR/services/loop-gateway}

[ -x "$GATEWAY" ] || bail_out "$GATEWAY is not built"
[ "$(id -u)" -eq 0 ] || bail_out "root is needed: only root registers a container with the gateway"
command -v systemd-socket-activate >/dev/null || bail_out "systemd-socket-activate is needed to run loop-gateway"
command -v python3 >/dev/null || bail_out "python3 is needed for the client"

T=$(mktemp -d /tmp/loop-test-egress-guards.XXXXXX) || bail_out "mktemp failed"
atexit "rm -rf '$T'"
mkdir -m 0700 "$T/state"
cat >"$T/egress.json" <<'EOF'
{ "egress": { "allow_api": false, "rules": [
  { "host": "localhost", "intercept": "always", "paths": [ "^/pub/" ], "decision": "allow" },
  { "host": "localhost", "schemes": [ "http" ], "methods": [ "DELETE" ], "decision": "deny" },
  { "host": "localhost", "schemes": [ "http" ], "paths": [ "^/pub/" ], "decision": "allow" }
] } }
EOF

systemd-socket-activate -E LOOP_LOG_TARGET=console -E LOOP_GATEWAY_IDLE_SEC=300 -E STATE_DIRECTORY="$T/state" \
        -l "$T/gateway.sock" "$GATEWAY" guards --config "$T/egress.json" >"$T/gateway.log" 2>&1 &
gw=$!
atexit "kill $gw 2>/dev/null; wait $gw 2>/dev/null"
wait_for 30 test -S "$T/gateway.sock" || bail_out "the gateway's socket did not appear"

# client.py SOCK MODE PATH [METHOD [HEADER]]: registers container "guards-1", hands a TCP connection over
# with its token and sends one request for PATH (GET, or METHOD, with HEADER if given): MODE "tunnel"
# inside an intercepted CONNECT localhost:443, "http" as a plain absolute-form request. Prints "STATUS
# BODY" of the answer.
cat >"$T/client.py" <<'EOF'
import json, socket, ssl, sys

sock_path, mode, path = sys.argv[1:4]
method = sys.argv[4] if len(sys.argv) > 4 else 'GET'
extra = sys.argv[5] + '\r\n' if len(sys.argv) > 5 else ''

def unix():
    u = socket.socket(socket.AF_UNIX)
    u.settimeout(30)
    u.connect(sock_path)
    return u

def answer(f):
    data = b''
    while True:
        d = f.recv(65536)
        if not d:
            break
        data += d
        head, sep, body = data.partition(b'\r\n\r\n')
        if sep:
            n = 0
            for line in head.split(b'\r\n')[1:]:
                k, _, v = line.partition(b':')
                if k.strip().lower() == b'content-length':
                    n = int(v)
            if len(body) >= n:
                break
    head, _, body = data.partition(b'\r\n\r\n')
    return head.split(b'\r\n')[0].decode(errors='replace'), body.decode(errors='replace').strip()

u = unix()
u.sendall(b'POST /.loop/register?container=guards-1 HTTP/1.1\r\nHost: gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
status, body = answer(u)
u.close()
if ' 200 ' not in status:
    print('register: ' + status + ' ' + body)
    sys.exit(1)
token = json.loads(body)['token']

l = socket.socket()
l.bind(('127.0.0.1', 0))
l.listen(1)
c = socket.create_connection(l.getsockname())
s, _ = l.accept()
u = unix()
socket.send_fds(u, [b'\0' + ('guards-1 %s\n' % token).encode()], [s.fileno()])
s.close()
u.close()
c.settimeout(30)

if mode == 'tunnel':
    c.sendall(b'CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n')
    data = b''
    while b'\r\n\r\n' not in data:
        d = c.recv(1)
        if not d:
            break
        data += d
    if b' 200 ' not in data.split(b'\r\n')[0]:
        print('connect: ' + data.decode(errors='replace'))
        sys.exit(1)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    c = ctx.wrap_socket(c, server_hostname='localhost')
    c.sendall(('%s %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n' % (method, path, extra)).encode())
else:
    c.sendall(('%s http://localhost%s HTTP/1.1\r\nHost: localhost\r\n%s\r\n' % (method, path, extra)).encode())
status, body = answer(c)
print(status.split(' ')[1] if ' ' in status else status, body)
EOF

req() { python3 "$T/client.py" "$T/gateway.sock" "$@" 2>&1; }

# The guard that decided, from the answer: the address check comes after the policy allowed.
ALLOWED="403 loop egress gateway: the name leads to an address the gateway does not connect to"
POLICY="403 loop egress gateway: the egress policy does not allow this request"
BADPATH="400 loop egress gateway: the path holds an encoded / or dot-segment, a bad escape, or a byte RFC 3986 does not allow in a path"

is "$(req tunnel /pub/x)" "$ALLOWED" "tunnel: /pub/x is allowed by the path rule (then refused as loopback)"
is "$(req tunnel /secret)" "$POLICY" "tunnel: /secret is refused by the policy"
is "$(req tunnel /pub/../secret)" "$POLICY" "tunnel: /pub/../secret is decided as /secret, refused by the policy"
is "$(req tunnel /pub/%2e%2e/secret)" "$BADPATH" "tunnel: an encoded dot-segment is refused (400 bad-path)"
is "$(req tunnel /pub/%2fsecret)" "$BADPATH" "tunnel: an encoded / is refused (400 bad-path)"
is "$(req http /pub/../secret)" "$POLICY" "http: /pub/../secret is decided as /secret, refused by the policy"
is "$(req tunnel '/pub/..\secret')" "$BADPATH" "tunnel: a backslash in the path is refused (400 bad-path)"
is "$(req http '/pub/..\secret')" "$BADPATH" "http: a backslash in the path is refused (400 bad-path)"
is "$(req tunnel '/pub/..;/secret')" "$BADPATH" "tunnel: a dot-segment with parameters (..;) is refused (400 bad-path)"
is "$(req http '/pub/.;/x')" "$BADPATH" "http: a dot-segment with parameters (.;) is refused (400 bad-path)"
is "$(req http '/pub/a;b=c/x')" "$ALLOWED" "http: parameters in other segments are kept (allowed, then refused as loopback)"

# Methods: one spelling (RFC 9110 makes them case-sensitive, but ASP.NET Core and Werkzeug read "delete"
# as DELETE), and one method per request (an override header names a second one many frameworks obey).
BADMETHOD="400 loop egress gateway: the method is not in upper case, or a method-override header names another"
is "$(req http /pub/x DELETE)" "$POLICY" "http: DELETE is refused by the policy"
is "$(req http /pub/x delete)" "$BADMETHOD" "http: \"delete\" is not another method than DELETE: refused (400 bad-method)"
is "$(req http /pub/x Delete)" "$BADMETHOD" "http: ...nor is \"Delete\""
is "$(req http /pub/x POST 'X-HTTP-Method-Override: DELETE')" "$BADMETHOD" \
        "http: POST with X-HTTP-Method-Override: DELETE is refused (400 bad-method)"
is "$(req tunnel /pub/x POST 'X-Method-Override: delete')" "$BADMETHOD" "tunnel: ...X-Method-Override too"
is "$(req http /pub/x POST 'X-HTTP-Method: PUT')" "$BADMETHOD" "http: ...and X-HTTP-Method"
is "$(req http /pub/x POST 'X-HTTP-Method-Override: POST')" "$ALLOWED" "http: an override naming the request's own method is no other"

kill -0 "$gw" 2>/dev/null; ok $? "the gateway goes on serving"

tap_done
