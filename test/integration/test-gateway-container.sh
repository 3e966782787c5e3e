#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The egress gateway end to end: a real systemd (PID 1 in nspawn) with rootful Podman inside; the
# generator enables loop-gateway@demo.socket and hands the gateway its policy and the real credentials
# as a systemd credential; the agent runs in a real container with no network, `loop relay` started by
# the entrypoint, and curl as its client. The upstream servers run in a network namespace this test
# makes inside the machine (198.51.100.2, 203.0.113.2, and, to prove the refusals are the gateway's and
# not a missing route, 10.0.0.5 and 169.254.169.254 too), HTTP and HTTPS with a test CA.
#
# Checked from inside the container: allowed hosts over HTTP and HTTPS (TLS end to end, verified by the
# agent), a denied host, a direct connection without the proxy, names resolving to private, metadata,
# loopback, the host's own and IPv4-mapped addresses, method and path rules, an intercepted upstream
# whose certificate fails the gateway's check, a credential swapped in on the wire (plain HTTP, and HTTPS through the gateway's TLS
# interception with its sandbox CA in the agent's trust store) while the agent's environment, files and
# /proc hold only the dummy, a dummy sent where it is not bound, kept-alive connections whose every request
# is checked on its own, pooled upstream connections, chunked request bodies (whole, and refused when
# malformed), chunk extensions and trailer fields (a response's passed on byte for byte and its end
# found, a request's dropped), an unknown key on the API pass-through, server-sent
# events arriving before the stream ends, Host/CONNECT and SNI/CONNECT mismatches, the relay's answer when
# the gateway is down, and the gateway killed mid-stream (the agent's connection breaks, the next one
# starts it again; while it flows, the gateway holds the agent's connection and the relay none), the
# host's own proxy (also one asking for a password, and refusing a wrong one). On the host side: a journal entry per request, no secret anywhere in the journal or the gateway's environment,
# a misconfigured gateway refusing everything and saying why,
# and the service's `systemd-analyze security` exposure.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"
# shellcheck source=test/lib/egress-test.sh
. "$lib/egress-test.sh"

systemd_test_prepare

M=loop-gateway-$$
IMAGE=localhost/loop-test:latest
API_KEY=sk-ant-REAL-api-key-0001-never-shown
GH_SECRET=ghp_REAL_secret_0001_never_shown
GH_DUMMY=ghp_loopdummy0001
GH_SECRET2=ghp_REAL_secret_0002_never_shown
PROXY_USER=loopproxy
PROXY_PASS=pr0xy-REAL-pass@0001-never-shown
PROXY_BASIC=$(printf '%s:%s' "$PROXY_USER" "$PROXY_PASS" | base64 -w0)
W=/var/lib/loop/demo/work
UP=/run/egress-up
cfg=$(mktemp -d "${TMPDIR:-/tmp}/loop-gateway-etc.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$cfg'"
mkdir -p "$cfg/channels.d"
# The gateway runs as a dynamic user and reads egress.ca_file from here.
chmod 0755 "$cfg"

# A test CA and one certificate for every upstream name.
egress_test_ca "$cfg" up.test api.test other.test cred.test denied.test far.test || bail_out "cannot make the test CA"
egress_test_rootfs "$cfg"

cat >"$cfg/loop.json" <<EOF
{ "container_image": "$IMAGE", "browser": { "enabled": false }, "container_keep_alive_sec": 0,
  "anthropic_api_key": "$API_KEY" }
EOF
cat >"$cfg/channels.d/demo.json" <<EOF
{
  "egress": {
    "api_upstream": "https://api.test",
    "ca_file": "/etc/loop/test-ca.pem",
    "rules": [
      { "host": "cred.test", "decision": "credential",
        "credential": { "header": "Authorization", "dummy": "$GH_DUMMY", "secret": "$GH_SECRET" } },
      { "host": "badcert.test", "decision": "credential",
        "credential": { "header": "Authorization", "dummy": "ghp_loopdummy0002", "secret": "$GH_SECRET2" } },
      { "host": "paths.test", "schemes": [ "http", "https" ], "methods": [ "GET" ], "paths": [ "^/hello\$" ], "decision": "allow" },
      { "host": "up.test", "schemes": [ "http", "https" ], "decision": "allow" },
      { "host": "other.test", "schemes": [ "http", "https" ], "decision": "allow" },
      { "host": "private.test", "schemes": [ "http", "https" ], "decision": "allow" },
      { "host": "meta.test", "schemes": [ "http", "https" ], "decision": "allow" },
      { "host": "loop.test", "schemes": [ "http", "https" ], "decision": "allow" },
      { "host": "self.test", "schemes": [ "http", "https" ], "decision": "allow" },
      { "host": "mapped.test", "schemes": [ "http", "https" ], "decision": "allow" }
    ]
  }
}
EOF
# The same, with the host's own HTTP proxy upstream (mitmdump passing TLS through, in the upstream
# namespace): far.test's address is routed only from there.
cat >"$cfg/channels.d/proxied.json" <<EOF
{ "egress": { "upstream_proxy": "http://198.51.100.2:8080", "rules": [ { "host": "far.test", "schemes": [ "http", "https" ], "decision": "allow" } ] } }
EOF
# The host's proxy asking for a password (a second mitmdump, with --proxyauth): user:password@ in the URL,
# which reaches the gateway only inside its credential; and the same with a wrong password.
cat >"$cfg/channels.d/authproxy.json" <<EOF
{ "egress": { "upstream_proxy": "http://$PROXY_USER:${PROXY_PASS//@/%40}@198.51.100.2:8081",
              "rules": [ { "host": "far.test", "schemes": [ "http", "https" ], "decision": "allow" } ] } }
EOF
cat >"$cfg/channels.d/badproxy.json" <<EOF
{ "egress": { "upstream_proxy": "http://$PROXY_USER:not-the-password@198.51.100.2:8081",
              "rules": [ { "host": "far.test", "schemes": [ "http", "https" ], "decision": "allow" } ] } }
EOF
# A gateway that cannot load its configuration (a CA file that is not there): it must refuse everything.
echo '{ "egress": { "ca_file": "/nonexistent/ca.pem", "rules": [ { "host": "up.test", "schemes": [ "http", "https" ], "decision": "allow" } ] } }' \
        >"$cfg/channels.d/broken.json"
# ...and the same proxy taken from the service's environment, as a host behind a proxy sets it.
echo '{ "egress": { "rules": [ { "host": "far.test", "schemes": [ "http", "https" ], "decision": "allow" } ] } }' >"$cfg/channels.d/envproxy.json"
# The seal's TCP restriction at its tightest: no port of the agent's own, only the relay's.
echo '{ "connect_tcp": "none", "egress": { "rules": [ { "host": "up.test", "schemes": [ "http", "https" ], "decision": "allow" } ] } }' \
        >"$cfg/channels.d/sealed.json"
chmod 0644 "$cfg"/*.json "$cfg"/channels.d/*.json "$cfg"/*.pem "$cfg"/*.key "$cfg/egress-upstream.py"

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
# agent CMD: `loop run -q demo "scenario:sh CMD"` in the machine; its output in $out, status in $st.
agent() {
        out=$(in_ct loop run -q demo "scenario:sh $1" 2>&1) && st=0 || st=$?
}
# agent_bg CMD FILE: the same in the background, output and "status=N" into FILE inside the machine.
agent_bg() {
        in_ct sh -c 'loop run -q demo "$1" >"$2" 2>&1; echo status=$? >>"$2"' sh "scenario:sh $1" "$2" &
}
has() { in_ct grep -q -- "$2" "$1"; }
curl_proxy='curl -sS --max-time 60'

nspawn_boot "$M" --podman --stage "$LOOP_STAGE" --config "$cfg" "$(journald_small_limit)" \
        --bind-ro="$LOOP_BUILD_DIR/test/integration/gate-probe:/opt/loop-test-probe/gate-probe" ||
        bail_out "could not boot systemd with podman"
ok 0 "systemd boots with podman inside"
import_test_image "$(nspawn_root "$M")/run/podman/podman.sock" "$IMAGE" "$cfg/rootfs" >/dev/null
ok $? "the test image is imported into the container's podman"

# --- the upstream network, made here ---------------------------------------------------------------
net() {
        set -e
        ip netns add up
        ip link add gw0 type veth peer name up0
        ip link set up0 netns up
        ip addr add 198.51.100.1/24 dev gw0
        ip link set gw0 up
        for a in 203.0.113.2 10.0.0.5 169.254.169.254; do ip route add "$a/32" dev gw0; done
        ip netns exec up ip link set lo up
        ip netns exec up ip addr add 198.51.100.2/24 dev up0
        for a in 203.0.113.2 10.0.0.5 169.254.169.254; do ip netns exec up ip addr add "$a/32" dev up0; done
        ip netns exec up ip addr add 203.0.113.50/32 dev lo
        ip netns exec up ip link set up0 up
        ip netns exec up ip route add default dev up0
        printf '%s\n' '198.51.100.2 up.test api.test cred.test denied.test paths.test badcert.test' '203.0.113.2 other.test' \
                '10.0.0.5 private.test' '169.254.169.254 meta.test' '203.0.113.50 far.test' '127.0.0.1 loop.test' \
                '198.51.100.1 self.test' '::ffff:10.0.0.5 mapped.test' >>/etc/hosts
        mkdir -p /run/egress-up
}
in_ct bash -c "$(declare -f net); net" >/dev/null 2>&1
ok $? "an upstream network namespace with documentation, private and metadata addresses"
check "the upstream servers start in it" in_ct systemd-run --unit=egress-upstream -p NetworkNamespacePath=/run/netns/up \
        python3 /etc/loop/egress-upstream.py /etc/loop/up.pem /etc/loop/up.key "$UP"
wait_for 30 in_ct test -e "$UP/ready"
check "the host's HTTP proxy starts there too" in_ct systemd-run --unit=egress-proxy -p NetworkNamespacePath=/run/netns/up \
        mitmdump -q --listen-host 198.51.100.2 --listen-port 8080 --ignore-hosts '.*' --set confdir=/run/egress-mitm
# (its password in its config.yaml, not on a command line the journal would keep)
in_ct sh -c "mkdir -p /run/egress-mitm-auth && printf 'proxyauth: \"%s\"\\n' '$PROXY_USER:$PROXY_PASS' >/run/egress-mitm-auth/config.yaml"
check "...and one that asks for a password" in_ct systemd-run --unit=egress-authproxy -p NetworkNamespacePath=/run/netns/up \
        mitmdump -q --listen-host 198.51.100.2 --listen-port 8081 --ignore-hosts '.*' --set confdir=/run/egress-mitm-auth
in_ct curl -s --max-time 30 http://10.0.0.5/hello | grep -q 'hello from upstream'
ok $? "...and the private address answers when asked directly from the host (so a refusal is the gateway's)"

check "systemd-sysusers creates the loop user" in_ct systemd-sysusers
check "systemctl start loop.target" in_ct systemctl start loop.target
is "$(prop loop-gateway@demo.socket ActiveState)" active "the generator enabled the channel's gateway socket"
in_ct test -S /run/loop/demo/gateway.sock
ok $? "...listening on /run/loop/demo/gateway.sock"
exposure=$(in_ct systemd-analyze security --no-pager loop-gateway@demo.service 2>/dev/null | tail -1)
diag "systemd-analyze security: $exposure"
level=$(sed -n 's/.*: \([0-9.]*\) .*/\1/p' <<<"$exposure")
ok "$(awk -v l="${level:-99}" 'BEGIN { print (l <= 3.0) ? 0 : 1 }')" "the gateway service's exposure is at most 3.0 (${level:-?})"

# --- what the agent holds ---------------------------------------------------------------------------
agent 'env; ip=$(cat /proc/net/dev | grep -c :); echo interfaces=$ip'
like "$out" "ANTHROPIC_API_KEY=sk-loop-[0-9a-f]{48}" "the agent holds a dummy key of its own container"
like "$out" "ANTHROPIC_BASE_URL=http://127.0.0.1:2376" "...and the relay's API port as its base URL"
like "$out" "HTTPS_PROXY=http://127.0.0.1:3128" "...and the relay as its proxy"
like "$out" "HTTP_PROXY=http://127.0.0.1:3128" "...for plain HTTP too" || diag "$out"
like "$out" "http_proxy=http://127.0.0.1:3128" "...in both spellings" || diag "$out"
like "$out" "NO_PROXY=localhost,127.0.0.1,::1" "...except for loopback (NO_PROXY), where the relay's API port is" || diag "$out"
like "$out" "interfaces=1" "the container has no interface but loopback"
# The agent dumps what it can read (its environment, every process's environment and command line, the
# files of the container) into the work dir; the test looks for the secrets there. The agent itself is
# never told them.
agent '{ env; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline;
         find / -xdev \( -path /proc -o -path /sys -o -path /dev \) -prune -o -type f -print | xargs cat;
         find $HOME /run /tmp -path /var/lib/loop/demo/work -prune -o -type f -print | xargs cat;
       } >/var/lib/loop/demo/work/dump 2>/dev/null; echo dumped'
like "$out" "dumped" "the agent dumps its environment, /proc and its files"
in_ct grep -q -a -E 'sk-loop-[0-9a-f]{48}' "$W/dump"
ok $? "...which hold the dummy key"
is "$(in_ct grep -c -a -F -e "$API_KEY" -e "$GH_SECRET" "$W/dump")" 0 "...and no real credential"

agent 'env'
like "$out" "NODE_EXTRA_CA_CERTS=" "the agent's Node trusts the sandbox CA (NODE_EXTRA_CA_CERTS)"
like "$out" "SSL_CERT_FILE=/run/loop-egress/ca-bundle.pem" "...and OpenSSL (SSL_CERT_FILE)"
like "$out" "REQUESTS_CA_BUNDLE=/run/loop-egress/ca-bundle.pem" "...and Python requests (REQUESTS_CA_BUNDLE)"
in_ct curl -s --unix-socket /run/loop/demo/gateway.sock -o /dev/null http://gateway/.loop/ca.pem
gw_env=$(in_ct sh -c 'tr "\0" "\n" </proc/$(systemctl show -P MainPID loop-gateway@demo.service)/environ; systemctl show loop-gateway@demo.service')
like "$gw_env" "CREDENTIALS_DIRECTORY=" "the gateway runs with its credentials directory"
is "$(grep -c -F -e "$API_KEY" -e "$GH_SECRET" <<<"$gw_env")" 0 \
        "...and its environment and unit properties hold no secret (they come as a credential)"

# --- allowed, denied, direct ------------------------------------------------------------------------
agent "$curl_proxy http://up.test/hello; $curl_proxy https://up.test/hello"
like "$out" "hello from upstream up.test"$'\n'"hello from upstream up.test" "an allowed host answers over HTTP and over HTTPS (verified end to end)" || diag "$out"
agent "$curl_proxy -o /dev/null -w 'http=%{http_code}\n' http://denied.test/hello; $curl_proxy https://denied.test/hello; echo rc=\$?"
like "$out" "http=403" "a host no rule allows is refused over HTTP (403)"
like "$out" "rc=56" "...and its CONNECT tunnel is refused"
agent "curl -sS --max-time 10 --noproxy '*' http://198.51.100.2/hello; echo rc=\$?"
like "$out" "rc=7" "a direct connection without the proxy fails: there is no route out" || diag "$out"
unlike "$out" "hello from upstream" "...and reaches nothing"
# "connect_tcp": "none" behind the gateway: the relay's two ports stay open, every other is Landlock's.
out=$(in_ct loop run -q sealed "scenario:sh loop seal --print | grep connect_tcp; $curl_proxy http://up.test/hello; nc 127.0.0.1 8081 </dev/null 2>&1; true" 2>&1)
like "$out" "connect_tcp 3128"$'\n'"connect_tcp 2376" "connect_tcp none behind the gateway leaves the relay's ports 3128 and 2376" || diag "$out"
like "$out" "hello from upstream up.test" "...through which an allowed host answers"
like "$out" "Permission denied" "...while a connection to any other loopback port is refused by Landlock"
agent "$curl_proxy -w ' http=%{http_code}\n' http://private.test/hello; $curl_proxy -w ' http=%{http_code}\n' http://meta.test/hello"
like "$out" "not connect to.*http=403.*not connect to.*http=403" "names resolving to private and metadata addresses are refused" || diag "$out"
unlike "$out" "hello from upstream" "...although their servers are there"
agent "for h in loop.test self.test mapped.test; do $curl_proxy -o /dev/null -w \"\$h http=%{http_code}\n\" http://\$h/hello; done"
like "$out" "loop.test http=403"$'\n'"self.test http=403"$'\n'"mapped.test http=403" \
        "names resolving to loopback, the host's own address and an IPv4-mapped private address are refused" || diag "$out"
like "$(gw_record "LOOP_REASON=address-blocked:loopback" LOOP_EVENT=gateway-request LOOP_HOST=loop.test)" "LOOP_REASON=address-blocked:loopback" "...journaled as loopback"
like "$(gw_record "LOOP_REASON=address-blocked:own-address" LOOP_EVENT=gateway-request LOOP_HOST=self.test)" "LOOP_REASON=address-blocked:own-address" "...the host's own address"
like "$(gw_record "LOOP_REASON=address-blocked:private" LOOP_EVENT=gateway-request LOOP_HOST=mapped.test)" "LOOP_REASON=address-blocked:private" "...and private"

# --- method and path rules ---------------------------------------------------------------------------
agent "$curl_proxy -w ' http=%{http_code}\n' http://paths.test/hello; $curl_proxy -o /dev/null -w 'http=%{http_code}\n' http://paths.test/whoami
       $curl_proxy -o /dev/null -w 'http=%{http_code}\n' -d x http://paths.test/hello"
like "$out" "hello from upstream paths.test"$'\n'" http=200"$'\n'"http=403"$'\n'"http=403" \
        "a rule with methods and paths allows GET /hello and refuses another path and another method" || diag "$out"

# --- credentials ------------------------------------------------------------------------------------
in_ct sh -c ": >$UP/requests.log"
agent "$curl_proxy -H 'Authorization: token $GH_DUMMY' https://cred.test/whoami; echo CURL_CA_BUNDLE=\$CURL_CA_BUNDLE;
       grep -c 'BEGIN CERTIFICATE' /run/loop-egress/ca-bundle.pem"
like "$out" "GET /whoami authorization=True" "a credential host is reached with the dummy over HTTPS: the gateway ends TLS with a leaf of its sandbox CA, which the agent trusts" || diag "$out"
unlike "$out" "$GH_SECRET" "...and the agent never sees the real token"
has "$UP/requests.log" "Authorization: token $GH_SECRET"
ok $? "...and the credential host receives the real token over TLS the gateway verified"
like "$out" "CURL_CA_BUNDLE=/run/loop-egress/ca-bundle.pem"$'\n'"2" "the agent's trust store is the image's bundle plus the sandbox CA"
is "$(in_ct sh -c 'stat -c %a /var/lib/private/loop-gateway/demo/ca.key')" 600 "the sandbox CA's key is readable by the gateway only"
agent "curl -sS --max-time 30 --cacert /etc/ssl/certs/ca-certificates.crt -H 'Authorization: token $GH_DUMMY' https://cred.test/whoami; echo rc=\$?"
like "$out" "rc=60" "a client that does not trust the sandbox CA refuses the intercepted connection (no silent downgrade)"
agent "$curl_proxy -w ' http=%{http_code}\n' -H 'Authorization: token $GH_DUMMY' http://up.test/whoami"
like "$out" "http=403" "a dummy sent to a host it is not bound to is refused" || diag "$out"
agent "$curl_proxy -w ' http=%{http_code}\n' -H 'Authorization: token ghp_agents_own_token' https://cred.test/whoami"
like "$out" "http=403" "a token of the agent's own to a credential host is refused"

# --- keep-alive, the upstream pool, chunked bodies -----------------------------------------------------
opts='-sS --max-time 60'
agent "curl $opts -H 'Authorization: token $GH_DUMMY' -w ' connects=%{num_connects}\n' https://cred.test/whoami \
       --next $opts -H 'Authorization: token ghp_agents_own_token' -w ' http=%{http_code} connects=%{num_connects}\n' https://cred.test/whoami"
like "$out" "authorization=True x-api-key=False"$'\n'" connects=1" "an intercepted connection is kept alive after a request" || diag "$out"
like "$out" "http=403 connects=0" "...and its next request is checked on its own: the agent's own token is refused on it" || diag "$out"
like "$(gw_record "LOOP_PATH=/whoami" LOOP_EVENT=gateway-request LOOP_KIND=connect LOOP_HOST=cred.test LOOP_REASON=unknown-dummy)" "LOOP_PATH=/whoami" \
        "...and journaled as a request of its own"
in_ct sh -c ": >$UP/requests.log"
agent "for i in 1 2; do $curl_proxy -H 'Authorization: token $GH_DUMMY' https://cred.test/whoami; done
       for i in 1 2; do $curl_proxy http://up.test/hello; done"
is "$(in_ct sh -c "grep -A1 '^cred.test GET /whoami' $UP/requests.log | grep -c peer:")" 2 "two agent connections to a credential host reach it" || diag "$out"
is "$(in_ct sh -c "grep -A1 '^cred.test GET /whoami' $UP/requests.log | grep peer: | sort -u | wc -l")" 1 \
        "...over one pooled upstream connection (TCP and TLS, verified, once)"
is "$(in_ct sh -c "grep -A1 '^up.test GET /hello' $UP/requests.log | grep peer: | sort -u | wc -l")" 1 \
        "plain HTTP requests of two connections share a pooled upstream connection too"
want="echo $(seq 1 20000 | wc -c) $(seq 1 20000 | md5sum | cut -d' ' -f1)"
agent "seq 1 20000 >/tmp/body; $curl_proxy -H 'Transfer-Encoding: chunked' --data-binary @/tmp/body http://up.test/echo
       $curl_proxy -H 'Transfer-Encoding: chunked' -H 'Authorization: token $GH_DUMMY' --data-binary @/tmp/body https://cred.test/echo"
like "$out" "$want"$'\n'"$want" "a chunked request body reaches the upstream whole, over plain HTTP and through interception" || diag "$out"
# A Content-Length body: what came with the head goes up in the head's write, the rest streams after it.
agent "$curl_proxy -d small-body http://up.test/echo; $curl_proxy -H 'Authorization: token $GH_DUMMY' -d small-body https://cred.test/echo
       seq 1 20000 >/tmp/body; $curl_proxy --data-binary @/tmp/body http://up.test/echo
       $curl_proxy -H 'Authorization: token $GH_DUMMY' --data-binary @/tmp/body https://cred.test/echo"
small="echo 10 $(printf small-body | md5sum | cut -d' ' -f1)"
like "$out" "$small"$'\n'"$small"$'\n'"$want"$'\n'"$want" \
        "a Content-Length request body reaches the upstream whole, small and large, over plain HTTP and through interception" || diag "$out"
agent "printf 'POST http://up.test/echo HTTP/1.1\\r\\nHost: up.test\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\nzz\\r\\n' |
       nc -w 10 127.0.0.1 3128 | head -1"
like "$out" "HTTP/1.1 400 " "a malformed chunked body is refused (400)" || diag "$out"
# RFC 9112 7.1.1/7.1.2: chunk extensions and trailer fields. A response's pass byte for byte (curl --raw
# shows the framing) and its end is found: the next request goes on the same connection. A request's
# are checked and dropped: the upstream gets the data re-chunked, without them.
chunky='3;name=value\r\nabc\r\n4 ; q="x;y" ; flag\r\ndefg\r\n0;end\r\nX-Trailer: yes\r\nX-Digest: md5=abc\r\n\r\n'
agent "curl $opts --raw -o /tmp/raw1 http://up.test/chunky --next $opts -w 'connects=%{num_connects}\n' http://up.test/hello
       curl $opts -o /tmp/raw2 -H 'Authorization: token $GH_DUMMY' https://cred.test/chunky \
            --next $opts -H 'Authorization: token $GH_DUMMY' -w 'connects=%{num_connects}\n' https://cred.test/hello
       printf '$chunky' | cmp - /tmp/raw1 && echo same1; printf abcdefg | cmp - /tmp/raw2 && echo same2"
like "$out" "same1" "a chunked response with extensions and trailers reaches the agent byte for byte" || diag "$out"
# A response to a request with an injected credential is scrubbed of the secret, so it is re-chunked.
like "$out" "same2" "...and, to an injected request, re-chunked (extensions and trailers dropped) with its data whole" || diag "$out"
like "$out" "hello from upstream up.test"$'\n'"connects=0" "...its end found: the next request goes on the kept connection" || diag "$out"
like "$out" "hello from upstream cred.test"$'\n'"connects=0" "...also inside an intercepted tunnel" || diag "$out"
in_ct sh -c ": >$UP/requests.log"
agent "printf 'POST http://up.test/echo HTTP/1.1\\r\\nHost: up.test\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n3;a=\"b c\"\\r\\nabc\\r\\n0;z\\r\\nX-Sneaky: $GH_DUMMY\\r\\n\\r\\n' |
       nc -w 10 127.0.0.1 3128 | tail -1"
like "$out" "echo 3 $(printf abc | md5sum | cut -d' ' -f1)" "a chunked request body with extensions and trailers reaches the upstream whole" || diag "$out"
has "$UP/requests.log" "trailer:"
ok $((!$?)) "...without its trailer fields (dropped by the gateway), so no dummy in them goes anywhere"

agent "$curl_proxy -w ' http=%{http_code}\n' -H 'Authorization: token ghp_loopdummy0002' https://badcert.test/whoami"
like "$out" "cannot be verified.*http=502" "an intercepted upstream whose certificate does not name the host is refused (502)" || diag "$out"
like "$(gw_record "LOOP_REASON=upstream-tls" LOOP_EVENT=gateway-request LOOP_HOST=badcert.test)" "LOOP_REASON=upstream-tls" "...journaled as upstream-tls"
has "$UP/requests.log" "ghp_loopdummy0002\|$GH_SECRET2"
ok $((!$?)) "...and the upstream never saw the request"

# --- the model API pass-through ------------------------------------------------------------------------
in_ct touch "$UP/release"
agent 'curl -sS --max-time 60 -H "x-api-key: $ANTHROPIC_API_KEY" -d "{}" "$ANTHROPIC_BASE_URL/v1/messages"'
like "$out" "data: one.*data: two" "the API pass-through reaches the model API over verified TLS" || diag "$out"
has "$UP/requests.log" "x-api-key: $API_KEY"
ok $? "...with the real key in place of the dummy"
agent 'curl -sS --max-time 60 -w " http=%{http_code}\n" -H "x-api-key: sk-ant-agents-own-key" -d "{}" "$ANTHROPIC_BASE_URL/v1/messages"'
like "$out" "http=403" "a key that is not the dummy is refused by the API pass-through"

in_ct rm -f "$UP/release" "$W/sse.out"
agent_bg 'curl -sS -N --max-time 120 -H "x-api-key: $ANTHROPIC_API_KEY" -d "{}" "$ANTHROPIC_BASE_URL/v1/messages" >/var/lib/loop/demo/work/sse.out 2>&1; echo rc=$? >>/var/lib/loop/demo/work/sse.out' /tmp/sse.run
wait_for 90 has "$W/sse.out" "data: one"
ok $? "the first server-sent event reaches the agent while the upstream holds the stream open (unbuffered)"
has "$W/sse.out" "data: two"
ok $((!$?)) "...before the second one was sent"
in_ct touch "$UP/release"
wait_for 60 has "$W/sse.out" "rc="
like "$(in_ct cat "$W/sse.out")" "data: two.*rc=0" "...which follows once the upstream sends it"

# --- mismatches -------------------------------------------------------------------------------------
agent "$curl_proxy -w ' http=%{http_code}\n' -H 'Host: other.test' http://up.test/hello"
like "$out" "http=400" "a Host header that disagrees with the request's target is refused" || diag "$out"
agent "$curl_proxy --connect-to up.test:443:other.test:443 https://up.test/hello; echo rc=\$?"
like "$out" "rc=(35|56)" "a ClientHello whose server name is not the CONNECT target is refused" || diag "$out"
unlike "$out" "hello from upstream" "...and no byte of the response comes back"

# --- journald's rate limit --------------------------------------------------------------------------
# The gateway bounds a flood itself (GATEWAY_CONNECTIONS_MAX, one record per request, refusals beyond the
# cap counted per peer), so journald's rate limit, which would drop decisions with a flood, is lifted for it.
is "$(in_ct systemctl show -P LogRateLimitIntervalUSec loop-gateway@demo.service)/$(in_ct systemctl show -P LogRateLimitBurst loop-gateway@demo.service)" 1s/1000000 \
        "loop-gateway@.service lifts journald's rate limit far above what it logs"
# Over the cap: 256 connections held open without a byte, then a flood of 3000 more straight at
# gateway.sock, each refused before it is a request (503). The first few are journaled one by one, the
# rest as one record with the count; journald (its own limit small here, see journald_small_limit) drops
# nothing, and the next real decision is journaled.
cursor=$(in_ct journalctl -u loop-gateway@demo -n 1 -o export | sed -n 's/^__CURSOR=//p')
out=$(in_ct /opt/loop-test-probe/gate-probe hold-flood /run/loop/demo/gateway.sock 256 3000)
like "$out" "held=256 busy=3000 other=0" "with 256 connections held, a flood of 3000 more at gateway.sock is refused (503)" || diag "$out"
busy_counts() {
        in_ct journalctl --sync >/dev/null 2>&1
        gw_journal --after-cursor "$cursor" | awk '
                /^$/ { if (seen) { if (d != "") { dropped += d; counts++ } else one++ } seen = 0; d = "" }
                /^LOOP_REASON=busy$/ { seen = 1 }
                /^LOOP_DROPPED=/ { d = substr($0, 14) }
                END { if (seen) { if (d != "") { dropped += d; counts++ } else one++ } print one + 0, dropped + 0, counts + 0 }'
}
# The count is journaled when the limiter's window (10 s) has passed and the gateway next looks at it.
busy_all() {
        in_ct curl -s -o /dev/null --unix-socket /run/loop/demo/gateway.sock http://gateway/.loop/ca.pem
        read -r one dropped _ <<<"$(busy_counts)"
        [ $((one + dropped)) -eq 3000 ]
}
wait_for 40 busy_all
read -r one dropped counts <<<"$(busy_counts)"
diag "over the cap: $one refusals journaled one by one, $dropped counted in $counts records"
# GATEWAY_BUSY_PER_WINDOW (3) one by one in each 10 s window: a loaded machine's flood may span several,
# each with its count record (the last window's may not have reached it).
ok $(( one + dropped == 3000 && one <= 3 * (counts + 1) && dropped > 0 ? 0 : 1 )) \
        "...journaled as a few records one by one ($one, at most 3 a window) and the rest as a count ($dropped): all 3000 accounted for" ||
        diag "$(in_ct journalctl -u 'loop-gateway@*' --after-cursor "$cursor" -o export | grep -E '^(MESSAGE|LOOP_REASON|LOOP_DROPPED|_SYSTEMD_UNIT)=' | grep -B1 -A2 -iE 'busy|more connections|refusing' | head -20)"
agent "$curl_proxy -w ' http=%{http_code}\n' http://denied.test/after-the-flood"
like "$(gw_record "LOOP_PATH=/after-the-flood" LOOP_EVENT=gateway-request LOOP_HOST=denied.test LOOP_DECISION=deny)" \
        "LOOP_PATH=/after-the-flood" "...and the next real deny after the flood is in the journal" || diag "$out"

# --- the journal ------------------------------------------------------------------------------------
like "$(gw_record "LOOP_ADDRESS=198.51.100.2" LOOP_EVENT=gateway-request LOOP_HOST=up.test LOOP_KIND=connect LOOP_DECISION=allow)" \
        "LOOP_ADDRESS=198.51.100.2" "an allowed tunnel is journaled with the address connected to"
like "$(gw_record "LOOP_REASON=address-blocked:link-local" LOOP_EVENT=gateway-request LOOP_HOST=meta.test)" "LOOP_REASON=address-blocked:link-local" \
        "the metadata refusal is journaled with its reason"
like "$(gw_record "LOOP_RULE=default" LOOP_EVENT=gateway-request LOOP_HOST=denied.test LOOP_DECISION=deny)" "LOOP_RULE=default" \
        "a denied host is journaled with the rule that denied it"
like "$(gw_record "LOOP_REASON=sni-mismatch" LOOP_EVENT=gateway-request LOOP_KIND=connect LOOP_HOST=other.test LOOP_DECISION=deny)" \
        "LOOP_REASON=sni-mismatch" "the SNI mismatch is journaled"
like "$(gw_record "LOOP_BYTES_RECEIVED=[1-9]" LOOP_EVENT=gateway-request LOOP_KIND=api LOOP_DECISION=credential)" "LOOP_BYTES_RECEIVED=[1-9]" \
        "API requests are journaled with their byte counts"
rec=$(gw_record "LOOP_DURATION_MS=" LOOP_EVENT=gateway-request LOOP_CHANNEL=demo LOOP_KIND=http LOOP_HOST=up.test LOOP_PATH=/hello LOOP_STATUS=200 | awk -v RS= 'END { print }')
missing=
for f in LOOP_CHANNEL=demo LOOP_HOST=up.test LOOP_PORT=80 LOOP_DECISION=allow LOOP_RULE='rule\[3\]' LOOP_ADDRESS=198.51.100.2 \
         LOOP_METHOD=GET LOOP_PATH=/hello LOOP_STATUS=200 'LOOP_BYTES_SENT=[1-9]' 'LOOP_BYTES_RECEIVED=[1-9]' 'LOOP_DURATION_MS=[0-9]'; do
        grep -q -a -x -E -- "$f[^=]*" <<<"$rec" || missing+=" $f"
done
is "$missing" "" "a request's record holds channel, host, port, decision, rule, address, method, path, status, bytes and duration" ||
        diag "$rec"

# --- the gateway down, and killed mid-stream ----------------------------------------------------------------
check "stop loop-gateway@demo.socket" in_ct systemctl stop loop-gateway@demo.socket loop-gateway@demo.service
agent "$curl_proxy -w ' http=%{http_code}\n' http://up.test/hello"
like "$out" "egress gateway is not reachable.*http=503" "with the gateway down nothing leaves: the relay answers 503" || diag "$out"
wait_for 20 in_ct sh -c "journalctl -u loop-gateway@demo.socket -o cat | grep -q -E 'Closed loop egress gateway socket|demo.socket: Deactivated'"
ok $? "...and the journal says the channel's gateway socket was closed (systemd's record of the unit)" ||
        diag "$(in_ct journalctl -u loop-gateway@demo.socket -o cat | tail -5)"
check "start loop-gateway@demo.socket" in_ct systemctl start loop-gateway@demo.socket

in_ct rm -f "$UP/release" "$W/sse.out"
agent_bg 'curl -sS -N --max-time 120 -H "x-api-key: $ANTHROPIC_API_KEY" -d "{}" "$ANTHROPIC_BASE_URL/v1/messages" >/var/lib/loop/demo/work/sse.out 2>&1; echo rc=$? >>/var/lib/loop/demo/work/sse.out' /tmp/sse2.run
wait_for 90 has "$W/sse.out" "data: one"
ok $? "a stream is open through the gateway"
# The relay handed the agent's connection over: in the container's network namespace the gateway holds
# its end of the stream's TCP connection, and the relay none (only its listening sockets).
socks=$(in_ct sh -c 'p=$(pgrep -f "[l]oop relay" | head -1); echo relay=$p; nsenter -t "$p" -n ss -tnp state established')
relay_pid=$(sed -n 's/^relay=//p' <<<"$socks")
like "$socks" "127.0.0.1:2376 .*loop-gateway" "the gateway holds the agent's end of the stream, handed over by the relay" || diag "$socks"
[ -n "$relay_pid" ] && ! grep -q -- "pid=$relay_pid," <<<"$socks"
ok $? "...and the relay (found: ${relay_pid:-no}) holds no connection: it is not in the data path" || diag "$socks"
check "SIGKILL loop-gateway@demo.service" in_ct systemctl kill -s KILL loop-gateway@demo.service
wait_for 60 has "$W/sse.out" "rc="
res=$(in_ct cat "$W/sse.out")
like "$res" "rc=(18|52|56)" "the agent's connection fails cleanly when the gateway is killed (a truncated stream, not a hang)" || diag "$res"
unlike "$res" "data: two" "...without anything more arriving"
wait_for 20 in_ct sh -c "journalctl -u loop-gateway@demo.service -o cat | grep -q 'status=9/KILL'"
ok $? "...and the journal says the gateway was killed"
in_ct touch "$UP/release"
in_ct systemctl reset-failed loop-gateway@demo.service >/dev/null 2>&1
agent "$curl_proxy http://up.test/hello"
like "$out" "hello from upstream up.test" "the next connection starts the gateway again (socket activation)" ||
        diag "$(in_ct systemctl status --no-pager loop-gateway@demo.socket loop-gateway@demo.service 2>&1 | tail -30)"

# --- the host's own HTTP proxy upstream ----------------------------------------------------------------
in_ct curl -s --max-time 5 http://203.0.113.50/hello
ok $((!$?)) "far.test's address cannot be reached from the host directly"
wait_for 30 in_ct sh -c 'ip netns exec up ss -ltn | grep -q 198.51.100.2:8080'
out=$(in_ct loop run -q proxied "scenario:sh $curl_proxy https://far.test/hello" 2>&1)
like "$out" "hello from upstream far.test" "with egress.upstream_proxy the gateway reaches it through the host's proxy" || diag "$out"
like "$(gw_record "LOOP_ADDRESS=203.0.113.50" LOOP_EVENT=gateway-request LOOP_HOST=far.test)" "LOOP_ADDRESS=203.0.113.50" \
        "...tunnelling to the address it resolved and checked itself"

in_ct sh -c 'mkdir -p /run/systemd/system/loop-gateway@envproxy.service.d &&
             printf "[Service]\nEnvironment=https_proxy=http://198.51.100.2:8080\n" \
                     >/run/systemd/system/loop-gateway@envproxy.service.d/proxy.conf && systemctl daemon-reload'
out=$(in_ct loop run -q envproxy "scenario:sh $curl_proxy https://far.test/hello" 2>&1)
like "$out" "hello from upstream far.test" "without egress.upstream_proxy the gateway uses the https_proxy of its environment" || diag "$out"

wait_for 30 in_ct sh -c 'ip netns exec up ss -ltn | grep -q 198.51.100.2:8081'
out=$(in_ct loop run -q authproxy "scenario:sh $curl_proxy https://far.test/hello; $curl_proxy http://far.test/hello" 2>&1)
like "$out" "hello from upstream far.test"$'\n'"hello from upstream far.test" \
        "a host proxy that asks for a password is passed user:password@ from egress.upstream_proxy (HTTPS and HTTP)" || diag "$out"
out=$(in_ct loop run -q authproxy "scenario:sh env; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline" 2>&1)
like "$out" "HTTPS_PROXY=http://127.0.0.1:3128" "...while the agent's proxy is the relay"
is "$(grep -c -F -e "$PROXY_USER" -e "$PROXY_PASS" -e "$PROXY_BASIC" <<<"$out")" 0 \
        "...and its environment and command lines hold neither the proxy's user nor its password"
out=$(in_ct loop run -q badproxy "scenario:sh $curl_proxy -w ' http=%{http_code}\n' http://far.test/hello" 2>&1)
like "$out" "refused the gateway's credentials.*http=502" "a password the host's proxy refuses is a 502 saying so" || diag "$out"
like "$(gw_record "LOOP_REASON=upstream-proxy-auth" LOOP_EVENT=gateway-request LOOP_CHANNEL=badproxy)" "LOOP_REASON=upstream-proxy-auth" \
        "...journaled as upstream-proxy-auth"

# --- misconfigured ------------------------------------------------------------------------------------
# A run on such a channel does not start at all (it would only meet refusals), and says why ...
out=$(in_ct loop run -q broken "scenario:sh $curl_proxy -w ' http=%{http_code}\n' http://up.test/hello" 2>&1) && st=0 || st=$?
is "$st" 2 "a run whose egress.ca_file cannot be loaded does not start"
like "$out" "egress.ca_file /nonexistent/ca.pem of channel broken cannot be loaded" "...and says which file" || diag "$out"
# ... while the gateway itself, asked anyway, refuses everything.
out=$(in_ct curl -s --max-time 30 --unix-socket /run/loop/broken/gateway.sock -w ' http=%{http_code}\n' http://api.test/v1/models 2>&1)
like "$out" "misconfigured.*http=503" "a gateway that cannot load its configuration refuses everything (503)" || diag "$out"
like "$(gw_record "LOOP_REASON=egress.ca_file /nonexistent/ca.pem cannot be loaded" LOOP_EVENT=gateway-failed LOOP_CHANNEL=broken)" \
        "LOOP_REASON=egress.ca_file /nonexistent/ca.pem cannot be loaded" \
        "...and its journal says why"

# --- no secret in the journal -------------------------------------------------------------------------
n=$(in_ct journalctl -o export | grep -c -a -F -e "$API_KEY" -e "$GH_SECRET" -e "$GH_SECRET2" -e "$PROXY_PASS" -e "$PROXY_BASIC" \
        -e "${PROXY_PASS//@/%40}")
is "$n" 0 "the journal of the whole run holds no secret value (API key, credential, the host proxy's password in any form)"

nspawn_stop "$M"
ok $? "the container powers off cleanly"
tap_done
