// The questions waiting for the human: one card each (meta, question, detail, answer
// controls, the confirmation of a lasting answer), kept in place while the stream
// changes the list, and the questions that expired unseen.

import { $, announce, clock, duration, el } from "./dom.js";
import { now, post, refreshSoon, state } from "./hub.js";
import { controlsFor, promptId } from "./answers.js";
import { detailBlock } from "./detail.js";

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

export function firstControl(item) {
  return item ? item.querySelector("input, select, textarea, button") : null;
}

function removePrompt(pid) {
  typedHere.delete(pid);
  state.pending.delete(pid);
  renderPrompts();
}

export function renderPrompts() {
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
