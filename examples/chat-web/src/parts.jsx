// A message as the page shows it: its text, each tool call with its input and what came of it
// (with the approve / reject buttons while it waits), and, once the turn's stream finished, the
// cost the finish chunk put in the message's metadata.
import { getToolOrDynamicToolName, isToolUIPart } from "ai";

const OUTCOMES = {
  "input-streaming": "being written",
  "input-available": "running",
  "approval-requested": "waiting for your approval",
  "approval-responded": "answer sent",
  "output-available": "done",
  "output-error": "failed",
  "output-denied": "rejected",
};

function Json({ value }) {
  return <pre>{typeof value === "string" ? value : JSON.stringify(value, null, 2)}</pre>;
}

// A call's input field by field, a string as its text: a file's content reads as the file
// would, not as one line of JSON with `\n` in it.
function Fields({ value }) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return <Json value={value} />;
  return (
    <dl>
      {Object.entries(value).map(([name, field]) => (
        <div key={name}>
          <dt>{name}</dt>
          <dd>
            <Json value={field} />
          </dd>
        </div>
      ))}
    </dl>
  );
}

function ToolCall({ part, onDecide }) {
  const name = getToolOrDynamicToolName(part);
  return (
    <div className={`tool-call ${part.state}`} data-call-id={part.toolCallId}>
      <div className="tool-head">
        <code className="tool-name">{name}</code> <span className="tool-state">{OUTCOMES[part.state]}</span>
      </div>
      {part.input !== undefined && (
        <div className="tool-input">
          <span className="label">input</span> <Fields value={part.input} />
        </div>
      )}
      {part.state === "approval-requested" && (
        <div className="decision">
          <button type="button" className="approve" onClick={() => onDecide(part.approval.id, true)}>
            Approve
          </button>
          <button type="button" className="reject" onClick={() => onDecide(part.approval.id, false)}>
            Reject
          </button>
        </div>
      )}
      {part.state === "output-available" && (
        <div className="tool-output">
          <span className="label">output</span> <Json value={part.output} />
        </div>
      )}
      {part.state === "output-error" && <p className="error">{part.errorText}</p>}
    </div>
  );
}

function Part({ part, onDecide }) {
  if (part.type === "text") return <p className="text">{part.text}</p>;
  if (isToolUIPart(part)) return <ToolCall part={part} onDecide={onDecide} />;
  if (part.type.startsWith("data-")) {
    return (
      <div className="data">
        <code>{part.type.slice(5)}</code> <Json value={part.data} />
      </div>
    );
  }
  return null; // step boundaries, reasoning, sources: not shown on this small page
}

function Cost({ metadata }) {
  // The server puts the turn's figures in the message metadata as the turn goes (at its start,
  // after each model call) and its report's at the finish: the last one wins.
  const cost = metadata?.cost_usd;
  if (typeof cost !== "number") return null;
  const budget = metadata.cost_budget_usd;
  return (
    <p className="cost">
      Cost: ${cost.toFixed(4)}
      {typeof budget === "number" ? ` of a $${budget.toFixed(2)} budget` : ""}
    </p>
  );
}

export function MessageView({ message, onDecide }) {
  return (
    <li className={`message ${message.role}`}>
      {message.parts.map((part, index) => (
        <Part key={part.toolCallId ?? index} part={part} onDecide={onDecide} />
      ))}
      <Cost metadata={message.metadata} />
    </li>
  );
}
