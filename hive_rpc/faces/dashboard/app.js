// The hive-rpc dashboard: pending prompts, agent sessions, dialogues and activity, live through
// GET /activity (Server-Sent Events).  Plain DOM, no framework, no external fetches.
// Everything that comes from agents is inserted with textContent, never as HTML.
"use strict";

(function () {
  const state = {
    lastId: null, // the id of the newest activity entry the page reflects
    pending: new Map(), // prompt id -> record, oldest first
    unseen: new Map(), // expired before anyone saw them, until cleared (hive/clearUnseen)
    unlisted: 0, // pending but past the snapshot's page (GET /api/state)
    dialogues: [],
    sessions: new Map(), // agent id -> session record (hive/sessions' fields)
    activity: [], // records, newest first
    decisions: new Map(), // audit entry id -> entry (GET /api/decisions, then "audit" events)
    clockSkew: 0, // server time minus browser time, in seconds
    source: null,
    refreshTimer: null,
    announced: new Set(),
    loads: [], // one list per /api/state request in flight: the events seen meanwhile
  };
  const MAX_ACTIVITY = 100;
  const MAX_DECISIONS = 50;

  const $ = (id) => document.getElementById(id);

  // What a person cannot see goes from every text the page shows, by Unicode category
  // and property as every face does (hive_rpc/core/terminal_text.py): control characters
  // but tab and newline, format characters (Cf: soft hyphen, zero-width spaces and
  // joiners, bidi controls, tag characters), lone surrogates and the rest of
  // Default_Ignorable_Code_Point (Hangul fillers, variation selectors).  Values sent back
  // (a choice's value attribute) stay exact.
  const INVISIBLE = /(?![\t\n])[\p{Cc}\p{Cf}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu;
  const visible = (text) => String(text).replace(/[\u2028\u2029]/g, "\n").replace(INVISIBLE, "");
  const SHOWN_ATTRIBUTES = new Set(["title", "aria-label", "placeholder", "alt"]);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "className") node.className = value;
      else if (key === "text") node.textContent = visible(value);
      else if (SHOWN_ATTRIBUTES.has(key)) node.setAttribute(key, visible(value));
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(visible(child)) : child);
    }
    return node;
  }

  function now() {
    return Date.now() / 1000 + state.clockSkew;
  }

  function duration(seconds) {
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return `${s}s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m}m ${s % 60}s`;
    const h = Math.floor(m / 60);
    return `${h}h ${m % 60}m`;
  }

  function clock(at) {
    return new Date(at * 1000).toLocaleTimeString();
  }

  function announce(text) {
    const region = $("announcer");
    region.textContent = "";
    // A fresh text node in a cleared region is what screen readers announce.
    window.setTimeout(() => {
      region.textContent = visible(text);
    }, 50);
  }

  function setConnection(text, cls) {
    const node = $("connection");
    node.textContent = text;
    node.className = cls || "";
  }

  // --- talking to the hub ----------------------------------------------------------

  async function post(path, body) {
    const reply = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
    let data = null;
    try {
      data = await reply.json();
    } catch (_e) {
      data = null;
    }
    if (!reply.ok) {
      const message = data && data.error ? data.error.message : `HTTP ${reply.status}`;
      throw new Error(message);
    }
    return data;
  }

  async function loadState() {
    // Events that arrive while the snapshot is on its way may be newer than it:
    // they are kept aside and applied again on top of it.
    const newer = [];
    state.loads.push(newer);
    let snapshot;
    try {
      const reply = await fetch("/api/state", { credentials: "same-origin", cache: "no-store" });
      if (!reply.ok) {
        setConnection(
          reply.status === 401
            ? "Not signed in: open /dashboard?token=… with the approver token (the file `hive-rpc status` names on its \"open with\" line)."
            : `The hub answered ${reply.status}.`,
          "down",
        );
        throw new Error(`state: HTTP ${reply.status}`);
      }
      snapshot = await reply.json();
    } finally {
      state.loads.splice(state.loads.indexOf(newer), 1);
    }
    state.clockSkew = snapshot.now - Date.now() / 1000;
    state.lastId = snapshot.last_id;
    state.pending = new Map(snapshot.pending.map((p) => [p.id, p]));
    state.unseen = new Map(snapshot.expired_unseen.map((p) => [p.id, p]));
    state.unlisted = Math.max(0, snapshot.pending_total - snapshot.pending.length);
    state.dialogues = snapshot.dialogues;
    state.sessions = new Map((snapshot.sessions || []).map((s) => [s.agent_id, s]));
    state.activity = snapshot.activity.slice(0, MAX_ACTIVITY);
    for (const [id, entry] of newer) {
      if (id > state.lastId) apply(id, entry);
    }
    renderPrompts();
    renderSessions();
    renderDialogues();
    renderActivity();
    await loadDecisions();
  }

  async function loadDecisions() {
    // The trail is in the hub's store, not in the activity log: it has its own route.
    // Entries that arrived by the stream meanwhile are kept (the Map merges by id).
    try {
      const reply = await fetch(`/api/decisions?limit=${MAX_DECISIONS}`, {
        credentials: "same-origin",
        cache: "no-store",
      });
      if (!reply.ok) throw new Error(`decisions: HTTP ${reply.status}`);
      for (const entry of await reply.json()) state.decisions.set(entry.id, entry);
    } catch (e) {
      console.warn(e);
    }
    renderDecisions();
  }

  function refreshSoon() {
    if (state.refreshTimer !== null) return;
    state.refreshTimer = window.setTimeout(async () => {
      state.refreshTimer = null;
      try {
        await loadState();
      } catch (e) {
        console.warn(e);
      }
    }, 150);
  }

  function connect() {
    const source = new EventSource(`/activity?last_id=${encodeURIComponent(state.lastId)}`);
    state.source = source;
    source.onopen = () => setConnection("Live", "live");
    source.onerror = () => setConnection("Reconnecting…", "down");
    for (const kind of ["prompt", "session", "dialogue", "task", "ling", "audit", "notice"]) {
      source.addEventListener(kind, onEntry);
    }
    source.addEventListener("reset", () => refreshSoon());
  }

  function onEntry(event) {
    const id = Number(event.lastEventId);
    const entry = JSON.parse(event.data);
    for (const newer of state.loads) newer.push([id, entry]);
    if (state.lastId !== null && id <= state.lastId) return; // already in the snapshot
    apply(id, entry);
    renderActivity();
    if (entry.kind === "prompt") renderPrompts();
    else if (entry.kind === "session") renderSessionsSoon();
    else if (entry.kind === "dialogue") refreshSoon(); // entries carry no turns
    else if (entry.kind === "audit") renderDecisions();
  }

  function apply(id, entry) {
    state.lastId = id;
    state.activity.unshift(entry);
    state.activity.length = Math.min(state.activity.length, MAX_ACTIVITY);
    if (entry.kind === "prompt") {
      // The entry names the prompt's own kind (question, permission) prompt_kind, as
      // "kind" is the entry's: the card reads the prompt record's names.
      if (entry.status === "pending") state.pending.set(entry.key, { ...entry, kind: entry.prompt_kind });
      else if (!state.pending.delete(entry.key) && state.unlisted > 0) state.unlisted -= 1;
      if (entry.status === "expired" && entry.unseen) state.unseen.set(entry.key, entry);
      else if (entry.status !== "pending") state.unseen.delete(entry.key);
    }
    if (entry.kind === "audit") state.decisions.set(entry.key, { ...entry, id: entry.key });
    if (entry.kind === "session") {
      if (entry.removed) state.sessions.delete(entry.key);
      else state.sessions.set(entry.key, entry);
    }
  }

  // --- waiting prompts -------------------------------------------------------------

  function promptId(record) {
    return record.id;
  }

  function controlsFor(record, form) {
    const pid = promptId(record);
    const qid = `q-${pid}`;
    if (Array.isArray(record.choices) && record.choices.length > 0) {
      const group = el("fieldset", { className: "choices" }, el("legend", { text: "Your answer" }));
      record.choices.forEach((choice, i) => {
        const input = el("input", {
          type: "radio",
          name: `answer-${pid}`,
          value: String(choice),
          id: `a-${pid}-${i}`,
          required: true,
          "aria-describedby": qid,
        });
        // Enter on a choice answers with it (radio buttons do not submit by themselves).
        input.addEventListener("keydown", (ev) => {
          if (ev.key === "Enter") {
            ev.preventDefault();
            if (!input.checked) input.checked = true;
            form.requestSubmit();
          }
        });
        group.append(el("label", { className: "choice", for: input.id }, input, ` ${choice}`));
      });
      return { node: group, read: () => readChoice(form, pid, record.choices) };
    }
    const schema = record.schema;
    if (schema && schema.type === "object" && schema.properties) {
      const required = new Set(schema.required || []);
      const fields = [];
      const group = el("fieldset", { className: "fields" }, el("legend", { text: "Your answer" }));
      Object.entries(schema.properties).forEach(([name, prop], i) => {
        const id = `a-${pid}-${i}`;
        const label = prop.title || name;
        const spec = prop.type === "array" ? prop.items || {} : prop;
        if (!Array.isArray(spec.enum) && schemaOptions(spec).length > 0) {
          // Options with titles and descriptions, and perhaps one's own text: one
          // radio (or, for a multi-select, checkbox) per option, its description beside it.
          const node = optionsField(id, name, prop, spec, label, required.has(name), qid);
          fields.push({ name, prop, options: node.read });
          group.append(node.node);
          return;
        }
        let input;
        if (Array.isArray(prop.enum)) {
          input = el("select", { id, name, required: required.has(name) });
          if (!required.has(name)) input.append(el("option", { value: "", text: "(none)" }));
          for (const option of prop.enum) {
            input.append(el("option", { value: String(option), text: String(option) }));
          }
        } else if (prop.type === "boolean") {
          input = el("input", { id, name, type: "checkbox" });
        } else if (prop.type === "number" || prop.type === "integer") {
          input = el("input", {
            id,
            name,
            type: "number",
            step: prop.type === "integer" ? "1" : "any",
            required: required.has(name),
          });
        } else {
          input = el("input", { id, name, type: "text", required: required.has(name) });
        }
        input.setAttribute("aria-describedby", qid);
        fields.push({ name, prop, input });
        const help = prop.description ? el("small", { text: ` ${prop.description}` }) : null;
        group.append(el("label", { className: "field", for: id }, el("span", { text: label }), input, help));
      });
      return { node: group, read: () => readFields(fields) };
    }
    const id = `a-${pid}-text`;
    const input = el("input", { id, type: "text", name: "answer", autocomplete: "off", "aria-describedby": qid });
    const node = el("label", { className: "field", for: id }, el("span", { text: "Your answer" }), input);
    return { node, read: () => input.value };
  }

  // The consts of a oneOf/anyOf, with their titles and descriptions.
  function schemaOptions(spec) {
    const entries = spec.oneOf || spec.anyOf || [];
    return entries.filter((o) => o && typeof o === "object" && "const" in o);
  }

  // The free-text entry of an anyOf ({"type": "string"}, no const): one's own answer.
  function ownEntry(spec) {
    return (spec.anyOf || []).find((o) => o && !("const" in o) && o.type === "string");
  }

  function optionsField(id, name, prop, spec, label, required, qid) {
    const multi = prop.type === "array";
    const type = multi ? "checkbox" : "radio";
    const group = el("fieldset", { className: "options" }, el("legend", { text: label }));
    if (prop.description) group.append(el("p", { className: "help", text: prop.description }));
    const boxes = [];
    const add = (value, title, description, j) => {
      const input = el("input", { type, name: `${id}-opt`, id: `${id}-${j}`, "aria-describedby": qid });
      boxes.push({ input, value });
      const help = description ? el("small", { text: ` ${description}` }) : null;
      group.append(el("label", { className: "choice", for: input.id }, input, ` ${title}`, help));
      return input;
    };
    schemaOptions(spec).forEach((o, j) => add(o.const, String(o.title ?? o.const), o.description, j));
    const own = ownEntry(spec);
    let text = null;
    if (own) {
      const pick = add(undefined, String(own.title || "Other: type your own answer"), own.description, "own");
      text = el("input", { type: "text", id: `${id}-own-text`, "aria-label": "Your own answer" });
      // Typing one's own answer picks it.
      text.addEventListener("input", () => {
        if (text.value.trim() !== "") pick.checked = true;
      });
      group.append(el("label", { className: "field", for: text.id }, el("span", { text: "Your own answer" }), text));
    }
    const read = () => {
      const values = [];
      for (const { input, value } of boxes) {
        if (!input.checked) continue;
        if (value !== undefined) values.push(value);
        else if (text && text.value.trim() !== "") values.push(text.value.trim());
        else throw new Error(`${label}: type your own answer, or pick an option.`);
      }
      if (multi) return values.length === 0 && !required ? undefined : values;
      if (values.length === 0) {
        if (required) throw new Error(`${label}: pick one of the options.`);
        return undefined;
      }
      return values[0];
    };
    return { node: group, read };
  }

  function readChoice(form, pid, choices) {
    const checked = form.querySelector(`input[name="answer-${CSS.escape(pid)}"]:checked`);
    if (!checked) throw new Error("Pick one of the choices first.");
    // Send the choice itself (choices may be numbers or strings).
    const found = choices.find((c) => String(c) === checked.value);
    return found === undefined ? checked.value : found;
  }

  function readFields(fields) {
    const answer = {};
    for (const { name, prop, input, options } of fields) {
      if (options) {
        const value = options();
        if (value !== undefined) answer[name] = value;
      } else if (prop.type === "boolean") {
        answer[name] = input.checked;
      } else if (input.value === "") {
        continue;
      } else if (prop.type === "number" || prop.type === "integer") {
        answer[name] = Number(input.value);
      } else if (Array.isArray(prop.enum)) {
        answer[name] = prop.enum.find((o) => String(o) === input.value) ?? input.value;
      } else {
        answer[name] = input.value;
      }
    }
    return answer;
  }

  // Prompts typed into on this page and not answered yet. When the page closes
  // (the tab, the window, a reload), each is deferred: the hub gives its
  // countdown back, so an answer begun and left does not hold the agent for the
  // hub's maximum lifetime. A prompt not typed into here has nothing to give back.
  const typedHere = new Set();
  window.addEventListener("pagehide", () => {
    for (const pid of typedHere) {
      // keepalive: the request outlives the page; nobody reads its answer.
      fetch("/api/defer", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ id: pid }),
        credentials: "same-origin",
        keepalive: true,
      }).catch(() => {});
    }
    typedHere.clear();
  });

  function timeLeft(record) {
    const left = record.deadline_at - now();
    if (left <= 0) return "expiring";
    if (record.typing_at) return `${duration(left)} left (countdown stopped)`;
    return `${duration(left)} left`;
  }

  // A prompt's detail (a permission's whole tool input): shown whole, above the
  // answers, so what runs is read before it is approved; text in a <pre>, never
  // HTML. Long input scrolls in its box, which takes the keyboard to scroll. A Claude
  // Code Edit request is shown as the diff of what it changes, not as the JSON of
  // its old_string and new_string.
  function detailBlock(record, pid) {
    if (typeof record.detail !== "string" || record.detail === "") return null;
    const edit = record.kind === "permission" ? editOf(record.detail) : null;
    const label = edit ? (edit.all ? "Edit (every occurrence)" : "Edit") : record.kind === "permission" ? "Tool input" : "Detail";
    const pre = el("pre", {
      className: edit ? "detail diff" : "detail",
      id: `d-${pid}`,
      tabindex: "0",
      "aria-label": edit ? `${label}, as a diff` : `${label}, in full`,
    });
    if (edit) pre.append(...diffLines(edit));
    else pre.textContent = visible(record.detail);
    return el("div", { className: "detail-block" }, el("p", { className: "detail-label", text: label }), pre);
  }

  // The Edit a detail asks for ({file_path, old_string, new_string}), or null.
  function editOf(detail) {
    let input;
    try {
      input = JSON.parse(detail);
    } catch {
      return null;
    }
    if (!input || typeof input.old_string !== "string" || typeof input.new_string !== "string") return null;
    const file = typeof input.file_path === "string" ? input.file_path : "(no file_path)";
    return { file, before: input.old_string, after: input.new_string, all: input.replace_all === true };
  }

  // The lines of a unified diff of the edit, as elements (a block each): "--- FILE (now)",
  // "+++ FILE (after the edit)", then each line kept (" "), removed ("-") or added
  // ("+"), from the longest common subsequence of the two texts' lines. Past
  // MAX_DIFF_CELLS the table is not built: every old line is shown removed and every
  // new one added, still the whole truth, in linear time.
  const MAX_DIFF_CELLS = 250000;
  function diffLines(edit) {
    const a = edit.before.split("\n");
    const b = edit.after.split("\n");
    const ops = [];
    if (a.length * b.length > MAX_DIFF_CELLS) {
      a.forEach((line) => ops.push(["-", line]));
      b.forEach((line) => ops.push(["+", line]));
    } else {
      // common[i][j]: the longest common subsequence of a[i:] and b[j:].
      const common = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
      for (let i = a.length - 1; i >= 0; i--) {
        for (let j = b.length - 1; j >= 0; j--) {
          common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
        }
      }
      let i = 0;
      let j = 0;
      while (i < a.length || j < b.length) {
        if (i < a.length && j < b.length && a[i] === b[j]) {
          ops.push([" ", a[i++]]);
          j++;
        } else if (i < a.length && (j === b.length || common[i + 1][j] >= common[i][j + 1])) {
          ops.push(["-", a[i++]]); // removed lines before added ones, as diff -u has them
        } else {
          ops.push(["+", b[j++]]);
        }
      }
    }
    const lines = [
      el("span", { className: "diff-head", text: `--- ${edit.file} (now)` }),
      el("span", { className: "diff-head", text: `+++ ${edit.file} (after the edit)` }),
    ];
    const cls = { " ": "diff-same", "-": "diff-del", "+": "diff-add" };
    ops.forEach(([mark, line]) => lines.push(el("span", { className: cls[mark], text: `${mark}${line}` })));
    return lines;
  }

  // What a choice does beyond the question, to be confirmed before it is sent (the
  // question's confirm: a Claude Code permission's lasting answers name the rule they
  // save), or null.
  function confirmText(record, answer) {
    if (!Array.isArray(record.confirm)) return null;
    const entry = record.confirm.find((c) => c && c.choice === answer && typeof c.text === "string");
    return entry ? entry.text : null;
  }

  function promptCard(record) {
    const pid = promptId(record);
    const form = el("form", { className: "prompt-form", "aria-labelledby": `q-${pid}` });
    const error = el("p", { className: "error", role: "alert" });
    const left = el("span", { className: "left", text: timeLeft(record) });
    const permission = record.kind === "permission";
    const meta = el(
      "p",
      { className: "meta" },
      permission ? el("strong", { className: "kind", text: "Permission" }) : null,
      permission ? " · " : null,
      // The hub's own question (no agent may ask as hive-rpc) is named as the hub's.
      el("span", { className: "agent", text: `From ${record.agent_id === "hive-rpc" ? "the hub itself (hive-rpc)" : record.agent_id}` }),
      " · ",
      left,
      record.task_id ? ` · task ${record.task_id}` : null,
    );
    const question = el("p", { className: "question", id: `q-${pid}`, text: record.question });
    const detail = detailBlock(record, pid);
    // The page signs in with the human's token (never the agents' MCP token), so it
    // is an approver: a permission request is answered here like any question
    // (docs/security.md). Withdrawing one leaves the decision to the agent's dialog.
    const controls = controlsFor(record, form);
    const answerButton = el("button", { type: "submit", text: "Answer" });
    const cancelButton = el("button", {
      type: "button",
      className: "secondary",
      text: permission ? "Withdraw" : "Cancel",
    });
    cancelButton.setAttribute("aria-label", permission ? "Withdraw this permission request" : "Cancel this question");
    const buttons = [answerButton, cancelButton].filter(Boolean);
    const confirmBox = el("div", { className: "confirm", role: "group", "aria-label": "Confirm this answer", hidden: true });
    const parts = [meta, question, detail, controls.node];
    form.append(...parts.filter(Boolean), el("div", { className: "buttons" }, ...buttons), confirmBox, error);

    async function act(path, body, buttons) {
      error.textContent = "";
      buttons.forEach((b) => (b.disabled = true));
      try {
        await post(path, body);
        announce(path === "/api/cancel" ? "Question cancelled." : "Answer sent.");
        removePrompt(pid);
      } catch (e) {
        error.textContent = e.message;
        buttons.forEach((b) => (b.disabled = false));
      }
    }

    // A choice that outlasts the question is sent only from its confirmation, which
    // shows what it does. The keyboard goes to that text, not to a button: an Enter
    // typed ahead confirms nothing.
    function confirmFirst(answer, says) {
      const text = el("p", { className: "confirm-text", tabindex: "-1", text: says });
      const send = el("button", { type: "button", text: `Send "${answer}"` });
      const back = el("button", { type: "button", className: "secondary", text: "Back" });
      confirmBox.replaceChildren(text, el("div", { className: "buttons" }, send, back));
      confirmBox.hidden = false;
      send.addEventListener("click", () => act("/api/respond", { id: pid, answer }, [...buttons, send, back]));
      back.addEventListener("click", () => {
        confirmBox.hidden = true;
        confirmBox.replaceChildren();
        announce("Not sent.");
        const picked = form.querySelector("input:checked") || firstControl(item);
        if (picked) picked.focus();
      });
      text.focus();
      announce(says);
    }

    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      let answer;
      try {
        answer = controls.read();
      } catch (e) {
        error.textContent = e.message;
        return;
      }
      const says = confirmText(record, answer);
      if (says !== null) {
        confirmFirst(answer, says);
        return;
      }
      act("/api/respond", { id: pid, answer }, buttons);
    });
    cancelButton.addEventListener("click", () => act("/api/cancel", { id: pid }, buttons));

    // The first change in the form stops the countdown, as in the editors: a
    // half-typed answer is never lost to the deadline.
    let typed = record.typing_at !== null && record.typing_at !== undefined;
    const onTyping = () => {
      if (typed) return;
      typed = true;
      typedHere.add(pid);
      post("/api/typing", { id: pid }).catch(() => {
        typed = false;
        typedHere.delete(pid);
      });
    };
    form.addEventListener("input", onTyping);
    form.addEventListener("change", onTyping);

    const item = el("li", { className: record.urgent ? "prompt urgent" : "prompt", "data-id": pid }, form);
    item.updateLeft = () => {
      left.textContent = timeLeft(state.pending.get(pid) || record);
    };
    return item;
  }

  function firstControl(item) {
    return item ? item.querySelector("input, select, textarea, button") : null;
  }

  function removePrompt(pid) {
    typedHere.delete(pid);
    state.pending.delete(pid);
    renderPrompts();
  }

  function renderPrompts() {
    const list = $("prompts");
    const existing = new Map([...list.children].map((li) => [li.dataset.id, li]));
    const focused = document.activeElement;
    let focusLost = false;
    // Drop the closed ones (keeping the rest in place, so typing is never disturbed).
    for (const [pid, li] of existing) {
      if (!state.pending.has(pid)) {
        if (li.contains(focused)) focusLost = true;
        li.remove();
        existing.delete(pid);
      }
    }
    let fresh = [];
    let previous = null;
    for (const [pid, record] of state.pending) {
      let li = existing.get(pid);
      if (!li) {
        li = promptCard(record);
        fresh.push(record);
        if (previous) previous.after(li);
        else list.prepend(li);
      }
      previous = li;
    }
    const count = state.pending.size;
    $("waiting-count").textContent = count ? `(${count + state.unlisted})` : "";
    const more = $("more-waiting");
    more.hidden = state.unlisted === 0;
    more.textContent = `${state.unlisted} more waiting: they appear here as these are answered.`;
    if (state.unlisted > 0 && count === 0) refreshSoon(); // the shown page is done: fetch the next
    $("no-prompts").hidden = count > 0;
    fresh = fresh.filter((r) => !state.announced.has(r.id));
    for (const record of fresh) state.announced.add(record.id);
    if (fresh.length === 1) {
      announce(`New question from ${fresh[0].agent_id}: ${fresh[0].question}`);
    } else if (fresh.length > 1) {
      announce(`${fresh.length} new questions are waiting.`);
    }
    if (focusLost) {
      // The question the human was in closed. The keyboard goes to the heading, never
      // into the next question: a key typed ahead (Enter, Space, "no") must not
      // answer a question the human has not read. Tab reaches it, on purpose.
      $("waiting-heading").focus();
      if (count) announce("That question closed. Press Tab to reach the next one.");
    }
    markShown();
    renderUnseen();
  }

  // Questions that ran out before any editor or this page showed them: kept in
  // sight until the human says they saw them (hive/clearUnseen, in every editor).
  function renderUnseen() {
    const box = $("unseen");
    const list = $("unseen-list");
    list.replaceChildren(
      ...[...state.unseen.values()].map((r) =>
        el("li", { "data-id": r.id }, `${r.agent_id}: ${r.question} (expired ${clock(r.expired_at)})`),
      ),
    );
    const n = state.unseen.size;
    $("unseen-summary").textContent =
      n === 1 ? "1 question expired before anyone saw it:" : `${n} questions expired before anyone saw them:`;
    box.hidden = n === 0;
  }
  // Questions put before the human on this page: it is open, visible and has the
  // window's focus when a card shows. The hub then counts an expiry as "shown, no
  // answer", not unseen (POST /api/shown: hive/shown).
  const shownHere = new Set();
  function markShown() {
    if (document.visibilityState !== "visible" || !document.hasFocus()) return;
    for (const pid of state.pending.keys()) {
      if (shownHere.has(pid)) continue;
      shownHere.add(pid);
      post("/api/shown", { id: pid }).catch(() => shownHere.delete(pid));
    }
  }
  document.addEventListener("visibilitychange", markShown);
  window.addEventListener("focus", markShown);

  function tick() {
    for (const li of $("prompts").children) {
      if (li.updateLeft) li.updateLeft();
    }
    for (const tr of $("session-rows").children) {
      if (tr.updateTimes) tr.updateTimes();
    }
  }

  // --- agent sessions ----------------------------------------------------------------

  // Which of the human's agents waits on them, which works, which finished its turn
  // (hive/sessions, kept live by the stream's "session" entries). The page shows them;
  // it never moves the keyboard by itself: only a click on a waiting session (the
  // human's own act) brings the prompt it waits on into view.
  const SESSION_RANK = { waiting: 0, working: 1, idle: 2, gone: 3 };

  // The hub's order (core/sessions.py order_key): waiting ones first, the longest
  // waiting first; then working, idle and gone ones, the latest changed first.
  function sessionOrder(a, b) {
    const rank = (SESSION_RANK[a.state] ?? 4) - (SESSION_RANK[b.state] ?? 4);
    if (rank !== 0) return rank;
    const when = a.state === "waiting" ? a.changed_at - b.changed_at : b.changed_at - a.changed_at;
    return when || (a.agent_id < b.agent_id ? -1 : a.agent_id > b.agent_id ? 1 : 0);
  }

  const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

  // What a session waits on, in words: "2 permissions", "1 question", "its own
  // dialog in its terminal"; "" when it waits on nothing.
  function waitsOn(s) {
    const parts = [];
    if (s.permissions) parts.push(plural(s.permissions, "permission", "permissions"));
    if (s.questions) parts.push(plural(s.questions, "question", "questions"));
    if (s.in_terminal) parts.push("its own dialog in its terminal");
    return parts.join(" · ");
  }

  // The oldest of the session's prompts that this page lists, or null.
  function oldestPrompt(s) {
    const listed = (s.prompt_ids || []).map((id) => state.pending.get(id)).filter(Boolean);
    listed.sort((a, b) => a.created_at - b.created_at);
    return listed.length ? listed[0] : null;
  }

  // The human clicked a waiting session: its oldest prompt comes into view, marked,
  // and the keyboard goes to that prompt's question text (not to an answer, so a key
  // typed ahead answers nothing); Tab then reaches its answers.
  let sought = null;
  function showPromptOf(s) {
    const note = $("sessions-note");
    const record = oldestPrompt(s);
    const card = record ? $("prompts").querySelector(`li[data-id="${CSS.escape(record.id)}"]`) : null;
    if (!card) {
      // Past the first page of prompts (pending_total), or closed meanwhile.
      note.textContent = `${s.agent_id} waits on a prompt this page does not list: answer the ones above first, or use an editor.`;
      return;
    }
    note.textContent = "";
    if (sought && sought !== card) sought.classList.remove("sought");
    sought = card;
    card.classList.add("sought");
    card.scrollIntoView({ block: "center" });
    const question = card.querySelector(".question");
    question.setAttribute("tabindex", "-1");
    question.focus({ preventScroll: true });
    const what = record.kind === "permission" ? "permission request" : "question";
    announce(`${s.agent_id}'s ${what}: ${record.question}`);
  }

  function sessionRow(s) {
    const waiting = s.state === "waiting";
    const since = el("small", {});
    const age = el("span", {});
    const what = waitsOn(s);
    const canShow = waiting && (s.prompt_ids || []).length > 0;
    const waitsCell = el("td", { className: "waits" });
    if (canShow) {
      waitsCell.append(el("button", { type: "button", className: "secondary", text: what, "aria-label": `Show what ${s.agent_id} waits on: ${what}` }));
    } else if (what) {
      waitsCell.append(what);
    }
    if (s.in_terminal && s.terminal) waitsCell.append(el("small", { text: s.terminal }));
    const kind = s.display || s.agent || "—";
    const row = el(
      "tr",
      { className: `session ${s.state}${canShow ? " showable" : ""}`, "data-agent": s.agent_id, "data-state": s.state },
      el("th", { scope: "row", text: s.agent_id }, s.ling ? el("small", { text: `ling ${s.ling}` }) : null),
      el("td", { className: "state" }, el("span", { className: `badge state-${s.state}`, text: s.state }), since),
      waitsCell,
      el("td", { className: "project", text: s.project_dir || "" }),
      el("td", { className: "kind", text: kind }),
      el("td", { className: "age" }, age),
      el("td", { className: "message", text: s.message || "" }),
    );
    row.updateTimes = () => {
      since.textContent = `for ${duration(now() - s.changed_at)}`;
      age.textContent = duration(now() - s.started_at);
    };
    row.updateTimes();
    if (canShow) row.addEventListener("click", () => showPromptOf(state.sessions.get(s.agent_id) || s));
    return row;
  }

  // A burst of changes (an agent's many asks, a fleet's turns ending together) is
  // drawn once: every session change rebuilds the rows (up to the hub's 2,000).
  const SESSIONS_DRAW_MS = 50;
  // Rows drawn at most, in the hub's order (the waiting ones first): past a few
  // hundred no one reads them, and each costs the page layout time.
  const MAX_SESSION_ROWS = 200;
  let sessionsTimer = null;
  function renderSessionsSoon() {
    if (sessionsTimer !== null) return;
    sessionsTimer = window.setTimeout(() => {
      sessionsTimer = null;
      renderSessions();
    }, SESSIONS_DRAW_MS);
  }

  const waitingBefore = new Set(); // agents seen waiting in their terminal: announced once
  function renderSessions() {
    const rows = $("session-rows");
    const focused = document.activeElement;
    const inRow = focused && rows.contains(focused) ? focused.closest("tr") : null;
    const focusedAgent = inRow ? inRow.dataset.agent : null;
    const sessions = [...state.sessions.values()].sort(sessionOrder);
    rows.replaceChildren(...sessions.slice(0, MAX_SESSION_ROWS).map(sessionRow));
    const more = $("sessions-more");
    more.hidden = sessions.length <= MAX_SESSION_ROWS;
    const unshown = sessions.length - MAX_SESSION_ROWS;
    more.textContent = `${plural(unshown, "more session", "more sessions")}, not shown here: \`hive-rpc sessions\` lists them all.`;
    if (focusedAgent !== null) {
      // The rows are rebuilt: the keyboard stays on the same session's button, or,
      // when it has none now, goes to the heading (as after a prompt closes).
      const again = rows.querySelector(`tr[data-agent="${CSS.escape(focusedAgent)}"] button`);
      (again || $("sessions-heading")).focus({ preventScroll: true });
    }
    $("no-sessions").hidden = sessions.length > 0;
    $("sessions").hidden = sessions.length === 0;
    const waiting = sessions.filter((s) => s.state === "waiting");
    const gone = sessions.filter((s) => s.state === "gone").length;
    const live = sessions.length - gone;
    const parts = [plural(live, "session", "sessions"), waiting.length ? `${waiting.length} waiting on you` : "none waiting on you"];
    if (gone) parts.push(`${gone} gone`);
    const summary = $("sessions-summary");
    summary.textContent = sessions.length ? parts.join(" · ") : "No agent sessions";
    summary.className = waiting.length ? "summary attention" : "summary";
    document.title = waiting.length ? `(${waiting.length} waiting) hive-rpc` : "hive-rpc";
    // A wait in the agent's own terminal has no question card to announce it.
    for (const s of sessions) {
      const inTerminal = s.state === "waiting" && s.in_terminal;
      if (inTerminal && !waitingBefore.has(s.agent_id)) {
        announce(`${s.agent_id} waits on you in its own terminal${s.terminal ? ` (${s.terminal})` : ""}.`);
      }
      if (inTerminal) waitingBefore.add(s.agent_id);
      else waitingBefore.delete(s.agent_id);
    }
  }

  // --- dialogues -------------------------------------------------------------------

  function renderDialogues() {
    const list = $("dialogues");
    list.replaceChildren();
    const dialogues = state.dialogues.slice().reverse(); // newest first
    $("no-dialogues").hidden = dialogues.length > 0;
    for (const d of dialogues) {
      const turns = el("ol", { className: "turns", "aria-label": `Turns of ${d.topic}` });
      for (const t of d.turns || []) {
        const delivery = t.delivery && t.delivery.state ? ` [${t.delivery.state}]` : "";
        turns.append(
          el(
            "li",
            { className: "turn" },
            el("span", { className: "who", text: `#${t.number} ${t.from} → ${t.to} (${t.signal})${delivery}: ` }),
            el("span", { className: "message", text: t.message }),
          ),
        );
      }
      list.append(
        el(
          "li",
          { className: "dialogue", "data-id": d.id },
          el("h3", { text: d.topic }),
          el("p", {
            className: "meta",
            text: `${d.status} · ${d.participants.join(", ")} · ${d.turn_count} of ${d.max_turns} turns`,
          }),
          turns,
        ),
      );
    }
  }

  // --- activity --------------------------------------------------------------------

  function describe(entry) {
    if (entry.kind === "prompt") {
      const outcome = entry.outcome ? ` → ${entry.outcome}` : "";
      const answer = entry.status === "responded" && entry.answer !== null ? `: ${JSON.stringify(entry.answer)}` : "";
      return `${entry.event} ${entry.key} from ${entry.agent_id}${outcome}${answer} · ${entry.question}`;
    }
    if (entry.kind === "task") {
      const result = entry.result_ref
        ? ` (result of ${entry.result_size} bytes at ${entry.result_ref})`
        : entry.result !== null && entry.result !== undefined
          ? `: ${JSON.stringify(entry.result)}`
          : "";
      const error = entry.error ? ` (${entry.error})` : "";
      return `task ${entry.task_id} ${entry.outcome}${error}${result}`;
    }
    if (entry.kind === "dialogue") {
      // Why, where the event says (a delivery held while the human types, a failure).
      // The hub's own words first (agora/paused, agora/consensus ... carry a message).
      const facts = entry.event_facts || {};
      if (facts.message) return `${entry.event} · ${entry.topic || entry.key} (${entry.status}): ${facts.message}`;
      const why = facts.reason ? `: ${facts.ling ? `${facts.ling}: ` : ""}${facts.reason}` : "";
      return `${entry.event} · ${entry.topic || entry.key} (${entry.status})${why}`;
    }
    if (entry.kind === "audit") {
      return `${entry.decision} ${entry.tool || ""}: ${entry.summary} (by ${entry.by})`;
    }
    if (entry.kind === "session") {
      if (entry.removed) return `${entry.agent_id} left the list (${entry.event})`;
      const what = waitsOn(entry);
      return `${entry.agent_id}: ${entry.state}${what ? ` on ${what}` : ""} (${entry.event})`;
    }
    if (entry.kind === "notice") {
      // An agent's notice (agent/notify): urgent when it waits for you in its terminal.
      const where = entry.cwd ? ` (in ${entry.cwd})` : "";
      return `${entry.urgent ? "urgent · " : ""}${entry.agent_id}: ${entry.message}${where}`;
    }
    return `${entry.event} ${entry.key}${entry.reason ? `: ${entry.reason}` : ""}`;
  }

  function renderActivity() {
    const list = $("activity");
    list.replaceChildren(
      ...state.activity.map((entry) =>
        el(
          "li",
          { "data-kind": entry.kind },
          el("time", { datetime: new Date(entry.at * 1000).toISOString(), text: clock(entry.at) }),
          el("span", { className: "kind", text: entry.kind }),
          el("span", { text: describe(entry) }),
        ),
      ),
    );
  }

  // --- decisions -------------------------------------------------------------------

  function how(entry) {
    // Which rule decided, or which prompt and what the person answered.
    if (entry.source === "rule") {
      return `rule ${entry.rule_id} ${entry.rule_pattern} (${entry.rule_scope})`;
    }
    let said = entry.answer;
    if (entry.status === "expired") said = "expired";
    else if (entry.status === "cancelled") said = "withdrawn";
    else if (entry.action && entry.action !== "accept") said = entry.action === "decline" ? "declined" : "dismissed";
    return `prompt ${entry.prompt_id} (${said})`;
  }

  function renderDecisions() {
    const newest = [...state.decisions.values()].sort((a, b) => b.at - a.at).slice(0, MAX_DECISIONS);
    for (const id of [...state.decisions.keys()]) {
      if (!newest.some((e) => e.id === id)) state.decisions.delete(id);
    }
    $("no-decisions").hidden = newest.length > 0;
    $("decisions").hidden = newest.length === 0;
    $("decision-rows").replaceChildren(
      ...newest.map((e) =>
        el(
          "tr",
          { "data-id": e.id, className: `decision ${e.decision}` },
          el("td", {}, el("time", { datetime: new Date(e.at * 1000).toISOString(), text: clock(e.at) })),
          el("td", { className: "verdict", text: e.decision }),
          el("td", { text: e.by }),
          el("td", { text: `${Number(e.latency_s).toFixed(1)}s` }),
          el("td", { text: e.tool || "-" }),
          el("td", { className: "what", text: e.summary }),
          el("td", { text: how(e) }),
        ),
      ),
    );
  }

  // --- start -----------------------------------------------------------------------

  function skipToFirst(ev) {
    ev.preventDefault();
    const target = firstControl($("prompts").firstElementChild) || $("waiting-heading");
    target.focus();
  }

  async function start() {
    $("skip-link").addEventListener("click", skipToFirst);
    $("unseen-clear").addEventListener("click", async () => {
      try {
        await post("/api/clearUnseen", { all: true });
      } catch (e) {
        announce(`Not cleared: ${e.message}`);
      }
    });
    try {
      await loadState();
    } catch (e) {
      console.warn(e);
      return;
    }
    connect();
    window.setInterval(tick, 1000);
  }

  document.addEventListener("DOMContentLoaded", start);
})();
