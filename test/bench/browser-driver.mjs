// SPDX-License-Identifier: LGPL-2.1-or-later
//
// test/bench/browser's driver: the same three actions on the same local page against the same Chrome,
// (a) through `loop mcp-browser` (JSON-RPC over stdio -> loop-browser -> the bridge's socket -> Chrome) and
// (b) by puppeteer-core straight on the bridge's socket (CDP, NUL-framed), in interleaved blocks.
// Usage: node browser-driver.mjs LOOP_BIN SOCKET TOKEN_FILE CDP_SOCKET URL ROUNDS BLOCKS
// Prints one JSON object: {"loop": {action: [ms...]}, "puppeteer": {action: [ms...]}, "first_call_ms": N}.
import { spawn } from "node:child_process";
import net from "node:net";
import readline from "node:readline";
import puppeteer from "puppeteer-core";

const [bin, socket, tokenFile, cdpSocket, url, roundsArg, blocksArg] = process.argv.slice(2);
const rounds = Number(roundsArg), blocks = Number(blocksArg);
const actions = ["navigate", "click", "screenshot"];
const now = () => Number(process.hrtime.bigint()) / 1e6;

// --- loop mcp-browser, one process for the whole run ---
const mcp = spawn(bin, ["mcp-browser", "--socket", socket, "--token-file", tokenFile], { stdio: ["pipe", "pipe", "inherit"] });
const lines = readline.createInterface({ input: mcp.stdout });
const waiting = new Map();
let nextId = 1;
lines.on("line", (l) => {
        const m = JSON.parse(l);
        const w = waiting.get(m.id);
        if (w) { waiting.delete(m.id); w(m); }
});
function rpc(method, params) {
        const id = nextId++;
        return new Promise((resolve) => {
                waiting.set(id, resolve);
                mcp.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
        });
}
async function tool(name, args) {
        const m = await rpc("tools/call", { name, arguments: args });
        if (!m.result || m.result.isError)
                throw new Error(`${name}: ${JSON.stringify(m)}`.slice(0, 500));
        return m.result;
}
const loopActions = {
        navigate: () => tool("navigate", { url }),
        click: () => tool("computer", { action: "click", selector: "#b" }),
        screenshot: () => tool("screenshot", {}),
};

// --- puppeteer-core on the bridge's socket ---
function bridgeTransport() {
        return new Promise((resolve, reject) => {
                const s = net.connect(cdpSocket);
                let pending = "";
                const t = {
                        send: (msg) => s.write(msg + "\0"),
                        close: () => s.end(),
                        onmessage: undefined,
                        onclose: undefined,
                };
                s.setEncoding("utf8");
                s.on("data", (d) => {
                        pending += d;
                        let i;
                        while ((i = pending.indexOf("\0")) >= 0) {
                                const msg = pending.slice(0, i);
                                pending = pending.slice(i + 1);
                                if (t.onmessage) t.onmessage(msg);
                        }
                });
                s.on("close", () => t.onclose && t.onclose());
                s.on("connect", () => resolve(t));
                s.on("error", reject);
        });
}
let pageTarget = null;
async function puppeteerBlock(samples) {
        const browser = await puppeteer.connect({ transport: await bridgeTransport(), defaultViewport: null });
        let page = pageTarget ? (await browser.pages()).find((p) => p.target()._targetId === pageTarget) : null;
        if (!page) {
                page = await browser.newPage();
                pageTarget = page.target()._targetId;
        }
        await page.setViewport({ width: 1280, height: 800 });
        const act = {
                navigate: () => page.goto(url, { waitUntil: "load" }),
                click: () => page.click("#b"),
                screenshot: () => page.screenshot({ encoding: "base64" }),
        };
        for (let r = 0; r <= rounds; r++)
                for (const a of actions) {
                        const t0 = now();
                        await act[a]();
                        if (r > 0) samples[a].push(now() - t0);   /* round 0 warms the connection up */
                }
        browser.disconnect();
}
async function loopBlock(samples) {
        for (let r = 0; r <= rounds; r++)
                for (const a of actions) {
                        const t0 = now();
                        await loopActions[a]();
                        if (r > 0) samples[a].push(now() - t0);
                }
}

const out = { loop: {}, puppeteer: {} };
for (const a of actions) { out.loop[a] = []; out.puppeteer[a] = []; }
await rpc("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } });
{
        const t0 = now();
        await tool("navigate", { url });
        out.first_call_ms = now() - t0;
        out.first_answer_epoch_ms = Date.now();
}
for (let b = 0; b < blocks; b++) {
        await puppeteerBlock(out.puppeteer);
        await loopBlock(out.loop);
}
mcp.stdin.end();
console.log(JSON.stringify(out));
process.exit(0);
