#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Issue 18: the paths by which the real secrets behind the egress gateway leaked at fd844b6, each tried
# again on a real systemd (PID 1 in nspawn) with rootful Podman, from inside the agent's container and,
# for the gateway socket, from the host as another local user (uid 65534). Every case here succeeded
# (leaked) on fd844b6 and must now be refused, and journaled where the issue says so.
#
#   item 1  `loop shell` is built by the agent's path: no real key, no interface but loopback, the relay
#   item 2  the gateway socket serves only the channel's containers (a token per container, presented by
#           the relay); another local user is refused and journaled with its uid; dummies per container
#   item 3  a credential dummy over plain http is refused (403); http://host:443/ is no https rule's
#   item 4  a secret an upstream echoes reaches the agent as the dummy; a request carrying a real secret
#           value is refused and journaled
#   item 5  other spellings of a denied host, and paths with dot-segments or encoded separators
#   item 7  the project file cannot choose the image; .loop/ is read-only in the agent's container
#   item 6  a secret in the agent's result is redacted from the runner's journal, base64 too
#   item 8  allow_api: false stops the model API pass-through; Azure's WireServer is refused; intercept:
#           always checks Host against SNI; CONNECT to an unlisted port is refused
#
# The upstream servers run in a network namespace this test makes inside the machine (198.51.100.2,
# 203.0.113.2), HTTP and HTTPS with a test CA; nothing leaves the machine.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"
# shellcheck source=test/lib/egress-test.sh
. "$lib/egress-test.sh"

systemd_test_prepare

M=loop-leaks-$$
IMAGE=localhost/loop-test:latest
API_KEY=sk-ant-REAL-api-key-0018-never-shown
GH_SECRET=ghp_REAL_secret_0018_never_shown
GH_DUMMY=ghp_loopdummy0018
W=/var/lib/loop/demo/work
UP=/run/egress-up
cfg=$(mktemp -d "${TMPDIR:-/tmp}/loop-leaks-etc.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$cfg'"
mkdir -p "$cfg/channels.d"
chmod 0755 "$cfg"

egress_test_ca "$cfg" up.test api.test cred.test tls.test paths.test other.test icpt.test || bail_out "cannot make the test CA"
egress_test_rootfs "$cfg"

cat >"$cfg/loop.json" <<EOF
{ "container_image": "$IMAGE", "browser": { "enabled": false }, "container_keep_alive_sec": 0,
  "anthropic_api_key": "$API_KEY" }
EOF
# Deny rules for one host in several spellings, before an allow-all (as seed 004 ends).
cat >"$cfg/channels.d/demo.json" <<EOF
{
  "egress": {
    "api_upstream": "https://api.test",
    "ca_file": "/etc/loop/test-ca.pem",
    "rules": [
      { "host": "cred.test", "decision": "credential",
        "credential": { "header": "Authorization", "dummy": "$GH_DUMMY", "secret": "$GH_SECRET" } },
      { "host": "x.internal.test", "schemes": [ "http", "https" ], "decision": "deny" },
      { "host": "203.0.113.2", "schemes": [ "http", "https" ], "decision": "deny" },
      { "host": "2001:db8::2", "schemes": [ "http", "https" ], "decision": "deny" },
      { "host": "paths.test", "schemes": [ "http" ], "paths": [ "^/hello" ], "decision": "deny" },
      { "host": "tls.test", "ports": [ 443 ], "decision": "allow" },
      { "host": "icpt.test", "intercept": "always", "decision": "allow" },
      { "host": "*", "schemes": [ "http", "https" ], "decision": "allow" }
    ]
  }
}
EOF
echo '{ "egress": { "api_upstream": "https://api.test", "ca_file": "/etc/loop/test-ca.pem", "allow_api": false } }' \
        >"$cfg/channels.d/noapi.json"
chmod 0644 "$cfg"/*.json "$cfg"/channels.d/*.json "$cfg"/*.pem "$cfg"/*.key "$cfg/egress-upstream.py"

# Another local user's attempt: a TCP connection of its own handed over on the gateway socket, with a
# credential line (forged) after the marker byte, as the relay does; prints the answer's status line.
cat >"$cfg/handover.py" <<'EOF'
import socket, sys
sock, cred, request = sys.argv[1], sys.argv[2], sys.argv[3]
l = socket.socket()
l.bind(('127.0.0.1', 0))
l.listen(1)
c = socket.create_connection(l.getsockname())
s, _ = l.accept()
u = socket.socket(socket.AF_UNIX)
u.connect(sock)
socket.send_fds(u, [b'\0' + cred.encode()], [s.fileno()])
s.close()
u.close()
c.sendall(request.encode().decode('unicode_escape').encode())
c.settimeout(60)
data = b''
while b'\r\n' not in data:
    d = c.recv(4096)
    if not d:
        break
    data += d
print('status:', data.split(b'\r\n')[0].decode(errors='replace'))
EOF
chmod 0644 "$cfg/handover.py"

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
agent() { out=$(in_ct loop run -q "${2:-demo}" "scenario:sh $1" 2>&1); }
has() { in_ct grep -q -a -- "$2" "$1"; }
curl_proxy='curl -sS --max-time 60'
nobody() { in_ct setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

nspawn_boot "$M" --podman --stage "$LOOP_STAGE" --config "$cfg" || bail_out "could not boot systemd with podman"
ok 0 "systemd boots with podman inside"
import_test_image "$(nspawn_root "$M")/run/podman/podman.sock" "$IMAGE" "$cfg/rootfs" >/dev/null
ok $? "the test image is imported into the container's podman"

net() {
        set -e
        ip netns add up
        ip link add gw0 type veth peer name up0
        ip link set up0 netns up
        ip addr add 198.51.100.1/24 dev gw0
        ip link set gw0 up
        ip route add 203.0.113.2/32 dev gw0
        ip route add 168.63.129.16/32 dev gw0
        ip netns exec up ip link set lo up
        ip netns exec up ip addr add 198.51.100.2/24 dev up0
        ip netns exec up ip addr add 203.0.113.2/32 dev up0
        ip netns exec up ip addr add 168.63.129.16/32 dev up0
        ip netns exec up ip link set up0 up
        ip netns exec up ip route add default dev up0
        printf '%s\n' '198.51.100.2 up.test api.test cred.test tls.test paths.test x.internal.test icpt.test' '203.0.113.2 other.test' \
                '168.63.129.16 wireserver.test' >>/etc/hosts
        mkdir -p /run/egress-up
        touch /run/egress-up/release
}
in_ct bash -c "$(declare -f net); net" >/dev/null 2>&1
ok $? "an upstream network namespace with documentation addresses"
check "the upstream servers start in it" in_ct systemd-run --unit=egress-upstream -p NetworkNamespacePath=/run/netns/up \
        python3 /etc/loop/egress-upstream.py /etc/loop/up.pem /etc/loop/up.key "$UP"
wait_for 30 in_ct test -e "$UP/ready"
check "systemd-sysusers creates the loop user" in_ct systemd-sysusers
check "systemctl start loop.target" in_ct systemctl start loop.target
in_ct test -S /run/loop/demo/gateway.sock
ok $? "the channel's gateway socket listens"

agent 'echo key=$ANTHROPIC_API_KEY; curl -sS --max-time 60 -H "x-api-key: $ANTHROPIC_API_KEY" -d "{}" "$ANTHROPIC_BASE_URL/v1/messages"'
dummy1=$(sed -n 's/^key=//p' <<<"$out")
like "$out" "data: one.*data: two" "the agent reaches the model API with its dummy (the gateway works)" || diag "$out"

# --- item 2: the gateway socket is the channel's containers' only ------------------------------------
agent 'echo key=$ANTHROPIC_API_KEY'
dummy2=$(sed -n 's/^key=//p' <<<"$out")
[ -n "$dummy1" ] && [ -n "$dummy2" ] && [ "$dummy1" != "$dummy2" ] && [ "$dummy1" != sk-proxy ]
ok $? "each container gets a dummy of its own, not a constant ($dummy1, $dummy2)"
is "$(in_ct stat -c '%U %a' /run/loop/demo/gateway.sock)" "root 666" "the socket is open to every local user (the engine may map uids)..."
res=$(nobody curl -sS --max-time 60 --unix-socket /run/loop/demo/gateway.sock -w ' http=%{http_code}\n' \
        -H "x-api-key: $dummy1" -d '{}' http://localhost/v1/messages 2>&1)
like "$res" "http=403" "...but uid 65534 speaking HTTP on it with an agent's dummy is refused (403)" || diag "$res"
unlike "$res" "data: one" "...and reaches no upstream"
like "$(gw_record "LOOP_PEER_UID=65534" LOOP_EVENT=gateway-request LOOP_REASON=not-a-container)" "LOOP_PEER_UID=65534" \
        "...journaled as not-a-container with the peer's uid"
res=$(nobody python3 /etc/loop/handover.py /run/loop/demo/gateway.sock \
        "loop-demo-000000 0000000000000000000000000000000000000000000000000000000000000000"$'\n' \
        "POST /v1/messages HTTP/1.1\\r\\nHost: x\\r\\nx-api-key: $dummy1\\r\\nContent-Length: 2\\r\\n\\r\\n{}" 2>&1)
like "$res" "status: HTTP/1.1 403" "uid 65534 handing a connection over as the relay does, with a forged token, is refused" || diag "$res"
like "$(gw_record "LOOP_REASON=bad-token" LOOP_EVENT=gateway-request LOOP_REASON=bad-token)" "LOOP_REASON=bad-token" \
        "...journaled as bad-token"
res=$(nobody curl -sS --max-time 30 --unix-socket /run/loop/demo/gateway.sock -w ' http=%{http_code}\n' -X POST \
        'http://localhost/.loop/register?container=loop-demo-evil' 2>&1)
like "$res" "http=403" "uid 65534 cannot register a container of its own"
unlike "$res" "token" "...and gets no token"
agent 'cat /run/loop/gateway-token; echo rc=$?; env | grep -c LOOP_GATEWAY_TOKEN=; cat /proc/[0-9]*/environ | tr "\0" "\n" | grep -c "^LOOP_GATEWAY_TOKEN="'
like "$out" "Permission denied" "the agent cannot read its container's gateway token (root's, for the relay)" || diag "$out"
like "$out" "rc=1"$'\n'"0"$'\n'"0" "...nor finds it in any environment" || diag "$out"

# --- item 1: loop shell, built by the agent's path --------------------------------------------------
out=$(in_ct loop shell demo -- sh -c 'env; echo interfaces=$(grep -c : /proc/net/dev); curl -sS --max-time 60 https://up.test/hello' </dev/null 2>&1)
is "$(grep -c -F -e "$API_KEY" <<<"$out")" 0 "the shell's environment holds no real key" || diag "$out"
like "$out" "ANTHROPIC_API_KEY=sk-loop-[0-9a-f]{48}" "...but its container's dummy" || diag "$out"
like "$out" "interfaces=1" "the shell's container has no interface but loopback"
like "$out" "hello from upstream up.test" "...and goes out through its relay and the gateway, by the policy" || diag "$out"
out=$(in_ct loop shell demo -- sh -c 'touch /usr/x; grep NoNewPrivs /proc/self/status; grep -c "^CapEff:.0000000000000000" /proc/self/status' </dev/null 2>&1)
like "$out" "/usr/x: Read-only file system" "...and, as the agent's, a read-only root" || diag "$out"
like "$out" "NoNewPrivs:.1"$'\n'"1" "...no new privileges and no capabilities" || diag "$out"

# --- item 3: secrets only into TLS --------------------------------------------------------------------
in_ct sh -c ": >$UP/requests.log"
agent "$curl_proxy -w ' http=%{http_code}\n' -H 'Authorization: token $GH_DUMMY' http://cred.test/whoami"
like "$out" "only injected over TLS.*http=403" "a credential dummy over plain http is refused with a clear 403" || diag "$out"
has "$UP/requests.log" "$GH_SECRET"
ok $((!$?)) "...and the secret never went out in clear text"
agent "$curl_proxy -H 'Authorization: token $GH_DUMMY' https://cred.test/whoami"
like "$out" "authorization=True" "the credential is injected over TLS the gateway made and verified" || diag "$out"
agent "$curl_proxy -o /dev/null -w 'http=%{http_code}\n' http://tls.test:443/hello"
like "$out" "http=403" "http://tls.test:443/ does not match tls.test's rule for 443 (https)" || diag "$out"
like "$(gw_record "LOOP_RULE=default" LOOP_EVENT=gateway-request LOOP_HOST=tls.test LOOP_KIND=http)" "LOOP_DECISION=deny" \
        "...the gateway's decision, journaled"

# --- item 4: echoed secrets --------------------------------------------------------------------------
# An upstream that reflects the Authorization header it got (body and Set-Cookie): the agent gets the
# dummy back, not the real value, whether the body comes with a Content-Length or chunked.
agent "$curl_proxy -D /tmp/h -H 'Authorization: token $GH_DUMMY' https://cred.test/reflect; echo; grep -i '^set-cookie' /tmp/h
       $curl_proxy -H 'Authorization: token $GH_DUMMY' -H 'X-Chunked: 1' https://cred.test/reflect; echo"
is "$(grep -c -F "$GH_SECRET" <<<"$out")" 0 "a secret an upstream echoes (body, cookie, chunked or not) never reaches the agent" || diag "$out"
like "$out" "token $GH_DUMMY"$'\n'".*seen=token_$GH_DUMMY" "...it gets the dummy in its place, in the body and the cookie" || diag "$out"
like "$out" "seen=token_$GH_DUMMY.*"$'\n'"token $GH_DUMMY\$" "...also in a chunked body, the value split across two chunks" || diag "$out"
# Should a real value reach the agent anyway (here: put into its work dir), sending it is refused.
in_ct sh -c "printf %s '$GH_SECRET' >$W/leaked; chmod 0644 $W/leaked"
agent "s=\$(cat /var/lib/loop/demo/work/leaked)
       $curl_proxy -o /dev/null -w 'http=%{http_code}\n' -H \"X-Echoed: \$s\" http://up.test/hello
       $curl_proxy -o /dev/null -w 'http=%{http_code}\n' \"http://up.test/hello?k=\$s\""
in_ct rm -f "$W/leaked"
like "$out" "http=403"$'\n'"http=403" "a request carrying a real secret value (header, query) is refused" || diag "$out"
like "$(gw_record "LOOP_REASON=secret-in-request" LOOP_EVENT=gateway-request LOOP_REASON=secret-in-request)" \
        "LOOP_REASON=secret-in-request" "...and journaled"

# --- item 5: one host, one spelling -----------------------------------------------------------------
# Raw requests: curl would normalise some spellings itself before the gateway sees them.
agent "for h in x.internal.test. X.Internal.Test 3405803778 0313.0.0161.02 0xcb.0.0x71.2 203.0.113.02 '[::ffff:203.0.113.2]' \
                '[2001:0db8::2]' '[2001:DB8::2]'; do
               printf 'GET http://%s/hello HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' \$h \$h | nc -w 20 127.0.0.1 3128 | head -1 | sed \"s|^|\$h http |\"
               printf 'CONNECT %s:443 HTTP/1.1\\r\\nHost: %s:443\\r\\n\\r\\n' \$h \$h | nc -w 20 127.0.0.1 3128 | head -1 | sed \"s|^|\$h connect |\"
       done"
is "$(grep -c -E ' (http|connect) HTTP/1.1 40[03] ' <<<"$out")" 18 \
        "every other spelling of a denied host is refused, over http and CONNECT (none reaches the allow-all)" || diag "$out"
like "$out" "3405803778 http HTTP/1.1 400 .*0xcb.0.0x71.2 http HTTP/1.1 400 .*203.0.113.02 http HTTP/1.1 400 " \
        "...inet_aton's legacy forms as a bad host (400)" || diag "$out"
agent "$curl_proxy --path-as-is -o /dev/null -w 'http=%{http_code}\n' http://paths.test/x/../hello
       $curl_proxy --path-as-is -o /dev/null -w 'http=%{http_code}\n' http://paths.test/%2e%2e/hello
       $curl_proxy --path-as-is -o /dev/null -w 'http=%{http_code}\n' http://paths.test/x%2f..%2fhello
       $curl_proxy --path-as-is -o /dev/null -w 'http=%{http_code}\n' http://paths.test/%68ello"
like "$out" "http=403"$'\n'"http=400"$'\n'"http=400"$'\n'"http=403" \
        "a path rule sees the path after dot-segment removal and decoding; encoded separators and dot-segments are refused" || diag "$out"

# --- item 7: the project file cannot choose the image, and the agent cannot write it --------------------
in_ct sh -c "mkdir -p $W/.loop && echo '{}' >$W/.loop/config.json && chmod 0644 $W/.loop/config.json"
agent 'echo "{\"container_image\": \"localhost/evil:latest\"}" >/var/lib/loop/demo/work/.loop/config.json; echo rc=$?
       grep " /var/lib/loop/demo/work/.loop/config.json " /proc/self/mountinfo | cut -d" " -f5,6'
like "$out" "rc=[1-9]"$'\n'"/var/lib/loop/demo/work/.loop/config.json ro" \
        "the agent cannot write .loop/config.json: it is mounted read-only in its container" || diag "$out"
in_ct sh -c 'echo "{\"container_image\": \"localhost/evil:latest\"}" >/var/lib/loop/demo/work/.loop/config.json'
agent 'echo ran-in-the-operators-image'
like "$out" "cannot choose the image.*ran-in-the-operators-image" \
        "a project file naming another image is ignored with a warning: the operator's image runs" || diag "$out"
in_ct rm -f /var/lib/loop/demo/work/.loop/config.json

# --- item 6: every secret loop knows is redacted, in its encoded forms too -----------------------------
# The runner service journals the agent's result (run-finished): a secret in it, as it is and base64.
in_ct sh -c "printf %s '$GH_SECRET' >$W/leaked; chmod 0644 $W/leaked"
in_ct loop send demo 'scenario:sh cat /var/lib/loop/demo/work/leaked; echo; base64 -w0 /var/lib/loop/demo/work/leaked' >/dev/null
wait_for 120 in_ct sh -c 'journalctl -o export LOOP_EVENT=run-finished LOOP_CHANNEL=demo | grep -q -a "^MESSAGE="'
rec=$(in_ct journalctl -o export LOOP_EVENT=run-finished LOOP_CHANNEL=demo | tr -d '\000')
in_ct rm -f "$W/leaked"
like "$rec" "REDACTED" "the runner journals the agent's result with a credential's secret redacted" || diag "$rec"
is "$(grep -c -a -F -e "$GH_SECRET" -e "$(printf %s "$GH_SECRET" | base64 -w0)" <<<"$rec")" 0 "...as it is and in base64" || diag "$rec"

# --- item 8: smaller gaps -----------------------------------------------------------------------------
in_ct curl -s --max-time 30 -o /dev/null -w '%{http_code}' http://168.63.129.16/hello | grep -q 200
ok $? "Azure's WireServer address answers when asked directly from the host (so a refusal is the gateway's)"
agent "$curl_proxy -o /dev/null -w 'http=%{http_code}\n' http://wireserver.test/hello"
like "$out" "http=403" "a name resolving to Azure's WireServer 168.63.129.16 is refused" || diag "$out"
like "$(gw_record "LOOP_REASON=address-blocked:metadata" LOOP_EVENT=gateway-request LOOP_HOST=wireserver.test)" \
        "LOOP_REASON=address-blocked:metadata" "...as a metadata address"
agent "$curl_proxy -w ' http=%{http_code}\n' https://icpt.test/hello; $curl_proxy -w ' http=%{http_code}\n' -H 'Host: other.test' https://icpt.test/hello"
like "$out" "hello from upstream icpt.test"$'\n'" http=200" "intercept: always: an allowed host is intercepted (its TLS ended by the gateway)" || diag "$out"
like "$out" "http=421" "...so a Host header that is not the server name is refused" || diag "$out"
agent "$curl_proxy -o /dev/null -w 'connect=%{http_connect}\n' https://up.test:8443/hello"
like "$out" "connect=403" "a CONNECT to a port no rule names is refused (403) before the gateway connects: rules default to 443" || diag "$out"
# allow_api: false
agent 'curl -sS --max-time 60 -w " http=%{http_code}\n" -H "x-api-key: $ANTHROPIC_API_KEY" -d "{}" "$ANTHROPIC_BASE_URL/v1/messages"' noapi
like "$out" "http=403" "allow_api: false refuses the model API pass-through" || diag "$out"
unlike "$out" "data: one" "...which reaches nothing"

n=$(in_ct journalctl -o export | grep -c -a -F -e "$API_KEY" -e "$GH_SECRET" -e "$(printf %s "$GH_SECRET" | base64 -w0)")
is "$n" 0 "the journal of the whole run holds no secret value" ||
        diag "$(in_ct journalctl -o export | grep -a -E "^(SYSLOG_IDENTIFIER|_COMM|LOOP_EVENT|MESSAGE)=|$API_KEY|$GH_SECRET" | grep -a -B6 -F -e "$API_KEY" -e "$GH_SECRET" | cut -c1-300)"

nspawn_stop "$M"
ok $? "the container powers off cleanly"
tap_done
