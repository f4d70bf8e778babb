// What happened, newest first: the Agora's dialogues with their turns, the activity
// list (one line per stream entry) and the decisions on agents' permission requests.

import { $, clock, el } from "./dom.js";
import { MAX_DECISIONS, state } from "./hub.js";
import { waitsOn } from "./sessions.js";

// --- dialogues -------------------------------------------------------------------

export function renderDialogues() {
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

export function renderActivity() {
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

export function renderDecisions() {
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
