// What the page knows of the hub (its copy of the state, kept by the snapshot and the
// activity stream: app.js) and how it asks the hub for something (POST /api/...).

export const state = {
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
export const MAX_ACTIVITY = 100;
export const MAX_DECISIONS = 50;

// The hub's clock, as the countdowns and ages read it.
export function now() {
  return Date.now() / 1000 + state.clockSkew;
}

export async function post(path, body) {
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

// A fresh snapshot soon, once for a burst of asks: app.js says how it is loaded
// (setLoader), so a panel can ask for one without importing the page's start.
let loader = async () => {};
export function setLoader(load) {
  loader = load;
}

export function refreshSoon() {
  if (state.refreshTimer !== null) return;
  state.refreshTimer = window.setTimeout(async () => {
    state.refreshTimer = null;
    try {
      await loader();
    } catch (e) {
      console.warn(e);
    }
  }, 150);
}
