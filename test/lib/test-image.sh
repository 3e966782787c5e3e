# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# A small agent image for the integration tests, built in a second without a Debian base or a registry:
#   build_test_rootfs OUTDIR          busybox-static, /usr/local/bin/loop from the build tree (or
#                                     $TEST_IMAGE_LOOP, e.g. a package's) with its shared
#                                     libraries (same paths, dynamic loader included), the host's curl (the
#                                     egress tests' client) with its libraries, the real image's
#                                     entrypoint and passwd/group symlinks, and a fake agent at
#                                     /usr/local/bin/claude (see below)
#   build_test_chrome_rootfs OUTDIR   the same plus the host's Chromium headless shell (/usr/lib/chromium with
#                                     its libraries, fontconfig and fonts) and image/chrome/entrypoint at
#                                     /usr/local/bin/loop-chrome-entrypoint: the Chrome test image, imported with
#                                     TEST_IMAGE_ENTRYPOINT=/usr/local/bin/loop-chrome-entrypoint
#   import_test_image SOCK TAG ROOTFS imports ROOTFS through the engine API on SOCK (Podman or Docker) as TAG
#                                     with ENTRYPOINT ["/usr/local/bin/loop-entrypoint"]; prints the image id
#
# The fake agent takes Claude Code's arguments (--mcp-config F, --model M, --print, --verbose,
# --output-format stream-json, --dangerously-skip-permissions, --resume SID, --fork-session, --add-dir D,
# --append-system-prompt S, [--] PROMPT) and prints scripted stream-json chosen by the prompt:
#   hello                   system init, an assistant text turn, a Bash tool_use, its tool_result, a result
#   scenario:huge-line      a 2 MiB line that is not JSON, then a normal result
#   scenario:huge-tool-result  a 2 MiB user tool_result line (valid JSON), then a normal result
#   scenario:no-result      init and a turn, no result event, exit 0
#   scenario:is-error       a result with is_error true and a session id
#   scenario:too-long       is_error "Prompt is too long", unless --resume names a session that /compact
#                           has compacted: then a normal result
#   /compact                result "compacted"; marks the --resume session (or a new one) compacted
#   scenario:crash          "fake claude: simulated crash" on stderr, nothing on stdout, exit 3
#   scenario:crash-after-init  init (with a session id) on stdout, then the crash
#   scenario:env            result text: `env | sort`, `id`, and the Uid/Gid/Groups/Cap*/NoNewPrivs/Seccomp
#                           lines of /proc/self/status
#   scenario:sh CMD         result text: the output (stdout and stderr) of `sh -c CMD`; is_error when it fails
#   scenario:sleep N        sleeps N seconds, then a result
#   scenario:escapes        a turn and a result whose text carries terminal escapes (OSC 52, CSI, C1, RLO)
#   anything else           init, a text turn and a result "echo: PROMPT"
# Session ids are "sess-N", N counting up in $HOME/.fake-agent/counter; --resume SID keeps SID (a new id
# with --fork-session). $HOME/.fake-agent/calls gets one line per call: the session id, then the arguments
# separated by " | " (newlines as \n), for tests that assert what the runner passed.
# Usage errors are Claude Code's: a missing --mcp-config file, stream-json without --verbose, an unknown
# option: a message on stderr and exit 1.

: "${LOOP_SOURCE_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${LOOP_BUILD_DIR:=$LOOP_SOURCE_DIR/build}"

TEST_IMAGE_API_VERSION=v1.41
TEST_IMAGE_ENTRYPOINT=/usr/local/bin/loop-entrypoint

_test_image_busybox() {
        local b
        for b in /bin/busybox /usr/bin/busybox; do
                # Only a static busybox works in a rootfs without libc's search paths for it.
                if [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then
                        echo "$b"
                        return 0
                fi
        done
        echo "test-image: no static busybox found (apt-get install busybox-static)" >&2
        return 1
}

# Copy FILE into ROOT at the same path, as a regular file even when FILE is a symlink on the host (the
# loader and the libraries are reached through symlinks that need not exist in the rootfs).
_test_image_copy_same_path() {
        local root=$1 f=$2
        mkdir -p "$root$(dirname "$f")" && cp -L "$f" "$root$f"
}

# The shared libraries BIN needs, with the loader, one absolute path a line.
_test_image_libs() {
        ldd "$1" | awk '
                $2 == "=>" && $3 ~ /^\// { print $3; next }
                $1 ~ /^\// { print $1 }'
}

_test_image_fake_agent() {
        cat <<'FAKE'
#!/bin/sh
# Fake Claude Code for loop's integration tests: see test/lib/test-image.sh for the scenarios.
set -u

state=$HOME/.fake-agent
mcp_config='' model='' output_format='' resume='' fork=0 print=0 verbose=0 prompt=''
have_prompt=0
args=

fail() {
        echo "$*" >&2
        exit 1
}

need_value() {
        [ $# -ge 2 ] || fail "error: option '$1' argument missing"
}

for a in "$@"; do
        args="$args${args:+ | }$(printf '%s' "$a" | awk 'BEGIN { ORS = "" } NR > 1 { print "\\n" } { print }')"
done

while [ $# -gt 0 ]; do
        case $1 in
        --mcp-config) need_value "$@"; mcp_config=$2; shift 2 ;;
        --model) need_value "$@"; model=$2; shift 2 ;;
        --output-format) need_value "$@"; output_format=$2; shift 2 ;;
        --resume | -r) need_value "$@"; resume=$2; shift 2 ;;
        --add-dir) need_value "$@"; [ -d "$2" ] || fail "Error: --add-dir $2 is not a directory"; shift 2 ;;
        --append-system-prompt) need_value "$@"; shift 2 ;;
        --fork-session) fork=1; shift ;;
        --print | -p) print=1; shift ;;
        --verbose) verbose=1; shift ;;
        --dangerously-skip-permissions) shift ;;
        --) shift; break ;;
        -*) fail "error: unknown option '$1'" ;;
        *) break ;;
        esac
done
if [ $# -gt 0 ]; then
        prompt=$*
        have_prompt=1
fi

[ "$print" = 1 ] || fail "fake claude: only --print mode is scripted"
[ "$have_prompt" = 1 ] || fail "Error: Input must be provided either through stdin or as a prompt argument when using --print"
[ "$output_format" = stream-json ] || fail "fake claude: only --output-format stream-json is scripted"
[ "$verbose" = 1 ] || fail "Error: When using --print, --output-format=stream-json requires --verbose"
case $mcp_config in
'') ;;
'{'*) ;;
*) [ -r "$mcp_config" ] || fail "Error: MCP config file not found: $mcp_config" ;;
esac

# The runner adds a newline to a bare-word prompt; the model would not care, the scenarios do.
nl='
'
while :; do
        case $prompt in
        *"$nl" | *' ') prompt=${prompt%?} ;;
        *) break ;;
        esac
done

mkdir -p "$state" || fail "fake claude: cannot create $state"

# Session ids: deterministic per HOME.
if [ -n "$resume" ] && [ "$fork" = 0 ]; then
        sid=$resume
else
        n=$(cat "$state/counter" 2>/dev/null || echo 0)
        n=$((n + 1))
        echo "$n" >"$state/counter"
        sid=sess-$n
fi
printf '%s %s\n' "$sid" "$args" >>"$state/calls"
printf '%s\n' "$prompt" >>"$state/$sid.prompts"

# A JSON string (with its quotes) of stdin.
json_str() {
        awk 'BEGIN { ORS = ""; print "\"" }
        {
                if (NR > 1) print "\\n"
                s = $0; out = ""
                for (i = 1; i <= length(s); i++) {
                        c = substr(s, i, 1)
                        if (c == "\\") out = out "\\\\"
                        else if (c == "\"") out = out "\\\""
                        else if (c == "\t") out = out "\\t"
                        else if (c == "\r") out = out "\\r"
                        else if (c < " ") out = out "?"
                        else out = out c
                }
                print out
        }
        END { print "\"" }'
}
js() {
        printf '%s' "$1" | json_str
}

emit_init() {
        printf '{"type":"system","subtype":"init","cwd":%s,"session_id":"%s","model":%s,"tools":["Bash","Read","Write"],"mcp_servers":[],"permissionMode":"bypassPermissions"}\n' \
                "$(pwd | json_str)" "$sid" "$(js "${model:-fake-model}")"
}
emit_text() {
        printf '{"type":"assistant","message":{"id":"msg_fake","type":"message","role":"assistant","model":%s,"content":[{"type":"text","text":%s}]},"session_id":"%s"}\n' \
                "$(js "${model:-fake-model}")" "$(js "$1")" "$sid"
}
emit_tool_use() {
        printf '{"type":"assistant","message":{"id":"msg_fake_tool","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_fake_1","name":"Bash","input":{"command":%s,"description":"run a command"}}]},"session_id":"%s"}\n' \
                "$(js "$1")" "$sid"
}
emit_tool_result() {
        printf '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_fake_1","type":"tool_result","content":%s,"is_error":false}]},"session_id":"%s"}\n' \
                "$(js "$1")" "$sid"
}
# emit_result TEXT [IS_ERROR] [NUM_TURNS]
emit_result() {
        if [ "${2:-false}" = true ]; then sub=error_during_execution; else sub=success; fi
        printf '{"type":"result","subtype":"%s","is_error":%s,"duration_ms":42,"duration_api_ms":40,"num_turns":%s,"result":%s,"session_id":"%s","total_cost_usd":0}\n' \
                "$sub" "${2:-false}" "${3:-1}" "$(js "$1")" "$sid"
}
# 2 MiB of the character $1, no newline.
long_line() {
        awk -v c="$1" 'BEGIN { s = c; while (length(s) < 2097152) s = s s; printf "%s", s }'
}

case $prompt in
hello)
        emit_init
        emit_text "Hello! I am the fake agent; let me look around."
        emit_tool_use "echo hi"
        emit_tool_result "hi"
        emit_text "The command printed hi."
        emit_result "hello from the fake agent" false 2
        ;;
scenario:huge-line)
        emit_init
        long_line x
        echo
        emit_result "survived a huge line"
        ;;
scenario:huge-tool-result)
        emit_init
        printf '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_fake_1","type":"tool_result","content":"'
        long_line y
        printf '","is_error":false}]},"session_id":"%s"}\n' "$sid"
        emit_result "survived a huge tool result"
        ;;
scenario:no-result)
        emit_init
        emit_text "I will stop without a result."
        ;;
scenario:is-error)
        emit_init
        emit_result "the fake agent failed on purpose" true
        ;;
scenario:too-long)
        emit_init
        if [ -n "$resume" ] && [ -e "$state/$resume.compacted" ]; then
                emit_result "done after compaction"
        else
                emit_result "Prompt is too long" true
        fi
        ;;
/compact)
        emit_init
        : >"$state/$sid.compacted"
        emit_result "compacted"
        ;;
scenario:crash)
        echo "fake claude: simulated crash" >&2
        exit 3
        ;;
scenario:crash-after-init)
        emit_init
        echo "fake claude: simulated crash" >&2
        exit 3
        ;;
scenario:env)
        emit_init
        out=$(env | sort; id; grep -E '^(Uid|Gid|Groups|Cap[A-Za-z]+|NoNewPrivs|Seccomp):' /proc/self/status)
        emit_result "$out"
        ;;
scenario:sh\ *)
        emit_init
        if out=$(sh -c "${prompt#scenario:sh }" 2>&1); then
                emit_result "$out"
        else
                emit_result "$out" true
        fi
        ;;
scenario:escapes)
        # terminal escapes in a turn and the result, as JSON carries them: OSC 52 (the clipboard), clear
        # screen, C1 CSI, RLO
        emit_init
        esc='hi \u001b]52;c;Y3VybA==\u0007 \u001b[2J \u009b31m \u202eend'
        printf '{"type":"assistant","message":{"id":"msg_fake","type":"message","role":"assistant","content":[{"type":"text","text":"turn %s"}]},"session_id":"%s"}\n' "$esc" "$sid"
        printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":42,"num_turns":1,"result":"result %s","session_id":"%s"}\n' "$esc" "$sid"
        ;;
scenario:sleep\ *)
        emit_init
        sleep "${prompt#scenario:sleep }"
        emit_result "slept ${prompt#scenario:sleep }"
        ;;
*)
        emit_init
        emit_text "You said: $prompt"
        emit_result "echo: $prompt"
        ;;
esac
exit 0
FAKE
}

build_test_rootfs() {
        local out=${1:?build_test_rootfs OUTDIR} loop=${TEST_IMAGE_LOOP:-$LOOP_BUILD_DIR/src/loop}
        local entrypoint=$LOOP_SOURCE_DIR/image/agent/entrypoint busybox applet lib libs probe

        busybox=$(_test_image_busybox) || return 1
        [ -x "$loop" ] || { echo "test-image: $loop is not built" >&2; return 1; }
        [ -r "$entrypoint" ] || { echo "test-image: $entrypoint is missing" >&2; return 1; }

        mkdir -p "$out" || return 1
        if [ -n "$(ls -A "$out")" ]; then
                echo "test-image: $out is not empty" >&2
                return 1
        fi
        (
                set -e
                cd "$out"
                mkdir -p bin sbin usr/bin usr/sbin usr/local/bin etc home root dev proc sys run tmp var/tmp
                chmod 1777 tmp var/tmp
                chmod 0700 root
                cp "$busybox" bin/busybox
                # --list-full gives each applet's usual directory (bin/, usr/bin/, sbin/, ...).
                for applet in $(bin/busybox --list-full); do
                        [ "$applet" != linuxrc ] || continue   # an initrd's init, not a command
                        [ -e "$applet" ] || ln -s /bin/busybox "$applet"
                done

                libs=$(_test_image_libs "$loop")
                for lib in $libs; do
                        _test_image_copy_same_path "$out" "$lib"
                done
                install -m 0755 "$loop" usr/local/bin/loop
                install -m 0755 "$entrypoint" usr/local/bin/loop-entrypoint
                # The sandbox guidance, as image/agent/Containerfile installs it.
                install -m 0755 "$LOOP_SOURCE_DIR/image/agent/loop-agent-init" "$LOOP_SOURCE_DIR/image/agent/loop-explain" \
                        usr/local/bin/
                install -D -m 0644 "$LOOP_SOURCE_DIR/image/agent/loop-sandbox-skill.md" usr/local/share/loop/loop-sandbox-skill.md
                # The security suites' attacker, when it is built: what an agent would try on the gate.
                probe=$LOOP_BUILD_DIR/test/integration/gate-probe
                if [ -x "$probe" ]; then
                        for lib in $(_test_image_libs "$probe"); do
                                _test_image_copy_same_path "$out" "$lib"
                        done
                        install -m 0755 "$probe" usr/local/bin/gate-probe
                fi
                # The egress tests' client: the host's curl, when it has one, with its libraries.
                if [ -x /usr/bin/curl ]; then
                        for lib in $(_test_image_libs /usr/bin/curl); do
                                _test_image_copy_same_path "$out" "$lib"
                        done
                        install -m 0755 /usr/bin/curl usr/bin/curl
                fi
                # The escape suite's probe, when it is built: the raw syscalls of an agent trying to get out.
                probe=$LOOP_BUILD_DIR/test/security/escape-probe
                if [ -x "$probe" ]; then
                        for lib in $(_test_image_libs "$probe"); do
                                _test_image_copy_same_path "$out" "$lib"
                        done
                        install -m 0755 "$probe" usr/local/bin/escape-probe
                fi
                _test_image_fake_agent >usr/local/bin/claude
                chmod 0755 usr/local/bin/claude

                # The real image's layout: the image's own files under *.image, the live ones in /run.
                printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' \
                        >etc/passwd.image
                printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >etc/group.image
                ln -s /run/loop-etc/passwd etc/passwd
                ln -s /run/loop-etc/group etc/group
                : >etc/hosts
                : >etc/resolv.conf
        ) || { echo "test-image: could not assemble $out" >&2; return 1; }

        # The loop binary must start in there, loader and all.
        if ! chroot "$out" /usr/local/bin/loop --version >/dev/null; then
                echo "test-image: /usr/local/bin/loop does not run in $out" >&2
                return 1
        fi
}

build_test_chrome_rootfs() {
        local out=${1:?build_test_chrome_rootfs OUTDIR} chrome=/usr/lib/chromium/chromium-headless-shell lib f

        [ -x "$chrome" ] || { echo "test-image: $chrome is missing (apt-get install chromium-headless-shell)" >&2; return 1; }
        build_test_rootfs "$out" || return 1
        (
                set -e
                mkdir -p "$out/usr/lib/chromium"
                cp -a /usr/lib/chromium/. "$out/usr/lib/chromium/"
                for f in "$chrome" /usr/lib/chromium/*.so /usr/lib/chromium/chrome_crashpad_handler; do
                        [ -e "$f" ] || continue
                        for lib in $(_test_image_libs "$f" 2>/dev/null); do
                                [ -e "$out$lib" ] || _test_image_copy_same_path "$out" "$lib"
                        done
                done
                # what Chrome loads at run time rather than link time: NSS modules, fonts
                for f in /usr/lib/x86_64-linux-gnu/nss /usr/lib/aarch64-linux-gnu/nss /etc/fonts /usr/share/fonts \
                         /usr/lib/x86_64-linux-gnu/libnssckbi.so /usr/lib/x86_64-linux-gnu/libsoftokn3.so \
                         /usr/lib/x86_64-linux-gnu/libfreeblpriv3.so; do
                        [ -e "$f" ] || continue
                        mkdir -p "$out$(dirname "$f")"
                        cp -aL "$f" "$out$(dirname "$f")/"
                done
                install -m 0755 "$LOOP_SOURCE_DIR/image/chrome/entrypoint" "$out/usr/local/bin/loop-chrome-entrypoint"
        ) || { echo "test-image: could not add Chromium to $out" >&2; return 1; }
        if ! chroot "$out" /usr/lib/chromium/chromium-headless-shell --version >/dev/null; then
                echo "test-image: Chromium does not run in $out" >&2
                return 1
        fi
}

# Percent-encode $1 for a query string.
_test_image_urlencode() {
        local s=$1 out='' c i
        for ((i = 0; i < ${#s}; i++)); do
                c=${s:i:1}
                case $c in
                [A-Za-z0-9._~-]) out+=$c ;;
                *) out+=$(printf '%%%02X' "'$c") ;;
                esac
        done
        printf '%s' "$out"
}

import_test_image() {
        local sock=${1:?import_test_image SOCK TAG ROOTFS} ref=${2:?} rootfs=${3:?}
        local repo tag url response id change
        local -a changes=(
                "ENTRYPOINT [\"$TEST_IMAGE_ENTRYPOINT\"]"
                "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        )

        # REPO[:TAG], where a ':' before the last '/' belongs to a registry's port.
        if [[ ${ref##*/} == *:* ]]; then
                repo=${ref%:*}
                tag=${ref##*:}
        else
                repo=$ref
                tag=latest
        fi
        # The tag goes into repo: Podman 4.3 ignores the tag parameter of an import (the image would be
        # :latest); Docker and Podman both take "repo=NAME:TAG".
        url="http://d/$TEST_IMAGE_API_VERSION/images/create?fromSrc=-&repo=$(_test_image_urlencode "$repo:$tag")"
        for change in "${changes[@]}"; do
                url+="&changes=$(_test_image_urlencode "$change")"
        done

        # Streamed (chunked) upload; the engine answers with progress lines and, on failure, either an
        # HTTP error or an "error" field in a 200 stream (Docker).
        response=$(tar -C "$rootfs" --numeric-owner -cf - . |
                curl -sS --fail-with-body --unix-socket "$sock" -X POST -T - \
                        -H 'Content-Type: application/x-tar' "$url") || {
                echo "test-image: import of $ref failed: $response" >&2
                return 1
        }
        if [[ $response == *'"error'* ]]; then
                echo "test-image: import of $ref failed: $response" >&2
                return 1
        fi
        response=$(curl -sS --fail-with-body --unix-socket "$sock" \
                "http://d/$TEST_IMAGE_API_VERSION/images/$(_test_image_urlencode "$repo:$tag")/json") || {
                echo "test-image: $ref is not there after the import: $response" >&2
                return 1
        }
        id=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["Id"])' <<<"$response") || return 1
        echo "$id"
}
