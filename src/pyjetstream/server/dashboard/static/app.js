// pyjetstream dashboard: plain JavaScript, no build step, nothing fetched from elsewhere.
// Every value from the server (subjects, payloads, header values, names) goes into the page as
// text (textContent / text nodes, attribute values set on elements): never as HTML.
"use strict";

const BASE = document.body.dataset.base || "";
const WRITE = document.body.dataset.write === "1";
const main = document.getElementById("main");
let account = sessionStorage.getItem("pjs.account") || "";
let sources = [];   // the open EventSources of the page shown
let timers = [];

// ----------------------------------------------------------------------------- helpers

function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") el.textContent = String(value);
    else if (key === "class") el.className = value;
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function params(extra) {
  const q = new URLSearchParams();
  if (account) q.set("account", account);
  for (const [k, v] of Object.entries(extra || {})) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  return q.toString();
}

async function api(view, extra) {
  const res = await fetch(`${BASE}/dashboard/api/${view}?${params(extra)}`, {headers: {Accept: "application/json"}});
  if (!res.ok) throw new Error(`${view}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function act(name, extra) {
  const res = await fetch(`${BASE}/dashboard/api/action/${name}?${params(extra)}`,
    {method: "POST", headers: {"X-Dashboard-Write": "1"}});
  const text = await res.text();
  if (!res.ok) throw new Error(text);
  return JSON.parse(text);
}

function live(view, extra, onData) {
  const es = new EventSource(`${BASE}/dashboard/api/events?${params({view, ...extra})}`);
  es.onmessage = (ev) => { try { onData(JSON.parse(ev.data)); } catch (err) { showError(err); } };
  sources.push(es);
  return es;
}

function showError(err) {
  const box = document.getElementById("error");
  box.textContent = String(err && err.message ? err.message : err);
  box.hidden = false;
  timers.push(setTimeout(() => { box.hidden = true; }, 6000));
}

const fmt = new Intl.NumberFormat("en");
function num(n) { return n === undefined || n === null ? "" : fmt.format(n); }
function bytes(n) {
  if (n === undefined || n === null) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0; let v = Number(n);
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${i ? v.toFixed(1) : v} ${units[i]}`;
}
function dur(ns) {
  if (!ns) return "";
  const s = ns / 1e9;
  if (s < 1) return `${(s * 1000).toFixed(0)}ms`;
  if (s < 120) return `${s.toFixed(1)}s`;
  if (s < 7200) return `${(s / 60).toFixed(1)}m`;
  return `${(s / 3600).toFixed(1)}h`;
}
function limit(n, show) { return n < 0 ? "unlimited" : show(n); }
function link(text, hash) { return h("a", {href: hash, text}); }
function route(...parts) { return "#/" + parts.map(encodeURIComponent).join("/"); }

function table(columns, rows, rowFn) {
  const head = h("tr", null, columns.map((c) => h("th", {class: c.endsWith("#") ? "num" : "", text: c.replace(/#$/, "")})));
  const body = h("tbody");
  for (const row of rows) body.append(rowFn(row));
  return h("table", null, h("thead", null, head), body);
}
function td(value, cls) { return h("td", {class: cls}, value instanceof Node ? value : String(value ?? "")); }
function tdn(value) { return td(value, "num"); }

function kvTable(pairs) {
  return h("table", {class: "kv"}, h("tbody", null,
    pairs.filter((p) => p[1] !== undefined).map(([k, v]) => h("tr", null, h("th", {text: k}), td(v)))));
}

function card(title, ...children) {
  return h("section", {class: "card"}, title ? h("h3", {text: title}) : null, ...children);
}

// -------------------------------------------------------------------------- payloads

function decodeB64(b64) {
  const bin = atob(b64 || "");
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
function asText(data) { return new TextDecoder("utf-8", {fatal: false}).decode(data); }
function asHex(data) {
  const lines = [];
  for (let i = 0; i < data.length; i += 16) {
    const chunk = Array.from(data.slice(i, i + 16));
    const hex = chunk.map((b) => b.toString(16).padStart(2, "0")).join(" ");
    const ascii = chunk.map((b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : ".")).join("");
    lines.push(`${i.toString(16).padStart(8, "0")}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return lines.join("\n");
}
function render(b64, mode) {
  const data = decodeB64(b64);
  if (mode === "hex") return asHex(data);
  const text = asText(data);
  if (mode === "json") { try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; } }
  return text;
}
function payloadCell(msg, mode) {
  const more = msg.size > decodeB64(msg.data).length ? h("div", {class: "muted", text: `(first bytes of ${bytes(msg.size)})`}) : null;
  return h("td", null, h("pre", {class: "payload", text: render(msg.data, mode)}), more);
}
function headersCell(msg) {
  const lines = (msg.headers || []).map(([k, v]) => h("div", {class: "hdr"}, h("b", {text: k}), ": ", v));
  if (msg.status) lines.unshift(h("div", {class: "hdr"}, h("b", {text: "status"}), ": ", msg.status));
  return h("td", null, lines);
}

// ---------------------------------------------------------------------------- pages

const pages = {};

pages.overview = async () => {
  const ov = await api("overview");
  fillAccounts(ov);
  const s = ov.server;
  const chart = rateChart();
  const js = ov.jetstream;
  const cell = (text) => h("span", {text});
  const tv = {connections: cell(num(s.connections)), in_msgs: cell(num(s.in_msgs)), out_msgs: cell(num(s.out_msgs)),
    in_bytes: cell(bytes(s.in_bytes)), out_bytes: cell(bytes(s.out_bytes))};
  main.replaceChildren(
    h("h2", {text: `Server ${s.server_name || s.server_id}`}),
    h("div", {class: "grid"},
      card("Server", kvTable([["id", s.server_id], ["version", s.version], ["uptime", s.uptime], ["client port", `${s.host}:${s.port}`],
        ["connections", tv.connections], ["total connections", num(s.total_connections)], ["subscriptions", num(s.subscriptions)],
        ["slow consumers", num(s.slow_consumers)], ["memory", bytes(s.mem)], ["cpu", `${s.cpu}%`]])),
      card("Traffic", kvTable([["messages in", tv.in_msgs], ["messages out", tv.out_msgs], ["bytes in", tv.in_bytes],
        ["bytes out", tv.out_bytes]]), chart.el),
      js ? card(`JetStream (account ${ov.account})`, kvTable([["streams", num(js.streams)], ["consumers", num(js.consumers)],
        ["memory used", bytes(js.memory)], ["storage used", bytes(js.storage)],
        ["account memory limit", limit(js.limits.max_memory, bytes)], ["account storage limit", limit(js.limits.max_storage, bytes)],
        ["account streams limit", limit(js.limits.max_streams, num)], ["account consumers limit", limit(js.limits.max_consumers, num)],
        ["server max memory", bytes(js.server.max_memory)], ["server max storage", bytes(js.server.max_storage)],
        ["API requests", num(js.api.total)], ["API errors", num(js.api.errors)]]))
        : card("JetStream", h("p", {class: "muted", text: `not enabled for account ${ov.account}`}))),
    card("Accounts", table(["account", "connections#", "JetStream"], ov.accounts, (a) =>
      h("tr", null, td(a.name), tdn(num(a.connections)), td(a.jetstream ? "enabled" : "")))),
  );
  live("rates", {interval_ms: 1000}, (tick) => {
    chart.add(tick);
    for (const key of ["connections", "in_msgs", "out_msgs"]) tv[key].textContent = num(tick[key]);
    for (const key of ["in_bytes", "out_bytes"]) tv[key].textContent = bytes(tick[key]);
  });
};

function rateChart() {
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", "0 0 600 180");
  svg.setAttribute("preserveAspectRatio", "none");
  const lines = {};
  for (const name of ["in", "out"]) {
    lines[name] = document.createElementNS(NS, "polyline");
    lines[name].setAttribute("class", name);
    svg.append(lines[name]);
  }
  const label = h("span", {class: "muted"});
  const now = {in: h("b", {text: "0"}), out: h("b", {text: "0"})};
  const legend = h("div", {class: "legend"}, h("span", {class: "in"}, "in: ", now.in, " msgs/s"),
    h("span", {class: "out"}, "out: ", now.out, " msgs/s"), label);
  const points = [];
  let prev = null;
  function add(tick) {
    if (prev && tick.t > prev.t) {
      const dt = tick.t - prev.t;
      points.push({in: Math.max(0, (tick.in_msgs - prev.in_msgs) / dt), out: Math.max(0, (tick.out_msgs - prev.out_msgs) / dt)});
      if (points.length > 60) points.shift();
      const max = Math.max(1, ...points.map((p) => Math.max(p.in, p.out)));
      for (const name of ["in", "out"]) {
        const shift = 60 - points.length;  // the newest point at the right edge
        lines[name].setAttribute("points", points.map((p, i) => `${((shift + i) * 600 / 59).toFixed(1)},${(175 - p[name] / max * 155).toFixed(1)}`).join(" "));
        now[name].textContent = fmt.format(Math.round(points[points.length - 1][name]));
      }
      label.textContent = `max ${fmt.format(Math.round(max))} msgs/s (last minute)`;
    }
    prev = tick;
  }
  return {el: h("div", {class: "chart"}, legend, svg), add};
}

function fillAccounts(ov) {
  const sel = document.getElementById("account");
  sel.replaceChildren(...ov.accounts.map((a) => h("option", {value: a.name, text: a.name})));
  sel.value = ov.account;
  account = ov.account;
}

function moreButton(next, load) {
  return next ? h("button", {text: "More…", onclick: () => load(next)}) : null;
}

pages.streams = async (args, query) => {
  const kind = query.get("kind") || "";
  const body = h("tbody");
  const foot = h("div", {class: "controls"});
  const title = kind === "kv" ? "KV buckets" : kind === "obj" ? "Object stores" : "Streams";
  main.replaceChildren(h("h2", {text: title}), h("table", null, h("thead", null, h("tr", null,
    ["name", "kind", "subjects", "storage", "messages#", "bytes#", "first#", "last#", "consumers#", "mirror / sources"]
      .map((c) => h("th", {class: c.endsWith("#") ? "num" : "", text: c.replace("#", "")})))), body), foot);
  const row = (s) => {
      const target = s.kind === "kv" ? route("kv", s.name.slice(3)) : s.kind === "obj" ? route("obj", s.name.slice(4)) : route("stream", s.name);
    return h("tr", {"data-stream": s.name}, td(link(s.name, target)), td(s.kind), td(s.subjects.join(", ")), td(s.storage),
      tdn(num(s.messages)), tdn(bytes(s.bytes)), tdn(num(s.first_seq)), tdn(num(s.last_seq)), tdn(num(s.consumers)),
      td([s.mirror ? `mirror of ${s.mirror}` : "", ...s.sources].filter(Boolean).join(", ")));
  };
  let more = false;
  function draw(page, after) {
    if (!after) body.replaceChildren();
    body.append(...page.streams.map(row));
    if (!page.streams.length && !after) body.append(h("tr", null, h("td", {colspan: 10, class: "muted", text: "no streams"})));
    foot.replaceChildren(moreButton(page.next, async (next) => { more = true; draw(await api("streams", {after: next, kind}), next); }) || "");
  }
  draw(await api("streams", {kind}), "");
  live("streams", {kind, interval_ms: 2000}, (page) => { if (!more) draw(page, ""); });  // the first page, live
};

function sourcingTable(info) {
  const rows = [];
  if (info.mirror) rows.push(["mirror", info.mirror]);
  for (const s of info.sources || []) rows.push(["source", s]);
  if (!rows.length) return null;
  return card("Mirror and sources", table(["role", "stream", "lag#", "active", "filter", "error"], rows, ([role, s]) =>
    h("tr", null, td(role), td(s.name), tdn(num(s.lag)), td(dur(s.active)), td(s.filter_subject || ""), td(s.error ? s.error.description : ""))));
}

pages.stream = async ([name]) => {
  const info = await api("stream", {stream: name});
  const state = h("div");
  const drawState = (inf) => {
    const st = inf.state;
    state.replaceChildren(kvTable([["messages", num(st.messages || 0)], ["bytes", bytes(st.bytes || 0)],
      ["first seq", num(st.first_seq || 0)], ["first time", st.first_ts], ["last seq", num(st.last_seq || 0)],
      ["last time", st.last_ts], ["subjects", num(st.num_subjects || 0)], ["deleted", num(st.num_deleted || 0)],
      ["consumers", num(st.consumer_count || 0)]]));
  };
  drawState(info);
  const actions = h("div", {class: "controls"},
    link("Messages", route("stream", name, "messages")), link("Consumers", route("stream", name, "consumers")));
  if (WRITE) {
    actions.append(h("button", {class: "danger", text: "Purge stream", onclick: async () => {
      if (!confirm(`Purge every message of ${name}?`)) return;
      try { await act("purge", {stream: name}); show(); } catch (err) { showError(err); }
    }}));
  }
  const subjBody = h("tbody");
  const subjFoot = h("div", {class: "controls"});
  const filter = h("input", {placeholder: "subject filter, e.g. orders.>", size: 30});
  async function loadSubjects(after) {
    if (!after) subjBody.replaceChildren();
    const page = await api("subjects", {stream: name, filter: filter.value, after});
    for (const s of page.subjects) {
      subjBody.append(h("tr", null, td(link(s.subject, route("stream", name, "messages") + "?filter=" + encodeURIComponent(s.subject))),
        tdn(num(s.msgs)), tdn(num(s.first)), tdn(num(s.last))));
    }
    subjFoot.replaceChildren(moreButton(page.next && page.subjects.length === 100 ? page.next : 0, loadSubjects) || "");
  }
  filter.addEventListener("change", () => loadSubjects(0));
  main.replaceChildren(h("h2", {text: `Stream ${name}`}), actions,
    h("div", {class: "grid"}, card("State", state), card("Configuration", h("pre", {text: JSON.stringify(info.config, null, 2)}))),
    sourcingTable(info) || "",
    card("Subjects", h("div", {class: "controls"}, filter),
      h("table", null, h("thead", null, h("tr", null, h("th", {text: "subject"}), h("th", {class: "num", text: "messages"}),
        h("th", {class: "num", text: "first"}), h("th", {class: "num", text: "last"}))), subjBody), subjFoot));
  await loadSubjects(0);
  live("stream", {stream: name}, drawState);
};

pages.messages = async ([name], query) => {
  const filter = h("input", {placeholder: "subject filter", size: 24, value: query.get("filter") || ""});
  const seq = h("input", {placeholder: "sequence", size: 10, type: "number", min: 0});
  const time = h("input", {placeholder: "time (RFC 3339)", size: 22});
  const mode = h("select", null, ["text", "json", "hex"].map((m) => h("option", {value: m, text: m})));
  const follow = h("input", {type: "checkbox"});
  const info = h("span", {class: "muted"});
  const body = h("tbody");
  let page = null; let tail = null;
  function row(m, fresh) {
    const cells = [tdn(num(m.seq)), td(m.time), td(m.subject), headersCell(m), payloadCell(m, mode.value)];
    if (WRITE) {
      cells.push(h("td", null, h("button", {class: "danger", text: "Delete", onclick: async () => {
        try { await act("delete_msg", {stream: name, seq: m.seq}); await load({seq: page.messages[0]?.seq || 0}); } catch (err) { showError(err); }
      }})));
    }
    return h("tr", {class: fresh ? "new" : "", "data-seq": m.seq}, cells);
  }
  async function load(where) {
    page = await api("messages", {stream: name, filter: filter.value, limit: 50, ...where});
    body.replaceChildren(...page.messages.map((m) => row(m, false)));
    info.textContent = `${num(page.messages_total)} messages, seq ${num(page.first_seq)}…${num(page.last_seq)}`;
    if (!page.messages.length) body.append(h("tr", null, h("td", {colspan: 6, class: "muted", text: "no messages here"})));
  }
  function setFollow() {
    if (tail) { tail.close(); sources = sources.filter((s) => s !== tail); tail = null; }
    if (!follow.checked) return;
    tail = live("messages", {stream: name, filter: filter.value, seq: page ? page.last_seq + 1 : 0, interval_ms: 500}, (p) => {
      if (!p.messages) return;
      if (body.firstChild && !body.firstChild.dataset.seq) body.replaceChildren();
      for (const m of p.messages) body.append(row(m, true));
      while (body.children.length > 200) body.firstChild.remove();
    });
  }
  const nav = (label, fn) => h("button", {text: label, onclick: () => fn().catch(showError)});
  main.replaceChildren(h("h2", null, "Messages of ", link(name, route("stream", name))),
    h("div", {class: "controls"}, filter, seq, time,
      nav("Go", () => load(time.value ? {time: time.value} : {seq: seq.value})),
      nav("⇤ First", () => load({seq: 0})), nav("← Prev", () => load({seq: page.prev, dir: "prev"})),
      nav("Next →", () => load({seq: page.next})), nav("Last ⇥", () => load({dir: "prev"})),
      h("label", null, "show as ", mode), h("label", null, follow, " follow live"), info),
    h("table", null, h("thead", null, h("tr", null, ["seq", "time", "subject", "headers", "payload", WRITE ? "" : null]
      .filter((c) => c !== null).map((c) => h("th", {text: c})))), body));
  mode.addEventListener("change", () => load({seq: page.messages[0]?.seq || 0}));
  filter.addEventListener("change", () => load({seq: 0}).then(setFollow));
  follow.addEventListener("change", setFollow);
  await load(query.get("follow") ? {dir: "prev"} : {seq: 0});
  if (query.get("follow")) { follow.checked = true; setFollow(); }
};

function consumerRow(stream, c) {
  const cfg = c.config || {};
  const pinned = (c.priority_groups || []).filter((g) => g.pinned_client_id).map((g) => `${g.group}: ${g.pinned_client_id}`);
  const cells = [td(c.name), td(cfg.deliver_subject ? "push" : "pull"), td(cfg.filter_subject || (cfg.filter_subjects || []).join(", ")),
    tdn(`${num(c.delivered.consumer_seq)} / ${num(c.delivered.stream_seq)}`), tdn(`${num(c.ack_floor.consumer_seq)} / ${num(c.ack_floor.stream_seq)}`),
    tdn(num(c.num_pending)), tdn(num(c.num_ack_pending)), tdn(num(c.num_redelivered)), tdn(num(c.num_waiting)),
    td(c.paused ? h("span", {class: "badge warn", text: `paused ${dur(c.pause_remaining)}`}) : ""), td(pinned.join(", "))];
  if (WRITE) {
    cells.push(h("td", null, h("button", {text: c.paused ? "Resume" : "Pause", onclick: async () => {
      try { await act("pause", c.paused ? {stream, consumer: c.name, resume: 1} : {stream, consumer: c.name}); } catch (err) { showError(err); }
    }})));
  }
  return h("tr", {"data-consumer": c.name}, cells);
}

pages.consumers = async ([name]) => {
  const body = h("tbody");
  const draw = (page) => {
    body.replaceChildren(...page.consumers.map((c) => consumerRow(name, c)));
    if (!page.consumers.length) body.append(h("tr", null, h("td", {colspan: 12, class: "muted", text: "no consumers"})));
  };
  draw(await api("consumers", {stream: name}));
  main.replaceChildren(h("h2", null, "Consumers of ", link(name, route("stream", name))),
    h("table", null, h("thead", null, h("tr", null, ["name", "type", "filter", "delivered (consumer / stream)#", "ack floor#",
      "pending#", "ack pending#", "redelivered#", "waiting#", "paused", "pinned", WRITE ? "" : null].filter((c) => c !== null)
      .map((c) => h("th", {class: c.endsWith("#") ? "num" : "", text: c.replace("#", "")})))), body));
  live("consumers", {stream: name}, draw);
};

pages.kv = async ([bucket]) => {
  if (!bucket) return pages.bucketList("kv");
  const body = h("tbody");
  const foot = h("div", {class: "controls"});
  const history = h("div");
  const watch = h("tbody");
  const filter = h("input", {placeholder: "key filter, e.g. orders.*", size: 24});
  const keyRow = (e) => h("tr", {"data-key": e.key}, td(h("a", {href: "#", text: e.key, onclick: (ev) => { ev.preventDefault(); showHistory(e.key); }})),
    tdn(num(e.seq)), td(e.op), tdn(num(e.history)), h("td", null, e.data !== undefined ? h("pre", {text: render(e.data, "text")}) : ""),
    WRITE ? h("td", null, h("button", {class: "danger", text: "Delete", onclick: () => act("kv_delete", {bucket, key: e.key}).then(() => load(0)).catch(showError)})) : null);
  async function showHistory(key) {
    const hist = await api("kv_history", {bucket, key});
    history.replaceChildren(card(`History of ${key}`, table(["revision#", "op", "time", "value"], hist.entries, (e) =>
      h("tr", null, tdn(num(e.seq)), td(e.op), td(e.time), h("td", null, h("pre", {text: render(e.data, "text")}))))));
  }
  async function load(after) {
    if (!after) body.replaceChildren();
    const page = await api("kv_keys", {bucket, filter: filter.value, after, limit: 50});
    for (const e of page.keys) body.append(keyRow(e));
    foot.replaceChildren(moreButton(page.keys.length === 50 ? page.next : 0, load) || "", h("span", {class: "muted", text: `${num(page.total)} keys`}));
  }
  filter.addEventListener("change", () => load(0));
  const put = WRITE ? (() => {
    const key = h("input", {placeholder: "key", size: 18});
    const value = h("input", {placeholder: "value", size: 30});
    return h("div", {class: "controls"}, key, value, h("button", {text: "Put", onclick: () =>
      act("kv_put", {bucket, key: key.value, value: value.value}).then(() => load(0)).catch(showError)}));
  })() : "";
  main.replaceChildren(h("h2", {text: `KV bucket ${bucket}`}), put, h("div", {class: "controls"}, filter),
    table(["key", "revision#", "op", "history#", "value", WRITE ? "" : null].filter((c) => c !== null), [], () => null), foot, history,
    card("Live watch", h("table", null, h("thead", null, h("tr", null, ["revision", "key", "op", "value"].map((c) => h("th", {text: c})))), watch)));
  main.querySelector("table").replaceChild(body, main.querySelector("table tbody"));
  await load(0);
  const first = await api("kv_watch", {bucket, after: 1e15});
  live("kv_watch", {bucket, after: first.last_seq, interval_ms: 500}, (p) => {
    for (const e of p.entries) {
      watch.prepend(h("tr", {class: "new"}, tdn(num(e.seq)), td(e.key), td(e.op), h("td", null, h("pre", {text: render(e.data, "text")}))));
    }
    while (watch.children.length > 100) watch.lastChild.remove();
  });
};

pages.bucketList = async (kind) => {
  const data = await api(kind);
  main.replaceChildren(h("h2", {text: kind === "kv" ? "KV buckets" : "Object stores"}), kind === "kv"
    ? table(["bucket", "keys#", "values#", "bytes#", "history#", "storage"], data.buckets, (b) => h("tr", null,
      td(link(b.bucket, route("kv", b.bucket))), tdn(num(b.keys)), tdn(num(b.values)), tdn(bytes(b.bytes)), tdn(num(b.history)), td(b.storage)))
    : table(["bucket", "messages#", "bytes#", "storage"], data.buckets, (b) => h("tr", null,
      td(link(b.bucket, route("obj", b.bucket))), tdn(num(b.messages)), tdn(bytes(b.bytes)), td(b.storage))));
  if (!data.buckets.length) main.append(h("p", {class: "muted", text: "none in this account"}));
};

pages.obj = async ([bucket]) => {
  if (!bucket) return pages.bucketList("obj");
  const body = h("tbody");
  const foot = h("div", {class: "controls"});
  async function load(after) {
    const page = await api("obj_list", {bucket, after});
    for (const o of page.objects) {
      const dl = h("a", {text: "download"});
      dl.href = `${BASE}/dashboard/api/obj_download?${params({bucket, name: o.name})}`;
      body.append(h("tr", null, td(o.name), tdn(bytes(o.size)), tdn(num(o.chunks)), td(o.mtime), td(o.digest), td(o.deleted ? "deleted" : dl)));
    }
    foot.replaceChildren(moreButton(page.objects.length === 50 ? page.next : 0, load) || "");
  }
  main.replaceChildren(h("h2", {text: `Object store ${bucket}`}), h("table", null, h("thead", null, h("tr", null,
    ["name", "size", "chunks", "modified", "digest", ""].map((c) => h("th", {text: c})))), body), foot);
  await load(0);
};

pages.connections = async () => {
  const body = h("tbody");
  const info = h("span", {class: "muted"});
  let offset = 0;
  const draw = (c) => {
    info.textContent = `${num(c.total)} connections`;
    body.replaceChildren(...(c.connections || []).map((x) => h("tr", null, tdn(x.cid), td(x.name || ""), td(`${x.ip}:${x.port}`),
      td(`${x.lang || ""} ${x.version || ""}`), td(x.account || ""), td(x.uptime), tdn(num(x.in_msgs)), tdn(num(x.out_msgs)),
      tdn(bytes(x.pending_bytes)), h("td", null, h("details", null, h("summary", {text: `${x.subscriptions} subscriptions`}),
        (x.subscriptions_list_detail || []).map((s) => h("div", {class: "hdr"}, s.subject, s.qgroup ? ` (queue ${s.qgroup})` : "", ` · sid ${s.sid} · ${num(s.msgs)} msgs`)))))));
  };
  const load = async () => draw(await api("connections", {offset, limit: 100}));
  main.replaceChildren(h("h2", {text: "Connections"}), h("div", {class: "controls"},
    h("button", {text: "← Prev", onclick: () => { offset = Math.max(0, offset - 100); load().catch(showError); }}),
    h("button", {text: "Next →", onclick: () => { offset += 100; load().catch(showError); }}), info),
    table(["cid#", "name", "address", "client", "account", "uptime", "msgs in#", "msgs out#", "pending#", "subscriptions"], [], () => null));
  main.querySelector("table").replaceChild(body, main.querySelector("table tbody"));
  await load();
  live("connections", {offset, limit: 100, interval_ms: 2000}, draw);
};

// ---------------------------------------------------------------------------- router

async function show() {
  for (const es of sources) es.close();
  sources = [];
  for (const t of timers) clearTimeout(t);
  timers = [];
  const [path, qs] = (location.hash.replace(/^#\/?/, "") || "overview").split("?");
  const parts = path.split("/").map(decodeURIComponent);
  const query = new URLSearchParams(qs || "");
  let page = parts[0];
  let args = parts.slice(1);
  if (page === "stream" && parts[2] === "messages") { page = "messages"; args = [parts[1]]; }
  else if (page === "stream" && parts[2] === "consumers") { page = "consumers"; args = [parts[1]]; }
  for (const a of document.querySelectorAll("header nav a")) {
    const active = a.dataset.page === page || (a.dataset.page === "streams" && ["stream", "messages", "consumers"].includes(page));
    a.classList.toggle("active", active);
  }
  const fn = pages[page];
  if (!fn) { main.replaceChildren(h("p", {text: "No such page."})); return; }
  try {
    await fn(args, query);
  } catch (err) {
    main.replaceChildren(h("h2", {text: "Cannot show this page"}), h("pre", {text: String(err.message || err)}));
  }
}

document.getElementById("account").addEventListener("change", (ev) => {
  account = ev.target.value;
  sessionStorage.setItem("pjs.account", account);
  show();
});
const mode = document.getElementById("mode");
mode.textContent = WRITE ? "write enabled" : "read-only";
mode.classList.toggle("write", WRITE);
window.addEventListener("hashchange", show);
api("overview").then(fillAccounts).catch(showError).finally(show);
