// Drives `ackdeck mcp` through the official TypeScript SDK's own Client and
// StdioClientTransport (the code the MCP Inspector and Gemini CLI call through), and prints
// what a client built on it sees, as one JSON document on stdout.
//
// Usage: node drive.mjs SDK_DIR < plan.json
//   SDK_DIR   the installed @modelcontextprotocol/sdk package directory
//   plan      {"command", "args", "env", "cwd", "steps": [...]}; a step is
//             {"tool": NAME, "args": {...}}  a tools/call; a string value "$N.key" is replaced
//                                            by structuredContent[key] of step N's result
//             {"append": PATH, "text": LINE} a producer that knows nothing about ackdeck
//                                            appends LINE + "\n" to PATH
// Output: {"server": serverVersion, "tools": [...tools/list...], "results": [...]}, one entry
// per step: {"result": CallToolResult} or {"thrown": {"code", "message"}} when the SDK raised
// (a protocol error, e.g. structured content that does not match the outputSchema).
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const sdk = process.argv[2];
const load = (rel) => import(pathToFileURL(join(sdk, "dist/esm", rel)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const plan = JSON.parse(readFileSync(0, "utf8"));
const transport = new StdioClientTransport({
  command: plan.command,
  args: plan.args,
  env: plan.env,
  cwd: plan.cwd,
  stderr: "inherit",
});
const client = new Client({ name: "ackdeck-ts-test", version: "1.0.0" });
await client.connect(transport);

const tools = (await client.listTools()).tools;
const results = [];
const resolve = (value) => {
  if (typeof value !== "string") return value;
  const m = /^\$(\d+)\.(\w+)$/.exec(value);
  return m ? results[Number(m[1])].result.structuredContent[m[2]] : value;
};
for (const step of plan.steps) {
  if (step.append !== undefined) {
    appendFileSync(step.append, step.text + "\n");
    results.push({ appended: step.text });
    continue;
  }
  const args = Object.fromEntries(
    Object.entries(step.args).map(([k, v]) => [k, resolve(v)]),
  );
  try {
    // The SDK's own callTool: it validates structured content against the tool's outputSchema.
    const result = await client.callTool(
      { name: step.tool, arguments: args },
      undefined,
      { timeout: 120000 },
    );
    results.push({ result });
  } catch (error) {
    results.push({ thrown: { code: error.code ?? null, message: String(error.message) } });
  }
}
const server = client.getServerVersion();
await client.close();
process.stdout.write(JSON.stringify({ server, tools, results }) + "\n");
