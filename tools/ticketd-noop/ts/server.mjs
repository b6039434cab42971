// The TypeScript SDK floor of `make bench-e2e`, the counterpart of
// ../main.go: one tool, "noop", that does nothing, served over Streamable
// HTTP without sessions the way the SDK documents stateless serving (a
// fresh server and transport per request). Whatever a ticketd call costs
// beyond this is not the protocol's price.
//
//   node server.mjs --addr 127.0.0.1:8091
//
// Loopback only; GET /healthz answers 200 once it listens; SIGTERM stops it.
import http from "node:http";
import net from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const flag = process.argv.indexOf("--addr");
const addr = flag > 0 ? process.argv[flag + 1] : "127.0.0.1:8091";
const colon = addr.lastIndexOf(":");
const host = addr.slice(0, colon).replace(/^\[|\]$/g, "");
const port = Number(addr.slice(colon + 1));
if (!net.isIP(host) || !(host.startsWith("127.") || host === "::1") || !Number.isInteger(port)) {
  console.error(`ticketd-noop-ts: --addr ${addr}: want a loopback IP and a port, such as 127.0.0.1:8091`);
  process.exit(2);
}

function newServer() {
  const server = new McpServer({ name: "ticketd-noop-ts", version: "v0" });
  server.registerTool("noop", { description: "Does nothing." }, async () => ({ content: [] }));
  return server;
}

const httpServer = http.createServer(async (req, res) => {
  if (req.url === "/healthz" && req.method === "GET") {
    res.end("ok\n");
    return;
  }
  if (req.url !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  const server = newServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res);
  } catch (err) {
    console.error("ticketd-noop-ts:", err);
    if (!res.headersSent) res.writeHead(500).end();
  }
});

httpServer.listen(port, host, () => console.log(`listening on http://${addr}/mcp`));
process.on("SIGTERM", () => httpServer.close(() => process.exit(0)));
process.on("SIGINT", () => httpServer.close(() => process.exit(0)));
