#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Chrome container on BOTH real engines (a private podman service and a private dockerd), without
# systemd: `loop chrome web` (what loop-chrome@web runs) creates loop-chrome-web from the Chrome test image
# (the host's chromium-headless-shell) through the runner's one container builder, the bridge opens its
# socket in a 0700 directory of the browser's user, and loop-browser (socket-activated by
# systemd-socket-activate, as that user, with the channel's egress policy and a screenshots directory)
# serves `loop mcp-browser`. The channel's egress gateway (loop-gateway, socket-activated the same way, with
# an /etc/hosts of its own) is the Chrome container's only way out: the test site (test/browser/site) is
# served in a network namespace made here, 198.51.100.254 (a documentation address), as http://site.test.
#
# Per engine: test-browser-chromium's whole sequence through `loop mcp-browser` (every tool and every
# computer action, wait_for_selector/wait_for_text, tabs, the logs, screenshots, refusals, each checked by
# what the page shows), the gateway's record of the site's requests for loop-chrome-web; no network but
# loopback, 512 MB, half a CPU, Chrome's seccomp profile; Chrome's sandbox active and no --no-sandbox; a
# killed loop-browser fails the call under way cleanly; a killed Chrome ends `loop chrome` with a failure
# (its unit restarts it) and the next call reaches the new one; SIGTERM stops the container. The lazy
# start and the idle stop are systemd's (socket activation, BindsTo=): test-browser-service checks them.
# Needs root; fails, not skips, without it. About 45 s per engine.
set -uo pipefail

lib=$(dirname "$(readlink -f "$0")")/../lib
# shellcheck source=test/lib/engine-test.sh
. "$lib/engine-test.sh"

SERVICE=$LOOP_BUILD_DIR/services/loop-browser
GATEWAY=$LOOP_BUILD_DIR/services/loop-gateway
DRIVER=$LOOP_BUILD_DIR/test/browser/test-browser-chromium
IMAGE=localhost/loop-chrome-test:latest
BROWSER_USER=nobody

[ "$(id -u)" -eq 0 ] || bail_out "test-browser-engines needs root (it starts engines)"
[ -x "$LOOP" ] && [ -x "$SERVICE" ] && [ -x "$GATEWAY" ] && [ -x "$DRIVER" ] || bail_out "build loop first (with -Dtests=true)"
[ -x /usr/lib/chromium/chromium-headless-shell ] || bail_out "chromium-headless-shell is not installed"

T=$(mktemp -d /var/tmp/loop-test-browser.XXXXXX) || bail_out "mktemp failed"
atexit "rm -rf '$T'"
chmod 0755 "$T"
export LOOP_STATE_DIR=$T/state LOOP_RUNTIME_DIR=$T/run LOOP_CONFIG_DIR=$T/etc LOOP_LOG_TARGET=console
build_test_chrome_rootfs "$T/rootfs" >/dev/null || bail_out "cannot build the Chrome test rootfs"
BUID=$(id -u "$BROWSER_USER")

# --- the test site, in a network namespace of the test's own ------------------------------------------
NS=loop-tbe-$$
VETH=ltbe$$
ip netns add "$NS" && atexit "ip netns del '$NS' 2>/dev/null" &&
        ip link add "$VETH" type veth peer name site0 netns "$NS" && atexit "ip link del '$VETH' 2>/dev/null" &&
        ip addr add 198.51.100.253/30 dev "$VETH" && ip link set "$VETH" up &&
        ip netns exec "$NS" ip link set lo up && ip netns exec "$NS" ip addr add 198.51.100.254/30 dev site0 &&
        ip netns exec "$NS" ip link set site0 up || bail_out "cannot make the site's network namespace"
ip netns exec "$NS" python3 -m http.server --bind 198.51.100.254 --directory "$LOOP_SOURCE_DIR/test/browser/site" 80 \
        >"$T/site.log" 2>&1 &
site_pid=$!
atexit "kill $site_pid 2>/dev/null"
printf '198.51.100.254 site.test\n127.0.0.1 localhost\n' >"$T/hosts"
# the channel's egress policy, for the gateway and (as the credential egress.json) for loop-browser: the
# site over http, but not its denied.html; nothing else
install -d -m 0755 "$T/cred"
cat >"$T/cred/egress.json" <<'EOF2'
{ "egress": { "rules": [
    { "host": "site.test", "schemes": [ "http" ], "paths": [ "^/denied\\.html" ], "decision": "deny" },
    { "host": "site.test", "schemes": [ "http" ], "decision": "allow" } ] } }
EOF2
chmod 0644 "$T/cred/egress.json"
wait_for 30 curl -s -o /dev/null --max-time 2 http://198.51.100.254/index.html || bail_out "the test site does not answer"
# what an engine's round leaves running when the test ends early (pids of the round under way)
gateway_pid='' service_pid='' chrome_pid=''
atexit 'kill $gateway_pid $service_pid $chrome_pid 2>/dev/null'

# mcp 'TOOL ARGS'...: one `loop mcp-browser` session, a JSON-RPC line per call; prints the answers.
mcp() {
        local i=2 c
        {
                echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
                for c in "$@"; do
                        printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n' \
                                $i "${c%% *}" "${c#* }"
                        i=$((i + 1))
                done
        } | "$LOOP" mcp-browser --socket "$LOOP_RUNTIME_DIR/web/browser.sock" --token-file "$T/token" | tail -n +2
}
# service_start [-E VAR=VALUE]...: loop-browser for channel web, socket-activated as the browser's user, with
# the channel's egress policy (the credential egress.json)
service_start() {
        rm -f "$LOOP_RUNTIME_DIR/web/browser.sock"
        CREDENTIALS_DIRECTORY=$T/cred systemd-socket-activate -E LOOP_RUNTIME_DIR -E CREDENTIALS_DIRECTORY -E LOOP_LOG_TARGET \
                -E LOOP_BROWSER_IDLE_SEC=3600 "$@" -l "$LOOP_RUNTIME_DIR/web/browser.sock" \
                setpriv --reuid="$BROWSER_USER" --regid=nogroup --clear-groups "$SERVICE" web >>"$T/service-$eng.log" 2>&1 &
        service_pid=$!
        wait_for 30 test -S "$LOOP_RUNTIME_DIR/web/browser.sock"
}
inspect() { engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/loop-chrome-web/json"; }
jq_py() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }
# the container's processes as host pids: its main process (the bridge) and every descendant (Podman's top
# answers in the container's pid namespace, Docker's in the host's: neither is asked)
descendants() {
        local c
        echo "$1"
        for c in $(pgrep -P "$1"); do descendants "$c"; done
}
container_pids() { descendants "$(inspect | jq_py 'd["State"]["Pid"]')"; }
socket_up() { [ -S "$LOOP_RUNTIME_DIR/web/chrome/cdp.sock" ]; }
chrome_gone() { ! kill -0 "$chrome_pid" 2>/dev/null; }

for eng in podman docker; do
        engine_start "$eng" >/dev/null || { ok 1 "$eng: the engine starts"; diag "$(engine_log "$eng" 2>/dev/null | tail -20)"; continue; }
        import_test_image "$ENGINE_SOCK" localhost/loop-test:latest "$T/rootfs" >/dev/null &&
                TEST_IMAGE_ENTRYPOINT=/usr/local/bin/loop-chrome-entrypoint import_test_image "$ENGINE_SOCK" "$IMAGE" "$T/rootfs" >/dev/null
        ok $? "$eng: the Chrome test image imports" || { engine_stop "$eng"; continue; }

        rm -rf "$T/etc" "$T/state" "$T/run"
        mkdir -p "$T/etc/channels.d" "$LOOP_RUNTIME_DIR/web"
        # the agent's user and work dir (which every run of a channel prepares) are the test's own: nothing
        # lands in /var/lib/loop, and no loop user is needed on the machine
        cat >"$T/etc/loop.json" <<EOF2
{ "engine": { "socket": "$ENGINE_SOCK" }, "container_image": "localhost/loop-test:latest", "user": "$BROWSER_USER",
  "browser": { "chrome_image": "$IMAGE" }, "container_keep_alive_sec": 0 }
EOF2
        echo "{ \"work_dir\": \"$T/work\" }" >"$T/etc/channels.d/web.json"
        install -d -m 0755 -o "$BROWSER_USER" "$T/work"
        install -d -m 0700 -o "$BROWSER_USER" "$LOOP_RUNTIME_DIR/web/browser-tokens"
        head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/token"
        install -m 0400 -o "$BROWSER_USER" "$T/token" "$LOOP_RUNTIME_DIR/web/browser-tokens/ctr"

        # the channel's gateway, on the socket the runner binds into the Chrome container
        rm -rf "$T/gwstate" && install -d -m 0700 "$T/gwstate"
        unshare -m sh -c "mount --bind '$T/hosts' /etc/hosts && exec systemd-socket-activate -E LOOP_LOG_TARGET=console \
                -E STATE_DIRECTORY='$T/gwstate' -l '$LOOP_RUNTIME_DIR/web/gateway.sock' '$GATEWAY' web --config '$T/cred/egress.json'" \
                >"$T/gateway-$eng.log" 2>&1 &
        gateway_pid=$!
        wait_for 30 test -S "$LOOP_RUNTIME_DIR/web/gateway.sock"

        "$LOOP" chrome --user "$BROWSER_USER" web >"$T/chrome-$eng.log" 2>&1 &
        chrome_pid=$!
        wait_for 90 socket_up
        ok $? "$eng: loop chrome starts the container and the bridge listens" || { diag "$(tail -20 "$T/chrome-$eng.log")"; kill "$chrome_pid" "$gateway_pid"; engine_stop "$eng"; continue; }
        like "$(stat -c '%a %u' "$LOOP_RUNTIME_DIR/web/chrome")" "^700 $BUID\$" "$eng: the socket's directory is 0700, the browser's user's"
        j=$(inspect)
        is "$(jq_py 'd["Config"]["Labels"]["loop-type"] + " " + d["Name"].lstrip("/")' <<<"$j")" "chrome loop-chrome-web" \
                "$eng: the container is loop-chrome-web, label loop-type=chrome"
        is "$(jq_py 'd["HostConfig"]["NetworkMode"]' <<<"$j")" none "$eng: it has no network but loopback"
        is "$(jq_py 'd["HostConfig"]["Memory"], d["HostConfig"]["NanoCpus"]' <<<"$j")" "(536870912, 500000000)" "$eng: 512 MB, half a CPU"
        like "$(jq_py 'd["HostConfig"]["SecurityOpt"]' <<<"$j")" 'seccomp' "$eng: it runs under a seccomp profile of loop's"
        main=$(jq_py 'd["State"]["Pid"]' <<<"$j")
        like "$(grep -E '^(CapEff|CapBnd|NoNewPrivs)' "/proc/$main/status" | tr -s '\t\n' '  ')" \
                '^CapEff: 0+ CapBnd: [0-9a-f]+ NoNewPrivs: 1' "$eng: the bridge (Chrome's parent) holds no capability, no_new_privs set"

        rm -rf "$T/shots" && install -d -m 0755 -o "$BROWSER_USER" "$T/shots"
        service_start -E STATE_DIRECTORY="$T/shots"

        # the whole sequence of test-browser-chromium, through loop mcp-browser, its points as this test's
        LOOP_MCP_BROWSER=$LOOP BROWSER_SOCKET=$LOOP_RUNTIME_DIR/web/browser.sock BROWSER_TOKEN_FILE=$T/token \
                SITE=http://site.test SHOTS=$T/shots "$DRIVER" >"$T/driver-$eng.tap" 2>"$T/driver-$eng.err"
        rc=$?
        n=0
        while IFS= read -r line; do
                case $line in
                ok\ *) ok 0 "$eng: ${line#ok * - }"; n=$((n + 1)) ;;
                not\ ok\ *) ok 1 "$eng: ${line#not ok * - }"; n=$((n + 1)) ;;
                \#*) diag "${line#\# }" ;;
                esac
        done <"$T/driver-$eng.tap"
        [ "$rc" -eq 0 ] && [ "$n" -ge 80 ]
        ok $? "$eng: the sequence ran to its end ($n points, status $rc)" || diag "$(tail -5 "$T/driver-$eng.err") $(tail -5 "$T/service-$eng.log")"
        # the sequence's two downloads (file.bin, an <a download> of loot.txt): Chrome reported them canceled;
        # no file anywhere in the container (its /tmp is Chrome's HOME and profile) nor in the screenshots
        main=$(inspect | jq_py 'd["State"]["Pid"]')
        [ -d "/proc/$main/root/tmp/chrome" ] &&
                [ -z "$(find "/proc/$main/root/" "/proc/$main/root/tmp/" "$T/shots" -xdev \( -name 'file.bin*' -o -name 'loot*' \) 2>/dev/null)" ]
        ok $? "$eng: no download reaches a file, in the Chrome container (its profile is there, no file) or the screenshots directory"
        like "$(grep '^gateway-request: allow ' "$T/gateway-$eng.log" | grep 'LOOP_CONTAINER_NAME=loop-chrome-web' |
                grep 'LOOP_HOST=site.test' | grep -c 'LOOP_PATH=/data.json')" '^[1-9]' \
                "$eng: the channel's gateway carried the page's requests (its fetch of /data.json), for loop-chrome-web" ||
                diag "$(tail -5 "$T/gateway-$eng.log")"

        pids=$(container_pids)
        nosandbox=0 sandboxed=0 browser=''
        for p in $pids; do
                tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | grep -qx -- '--no-sandbox' && nosandbox=1
                [ "$(readlink "/proc/$p/ns/user")" != "$(readlink /proc/1/ns/user)" ] && sandboxed=1
                if [ -z "$browser" ] && tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q '^/usr/lib/chromium/chromium-headless-shell .*--remote-debugging-pipe'; then
                        browser=$p
                fi
        done
        like "$browser" '^[0-9]+$' "$eng: Chrome's browser process runs under the container's main process (the bridge)"
        is "$nosandbox" 0 "$eng: --no-sandbox is on no Chrome command line"
        is "$sandboxed" 1 "$eng: Chrome's sandbox is active (processes in a user namespace of their own)"

        # a killed loop-browser (its unit's main process): the call under way fails cleanly, and the next
        # loop-browser (started by its socket) serves the same Chrome; without a screenshots directory, a
        # screenshot is MCP image content
        mcp 'computer {"action":"wait","duration":8}' >"$T/long-$eng.out" 2>&1 &
        long=$!
        sleep 2
        kill -KILL "$service_pid"
        wait "$service_pid" 2>/dev/null
        wait "$long"
        like "$(cat "$T/long-$eng.out")" '"isError":true.*(without an answer|went away|did not answer)|(without an answer|went away|did not answer).*"isError":true' \
                "$eng: a killed loop-browser fails the call under way cleanly (an isError result)" || diag "$(cat "$T/long-$eng.out")"
        service_start
        out=$(mcp 'navigate {"url":"http://site.test/page2.html"}' 'get_page_text {}' 'screenshot {}')
        like "$(sed -n 2p <<<"$out")" 'This is page two.*"isError":false' "$eng: ...the next loop-browser drives the same Chrome" ||
                diag "$(cut -c1-300 <<<"$out")"
        like "$(sed -n 3p <<<"$out")" '"type":"text","text":"Screenshot \(1280x800 PNG[^"]*"\},\{"type":"image","data":"iVBORw0KGgo[^"]*","mimeType":"image/png"\}\],"isError":false' \
                "$eng: without a screenshots directory, screenshot answers MCP image content (image/png)"

        if [ -n "$browser" ]; then kill -KILL "$browser"; else kill -TERM "$chrome_pid"; fi
        wait_for 60 chrome_gone
        ok $? "$eng: a killed Chrome ends loop chrome (its unit starts it again)"
        wait "$chrome_pid"
        st=$?
        [ "$st" != 0 ]
        ok $? "$eng: ...with a failure status ($st), so Restart=on-failure applies"

        "$LOOP" chrome --user "$BROWSER_USER" web >"$T/chrome2-$eng.log" 2>&1 &
        chrome_pid=$!
        wait_for 90 socket_up
        out=$(mcp 'navigate {"url":"http://site.test/index.html"}' 'evaluate {"expression":"document.title + \" \" + 6*7"}')
        like "$(sed -n 2p <<<"$out")" 'Loop test page 42.*"isError":false' "$eng: started again, the next call reconnects (through the gateway)" || diag "$(cut -c1-300 <<<"$out")"
        kill -TERM "$chrome_pid"
        wait_for 60 chrome_gone
        ok $? "$eng: SIGTERM stops loop chrome"
        wait "$chrome_pid"
        is "$?" 0 "$eng: ...cleanly"
        # container_keep_alive_sec is 0 here: stopped, and removed at once through the registry
        state=$(engine_api "$ENGINE_SOCK" "http://d/v1.41/containers/loop-chrome-web/json" 2>/dev/null | jq_py 'd["State"]["Running"]' 2>/dev/null)
        is "${state:-removed}" removed "$eng: ...and the container is stopped and removed (container_keep_alive_sec 0)"
        kill "$service_pid" "$gateway_pid" 2>/dev/null
        wait "$service_pid" "$gateway_pid" 2>/dev/null
        gateway_pid='' service_pid='' chrome_pid=''
        engine_stop "$eng" >/dev/null 2>&1
done
tap_done
