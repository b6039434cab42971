// ticketd's ticketing model through the official TypeScript SDK client, the
// counterpart of the go-sdk tests beside it (links_test.go, parents_test.go,
// users_test.go, surface_test.go). TestTicketingOverTheTypeScriptClient runs
// it against a real server:
//
//   node ticketing.mjs URL TOKEN_A PROJECT_A TOKEN_B PROJECT_B
//
// Tenant A (TOKEN_A) files its tickets in PROJECT_A, tenant B in PROJECT_B.
// It prints one JSON object of what the server answered and asserts nothing:
// the Go test judges, so its failure names the observation. Anything that
// stops the run (a refused connection, a protocol error where an answer was
// due) goes to stderr with exit status 1.
import { randomUUID } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, tokenA, projectA, tokenB, projectB] = process.argv.slice(2);
if (!projectB) {
  console.error("usage: node ticketing.mjs URL TOKEN_A PROJECT_A TOKEN_B PROJECT_B");
  process.exit(2);
}

async function connect(token) {
  const client = new Client({ name: "ticketd-tsclient", version: "v0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  // Listing the tools makes the client check every structured result
  // against the tool's output schema, as a careful client does.
  await client.listTools();
  return { client, protocolVersion: transport.protocolVersion };
}

// call answers a tools/call as plain data: tool errors are answers here
// (isError with the structured error), protocol errors stop the run.
async function call(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  const text = res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");
  return { is_error: res.isError === true, structured: res.structuredContent ?? null, text };
}

// attempt answers a request that may be refused at the protocol level, with
// the JSON-RPC error's code and message.
async function attempt(request) {
  try {
    return { result: await request() };
  } catch (err) {
    return { error: { code: err.code ?? null, message: String(err.message ?? err) } };
  }
}

async function create(client, project, extra = {}) {
  const res = await call(client, "create_ticket", {
    operation_id: randomUUID(), project_id: project, title: "Printer on fire", priority: "normal", ...extra,
  });
  if (res.is_error) throw new Error(`create_ticket in ${project}: ${res.text}`);
  return res.structured.ticket;
}

const a = await connect(tokenA);
const b = await connect(tokenB);
const first = await create(a.client, projectA);
const second = await create(a.client, projectA);
const foreign = await create(b.client, projectB);

const link = { operation_id: randomUUID(), id: first.key, link: "duplicated_by", target: second.key };
const linkFirst = await call(a.client, "link_tickets", link);
const linkAgain = await call(a.client, "link_tickets", link);
const linked = await call(a.client, "get_ticket", { id: second.key });

const blocks = await call(a.client, "link_tickets", { operation_id: randomUUID(), id: first.key, link: "blocks", target: second.key });
const cycle = await call(a.client, "link_tickets", { operation_id: randomUUID(), id: second.key, link: "blocks", target: first.key });

const child = await create(a.client, projectA, { parent: first.key });
const parent = await call(a.client, "get_ticket", { id: first.key });

const assignee = await call(a.client, "update_ticket", { operation_id: randomUUID(), id: first.key, assignee: "nobody-by-this-name" });

const read = (client, key) => attempt(() => client.readResource({ uri: `ticket://${key}` }));
const summarize = (client, key) => attempt(() => client.getPrompt({ name: "summarize_ticket", arguments: { id: key } }));
const complete = async (client, prefix) => {
  const res = await attempt(() => client.complete({
    ref: { type: "ref/resource", uri: "ticket://{key}" }, argument: { name: "key", value: prefix },
  }));
  return res.error ? res : { values: res.result.completion.values };
};
const keyPrefix = first.key.split("-")[0];
const foreignPrefix = foreign.key.split("-")[0];

console.log(JSON.stringify({
  protocol_versions: { a: a.protocolVersion, b: b.protocolVersion },
  tickets: { first: first.key, second: second.key, child: child.key, foreign: foreign.key },
  link: { first: linkFirst, again: linkAgain, get_ticket: linked },
  cycle: { blocks, reverse: cycle },
  sub_task: { parent },
  assignee,
  resource: { own: await read(a.client, first.key), other_tenant: await read(b.client, first.key) },
  prompt: { own: await summarize(a.client, first.key), other_tenant: await summarize(b.client, first.key) },
  completion: {
    a_own_prefix: await complete(a.client, keyPrefix),
    b_a_prefix: await complete(b.client, keyPrefix),
    b_every_key: await complete(b.client, ""),
    b_own_prefix: await complete(b.client, foreignPrefix),
  },
}));
await a.client.close();
await b.client.close();
