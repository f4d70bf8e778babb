/**
 * The hub's agent sessions in this window (docs/protocol.md "Agent sessions"):
 * the list, in the order a person scans it (waiting ones first), the words each
 * row says, and how the list follows the hub. Pure logic, no `vscode` import.
 *
 * The list comes by push only, never by a timer: `hive/subscribe` asks for
 * `sessions: true`, and the hub then sends one `hive/session` for every session
 * it keeps, then one for each change, and `hive/sessionRemoved` when one leaves
 * (`hive-rpc lsp` passes the flag on, and subscribes again with it to each new
 * hub). A new subscription replays only the sessions that exist: what left while
 * the window was not subscribed is never told, so the list is emptied just
 * before each replay (a new sidecar, or the sidecar's `hive/connection`
 * `connected: true`, which it sends before the new hub's notifications) and
 * refilled from it.
 */
import type { Disposable, HubClient } from './hubClient';
import type { SessionRecord, SessionState } from './protocol';
import { ServerNotifications } from './protocol';

/** The states in the order the list shows them (the hub's own order). */
export const STATE_ORDER: readonly SessionState[] = ['waiting', 'working', 'idle', 'gone'];

/** The ThemeIcon id of each state's rows. */
export const STATE_ICON: Readonly<Record<SessionState, string>> = {
  waiting: 'bell-dot',
  working: 'sync~spin',
  idle: 'circle-outline',
  gone: 'circle-slash',
};

/**
 * The list's order: waiting sessions first, the one waiting longest first (its
 * record changed longest ago); then working, idle and gone ones, most recently
 * changed first. Ties by agent id, so the order is stable.
 */
export function compareSessions(a: SessionRecord, b: SessionRecord): number {
  const byState = rank(a.state) - rank(b.state);
  if (byState !== 0) {
    return byState;
  }
  const byTime = a.state === 'waiting' ? a.changed_at - b.changed_at : b.changed_at - a.changed_at;
  if (byTime !== 0) {
    return byTime;
  }
  return a.agent_id < b.agent_id ? -1 : a.agent_id > b.agent_id ? 1 : 0;
}

function rank(state: SessionState): number {
  const i = STATE_ORDER.indexOf(state);
  return i < 0 ? STATE_ORDER.length : i;
}

/** The sessions the hub keeps, by agent id, and who to tell when they change. */
export class SessionStore {
  private readonly byId = new Map<string, SessionRecord>();
  private readonly listeners: ((ids: readonly string[] | undefined) => void)[] = [];

  /** Told after each change: the agent ids whose record changed, or undefined when rows came or went. */
  onDidChange(listener: (ids: readonly string[] | undefined) => void): Disposable {
    this.listeners.push(listener);
    return {
      dispose: () => {
        const i = this.listeners.indexOf(listener);
        if (i >= 0) {
          this.listeners.splice(i, 1);
        }
      },
    };
  }

  get(agentId: string): SessionRecord | undefined {
    return this.byId.get(agentId);
  }

  /** How many sessions are listed. */
  get size(): number {
    return this.byId.size;
  }

  /** Every session, in the list's order (compareSessions). */
  records(): SessionRecord[] {
    return [...this.byId.values()].sort(compareSessions);
  }

  /** How many wait on the human (a prompt, or a dialog in their own terminal). */
  waitingCount(): number {
    let n = 0;
    for (const r of this.byId.values()) {
      if (r.state === 'waiting') {
        n++;
      }
    }
    return n;
  }

  /** A new or changed session (`hive/session`). */
  set(record: SessionRecord): void {
    const had = this.byId.get(record.agent_id);
    this.byId.set(record.agent_id, record);
    // A state change can move the row: the whole list is redrawn then.
    this.fire(had && had.state === record.state && had.changed_at === record.changed_at ? [record.agent_id] : undefined);
  }

  /** A session left the hub's list (`hive/sessionRemoved`). */
  remove(agentId: string): void {
    if (this.byId.delete(agentId)) {
      this.fire(undefined);
    }
  }

  /** Forget every session (a new subscription is about to replay those that exist). */
  clear(): void {
    if (this.byId.size > 0) {
      this.byId.clear();
      this.fire(undefined);
    }
  }

  private fire(ids: readonly string[] | undefined): void {
    for (const l of [...this.listeners]) {
      l(ids);
    }
  }
}

// --- the words of a row -------------------------------------------------------------

/** `1 permission`, `2 questions`. */
function count(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/**
 * A time since, to the minute, rounded down: `<1m`, `3m`, `2h05m`, `1d04h`.
 * It changes once a minute, so a row is redrawn that rarely.
 */
export function formatAge(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) {
    return '<1m';
  }
  const m = Math.floor(s / 60);
  if (m < 60) {
    return `${m}m`;
  }
  if (m < 24 * 60) {
    return `${Math.floor(m / 60)}h${pad(m % 60)}m`;
  }
  const h = Math.floor(m / 60);
  return `${Math.floor(h / 24)}d${pad(h % 24)}h`;
}

function pad(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

/** `/home/me/src/app` as `~/src/app` for the user whose home is `home`. */
export function tildePath(path: string, home: string | undefined): string {
  if (home && home !== '/') {
    const h = home.endsWith('/') ? home.slice(0, -1) : home;
    if (path === h) {
      return '~';
    }
    if (path.startsWith(`${h}/`)) {
      return `~${path.slice(h.length)}`;
    }
  }
  return path;
}

/**
 * The row's name: the agent's kind and its process (`Claude Code 4242`), after
 * its ling's name when it has one (`reviewer · Claude Code 4242`); an agent with
 * a name of its own (no kind) is that name.
 */
export function sessionLabel(r: SessionRecord): string {
  const who = r.display ? `${r.display}${r.pid !== null ? ` ${r.pid}` : idSuffix(r)}` : r.agent_id;
  return r.ling ? `${r.ling} · ${who}` : who;
}

/** `claude-code-4242` without its kind's prefix: ` 4242`, or '' when the id is only the kind. */
function idSuffix(r: SessionRecord): string {
  const prefix = r.agent ? `${r.agent}-` : '';
  return prefix && r.agent_id.startsWith(prefix) ? ` ${r.agent_id.slice(prefix.length)}` : '';
}

/**
 * What it waits on, or its state: `2 permissions, 1 question`, `waits in its
 * terminal`, `working`, `idle`, `gone`.
 */
export function sessionWhat(r: SessionRecord): string {
  if (r.state === 'waiting') {
    const parts: string[] = [];
    if (r.permissions > 0) {
      parts.push(count(r.permissions, 'permission'));
    }
    if (r.questions > 0) {
      parts.push(count(r.questions, 'question'));
    }
    if (parts.length === 0 || r.in_terminal) {
      parts.push('waits in its terminal');
    }
    return parts.join(', ');
  }
  return r.state;
}

/** The row's description: `2 permissions · ~/src/app · 3m` (the time since its last change). */
export function sessionDescription(r: SessionRecord, now: number, home?: string): string {
  const parts = [sessionWhat(r)];
  if (r.project_dir) {
    parts.push(tildePath(r.project_dir, home));
  }
  parts.push(formatAge(now - r.changed_at));
  return parts.join(' · ');
}

const EVENT_WORDS: Readonly<Record<string, string>> = {
  start: 'started',
  prompt: 'you sent it a prompt',
  ask: 'it asked',
  close: 'a question of its closed',
  stop: 'its turn ended',
  failure: 'its turn failed',
  notice: 'it sent a notice',
  end: 'its session ended',
  exit: 'its process exited',
};

/** The row's tooltip: everything the hub knows of it, one fact a line. */
export function sessionTooltip(r: SessionRecord, now: number, home?: string): string {
  const lines = [`${sessionLabel(r)} (${r.agent_id}): ${sessionWhat(r)}`];
  if (r.state === 'waiting' && r.prompt_ids.length > 0) {
    lines.push('Click to answer its oldest prompt.');
  } else if (r.pid !== null && r.state !== 'gone') {
    lines.push('Click to show its terminal.');
  }
  if (r.project_dir) {
    lines.push(`Project: ${tildePath(r.project_dir, home)}`);
  }
  const where: string[] = [];
  if (r.pid !== null) {
    where.push(`pid ${r.pid}`);
  }
  if (r.terminal) {
    where.push(`terminal ${r.terminal}`);
  }
  if (where.length > 0) {
    lines.push(`Runs as ${where.join(', ')}`);
  }
  if (r.last_event) {
    lines.push(`Last: ${EVENT_WORDS[r.last_event] ?? r.last_event}, ${formatAge(now - r.changed_at)} ago`);
  }
  if (r.message) {
    lines.push(`Message: ${r.message}`);
  }
  lines.push(`Started ${formatAge(now - r.started_at)} ago`);
  return lines.join('\n');
}

// --- following the hub --------------------------------------------------------------

/**
 * Keeps a SessionStore as the hub has it, from the subscription's notifications
 * (see the module's comment). `reset` comes from the sidecar's connection.
 */
export class SessionFeed implements Disposable {
  private readonly subscriptions: Disposable[];

  constructor(
    hub: HubClient,
    readonly store: SessionStore,
    private readonly log: (line: string) => void = () => undefined,
  ) {
    this.subscriptions = [
      hub.onNotification(ServerNotifications.session, (r) => {
        if (r && typeof r.agent_id === 'string') {
          this.store.set(r);
        }
      }),
      hub.onNotification(ServerNotifications.sessionRemoved, (p) => {
        if (p && typeof p.agent_id === 'string') {
          this.store.remove(p.agent_id);
        }
      }),
      hub.onNotification(ServerNotifications.connection, (p) => {
        if (p?.connected === true) {
          // The sidecar subscribed to a hub again (maybe a new one); its replay
          // follows this notification, and what left meanwhile is in none of it.
          if (this.store.size > 0) {
            this.log('subscribed to the hub again: the Sessions view takes its list anew');
          }
          this.store.clear();
        }
      }),
    ];
  }

  /** A new sidecar is starting: its subscription replays the sessions that exist. */
  reset(): void {
    this.store.clear();
  }

  dispose(): void {
    for (const s of this.subscriptions) {
      s.dispose();
    }
  }
}
