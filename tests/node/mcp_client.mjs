// The official TypeScript SDK's MCP client (@modelcontextprotocol/sdk) on the service's POST /mcp, for
// tests/integration/test_mcp_server.py:
//
//   node mcp_client.mjs <base url> <caller id> <question>
//
// Connects over streamable HTTP (X-Caller-Id: the dev mode's caller header), lists the tools, searches the
// knowledge base and asks the question; prints one JSON line with the protocol version, the tools and
// both results as the SDK parsed them (an MCP error as {error: code}).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [base, caller, question] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
  requestInit: { headers: { "X-Caller-Id": caller } },
});
const client = new Client({ name: "suite-ts-client", version: "1.0.0" });

async function called(name, args) {
  try {
    const result = await client.callTool({ name, arguments: args });
    return { isError: result.isError ?? false, content: result.content, structured: result.structuredContent ?? null };
  } catch (error) {
    return { error: error.code ?? String(error) };
  }
}

await client.connect(transport);
const tools = (await client.listTools()).tools.map((tool) => ({ name: tool.name, required: tool.inputSchema.required ?? [] }));
const found = await called("search_knowledge_base", { query: question, maxResults: 1 });
const answered = await called("ask", { question });
const unknown = await called("no_such_tool", {});
console.log(JSON.stringify({ protocol: transport.protocolVersion ?? null, tools, found, answered, unknown }));
await client.close();
