// What the official TypeScript MCP SDK shows its user when /mcp refuses a key: connect() with
// a bearer key, then one JSON line on stdout. Run by tests/mcp/test_typescript_sdk.py.
//
//   node refusal.mjs <base-or-mcp-url> <key>
//
// Exit 0 whatever connect() did (the test judges the line); 2 on a usage or setup failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// The fields a test can judge: the class and message the SDK's user sees, and the HTTP status
// when the error carries one (StreamableHTTPError puts it in `code`); a cause too, so that a
// failure other than a refusal (a refused connection, a bug) is printed rather than hidden.
function describe(error) {
  if (!(error instanceof Error)) {
    return { class: typeof error, message: String(error) };
  }
  const shown = { class: error.constructor?.name ?? error.name, message: error.message };
  for (const field of ["code", "status"]) {
    if (error[field] !== undefined) shown[field] = error[field];
  }
  if (error.cause !== undefined) shown.cause = describe(error.cause);
  return shown;
}

async function main() {
  const [url, key] = process.argv.slice(2);
  if (!url || !key) {
    console.error("usage: node refusal.mjs <url> <key>");
    return 2;
  }
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name: "memory-bank-refusal-check", version: "1.0.0" });
  let line;
  try {
    await client.connect(transport);
    line = { connected: true, server: client.getServerVersion() ?? null };
    await client.close();
  } catch (error) {
    line = { connected: false, error: describe(error) };
  }
  console.log(JSON.stringify(line));
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    // Not from connect(): setup went wrong; say so on stdout too, where the test looks.
    console.log(JSON.stringify({ connected: false, setup_failed: describe(error) }));
    console.error(error);
    process.exit(2);
  },
);
