// Loads a project's .cursor/mcp.json with Cursor's own loader (@cursor/sdk) and lets it connect: see
// scripts/try-cursor.sh. Cursor's cloud is not reachable here, so the run itself fails after the MCP servers
// were started; what the script shows is in ticketd's log, which try-cursor.sh reads.
//   node try-cursor.mjs SDK_DIR PROJECT_DIR
import { pathToFileURL } from "node:url";

const [sdkDir, project] = process.argv.slice(2);
const { Agent } = await import(pathToFileURL(`${sdkDir}/node_modules/@cursor/sdk/dist/esm/index.js`).href);
// Without an account Agent.create cannot fetch the model list from api.cursor.com; the SDK reads it from this
// variable instead. MCP servers are started by send(), from the setting source "project" (.cursor/mcp.json).
process.env.CURSOR_SDK_LOCAL_MODEL_CATALOG_JSON ??= '[{"id":"auto","displayName":"Auto"}]';
const agent = await Agent.create({ apiKey: "no-account", model: { id: "auto" }, local: { cwd: project, settingSources: ["project"] } });
try {
  const run = await agent.send("List the MCP tools you have.");
  const result = await Promise.race([run.wait(), new Promise((r) => setTimeout(() => r({ status: "still running after 40 s" }), 40000))]);
  console.log(`try-cursor: the run ended: ${JSON.stringify(result).slice(0, 200)}`);
} catch (e) {
  console.log(`try-cursor: send: ${e?.name}: ${e?.message}`);
}
process.exit(0);
