// The hive-rpc dashboard: pending prompts, agent sessions, dialogues and activity, live through
// GET /activity (Server-Sent Events).  Plain DOM, no framework, no external fetches.
// Everything that comes from agents is inserted with textContent, never as HTML (dom.js).
//
// This module starts the page and keeps its state (hub.js) up to date: the snapshot
// (GET /api/state, GET /api/decisions), then the stream's entries; the panels draw it:
// prompts.js (with answers.js and detail.js), sessions.js, activity.js.

import { $, announce } from "./dom.js";
import { MAX_ACTIVITY, MAX_DECISIONS, post, refreshSoon, setLoader, state } from "./hub.js";
import { firstControl, renderPrompts } from "./prompts.js";
import { renderSessions, renderSessionsSoon } from "./sessions.js";
import { renderActivity, renderDecisions, renderDialogues } from "./activity.js";

function setConnection(text, cls) {
  const node = $("connection");
  node.textContent = text;
  node.className = cls || "";
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

setLoader(loadState);

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

function tick() {
  for (const li of $("prompts").children) {
    if (li.updateLeft) li.updateLeft();
  }
  for (const tr of $("session-rows").children) {
    if (tr.updateTimes) tr.updateTimes();
  }
}

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
