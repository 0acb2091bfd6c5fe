// The inbox's views (loaded before inbox.js): a waiting call's input, the diff of a write, the
// turn's budgets, the model's words, a question's form. Everything shown comes from callers and
// models, so it is untrusted text: it is only ever set as textContent or a form value, never as
// HTML.
"use strict";

// Bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C) reorder the text
// around them, so that what an approver reads is not what is sent ("report<U+202E>fdp.exe" shows as
// "reportexe.pdf").
// Each such character is shown as a marker (<U+202E>), and in the editable input as its JSON
// escape (\u202e), which parses back to it.
const BIDI = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/g;
const codePoint = (c) => c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
function visible(text) { return String(text).replace(BIDI, (c) => `<U+${codePoint(c)}>`); }
function editableJson(value) {
  return JSON.stringify(value, null, 2).replace(BIDI, (c) => "\\u" + codePoint(c).toLowerCase());
}

// An element with a class and (untrusted) text.
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = visible(text);
  return node;
}

// The call's input for people: one row per argument; a string with line breaks (a file's
// content) as a block of text, a short string as itself, anything else as indented JSON.
function inputView(input) {
  const list = el("dl", "input");
  for (const [name, value] of Object.entries(input || {})) {
    list.append(el("dt", "", name));
    const cell = el("dd");
    if (typeof value === "string" && value.includes("\n")) cell.append(el("pre", "text", value));
    else if (typeof value === "string") cell.append(el("code", "", value));
    else cell.append(el("pre", "json", JSON.stringify(value, null, 2)));
    list.append(cell);
  }
  return list;
}

// A write_file call's preview: the unified diff the worker computed against the file as it is.
function previewView(preview) {
  const box = el("div", "preview");
  const what = preview.problem ? "No diff of " : preview.exists ? "Changes to " : "New file ";
  box.append(el("h4", "", what + preview.path));
  if (preview.problem) { box.append(el("p", "problem", preview.problem)); return box; }
  const pre = el("pre", "diff");
  for (const line of preview.diff.split("\n")) {
    const kind = line.startsWith("+++") || line.startsWith("---") ? "file"
      : line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "same";
    pre.append(el("span", kind, line + "\n"));
  }
  if (!preview.diff) pre.append(el("span", "same", "(no change: the file already has this content)\n"));
  box.append(pre);
  if (preview.truncated) box.append(el("p", "problem", "The diff is cut here; the full content is in the input above."));
  return box;
}

const dollars = (usd) => "$" + usd.toFixed(4);
const seconds = (ms) => (ms / 1000).toFixed(1) + " s";

// Cost and the budgets left, of the turn where the call waits.
function budgetView(budget) {
  const parts = [budget.cost_budget_usd == null
    ? `cost ${dollars(budget.cost_usd)} (no cost budget)`
    : `cost ${dollars(budget.cost_usd)} of ${dollars(budget.cost_budget_usd)}, ${dollars(budget.cost_left_usd)} left`];
  parts.push(budget.time_budget_ms == null
    ? `worked ${seconds(budget.elapsed_ms)} (no time budget)`
    : `worked ${seconds(budget.elapsed_ms)} of ${seconds(budget.time_budget_ms)}, ${seconds(budget.time_left_ms)} left`);
  parts.push(`iteration ${budget.iteration} of ${budget.max_iterations}`);
  return el("p", "budget", parts.join(" · "));
}

// A quoted block with a label: the task, or what the model said before the call.
function quoteView(label, text, className) {
  const box = el("div", "quote " + className);
  box.append(el("h4", "", label), el("p", "", text));
  return box;
}

// A line diff (longest common subsequence) of the edited input: the edit an approver is about to
// send, line by line.
function lineDiff(before, after) {
  const a = before.split("\n"), b = after.split("\n");
  const n = a.length, m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Array(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
    lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const pre = el("pre", "diff");
  const line = (cls, sign, text) => pre.append(el("span", cls, sign + " " + text + "\n"));
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { line("same", " ", a[i]); i++; j++; }
    else if (i < n && (j >= m || lcs[i + 1][j] >= lcs[i][j + 1])) { line("del", "-", a[i]); i++; }
    else { line("add", "+", b[j]); j++; }
  }
  return pre;
}

// A field of an MCP server's question: MCP allows a flat object of strings, numbers, booleans
// and enums.
function fieldOf(name, field, required) {
  const label = el("label");
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
  if (field.description) label.append(el("small", "", " " + field.description));
  return label;
}

function selectOf(choices, chosen) {
  const select = document.createElement("select");
  for (const [value, label] of choices) {
    const option = el("option", "", label);
    option.value = value; option.selected = value === chosen;
    select.append(option);
  }
  return select;
}

// The form as the answer's JSON: empty fields are left out, numbers and booleans typed.
function answerOf(form) {
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
