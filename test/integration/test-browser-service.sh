#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The browser under a real systemd (PID 1 in nspawn) with rootful Podman inside and a real Chromium (the
# host's chromium-headless-shell in the Chrome test image): the first call through `loop mcp-browser`
# starts loop-browser@web (socket activation), which starts loop-chrome@web and its container (lazy
# start); the official MCP client (@modelcontextprotocol/sdk) lists the 19 tools and drives a page;
# file:, a denied origin and a download are refused; Chrome keeps its sandbox (no --no-sandbox, its
# processes in a user namespace of their own); CDP is reachable by neither an agent container, another
# channel's token, nor another local user; a killed Chrome is restarted and the next call works; a
# killed loop-browser@ fails the call cleanly; both stop when idle; systemd-analyze security of
# loop-browser@ is at most 2.0.
#
# The SDK is installed with npm into a temp dir (the only network access of the test), unless
# LOOP_TEST_MCP_SDK_DIR names a directory that has node_modules/@modelcontextprotocol/sdk already.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/systemd-test.sh
. "$lib/systemd-test.sh"
# shellcheck source=test/lib/mcp-client.sh
. "$lib/mcp-client.sh"

SECURITY_MAX=2.0

command -v node >/dev/null || bail_out "node is not installed (nodejs)"
[ -x /usr/lib/chromium/chromium-headless-shell ] || bail_out "chromium-headless-shell is not installed"
systemd_test_prepare

M=loop-browser-$$
IMAGE=localhost/loop-test:latest
CHROME_IMAGE=localhost/loop-chrome-test:latest
systemd_test_config loop-browser
chrome_rootfs=$(mktemp -d "${TMPDIR:-/tmp}/loop-browser-chrome.XXXXXX") || bail_out "mktemp failed"
atexit "rm -rf '$chrome_rootfs'"
rmdir "$chrome_rootfs"
build_test_chrome_rootfs "$chrome_rootfs" >/dev/null || bail_out "cannot build the Chrome test rootfs"

mcp_client_prepare loop-browser || bail_out "cannot prepare the MCP client"
client=$MCP_CLIENT_DIR

cat >"$cfg/loop.json" <<EOF2
{ "container_image": "$IMAGE", "container_keep_alive_sec": 0,
  "browser": { "chrome_image": "$CHROME_IMAGE", "idle_timeout_sec": 20 },
  "gates": { "agentgate": { "enabled": false } } }
EOF2
echo '{ "description": "the browser", "egress": { "rules": [ { "host": "site.test", "schemes": [ "http" ], "decision": "allow" } ] } }' \
        >"$cfg/channels.d/web.json"
echo '{ "description": "another channel" }' >"$cfg/channels.d/other.json"
chmod 0644 "$cfg/loop.json" "$cfg/channels.d/"*.json

in_ct() { nspawn_exec "$M" env PATH=/usr/local/bin:/usr/bin:/bin "$@"; }
prop() { in_ct systemctl show -P "$2" -- "$1"; }
# mcp CHANNEL TOKEN_FILE 'TOOL ARGS'...: the SDK client, `loop mcp-browser` against CHANNEL's socket.
mcp() {
        local ch=$1 tok=$2
        shift 2
        in_ct env LOOP_MCP_VERB=mcp-browser node /opt/mcp-client/client.mjs /usr/local/bin/loop "$ch" \
                "/run/loop/$ch/browser.sock" "$tok" "$@"
}
# a container token where the runner would write it (0700/0400, user loop), and a copy for the client
make_token() {
        local ch=$1 ctr=$2 tok
        tok=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
        in_ct sh -c "install -d -m 0700 -o loop -g loop /run/loop/$ch/browser-tokens &&
                     printf %s $tok >/run/loop/$ch/browser-tokens/$ctr && chown loop:loop /run/loop/$ch/browser-tokens/$ctr &&
                     chmod 0400 /run/loop/$ch/browser-tokens/$ctr && printf %s $tok >/tmp/token-$ch && chmod 0400 /tmp/token-$ch"
}
active() { [ "$(prop "$1" ActiveState)" = active ]; }
inactive() { [ "$(prop "$1" ActiveState)" != active ] && [ "$(prop "$1" ActiveState)" != activating ]; }
chrome_container() { in_ct podman ps --filter label=loop-type=chrome --format '{{.Names}}' 2>/dev/null; }
no_chrome_container() { [ -z "$(chrome_container)" ]; }

nspawn_boot "$M" --podman --stage "$LOOP_STAGE" --config "$cfg" --bind-ro="$client:/opt/mcp-client" ||
        bail_out "could not boot systemd with podman"
sock=$(nspawn_root "$M")/run/podman/podman.sock
import_test_image "$sock" "$IMAGE" "$cfg/rootfs" >/dev/null || bail_out "cannot import the agent test image"
TEST_IMAGE_ENTRYPOINT=/usr/local/bin/loop-chrome-entrypoint import_test_image "$sock" "$CHROME_IMAGE" "$chrome_rootfs" >/dev/null ||
        bail_out "cannot import the Chrome test image"
in_ct systemd-sysusers && in_ct systemctl start loop.target || bail_out "loop.target does not start"
ok 0 "systemd boots with podman, loop.target starts"

is "$(prop loop-browser@web.socket ActiveState)" active "loop-browser@web.socket listens (enabled by the generator)"
inactive loop-browser@web.service
ok $? "loop-browser@web.service does not run before the first call"
inactive loop-chrome@web.service
ok $? "...nor loop-chrome@web: Chrome starts lazily"
check "make a browser token for web" make_token web ctr-web
check "make a browser token for other" make_token other ctr-other

# --- an agent run before loop-browser@ ever started: the screenshots directory is bound in already ----
out=$(in_ct loop run web -- 'scenario:sh test -d /run/loop/screenshots && echo SHOTS=dir; touch /run/loop/screenshots/x 2>/dev/null || echo SHOTS=ro' 2>&1)
like "$out" 'SHOTS=dir' "an agent run before loop-browser@ first started has /run/loop/screenshots (the runner made it)" || diag "$out"
like "$out" 'SHOTS=ro' "...read-only"
inactive loop-browser@web.service
ok $? "...and the run itself did not start the browser"

# --- the first call: lazy start, MCP conformance, tools on a page --------------------------------
t0=$(date +%s%N)
out=$(mcp web /tmp/token-web \
        'navigate {"url":"about:blank"}' \
        'evaluate {"expression":"document.body.innerHTML = \"<h1>Test page</h1><button id=b onclick=\\\"this.textContent=String(1+1)\\\">press</button><input id=t><select id=s><option value=a>A</option><option value=z>Z</option></select>\"; console.log(\"hello from the page\"); \"built\""}' \
        'computer {"action":"click","selector":"#b"}' \
        'computer {"action":"click","selector":"#t"}' \
        'computer {"action":"type","text":"typed text"}' \
        'form_input {"selector":"#s","value":"z"}' \
        'evaluate {"expression":"[document.getElementById(\"b\").textContent, document.getElementById(\"t\").value, document.getElementById(\"s\").value].join(\"|\")"}' \
        'screenshot {}' \
        'read_console_messages {}' \
        'get_page_text {}' \
        'new_tab {"url":"about:blank"}' \
        'list_tabs {}')
rc=$?
t1=$(date +%s%N)
ok $rc "the SDK client drives loop mcp-browser" || diag "$out"
diag "first call (Chrome's lazy start included): $(( (t1 - t0) / 1000000 )) ms"
head=$(sed -n 1p <<<"$out")
like "$head" '"tools":\["navigate","read_page","computer","form_input","screenshot","go_back","go_forward","reload","evaluate","list_tabs","new_tab","switch_tab","close_tab","page_info","get_page_text","find","read_console_messages","read_network_requests","resize_window"\]' \
        "tools/list offers the 19 tools of seed 001"
like "$head" '"schemas":true' "...each with an object inputSchema"
like "$(sed -n 2p <<<"$out")" '"isError":false' "navigate to about:blank works"
like "$(sed -n 3p <<<"$out")" '"isError":false.*built' "evaluate builds the test page"
like "$(sed -n 8p <<<"$out")" '2\|typed text\|z' "click, type and form_input changed the page as the DOM shows"
like "$(sed -n 9p <<<"$out")" '"isError":false' "screenshot answers"
shot=$(sed -n 9p <<<"$out" | grep -o 'Screenshot saved to /run/loop/screenshots/screenshot-[0-9]*-[0-9]*\.png' | sed 's|.*/||')
like "$shot" '^screenshot-[0-9]+-[0-9]+\.png$' "...with the path the agent sees (/run/loop/screenshots/NAME)" || diag "$(sed -n 9p <<<"$out")"
is "$(in_ct sh -c "head -c 8 /var/lib/loop/web/screenshots/$shot | od -An -tx1 | tr -d ' \n'")" 89504e470d0a1a0a \
        "...a PNG file in the StateDirectory= the runner binds there (/var/lib/loop/web/screenshots)"
like "$(sed -n 10p <<<"$out")" 'hello from the page' "read_console_messages has the page's console.log"
like "$(sed -n 11p <<<"$out")" 'Test page' "get_page_text reads the page"
like "$(sed -n 13p <<<"$out")" 'tab_id.*tab_id' "new_tab opened a second tab"
active loop-browser@web.service
ok $? "the call started loop-browser@web.service"
active loop-chrome@web.service
ok $? "...which started loop-chrome@web.service"
is "$(chrome_container)" "loop-chrome-web" "the Chrome container runs, named loop-chrome-web"
like "$(in_ct podman inspect --format '{{.HostConfig.NetworkMode}} {{.HostConfig.Memory}} {{.HostConfig.NanoCpus}}' loop-chrome-web)" \
        '^none 536870912 500000000$' "it has no network but loopback, 512 MB and half a CPU"
like "$(in_ct systemctl status --no-pager loop-web.slice 2>&1)" 'libpod-|loop-chrome' "systemctl status loop-web.slice shows Chrome"
like "$(journal_wait -o export -u loop-browser@web.service LOOP_EVENT=browser-action LOOP_TOOL=computer)" "LOOP_CONTAINER_NAME=ctr-web" \
        "journalctl -u loop-browser@web shows every action, with the container"

# --- Chrome's own sandbox ------------------------------------------------------------------------
pids=$(in_ct pgrep -f /usr/lib/chromium/chromium-headless-shell)
[ -n "$pids" ]
ok $? "Chrome's processes run in the container"
nosandbox=0
for p in $pids; do
        in_ct cat "/proc/$p/cmdline" 2>/dev/null | tr '\0' '\n' | grep -qx -- '--no-sandbox' && nosandbox=1
done
is "$nosandbox" 0 "--no-sandbox is on no Chrome command line"
bridge=$(in_ct pgrep -f 'loop chrome-bridge' | head -1)
own_ns=$(in_ct readlink "/proc/$bridge/ns/user")
sandboxed=0
for p in $pids; do
        [ "$(in_ct readlink "/proc/$p/ns/user" 2>/dev/null)" != "$own_ns" ] && sandboxed=1
done
is "$sandboxed" 1 "Chrome's sandbox is active: its sandboxed processes run in a user namespace of their own"
like "$(in_ct sh -c "cat /proc/$bridge/status" | grep -E '^(Uid|CapEff|NoNewPrivs)')" 'Uid:[[:space:]]+[1-9]' "Chrome runs as user loop, not root"

# --- a page through the egress gateway -------------------------------------------------------------
# A site in a network namespace made here (198.51.100.2, documentation range); Chrome's container has no
# network, so the page can only come through the relay and the channel's gateway, which journals it.
site() {
        set -e
        ip netns add site
        ip link add gw0 type veth peer name site0
        ip link set site0 netns site
        ip addr add 198.51.100.1/24 dev gw0
        ip link set gw0 up
        ip netns exec site ip link set lo up
        ip netns exec site ip addr add 198.51.100.2/24 dev site0
        ip netns exec site ip link set site0 up
        echo '198.51.100.2 site.test' >>/etc/hosts
        mkdir -p /run/site
        printf '%s' '<html><head><title>Local site</title></head><body><p id=p>served through the gateway</p></body></html>' \
                >/run/site/index.html
}
in_ct bash -c "$(declare -f site); site" >/dev/null 2>&1
ok $? "a site in a network namespace of the test's own"
check "its web server starts" in_ct systemd-run --unit=browser-site -p NetworkNamespacePath=/run/netns/site \
        python3 -m http.server --bind 198.51.100.2 --directory /run/site 80
wait_for 30 in_ct curl -s -o /dev/null --max-time 2 http://198.51.100.2/
out=$(mcp web /tmp/token-web 'navigate {"url":"http://site.test/"}' 'get_page_text {}' 'read_network_requests {}')
like "$(sed -n 2p <<<"$out")" '"isError":false.*Local site' "Chrome loads a page of an allowed host"
like "$(sed -n 3p <<<"$out")" 'served through the gateway' "...and reads it"
like "$(sed -n 4p <<<"$out")" 'site.test' "read_network_requests has the request"
like "$(journal_wait -o export -u 'loop-gateway@web.service' LOOP_EVENT=gateway-request LOOP_HOST=site.test)" \
        'LOOP_CONTAINER_NAME=loop-chrome-web' "the channel's gateway carried it, for the Chrome container" ||
        diag "$(in_ct journalctl --no-pager -n 20 -u 'loop-gateway@web.service')"

# --- refusals -------------------------------------------------------------------------------------
out=$(mcp web /tmp/token-web 'navigate {"url":"file:///etc/passwd"}' 'navigate {"url":"chrome://sandbox"}' \
        'navigate {"url":"https://denied.test/"}' 'new_tab {"url":"https://denied.test/x"}')
like "$(sed -n 2p <<<"$out")" '"isError":true.*file' "file:// is refused with a clear tool error"
like "$(sed -n 3p <<<"$out")" '"isError":true' "chrome:// is refused"
like "$(sed -n 4p <<<"$out")" '"isError":true.*egress policy refuses' "an origin the egress policy refuses is refused"
like "$(sed -n 5p <<<"$out")" '"isError":true' "...in a new tab too"
like "$(journal_wait -o export -u loop-browser@web.service LOOP_EVENT=browser-refused)" 'LOOP_URL=https://denied.test/' \
        "the refused origin is journaled"
# --- who can reach CDP ------------------------------------------------------------------------------
# (while Chrome runs: loop-browser@ and Chrome stop after browser.idle_timeout_sec without a call, and the
# look through the whole machine for a download below may take that long on a loaded one)
like "$(in_ct stat -c '%a %U' /run/loop/web/chrome)" '^700 loop$' "the CDP socket's directory is 0700, user loop"
out=$(in_ct setpriv --reuid=65534 --regid=65534 --clear-groups python3 -c '
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect("/run/loop/web/chrome/cdp.sock"); print("connected")
except OSError as e:
    print("refused", e.errno)' 2>&1)
like "$out" '^refused 13' "another local user cannot open the CDP socket (EACCES)"
pids=$(in_ct pgrep -f /usr/lib/chromium/chromium-headless-shell)
port=0
for p in $pids; do
        in_ct cat "/proc/$p/cmdline" 2>/dev/null | tr '\0' '\n' | grep -q -- '^--remote-debugging-port' && port=1
done
[ -n "$pids" ] && [ "$port" = 0 ]
ok $? "Chrome opens no debugging port: CDP is the pipe only"
# --- downloads -------------------------------------------------------------------------------------
before=$(in_ct sh -c 'find /run/loop/web /var/lib/loop/web -type f 2>/dev/null | sort')
out=$(mcp web /tmp/token-web \
        'evaluate {"expression":"const a = document.createElement(\"a\"); a.href = URL.createObjectURL(new Blob([\"payload\"])); a.download = \"loot.txt\"; document.body.appendChild(a); a.click(); \"clicked\""}' \
        'computer {"action":"wait","duration":2}')
after=$(in_ct sh -c 'find /run/loop/web /var/lib/loop/web -type f 2>/dev/null | sort')
is "$after" "$before" "a download reaches no file on the host"
# the Chrome container first, while it runs
loot=$(in_ct podman exec loop-chrome-web sh -c "find / /tmp -xdev -name 'loot*' 2>/dev/null; echo looked")
is "$loot" looked "...nor in the Chrome container: downloads are denied"
unlike "$(in_ct find / -xdev -name 'loot*' 2>/dev/null)" 'loot' "...nowhere in the machine"

out=$(mcp web /tmp/token-other 'list_tabs {}')
like "$(sed -n 2p <<<"$out")" '"isError":true.*no valid token' "another channel's token is refused by web's browser"
out=$(in_ct loop run web -- 'scenario:sh echo SOCKETS=$(ls /run/loop | tr "\n" ,); echo TOKEN=$(wc -c </run/loop/browser-token); echo CDP=$(find / /tmp /run -xdev \( -name cdp.sock -o -name loop-cdp \) 2>/dev/null | wc -l)' 2>&1)
like "$out" 'SOCKETS=[^ ]*browser\.sock' "an agent container of web gets the browser socket"
like "$out" 'TOKEN=64' "...and its token"
like "$out" 'CDP=0' "...and no way to CDP: no bridge socket anywhere in it" || diag "$out"
out=$(in_ct loop run other -- 'scenario:sh echo CDP=$(find / /tmp /run -xdev -name cdp.sock 2>/dev/null | wc -l)' 2>&1)
like "$out" 'CDP=0' "another channel's agent container sees no CDP socket either" || diag "$out"

# --- a killed Chrome, a killed loop-browser@ --------------------------------------------------------
restarts=$(prop loop-chrome@web.service NRestarts)
in_ct kill -KILL "$(in_ct pgrep -o -f '/usr/lib/chromium/chromium-headless-shell .*--remote-debugging-pipe')"
wait_for 60 eval '[ "$(prop loop-chrome@web.service NRestarts)" -gt "$restarts" ] && active loop-chrome@web.service'
ok $? "a killed Chrome is restarted by loop-chrome@web" || diag "$(in_ct journalctl --no-pager -n 30 -u loop-chrome@web.service)"
out=$(mcp web /tmp/token-web 'navigate {"url":"about:blank"}' 'evaluate {"expression":"6*7"}')
like "$(sed -n 3p <<<"$out")" '"isError":false.*42' "the next call works against the new Chrome"

mcp web /tmp/token-web 'computer {"action":"wait","duration":8}' >"$client/long.out" 2>&1 &
long=$!
# The service may still be running from the call before: the marker that this call is under way is the
# client's first line (printed once it is connected and has listed the tools, just before it calls). Then
# a second for the call to reach loop-browser@ (it takes 8).
wait_for 60 test -s "$client/long.out"
wait_for 20 active loop-browser@web.service
sleep 1
in_ct systemctl kill -s SIGKILL loop-browser@web.service
wait $long
like "$(sed -n 2p "$client/long.out")" '"isError":true.*(without an answer|went away|did not answer)' \
        "a killed loop-browser@ fails the call under way cleanly (an isError result)"
out=$(mcp web /tmp/token-web 'evaluate {"expression":"1+1"}')
like "$(sed -n 2p <<<"$out")" '"isError":false.*2' "the next call starts the browser again"

# --- idle stop ---------------------------------------------------------------------------------------
wait_for 90 inactive loop-browser@web.service
ok $? "loop-browser@web exits after browser.idle_timeout_sec without a call"
wait_for 60 inactive loop-chrome@web.service
ok $? "...and loop-chrome@web stops with it"
wait_for 30 no_chrome_container
ok $? "...and the Chrome container is gone"

# --- the unit's hardening --------------------------------------------------------------------------------
exposure=$(in_ct systemd-analyze security --no-pager loop-browser@web.service 2>/dev/null | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
like "$exposure" '^[0-9.]+$' "systemd-analyze security rates loop-browser@web.service ($exposure)"
ok "$(awk -v e="$exposure" -v m="$SECURITY_MAX" 'BEGIN { print (e != "" && e <= m) ? 0 : 1 }')" \
        "its exposure is at most $SECURITY_MAX"

nspawn_stop "$M"
ok $? "the container powers off cleanly"
tap_done
