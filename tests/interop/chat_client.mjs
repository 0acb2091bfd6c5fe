// The AI SDK's chat (`ai`: `AbstractChat` over `DefaultChatTransport`, what `useChat` runs)
// against `turnkeeper serve --agents DIR`'s `POST /v1/agents/{agent_id}/chat` (driven by
// tests/system/test_ai_sdk_chat.py): sends messages, answers tool approvals the way a page's
// approve / reject buttons do, and reconnects to a turn in flight as a reloaded page does.
//
//   TURNKEEPER_TOKEN=… node tests/interop/chat_client.mjs --url URL --agent ID --chat ID \
//        --steps JSON [--messages JSON]
//
// `--steps` is a list of {"send": TEXT}, {"answer": true|false, "reason": TEXT} (answers every
// approval the last message asks, then the chat sends them on its own:
// `lastAssistantMessageIsCompleteWithApprovalResponses`), {"reconnect": true} (a new chat of
// the same id, holding `--messages` as a reloaded page would, resumes the stream) or
// {"stop_after_text": true} (the next send is aborted once its first text is whole). Prints one JSON
// object per step on stdout: {"step", "status", "error", "messages", "reconnected"}.

import { parseArgs } from "node:util";
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
} from "ai";

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    agent: { type: "string" },
    chat: { type: "string" },
    steps: { type: "string" },
    messages: { type: "string", default: "[]" },
  },
});

// The state a UI framework keeps (React's, in `useChat`): here, plain arrays.
class PlainState {
  constructor(messages) {
    this.messages = messages;
    this.status = "ready";
    this.error = undefined;
  }
  pushMessage = (message) => {
    this.messages = this.messages.concat(message);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  };
  snapshot = (thing) => structuredClone(thing);
}

class Chat extends AbstractChat {
  constructor(messages) {
    const state = new PlainState(messages);
    super({
      id: values.chat,
      state,
      transport: new DefaultChatTransport({
        api: `${values.url}/v1/agents/${values.agent}/chat`,
        headers: { Authorization: `Bearer ${process.env.TURNKEEPER_TOKEN}` },
      }),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
      onData: (part) => this.data.push(part),
    });
    this.data = [];
  }
}

// The chat's automatic send after the last answer runs in the background: wait for it.
async function settled(chat) {
  for (let i = 0; i < 6000; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (chat.status === "ready" || chat.status === "error") return;
  }
  throw new Error("the chat did not settle within 5 minutes");
}

function waitingApprovals(chat) {
  const last = chat.messages.at(-1);
  if (!last || last.role !== "assistant") return [];
  return last.parts.filter((part) => part.state === "approval-requested");
}

let chat = new Chat([]);
let reconnected = null;
for (const step of JSON.parse(values.steps)) {
  reconnected = null;
  try {
    if (step.send !== undefined) {
      await chat.sendMessage({ text: step.send });
    } else if (step.answer !== undefined) {
      const asked = waitingApprovals(chat);
      if (asked.length === 0) throw new Error("no approval is asked in the last message");
      for (const part of asked) {
        await chat.addToolApprovalResponse({
          id: part.approval.id,
          approved: step.answer,
          reason: step.reason,
        });
      }
      await settled(chat);
    } else if (step.reconnect) {
      chat = new Chat(JSON.parse(values.messages));
      const before = chat.messages.length;
      await chat.resumeStream();
      reconnected = chat.messages.length > before || chat.messages.at(-1)?.role === "assistant";
    } else if (step.stop_after_text) {
      const sending = chat.sendMessage({ text: step.stop_after_text });
      for (let i = 0; i < 6000; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        const last = chat.messages.at(-1);
        // A text part is whole once its end arrived ("done"): stopping at its first delta would
        // keep a prefix of it, as slow machines showed.
        const whole = (p) => p.type === "text" && p.text && p.state === "done";
        if (last?.role === "assistant" && last.parts.some(whole)) break;
      }
      await chat.stop();
      await sending;
    }
  } catch (error) {
    console.log(JSON.stringify({ step, thrown: String(error) }));
  }
  console.log(
    JSON.stringify({
      step,
      status: chat.status,
      error: chat.error ? String(chat.error.message ?? chat.error) : null,
      messages: chat.messages,
      data: chat.data,
      reconnected,
    }),
  );
}
