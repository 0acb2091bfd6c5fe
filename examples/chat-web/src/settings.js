// Where the page keeps what it needs across a reload. The server and the agent are in the URL, so
// a link opens the same chat; the chat id too, so a reload resumes the turn in flight. The token
// and the messages shown live in this tab's sessionStorage only: the token is never in the bundle
// or the URL, and nothing of the conversation outlives the tab.
import { generateId } from "ai";

const TOKEN_KEY = "turnkeeper-chat:token";
export const DEFAULT_SERVER = "http://127.0.0.1:8787";

/** The server, agent and chat id the URL names (the chat id is made, and written back, if absent). */
export function readLocation() {
  const params = new URLSearchParams(window.location.search);
  return {
    server: params.get("server") || DEFAULT_SERVER,
    agent: params.get("agent") || "",
    chat: params.get("chat") || "",
  };
}

/** Puts the settings in the URL without a navigation (history.replaceState). */
export function writeLocation({ server, agent, chat }) {
  const params = new URLSearchParams({ server, agent });
  if (chat) params.set("chat", chat);
  window.history.replaceState(null, "", `${window.location.pathname}?${params}`);
}

/** A new conversation's id: the server makes it a conversation of the token's identity. */
export function newChatId() {
  return generateId();
}

export function readToken() {
  return window.sessionStorage.getItem(TOKEN_KEY) || "";
}

export function writeToken(token) {
  if (token) window.sessionStorage.setItem(TOKEN_KEY, token);
  else window.sessionStorage.removeItem(TOKEN_KEY);
}

function messagesKey(server, agent, chat) {
  return `turnkeeper-chat:messages:${server}:${agent}:${chat}`;
}

/** The messages this tab showed for the chat before a reload (the server keeps the conversation;
 * the chat endpoint replays only the turn in flight). */
export function readMessages(server, agent, chat) {
  const kept = window.sessionStorage.getItem(messagesKey(server, agent, chat));
  return kept ? JSON.parse(kept) : [];
}

export function writeMessages(server, agent, chat, messages) {
  window.sessionStorage.setItem(messagesKey(server, agent, chat), JSON.stringify(messages));
}
