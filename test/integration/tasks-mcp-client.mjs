// SPDX-License-Identifier: LGPL-2.1-or-later
//
// A real MCP client this project did not write (the official @modelcontextprotocol/sdk) driving
// `loop mcp` over stdio, for test-tasks-service.sh (and `loop mcp-browser` for test-browser-service.sh, with
// LOOP_MCP_VERB=mcp-browser). Usage:
//   node tasks-mcp-client.mjs LOOP_BIN CHANNEL SOCKET TOKEN_FILE 'TOOL JSON_ARGS' ...
// Prints one JSON line per call: {"tool", "isError", "id" (of the first task in the answer), "text"}; first a line {"tools": [names...],
// "protocolVersion"}. Exits 2 when the connection itself fails.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, channel, socket, tokenFile, ...calls] = process.argv.slice(2);
const transport = new StdioClientTransport({
        command: bin,
        args: [process.env.LOOP_MCP_VERB || "mcp", "--channel-id", channel, "--socket", socket, "--token-file", tokenFile],
        stderr: "inherit",
});
const client = new Client({ name: "loop-test", version: "1.0.0" });
try {
        await client.connect(transport);
        const tools = await client.listTools();
        console.log(JSON.stringify({ tools: tools.tools.map((t) => t.name),
                                     schemas: tools.tools.every((t) => t.inputSchema && t.inputSchema.type === "object"),
                                     server: client.getServerVersion() }));
        for (const call of calls) {
                const space = call.indexOf(" ");
                const name = space < 0 ? call : call.slice(0, space);
                const args = space < 0 ? {} : JSON.parse(call.slice(space + 1));
                const r = await client.callTool({ name, arguments: args });
                const text = r.content.map((c) => c.text).join("");
                const id = (text.match(/"id":"([0-9a-f]{8})"/) || [])[1];
                console.log(JSON.stringify({ tool: name, isError: !!r.isError, id, text }));
        }
        await client.close();
} catch (e) {
        console.error("client failed:", e);
        process.exit(2);
}
