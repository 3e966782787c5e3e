#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Runs a driver against a real chromium-headless-shell (test-browser-chromium, bench/browser-tools) in a
# network namespace of its own with only lo up, where the test site (site/) is served on 127.0.0.1:
# nothing leaves it. The driver gets CHROME and SITE (http://127.0.0.1:PORT) in its environment.
# As root: unshare --net; otherwise an unprivileged user namespace with it (unshare -rn).
set -eu

driver=$1
site=$(cd "$(dirname "$0")" && pwd)/site
chrome=$(command -v chromium-headless-shell || true)
if [ -z "$chrome" ]; then
        echo "1..0 # SKIP chromium-headless-shell is not installed (.ci/packages)"
        exit 0
fi
# the Debian wrapper script execs the real binary; the pipe fds 3/4 pass through exec
if [ -x /usr/lib/chromium/chromium-headless-shell ]; then
        chrome=/usr/lib/chromium/chromium-headless-shell
fi

if [ "$(id -u)" = 0 ]; then
        ns=(unshare --net)
else
        ns=(unshare --map-root-user --net)
fi

exec "${ns[@]}" -- bash -c '
set -eu
ip link set lo up
port=8765
python3 -m http.server --bind 127.0.0.1 --directory "$2" "$port" >/dev/null 2>&1 &
server=$!
trap "kill $server 2>/dev/null || true" EXIT
for _ in $(seq 100); do
        python3 -c "import socket; socket.create_connection((\"127.0.0.1\", $port), 1)" 2>/dev/null && break
        sleep 0.1
done
CHROME=$3 SITE=http://127.0.0.1:$port "$1"
' bash "$driver" "$site" "$chrome"
