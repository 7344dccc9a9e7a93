// An MCP server built with the official TypeScript SDK (@modelcontextprotocol/sdk), for the suite's
// interoperability tests of our MCP client (tests/integration/test_mcp_typescript.py).
//
//   node mcp_server.mjs <port> <stateful|stateless> <events|json>
//
// The order service of tests/fakes/fake_mcp.py in the SDK's own streamable HTTP transport: stateful
// (sessions: initialize, then requests under Mcp-Session-Id, DELETE ends one) or stateless, answering
// in event streams or in JSON. It prints {"listening": port} once it listens, then one JSON line per
// request it receives: the HTTP verb, the JSON-RPC method, a tool call's name and arguments, and the
// identity headers, as a tool server's access log would.
import { randomUUID } from "node:crypto";
import express from "express";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const [port, mode, answers] = [Number(process.argv[2]), process.argv[3], process.argv[4]];
const json = answers === "json";
const ORDERS = { "A-1001": "shipped", "A-1002": "processing" };
const LOGGED = ["x-caller-assertion", "authorization", "x-tenant", "mcp-protocol-version", "mcp-session-id"];

function orders() {
  const server = new McpServer({ name: "orders-ts", version: "1.0.0" });
  server.registerTool(
    "lookup_order",
    {
      description: "Look up the shipping status of one of the caller's orders by its id",
      inputSchema: { orderId: z.string().describe("The order id, like A-1001") },
    },
    async ({ orderId }) => {
      const status = ORDERS[orderId];
      if (status === undefined) return { isError: true, content: [{ type: "text", text: `No order ${orderId}` }] };
      return { content: [{ type: "text", text: `Order ${orderId} is ${status}` }] };
    },
  );
  server.registerTool(
    "regional_stock",
    { description: "Units in stock in a region", inputSchema: { region: z.string() } },
    async ({ region }) => ({ content: [{ type: "text", text: `12 in stock in ${region}` }] }),
  );
  server.registerTool(
    "broken_lookup",
    { description: "A lookup whose backend is down", inputSchema: {} },
    async () => {
      throw new Error("the order database is down");
    },
  );
  return server;
}

function logged(req) {
  const body = req.body ?? {};
  const headers = Object.fromEntries(LOGGED.filter((h) => req.headers[h] !== undefined).map((h) => [h, req.headers[h]]));
  const entry = { verb: req.method, method: body.method ?? null, headers };
  if (body.method === "tools/call") Object.assign(entry, { tool: body.params?.name, arguments: body.params?.arguments });
  console.log(JSON.stringify(entry));
}

const sessions = new Map();
const app = express();
app.use(express.json({ limit: "1mb" }));
app.all("/mcp", async (req, res) => {
  logged(req);
  if (mode === "stateless") {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
    const server = orders();
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
    return;
  }
  const id = req.headers["mcp-session-id"];
  let transport = id === undefined ? undefined : sessions.get(id);
  if (transport === undefined) {
    if (id !== undefined || req.method !== "POST") {
      res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: json,
      onsessioninitialized: (sessionId) => sessions.set(sessionId, transport),
    });
    transport.onclose = () => sessions.delete(transport.sessionId);
    await orders().connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
});
const listener = app.listen(port, "127.0.0.1", () => console.log(JSON.stringify({ listening: port })));
process.on("SIGTERM", () => listener.close(() => process.exit(0)));
