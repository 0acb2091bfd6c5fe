// A served agent driven by the official A2A JavaScript SDK's client (@a2a-js/sdk), as a
// TypeScript user would: the card from the agent's URL, then one flow, printed as JSON.
//
//   node a2a_client.mjs --url BASE --token TOKEN --flow approve|cancel
//
// approve: a streamed message whose turn waits for approval (input-required), the decision as a
//          data part in a second streamed message, then tasks/get.
// cancel:  a blocking message whose turn waits, tasks/cancel, and tasks/get of a task that is
//          not there.
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";

import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  createAuthenticatingFetchWithRetry,
} from "@a2a-js/sdk/client";

const { values: args } = parseArgs({
  options: { url: { type: "string" }, token: { type: "string" }, flow: { type: "string" } },
});

// Every request, the card's included, carries the bearer token.
const signedFetch = createAuthenticatingFetchWithRetry(fetch, {
  headers: async () => ({ Authorization: `Bearer ${args.token}` }),
  shouldRetryWithHeaders: async () => undefined,
});
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: signedFetch })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: signedFetch }),
  }),
);
const client = await factory.createFromUrl(args.url);

function message(parts, task) {
  return {
    message: {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      parts,
      contextId: task?.contextId ?? "",
      taskId: task?.id ?? "",
    },
  };
}

const text = (value) => ({ content: { $case: "text", value } });
const data = (value) => ({ content: { $case: "data", value } });
const stateName = (state) => TaskState[state];

async function streamed(request) {
  const seen = { states: [], text: "", task: undefined, status: undefined };
  for await (const event of client.sendMessageStream(request)) {
    const { $case, value } = event.payload;
    if ($case === "task") {
      seen.task = value;
      seen.states.push(stateName(value.status.state));
    } else if ($case === "statusUpdate") {
      seen.status = value.status;
      seen.states.push(stateName(value.status.state));
    } else if ($case === "artifactUpdate") {
      const chunk = value.artifact.parts.map((part) => part.content?.value ?? "").join("");
      seen.text = value.append ? seen.text + chunk : chunk;
    }
  }
  return seen;
}

function waitingCallId(status) {
  const part = status.message.parts.find((p) => p.content?.$case === "data");
  return part.content.value.call_id;
}

const card = await factory.options.cardResolver.resolve(args.url);
const out = { card: { name: card.name, streaming: card.capabilities.streaming } };

if (args.flow === "approve") {
  const asked = await streamed(message([text("Write the note.")]));
  const callId = waitingCallId(asked.status);
  const task = asked.task;
  const decided = await streamed(message([data({ call_id: callId, approved: true })], task));
  const got = await client.getTask({ id: task.id });
  out.asked = { taskId: task.id, contextId: task.contextId, states: asked.states, callId };
  out.decided = { states: decided.states, text: decided.text };
  out.got = { state: stateName(got.status.state), contextId: got.contextId };
} else if (args.flow === "cancel") {
  const sent = await client.sendMessage(message([text("Write the note.")]));
  const cancelled = await client.cancelTask({ id: sent.id });
  let missing;
  try {
    await client.getTask({ id: `${sent.id}-missing` });
  } catch (error) {
    missing = { name: error.constructor.name, message: error.message };
  }
  out.sent = { taskId: sent.id, state: stateName(sent.status.state) };
  out.cancelled = { taskId: cancelled.id, state: stateName(cancelled.status.state) };
  out.missing = missing;
} else {
  throw new Error(`--flow approve|cancel, not ${args.flow}`);
}
console.log(JSON.stringify(out));
