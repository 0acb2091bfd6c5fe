// The AG-UI client from npm (@ag-ui/client's HttpAgent) against `POST /v1/agents/{id}/ag-ui` of
// `turnkeeper serve --agents DIR` (driven by tests/system/test_ag_ui.py): sends one user message
// on a thread, and while the run ends on interrupts, answers each as `--answer` says in the next
// run's `resume` (the client itself refuses a run that leaves one unanswered).
//
//   node tests/interop/agui_client.mjs --url URL --agent ID --token TOKEN --thread THREAD
//        --message TEXT [--answer approve|reject|cancel|none] [--messages N]
//
// `--messages N` sends N user messages, one run each (a thread of several turns). Prints one
// JSON object on stdout: {"runs": [{"runId", "events", "outcome", "result", "interrupts",
// "firstTokenMs"}], "messages", "state"} or, when a run is refused or fails, also "error"
// ({"message", "status", "payload"}).

import { parseArgs } from "node:util";
import { HttpAgent } from "@ag-ui/client";

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    agent: { type: "string" },
    token: { type: "string" },
    thread: { type: "string" },
    message: { type: "string" },
    answer: { type: "string", default: "approve" },
    messages: { type: "string", default: "1" },
  },
});

// What each `--answer` sends back for an interrupt (AG-UI's resume entry, less its id).
const ANSWERS = {
  approve: { status: "resolved", payload: { approved: true, reason: "fine by the AG-UI client" } },
  reject: { status: "resolved", payload: { approved: false, reason: "not from the AG-UI client" } },
  cancel: { status: "cancelled" },
};

const agent = new HttpAgent({
  url: `${values.url}/v1/agents/${values.agent}/ag-ui`,
  headers: { Authorization: `Bearer ${values.token}` },
  threadId: values.thread,
});

const out = { runs: [] };

async function run(parameters) {
  const record = { events: [], firstTokenMs: null };
  const started = performance.now();
  out.runs.push(record);
  const subscriber = {
    onEvent({ event }) {
      record.events.push(event);
      if (event.type === "TEXT_MESSAGE_CONTENT" && record.firstTokenMs === null) {
        record.firstTokenMs = performance.now() - started;
      }
    },
    onRunStartedEvent({ event }) {
      record.runId = event.runId;
    },
    onRunFinishedEvent(params) {
      record.outcome = params.outcome;
      record.result = params.result ?? null;
      record.interrupts = params.interrupts ?? [];
    },
  };
  await agent.runAgent(parameters, subscriber);
}

try {
  for (let n = 1; n <= Number(values.messages); n++) {
    const text = Number(values.messages) > 1 ? `${values.message} (${n})` : values.message;
    agent.addMessage({ id: `user-${n}`, role: "user", content: text });
    await run({});
    while (agent.pendingInterrupts.length > 0 && values.answer !== "none") {
      const resume = agent.pendingInterrupts.map((interrupt) => ({
        interruptId: interrupt.id,
        ...ANSWERS[values.answer],
      }));
      await run({ resume });
    }
  }
} catch (error) {
  out.error = { message: String(error.message ?? error), status: error.status ?? null };
  if (error.payload !== undefined) out.error.payload = error.payload;
}
out.messages = agent.messages;
out.state = agent.state;
out.pendingInterrupts = agent.pendingInterrupts;
process.stdout.write(JSON.stringify(out));
