// The agent sessions panel: each of the human's agents, the ones waiting on them first,
// its state and what it waits on; a click on a waiting one shows the prompt it waits on.

import { $, announce, duration, el, plural } from "./dom.js";
import { now, state } from "./hub.js";

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

// What a session waits on, in words: "2 permissions", "1 question", "its own
// dialog in its terminal"; "" when it waits on nothing.
export function waitsOn(s) {
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
export function renderSessionsSoon() {
  if (sessionsTimer !== null) return;
  sessionsTimer = window.setTimeout(() => {
    sessionsTimer = null;
    renderSessions();
  }, SESSIONS_DRAW_MS);
}

const waitingBefore = new Set(); // agents seen waiting in their terminal: announced once
export function renderSessions() {
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
