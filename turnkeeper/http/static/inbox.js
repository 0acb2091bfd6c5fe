// The approval inbox (inbox.html): sign in with a token, list the calls the identity may decide,
// show each input as editable JSON with a diff of the edit, and send the decision.
"use strict";
const KEY = "turnkeeper.token";
const $ = (id) => document.getElementById(id);
const streams = new Map();  // workflow id -> AbortController of its event stream

// Bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C) reorder the text
// around them, so that what an approver reads is not what is sent ("report<U+202E>fdp.exe" shows as
// "reportexe.pdf").
// Everything shown here comes from callers and models: each such character is shown as a marker
// (<U+202E>), and in the editable input as its JSON escape (\u202e), which parses back to it.
const BIDI = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/g;
const codePoint = (c) => c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
function visible(text) { return String(text).replace(BIDI, (c) => `<U+${codePoint(c)}>`); }
function editableJson(value) {
  return JSON.stringify(value, null, 2).replace(BIDI, (c) => "\\u" + codePoint(c).toLowerCase());
}

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
  $("signin").hidden = false;
  $("message").textContent = text || "";
}

async function signIn(value) {
  sessionStorage.setItem(KEY, value);
  const response = await api("/v1/whoami");
  if (!response.ok) { signOut(await detail(response)); return; }
  const me = await response.json();
  $("signin").hidden = true;
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
  // Boxes already shown stay as they are (an edit in progress survives a refresh).
  const shown = new Map([...$("calls").children].map((box) => [box.dataset.key, box]));
  $("calls").replaceChildren(...calls.map((call) => shown.get(keyOf(call)) || render(call)));
  for (const call of calls) follow(call.workflow_id);
}

function keyOf(call) { return call.workflow_id + "\n" + call.call_id; }

function render(call) {
  if (call.kind === "elicitation") return renderQuestion(call);
  const box = document.createElement("section");
  box.className = "call";
  box.dataset.key = keyOf(call);
  const original = editableJson(call.input);
  box.innerHTML = `<h2></h2><p class="meta"></p><textarea aria-label="input"></textarea>
    <div class="diff"></div><input class="reason" placeholder="reason" size="50">
    <p><button class="approve">Approve</button><button class="reject">Reject</button></p>
    <p class="error"></p>`;
  box.querySelector("h2").textContent = visible(call.tool);
  box.querySelector(".meta").textContent = visible(
    `turn ${call.workflow_id} · agent ${call.agent_id} · cost so far $${call.cost_usd.toFixed(4)} · waiting since ${new Date(call.since).toLocaleString()}`);
  const editor = box.querySelector("textarea");
  editor.value = original;
  editor.addEventListener("input", () => showDiff(box, original, editor.value));
  box.querySelector(".approve").onclick = () => decide(box, call, true, original);
  box.querySelector(".reject").onclick = () => decide(box, call, false, original);
  return box;
}

// An MCP server's question (kind `elicitation`): its message, a form with a field per property
// of its requested schema (MCP allows a flat object of strings, numbers, booleans and enums), and
// Answer / Decline / Cancel. The turn checks the answer against the schema and says what is wrong.
function renderQuestion(call) {
  const box = document.createElement("section");
  box.className = "call question";
  box.dataset.key = keyOf(call);
  box.innerHTML = `<h2></h2><p class="meta"></p><p class="asks"></p><form class="answer"></form>
    <p><button class="approve">Answer</button><button class="reject">Decline</button><button class="cancel">Cancel</button></p>
    <p class="error"></p>`;
  box.querySelector("h2").textContent = visible(call.tool) + " asks";
  box.querySelector(".meta").textContent = visible(
    `turn ${call.workflow_id} · agent ${call.agent_id} · waiting since ${new Date(call.since).toLocaleString()}`);
  box.querySelector(".asks").textContent = visible(call.message || "");
  const schema = call.requested_schema || {};
  const required = new Set(schema.required || []);
  const form = box.querySelector("form");
  for (const [name, field] of Object.entries(schema.properties || {})) form.append(fieldOf(name, field, required.has(name)));
  form.addEventListener("submit", (e) => e.preventDefault());
  box.querySelector(".approve").onclick = () => answer(box, call, { approved: true, input: answerOf(form, schema) });
  box.querySelector(".reject").onclick = () => answer(box, call, { approved: false, reason: "declined" });
  box.querySelector(".cancel").onclick = () => answer(box, call, { approved: false, reason: "cancel" });
  return box;
}

function fieldOf(name, field, required) {
  const label = document.createElement("label");
  label.append(visible((field.title || name) + (required ? " *" : "")) + " ");
  // Choices as [value, label]: a titled enum (`oneOf`/`anyOf` of `const` + `title`) shows its titles.
  const choices = (plain, titled) => plain ? plain.map((v, i) => [v, (field.enumNames || [])[i] || v])
    : (titled || []).map((o) => [o.const, o.title || o.const]);
  const options = choices(field.enum, field.oneOf);
  const items = field.items ? choices(field.items.enum, field.items.anyOf) : [];
  let control;
  if (field.type === "boolean") {
    control = selectOf([["", ""], ["true", "true"], ["false", "false"]], field.default === undefined ? "" : String(field.default));
  } else if (field.type === "array" && items.length) {
    control = selectOf(items, null); control.multiple = true;
    for (const option of control.options) option.selected = (field.default || []).includes(option.value);
  } else if (options.length) {
    control = selectOf([["", ""], ...options], field.default === undefined ? "" : String(field.default));
  } else {
    control = document.createElement("input");
    control.type = field.type === "number" || field.type === "integer" ? "number" : "text";
    if (field.default !== undefined) control.value = String(field.default);
  }
  control.name = name;
  control.dataset.type = field.type || "string";
  label.append(control);
  if (field.description) { const hint = document.createElement("small"); hint.textContent = " " + visible(field.description); label.append(hint); }
  return label;
}

function selectOf(choices, chosen) {
  const select = document.createElement("select");
  for (const [value, label] of choices) {
    const option = document.createElement("option");
    option.value = value; option.textContent = visible(label); option.selected = value === chosen;
    select.append(option);
  }
  return select;
}

// The form as the answer's JSON: empty fields are left out, numbers and booleans typed.
function answerOf(form, schema) {
  const input = {};
  for (const control of form.querySelectorAll("input, select")) {
    const type = control.dataset.type;
    if (control.multiple) { const chosen = [...control.selectedOptions].map((o) => o.value); if (chosen.length) input[control.name] = chosen; continue; }
    if (control.value === "") continue;
    if (type === "boolean") input[control.name] = control.value === "true";
    else if (type === "number" || type === "integer") input[control.name] = Number(control.value);
    else input[control.name] = control.value;
  }
  return input;
}

async function answer(box, call, decision) {
  const response = await api(`/v1/turns/${encodeURIComponent(call.workflow_id)}/decisions`,
    { method: "POST", body: JSON.stringify({ call_id: call.call_id, reason: "", ...decision }) });
  if (!response.ok) { box.querySelector(".error").textContent = await detail(response); return; }
  box.remove();
  const what = decision.approved ? "Answered" : decision.reason === "cancel" ? "Cancelled" : "Declined";
  $("message").textContent = visible(`${what} the question of ${call.tool} (${call.call_id}).`);
}

// A line diff (longest common subsequence): the edit an approver is about to send, line by line.
function showDiff(box, before, after) {
  const target = box.querySelector(".diff");
  if (before === after) { target.replaceChildren(); return; }
  const a = before.split("\n"), b = after.split("\n");
  const n = a.length, m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Array(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
    lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const pre = document.createElement("pre");
  const line = (cls, sign, text) => {
    const span = document.createElement("span");
    span.className = cls; span.textContent = sign + " " + visible(text) + "\n"; pre.append(span);
  };
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { line("same", " ", a[i]); i++; j++; }
    else if (i < n && (j >= m || lcs[i + 1][j] >= lcs[i][j + 1])) { line("del", "-", a[i]); i++; }
    else { line("add", "+", b[j]); j++; }
  }
  target.replaceChildren(pre);
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
  box.remove();
  $("message").textContent = visible(`${approved ? "Approved" : "Rejected"} ${call.tool} (${call.call_id}).`);
}

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
