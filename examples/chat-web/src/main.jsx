// The page: a sign-in form (server, agent, bearer token), then the chat with that agent.
import { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";

import { Chat } from "./chat.jsx";
import { newChatId, readLocation, readToken, writeLocation, writeToken } from "./settings.js";

function SignIn({ initial, onSignIn }) {
  const [server, setServer] = useState(initial.server);
  const [agent, setAgent] = useState(initial.agent);
  const [token, setToken] = useState("");
  const submit = (event) => {
    event.preventDefault();
    onSignIn({ server: server.replace(/\/+$/, ""), agent: agent.trim(), token: token.trim() });
  };
  return (
    <form id="signin" onSubmit={submit}>
      <h1>Chat with an agent</h1>
      <label>
        Server <input id="server" value={server} onChange={(e) => setServer(e.target.value)} required />
      </label>
      <label>
        Agent <input id="agent" value={agent} onChange={(e) => setAgent(e.target.value)} required />
      </label>
      <label>
        Token{" "}
        <input
          id="token"
          type="password"
          autoComplete="off"
          placeholder="tk_…"
          value={token}
          onChange={(e) => setToken(e.target.value)}
          required
        />
      </label>
      <button type="submit">Sign in</button>
    </form>
  );
}

function App() {
  // A link without a chat id starts a new conversation.
  const [where, setWhere] = useState(() => {
    const found = readLocation();
    return found.chat ? found : { ...found, chat: newChatId() };
  });
  const [token, setToken] = useState(readToken);
  const signedIn = Boolean(token && where.agent);
  // Once signed in, the URL names the chat: a reload comes back to it and resumes its turn.
  useEffect(() => {
    if (signedIn) writeLocation(where);
  }, [signedIn, where]);

  const signIn = ({ server, agent, token: entered }) => {
    writeToken(entered);
    setWhere({ ...where, server, agent });
    setToken(entered);
  };
  const signOut = () => {
    writeToken("");
    setToken("");
  };
  const startOver = () => setWhere({ ...where, chat: newChatId() });

  if (!signedIn) return <SignIn initial={where} onSignIn={signIn} />;
  return (
    <Chat
      key={where.chat}
      server={where.server}
      agent={where.agent}
      chatId={where.chat}
      onNewChat={startOver}
      onSignOut={signOut}
    />
  );
}

createRoot(document.getElementById("root")).render(<App />);
