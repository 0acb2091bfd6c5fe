// The approval inbox (inbox.html): sign in with a token, list the calls the identity may decide,
// grouped under the turn a person started (a sub-agent's call under its root), each with what
// its approver reads (inbox-view.js), and send the decision, by button or key.
"use strict";
const KEY = "turnkeeper.token";
const $ = (id) => document.getElementById(id);
const streams = new Map();  // workflow id -> AbortController of its event stream

function token() { return sessionStorage.getItem(KEY); }

async function api(path, options = {}) {
  const headers = { Authorization: "Bearer " + token(), ...(options.headers || {}) };
  if (options.body) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { ...options, headers });
  if (response.status === 401) { signOut("Your token was refused; sign in again."); throw new Error("401"); }
  return response;
}

function signOut(text) {
  sessionStorage.removeItem(KEY);
  for (const control of streams.values()) control.abort();
  streams.clear();
  $("calls").replaceChildren();
  $("who").textContent = "";
  $("empty").hidden = true;
  $("keys").hidden = true;
  $("signin").hidden = false;
  $("message").textContent = text || "";
}

async function signIn(value) {
  sessionStorage.setItem(KEY, value);
  const response = await api("/v1/whoami");
  if (!response.ok) { signOut(await detail(response)); return; }
  const me = await response.json();
  $("signin").hidden = true;
  $("keys").hidden = false;
  $("who").textContent = "signed in as " + visible(me.name);
  await refresh();
}

async function detail(response) {
  try { const body = await response.json(); return visible(typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)); }
  catch { return response.status + " " + response.statusText; }
}

async function refresh() {
  const response = await api("/v1/approvals");
  if (!response.ok) { $("message").textContent = await detail(response); return; }
  const calls = await response.json();
  $("empty").hidden = calls.length > 0;
  // Boxes and turns already shown stay as they are (an edit in progress survives a refresh).
  const shown = new Map([...document.querySelectorAll(".call")].map((box) => [box.dataset.key, box]));
  const turns = new Map([...document.querySelectorAll(".turn")].map((group) => [group.dataset.key, group]));
  const groups = new Map();
  for (const call of calls) {
    if (!groups.has(call.workflow_id)) groups.set(call.workflow_id, { group: turns.get(call.workflow_id) || groupOf(call), boxes: [] });
    groups.get(call.workflow_id).boxes.push(shown.get(keyOf(call)) || render(call));
  }
  for (const { group, boxes } of groups.values()) place(group.querySelector(".calls"), boxes);
  place($("calls"), [...groups.values()].map(({ group }) => group));
  if (!document.querySelector(".call.selected")) select(document.querySelector(".call"), false);
  for (const call of calls) follow(call.workflow_id);
}

function keyOf(call) { return call.workflow_id + "\n" + call.call_id; }

// Puts `children` into `parent` in this order, moving only the nodes out of place: a node moved
// in the document loses the focus, and the approver may be typing in it.
function place(parent, children) {
  children.forEach((child, i) => { if (parent.children[i] !== child) parent.insertBefore(child, parent.children[i] || null); });
  while (parent.children.length > children.length) parent.lastElementChild.remove();
}

// One turn a person started, with its task: its own calls and its sub-agents' calls under it
// (the API lists a sub-agent's call at its root, which passes the decision on).
function groupOf(call) {
  const group = el("section", "turn");
  group.dataset.key = call.workflow_id;
  group.append(el("h2", "", "Turn " + call.workflow_id));
  const task = call.root_task || call.task;
  if (task) group.append(quoteView("Task", task, "task"));
  for (const file of call.attachments || []) group.append(el("p", "attachment", attachmentLine(file)));
  group.append(el("div", "calls"));
  return group;
}

// An image or document of the task: what it is, never its bytes.
function attachmentLine(file) {
  const parts = [`${file.kind} ${file.name || file.ref || "(unnamed)"}`];
  if (file.media_type) parts.push(file.media_type);
  if (file.size != null) parts.push(file.size < 1024 ? `${file.size} B` : `${(file.size / 1024).toFixed(1)} KiB`);
  if (file.ref) parts.push(file.ref);
  return "attached: " + parts.join(" · ");
}

function render(call) {
  const box = call.kind === "elicitation" ? renderQuestion(call) : renderCall(call);
  box.tabIndex = -1;
  box.addEventListener("click", () => select(box, false));
  return box;
}

function header(box, call, title) {
  box.dataset.key = keyOf(call);
  box.append(el("h3", "", title));
  if (call.waits_in) box.append(el("p", "subagent", `in sub-agent ${call.agent_id} (${call.waits_in}), ${call.depth} level${call.depth > 1 ? "s" : ""} below`));
  box.append(el("p", "meta", `turn ${call.waits_in || call.workflow_id} · agent ${call.agent_id} · call ${call.call_id} · waiting since ${new Date(call.since).toLocaleString()}`));
  if (call.budget) box.append(budgetView(call.budget));
  else box.append(el("p", "budget", `cost so far ${dollars(call.cost_usd)}`));
  if (call.waits_in && call.task) box.append(quoteView("Its task", call.task, "task"));
  if (call.said) box.append(quoteView("The agent said", call.said, "said"));
}

function renderCall(call) {
  const box = el("article", "call");
  header(box, call, call.tool);
  box.append(inputView(call.input));
  if (call.preview) box.append(previewView(call.preview));
  const original = editableJson(call.input);
  const edit = el("details", "edit");
  const editor = el("textarea");
  editor.setAttribute("aria-label", "input as JSON");
  editor.value = original;
  const diff = el("div", "edit-diff");
  editor.addEventListener("input", () => diff.replaceChildren(...(editor.value === original ? [] : [lineDiff(original, editor.value)])));
  edit.append(el("summary", "", "Edit the input (e)"), editor, diff);
  const reason = el("input", "reason");
  reason.placeholder = "reason (optional)"; reason.size = 50;
  const buttons = el("p", "buttons");
  const approve = el("button", "approve", "Approve (a)"), reject = el("button", "reject", "Reject (r)");
  approve.onclick = () => decide(box, call, true, original);
  reject.onclick = () => decide(box, call, false, original);
  buttons.append(approve, reject);
  box.append(edit, reason, buttons, el("p", "error"));
  return box;
}

// An MCP server's question (kind `elicitation`): its message, a form with a field per property
// of its requested schema, and Answer / Decline / Cancel. The turn checks the answer against the
// schema and says what is wrong.
function renderQuestion(call) {
  const box = el("article", "call question");
  header(box, call, call.tool + " asks");
  box.append(el("p", "asks", call.message || ""));
  const schema = call.requested_schema || {};
  const required = new Set(schema.required || []);
  const form = el("form", "answer");
  for (const [name, field] of Object.entries(schema.properties || {})) form.append(fieldOf(name, field, required.has(name)));
  form.addEventListener("submit", (e) => e.preventDefault());
  const buttons = el("p", "buttons");
  const approve = el("button", "approve", "Answer (a)"), reject = el("button", "reject", "Decline (r)"), cancel = el("button", "cancel", "Cancel");
  approve.onclick = () => answer(box, call, { approved: true, input: answerOf(form) });
  reject.onclick = () => answer(box, call, { approved: false, reason: "declined" });
  cancel.onclick = () => answer(box, call, { approved: false, reason: "cancel" });
  buttons.append(approve, reject, cancel);
  box.append(form, buttons, el("p", "error"));
  return box;
}

async function answer(box, call, decision) {
  const response = await api(`/v1/turns/${encodeURIComponent(call.workflow_id)}/decisions`,
    { method: "POST", body: JSON.stringify({ call_id: call.call_id, reason: "", ...decision }) });
  if (!response.ok) { box.querySelector(".error").textContent = await detail(response); return; }
  settled(box);
  const what = decision.approved ? "Answered" : decision.reason === "cancel" ? "Cancelled" : "Declined";
  $("message").textContent = visible(`${what} the question of ${call.tool} (${call.call_id}).`);
}

async function decide(box, call, approved, original) {
  const error = box.querySelector(".error");
  const body = { call_id: call.call_id, approved, reason: box.querySelector(".reason").value };
  const edited = box.querySelector("textarea").value;
  if (approved && edited !== original) {
    try { body.input = JSON.parse(edited); }
    catch (e) { error.textContent = "The edited input is not JSON: " + e.message; return; }
  }
  const response = await api(`/v1/turns/${encodeURIComponent(call.workflow_id)}/decisions`,
    { method: "POST", body: JSON.stringify(body) });
  if (!response.ok) { error.textContent = await detail(response); return; }
  settled(box);
  $("message").textContent = visible(`${approved ? "Approved" : "Rejected"} ${call.tool} (${call.call_id}).`);
}

// A decided call leaves; the next one (else the previous) is selected, and an emptied turn goes.
function settled(box) {
  const calls = [...document.querySelectorAll(".call")];
  const at = calls.indexOf(box);
  const group = box.closest(".turn");
  box.remove();
  if (group && !group.querySelector(".call")) group.remove();
  if (box.classList.contains("selected")) select(calls[at + 1] || calls[at - 1] || null, true);
  $("empty").hidden = document.querySelector(".call") !== null;
}

function select(box, focus) {
  for (const other of document.querySelectorAll(".call.selected")) { other.classList.remove("selected"); other.removeAttribute("aria-current"); }
  if (!box) return;
  box.classList.add("selected");
  box.setAttribute("aria-current", "true");
  if (focus) { box.focus(); box.scrollIntoView({ block: "nearest" }); }
}

// Keys (the page's header lists them): j / k or the arrows move between calls, a approves (or
// answers), r rejects (or declines), e opens the input's editor; Escape leaves a field. Keys
// typed into a field are the field's.
document.addEventListener("keydown", (event) => {
  const typing = event.target.closest && event.target.closest("input, textarea, select");
  if (event.key === "Escape" && typing) { const box = typing.closest(".call"); typing.blur(); select(box, true); return; }
  if (typing || event.ctrlKey || event.metaKey || event.altKey || !token()) return;
  const calls = [...document.querySelectorAll(".call")];
  const current = document.querySelector(".call.selected");
  const step = { j: 1, ArrowDown: 1, k: -1, ArrowUp: -1 }[event.key];
  if (step) {
    const at = calls.indexOf(current);
    select(calls[Math.min(calls.length - 1, Math.max(0, at + step))] || null, true);
  } else if (current && event.key === "a") current.querySelector("button.approve").click();
  else if (current && event.key === "r") current.querySelector("button.reject").click();
  else if (current && event.key === "e" && current.querySelector("details.edit")) {
    const edit = current.querySelector("details.edit");
    edit.open = true; edit.querySelector("textarea").focus();
  } else return;
  event.preventDefault();
});

// Each turn's event stream through fetch (EventSource cannot send the Authorization header);
// any approval requested or decided there refreshes the list; a dropped stream resumes from the
// last event id it saw.
async function follow(workflowId) {
  if (streams.has(workflowId)) return;
  const control = new AbortController();
  streams.set(workflowId, control);
  let lastId = null;
  try {
    while (!control.signal.aborted) {
      const headers = lastId === null ? {} : { "Last-Event-ID": lastId };
      const response = await api(`/v1/turns/${encodeURIComponent(workflowId)}/events`, { headers, signal: control.signal });
      if (!response.ok) break;
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "", ended = false;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
          const fields = Object.fromEntries(block.split("\n").map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 2)]));
          if (fields.id !== undefined) lastId = fields.id;
          if (["approval_requested", "approval_decided", "turn_finished", "turn_failed"].includes(fields.event)) scheduleRefresh();
          if (fields.event === "turn_finished" || fields.event === "turn_failed") ended = true;
        }
      }
      if (ended) break;
    }
  } catch (e) { /* aborted at sign-out, or the server went away: the next refresh follows again */ }
  streams.delete(workflowId);
}

let pending = null;
function scheduleRefresh() {
  clearTimeout(pending);
  pending = setTimeout(() => refresh().catch(() => {}), 200);
}

$("signin").addEventListener("submit", (e) => { e.preventDefault(); signIn($("token").value.trim()); });
// Turns that start waiting without a stream open yet (new turns) show up on this slower beat.
setInterval(() => { if (token()) refresh().catch(() => {}); }, 5000);
if (token()) signIn(token()); else signOut();
