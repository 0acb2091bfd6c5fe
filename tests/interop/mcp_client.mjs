// The official MCP TypeScript SDK's client against `turnkeeper serve --agents DIR` (driven by
// tests/system/test_mcp_interop.py): lists the served agents and calls one, answering each
// approval question through the SDK's elicitation handler as `--answer` says.
//
//   node tests/interop/mcp_client.mjs --url URL --token TOKEN [--call TOOL --task TEXT]
//        [--answer approve|reject|decline|cancel|malformed|none]
//
// Prints one JSON object on stdout: {"protocol", "tools", "result" or "error", "asked"}, where
// "asked" holds each elicitation the server sent (message, requestedSchema, _meta). With
// `--answer none` the client declares no elicitation capability at all.

import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    token: { type: "string" },
    call: { type: "string" },
    task: { type: "string" },
    answer: { type: "string", default: "approve" },
  },
});

// What each `--answer` sends back for an approval question.
const ANSWERS = {
  approve: { action: "accept", content: { approve: true, reason: "fine by the TypeScript client" } },
  reject: { action: "accept", content: { approve: false, reason: "not from the TypeScript client" } },
  decline: { action: "decline" },
  cancel: { action: "cancel" },
  malformed: { action: "accept", content: { approve: "yes" } },
};

const capabilities = values.answer === "none" ? {} : { elicitation: { form: {} } };
const client = new Client({ name: "turnkeeper-interop", version: "1.0.0" }, { capabilities });
const asked = [];
if (values.answer !== "none") {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return ANSWERS[values.answer];
  });
}

const transport = new StreamableHTTPClientTransport(new URL(values.url), {
  requestInit: { headers: { Authorization: `Bearer ${values.token}` } },
});
const out = { asked };
try {
  await client.connect(transport);
  out.protocol = transport.protocolVersion ?? null;
  out.tools = (await client.listTools()).tools;
  if (values.call) {
    // A turn outlasts the SDK's 60-second default: the test's own timeout bounds the call.
    out.result = await client.callTool(
      { name: values.call, arguments: { task: values.task } },
      undefined,
      { timeout: 600_000 },
    );
  }
} catch (error) {
  out.error = { code: error.code ?? null, message: String(error.message ?? error) };
} finally {
  await client.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
