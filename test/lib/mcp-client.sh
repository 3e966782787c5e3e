# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The official MCP client (@modelcontextprotocol/sdk from npm, a client this project did not write) and the
# driver test/integration/tasks-mcp-client.mjs, in a directory of the test's own. The SDK is installed with
# npm (the only network access of the tests that use it), unless LOOP_TEST_MCP_SDK_DIR names a directory
# that has node_modules/@modelcontextprotocol/sdk already.

MCP_SDK_VERSION=1.32.2

# mcp_client_prepare NAME: makes the directory (removed at exit) and sets MCP_CLIENT_DIR to it. Not in a
# command substitution: atexit must run in the test's own shell.
mcp_client_prepare() {
        local dir
        dir=$(mktemp -d "${TMPDIR:-/tmp}/$1-client.XXXXXX") || return 1
        atexit "rm -rf '$dir'"
        MCP_CLIENT_DIR=$dir
        if [ -n "${LOOP_TEST_MCP_SDK_DIR:-}" ]; then
                cp -a "$LOOP_TEST_MCP_SDK_DIR/node_modules" "$dir/" || { echo "cannot copy $LOOP_TEST_MCP_SDK_DIR" >&2; return 1; }
        elif ! (cd "$dir" && npm install --no-audit --no-fund --silent "@modelcontextprotocol/sdk@$MCP_SDK_VERSION" >npm.log 2>&1); then
                echo "npm cannot install @modelcontextprotocol/sdk@$MCP_SDK_VERSION: $(tail -5 "$dir/npm.log")" >&2
                return 1
        fi
        cp "$LOOP_SOURCE_DIR/test/integration/tasks-mcp-client.mjs" "$dir/client.mjs" && chmod -R a+rX "$dir"
}
