// One conversation with the agent through the AI SDK's own chat client: `useChat` over the
// default transport, which POSTs to /v1/agents/{agent}/chat and, on `resume`, GETs
// /v1/agents/{agent}/chat/{chat id}/stream for the turn in flight.
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { useEffect, useMemo, useState } from "react";

import { MessageView } from "./parts.jsx";
import { readMessages, readToken, writeMessages } from "./settings.js";

export function Chat({ server, agent, chatId, onNewChat, onSignOut }) {
  const transport = useMemo(
    () =>
      new DefaultChatTransport({
        api: `${server}/v1/agents/${encodeURIComponent(agent)}/chat`,
        // Read at each request, from this tab's sessionStorage: never part of the bundle.
        headers: () => ({ Authorization: `Bearer ${readToken()}` }),
      }),
    [server, agent],
  );
  const [shown] = useState(() => readMessages(server, agent, chatId));
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id: chatId,
    transport,
    messages: shown,
    // A reload (or a dropped connection) comes back to the turn in flight.
    resume: true,
    // Once every call waiting in the last step has an answer, the SDK sends them: the server
    // decides each as the token's identity and streams the rest of the turn.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  useEffect(() => writeMessages(server, agent, chatId, messages), [server, agent, chatId, messages]);

  const [draft, setDraft] = useState("");
  const busy = status === "submitted" || status === "streaming";
  const send = (event) => {
    event.preventDefault();
    if (!draft.trim() || busy) return;
    sendMessage({ text: draft });
    setDraft("");
  };
  const decide = (approvalId, approved) => addToolApprovalResponse({ id: approvalId, approved });

  return (
    <section id="chat">
      <header>
        <span>
          <strong>{agent}</strong> on {server} · chat <code id="chat-id">{chatId}</code>
        </span>
        <span>
          <button type="button" onClick={onNewChat} disabled={busy}>
            New chat
          </button>{" "}
          <button type="button" onClick={onSignOut}>
            Sign out
          </button>
        </span>
      </header>
      <ol id="messages">
        {messages.map((message) => (
          <MessageView key={message.id} message={message} onDecide={decide} />
        ))}
      </ol>
      <p id="status" data-status={status}>
        {busy ? "The agent is working…" : ""}
      </p>
      {error && <p className="error">{error.message}</p>}
      <form id="composer" onSubmit={send}>
        <textarea
          id="message"
          rows={2}
          placeholder="Ask the agent…"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
        />
        <button id="send" type="submit" disabled={busy}>
          Send
        </button>
      </form>
    </section>
  );
}
