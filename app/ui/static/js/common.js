// Shared by every page: the API key (session storage), calls to the public API, the live log
// stream, small DOM helpers.
export const API = "/api/v1";
const KEY = "svmsvc-api-key";

export function apiKey() { return sessionStorage.getItem(KEY) || ""; }

// An error answered by the API: an RFC 9457 problem (detail, and line, token, errors, setting
// where they apply).
export class ApiError extends Error {
  constructor(status, problem) {
    const body = problem && typeof problem === "object" ? problem : {};
    super(body.detail || body.title || `HTTP ${status}`);
    this.status = status;
    this.problem = body;
  }
  // The message with the line of a malformed SVMlight file and the field of a bad request.
  describe() {
    const d = this.problem;
    let text = this.message;
    if (d.line != null && !/\bline\b/i.test(text)) text = `line ${d.line}: ${text}`;
    if (d.errors && d.errors.length) {
      text = d.errors.map((e) => `${e.loc.filter((p) => p !== "body").join(".")}: ${e.message}`).join("; ");
    }
    return text;
  }
}

function headers(extra) {
  const h = new Headers(extra || {});
  const key = apiKey();
  if (key) h.set("X-API-Key", key);
  return h;
}

export async function api(path, { method = "GET", json, body, headers: extra } = {}) {
  const init = { method, headers: headers(extra) };
  if (json !== undefined) {
    init.headers.set("Content-Type", "application/json");
    init.body = JSON.stringify(json);
  } else if (body !== undefined) {
    init.body = body;
  }
  const response = await fetch(API + path, init);
  if (response.status === 204) return null;
  const type = response.headers.get("content-type") || "";
  const data = type.includes("json") ? await response.json() : await response.text();
  if (!response.ok) {
    const error = new ApiError(response.status, data);
    if (response.status === 401) askForKey(error.message);
    throw error;
  }
  return data;
}

// Every item of a paged list (data/count pages of at most 1000).
export async function apiAll(path, limit = 1000) {
  const items = [];
  const sep = path.includes("?") ? "&" : "?";
  for (;;) {
    const page = await api(`${path}${sep}offset=${items.length}&limit=${limit}`);
    items.push(...page.data);
    if (items.length >= page.count || page.data.length === 0) return items;
  }
}

// A file behind the key: fetch it and hand it to the browser as a download.
export async function download(path, filename) {
  const response = await fetch(API + path, { headers: headers() });
  if (!response.ok) {
    const data = await response.json().catch(() => ({}));
    throw new ApiError(response.status, data);
  }
  const url = URL.createObjectURL(await response.blob());
  const a = el("a", { href: url, download: filename });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// The live log: GET /jobs/{id}/log/stream read with fetch (EventSource cannot send the key).
// Calls onEvent(type, data) for `record`, `status` and `end`; resolves at the end.
export async function streamLog(jobId, after, onEvent, signal) {
  const response = await fetch(`${API}/jobs/${jobId}/log/stream?after=${after}`,
    { headers: headers({ Accept: "text/event-stream" }), signal });
  if (!response.ok) {
    const data = await response.json().catch(() => ({}));
    throw new ApiError(response.status, data);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      let type = "message";
      const lines = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) type = line.slice(6).trim();
        else if (line.startsWith("data:")) lines.push(line.slice(5).replace(/^ /, ""));
      }
      if (lines.length) onEvent(type, JSON.parse(lines.join("\n")));
    }
  }
}

// -- DOM -------------------------------------------------------------------------------------

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value == null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else if (name in node && typeof value !== "string") node[name] = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child == null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function content(...nodes) {
  const box = document.getElementById("content");
  box.replaceChildren(...nodes.flat(Infinity).filter((n) => n != null && n !== false));
  return box;
}

export function setTitle(text) {
  document.getElementById("title").textContent = text;
  document.title = `${text} · svmsvc`;
}

export function notice(text, ok = false) {
  const box = document.getElementById("notice");
  box.textContent = text || "";
  box.hidden = !text;
  box.classList.toggle("ok", ok);
}

export function showError(error) {
  notice(error instanceof ApiError ? error.describe() : String(error.message || error));
}

export function table(columns, rows, { caption } = {}) {
  const head = el("tr", {}, columns.map((c) => el("th", { class: c.num ? "num" : c.cls, scope: "col" }, c.label)));
  const body = rows.map((row) => el("tr", {}, columns.map((c) => {
    const value = c.render(row);
    return el("td", { class: c.num ? "num" : c.cls }, value);
  })));
  return el("div", { class: "table-wrap" },
    el("table", {}, caption ? el("caption", { class: "muted" }, caption) : null,
      el("thead", {}, head), el("tbody", {}, body)));
}

export function statusBadge(status) {
  return el("span", { class: `status status-${status}` }, status);
}

export function fmt(value, digits = 4) {
  if (value == null || Number.isNaN(value)) return "–";
  if (typeof value !== "number") return String(value);
  if (Number.isInteger(value) && Math.abs(value) < 1e9) return value.toLocaleString("en-US");
  const a = Math.abs(value);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return value.toExponential(Math.max(1, digits - 1));
  return Number(value.toPrecision(digits)).toString();
}

export function seconds(value) {
  if (value == null) return "–";
  return value < 1 ? `${(value * 1000).toFixed(0)} ms` : `${value.toFixed(value < 10 ? 2 : 1)} s`;
}

export function when(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  return d.toISOString().replace("T", " ").slice(0, 19);
}

export function bytes(n) {
  if (n == null) return "–";
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

// A dataset in one line: its name and shape; a sharded one says so, with its shard count, and
// "not read yet" until a job has read its shards on the cluster.
export function datasetLine(d) {
  const shape = d.n_samples == null ? "not read yet" : `${fmt(d.n_samples)} × ${fmt(d.n_features)}`;
  return d.kind === "sharded" ? `${d.name} (sharded in ${d.n_shards}, ${shape})` : `${d.name} (${shape})`;
}

/** A job's or model's tags as `key=value` chips ("–" when none); text only, never HTML. */
export function tagList(tags) {
  const entries = Object.entries(tags || {});
  if (!entries.length) return "–";
  return el("span", { class: "tags" }, ...entries.map(([k, v]) => el("code", { class: "tag" }, `${k}=${v}`)));
}

export function shortId(id) { return id ? id.slice(0, 8) : "–"; }

export function jobElapsed(job) {
  if (job.started_at) {
    const end = job.finished_at ? new Date(job.finished_at) : new Date();
    return (end - new Date(job.started_at)) / 1000;
  }
  return null;
}

export const FINISHED = new Set(["succeeded", "failed", "cancelled"]);

// -- the key form and navigation -------------------------------------------------------------

function askForKey(message) {
  const input = document.getElementById("api-key");
  document.getElementById("key-state").textContent = apiKey() ? "key refused" : "key needed";
  notice(`${message} — enter an API key above.`);
  input.focus();
}

function setUpHeader() {
  const page = document.body.dataset.page;
  const section = { job: "jobs", model: "models" }[page] || page;
  for (const link of document.querySelectorAll("nav a")) {
    if (link.dataset.section === section) link.setAttribute("aria-current", "page");
  }
  const state = document.getElementById("key-state");
  state.textContent = apiKey() ? "key set" : "";
  document.getElementById("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = document.getElementById("api-key");
    if (input.value) sessionStorage.setItem(KEY, input.value.trim());
    else sessionStorage.removeItem(KEY);
    input.value = "";
    location.reload();
  });
}

// Runs the page's main function; an error it throws becomes the notice.
export function start(main) {
  setUpHeader();
  Promise.resolve().then(main).catch((error) => {
    content(el("p", { class: "muted" }, "Nothing to show."));
    showError(error);
  });
}
