// Drive an MCP server over stdio with the official TypeScript SDK client (@modelcontextprotocol/sdk).
//
// usage: node sdk_client.mjs <server command> [args...]
//        node sdk_client.mjs --http <url>     (Streamable HTTP; TEAM_VAULT_HTTP_TOKEN is the Bearer token)
//
// The server gets the SDK's default environment plus every TEAM_VAULT_* variable of ours.
// The scenario comes from the test, one JSON command per stdin line; each gets one JSON
// reply per stdout line (so the test can arm vault faults between steps):
//   {"op":"list"}                          -> {"tools":[...]}         (the full tools/list result)
//   {"op":"call","name":..,"arguments":..} -> {"result":{...}}        (a CallToolResult)
//   {"op":"start","name":..,"arguments":..}-> {"requestId":n}         (the call stays in flight)
//   {"op":"abort","reason":".."}           -> how the in-flight call ended and what was sent
//   {"op":"close"}                         -> anything unexpected seen on the way; then exit
// The first line, before any command, is {"ready":{"server":..,"offered":..,"protocolVersion":..}}.
// A command that throws is answered {"op":..,"thrown":{"name","code","message"}}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createInterface } from "node:readline";
import { performance } from "node:perf_hooks";

const [command, ...args] = process.argv.slice(2);
const env = { ...getDefaultEnvironment() };
for (const [key, value] of Object.entries(process.env)) if (key.startsWith("TEAM_VAULT_")) env[key] = value;

const transport =
  command === "--http"
    ? new StreamableHTTPClientTransport(new URL(args[0]), {
        requestInit: { headers: { Authorization: `Bearer ${process.env.TEAM_VAULT_HTTP_TOKEN}` } },
      })
    : new StdioClientTransport({ command, args, env, stderr: "inherit" });
const sent = []; // every JSON-RPC message the client wrote
const received = []; // and every one it read
const send = transport.send.bind(transport);
transport.send = (message, options) => (sent.push(message), send(message, options));
const start = transport.start.bind(transport);
transport.start = () => {
  const handle = transport.onmessage; // set by client.connect() just before it starts the transport
  transport.onmessage = (message, extra) => (received.push(message), handle(message, extra));
  return start();
};
const client = new Client({ name: "teamvault-interop-ts-sdk", version: "1.32.2" });
const unexpected = []; // errors the SDK reported on the side, e.g. a response to an unknown (cancelled) id
client.onerror = (error) => unexpected.push(String(error?.message ?? error));

const out = (reply) => process.stdout.write(JSON.stringify(reply) + "\n");
const thrown = (e) => ({ name: e?.name, code: e?.code, message: String(e?.message ?? e) });

await client.connect(transport); // spawns the server, initialize, initialized
const initialize = sent.find((m) => m.method === "initialize");
const { protocolVersion } = received.find((m) => m.id === initialize.id).result;
out({ ready: { server: client.getServerVersion(), offered: initialize.params.protocolVersion, protocolVersion } });

let inFlight = null; // {promise, controller, requestId}
let closed = false;

async function run(cmd) {
  switch (cmd.op) {
    case "list":
      return { tools: (await client.listTools()).tools };
    case "call":
      return { result: await client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }) };
    case "start": {
      const controller = new AbortController();
      const promise = client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, undefined, {
        signal: controller.signal,
      });
      const request = sent.findLast((m) => m.method === "tools/call");
      inFlight = { promise, controller, requestId: request.id };
      return { requestId: request.id };
    }
    case "abort": {
      const { promise, controller, requestId } = inFlight;
      inFlight = null;
      const abortedAt = performance.now();
      controller.abort(cmd.reason ?? "aborted by the interop test");
      let settled;
      try {
        settled = { resolved: await promise };
      } catch (e) {
        settled = { rejected: thrown(e) };
      }
      const cancelled = sent.filter((m) => m.method === "notifications/cancelled");
      return { requestId, ...settled, settledMs: performance.now() - abortedAt, cancelledSent: cancelled };
    }
    case "close": {
      await client.close();
      closed = true;
      const cancelledIds = sent.filter((m) => m.method === "notifications/cancelled").map((m) => m.params.requestId);
      const answeredAfterCancel = received.filter((m) => cancelledIds.includes(m.id));
      return { unexpected, answeredAfterCancel };
    }
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  try {
    out({ op: cmd.op, ...(await run(cmd)) });
  } catch (e) {
    out({ op: cmd.op, thrown: thrown(e) });
  }
  if (closed) break;
}
if (!closed) await client.close(); // stdin ended early: still stop the server
