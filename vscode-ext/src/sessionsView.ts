/**
 * The "Hive: Sessions" tree view: one row per agent session the hub keeps
 * (src/sessions.ts), waiting ones first, with an icon per state, what it waits
 * on, its project and how long since it changed; the view's badge counts the
 * waiting ones. A row's click is the human's deliberate act, and the only thing
 * that opens anything here: a session that waits on prompts opens its oldest
 * one, as the Pending view's rows do; any other shows the VS Code terminal that
 * runs it (a terminal whose shell is an ancestor of the agent's process,
 * src/processTree.ts), else says where it runs.
 *
 * Like the Pending view, it redraws as little as it can: a record that changed
 * in place redraws its row; rows that come, go or change state redraw the list;
 * the age in the description is to the minute, checked every 15 seconds while
 * there are rows, and only the rows whose text changed are redrawn.
 */
import { homedir } from 'node:os';
import * as vscode from 'vscode';
import { nowSeconds } from './countdown';
import { visible } from './plainText';
import { terminalOf } from './processTree';
import type { ParentOf } from './processTree';
import { Command, SESSION_CONTEXT_VALUE } from './protocol';
import type { SessionRecord } from './protocol';
import type { PromptQueue } from './queue';
import { sessionDescription, sessionLabel, sessionTooltip, STATE_ICON, tildePath } from './sessions';
import type { SessionStore } from './sessions';

interface Timers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

const realTimers: Timers = {
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (h) => clearInterval(h as ReturnType<typeof setInterval>),
};

/** How often the rows' ages are checked (they show minutes). */
const AGE_TICK_MS = 15_000;

/** A tree element: the session's agent id. */
export type SessionElement = string;

export class SessionsTreeProvider implements vscode.TreeDataProvider<SessionElement>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<SessionElement | SessionElement[] | undefined | void>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly subscription: { dispose(): void };
  private timer: unknown;
  /** The description each row was last given, to redraw only the rows whose text changed. */
  private readonly shown = new Map<string, string>();

  constructor(
    private readonly store: SessionStore,
    private readonly now: () => number = nowSeconds,
    private readonly timers: Timers | null = realTimers,
    private readonly home: string | undefined = homedir(),
  ) {
    this.subscription = store.onDidChange((ids) => this.changed(ids));
  }

  getChildren(element?: SessionElement): SessionElement[] {
    return element ? [] : this.store.records().map((r) => r.agent_id);
  }

  getTreeItem(agentId: SessionElement): vscode.TreeItem {
    const r = this.store.get(agentId);
    if (!r) {
      const gone = new vscode.TreeItem('(no longer listed)', vscode.TreeItemCollapsibleState.None);
      gone.id = agentId;
      return gone;
    }
    const item = new vscode.TreeItem(visible(sessionLabel(r)), vscode.TreeItemCollapsibleState.None);
    item.id = agentId;
    const description = visible(sessionDescription(r, this.now(), this.home));
    item.description = description;
    item.tooltip = visible(sessionTooltip(r, this.now(), this.home));
    item.iconPath = new vscode.ThemeIcon(
      STATE_ICON[r.state] ?? 'circle-outline',
      r.state === 'waiting' ? new vscode.ThemeColor('list.warningForeground') : undefined,
    );
    item.contextValue = `${SESSION_CONTEXT_VALUE}.${r.state}`;
    item.command = { command: Command.openSession, title: 'Open', arguments: [agentId] };
    item.accessibilityInformation = { label: `${sessionLabel(r)}, ${r.state}: ${description}` };
    this.shown.set(agentId, description);
    return item;
  }

  /** The view's badge: the sessions waiting on the human, or none. */
  badge(): vscode.ViewBadge | undefined {
    const n = this.store.waitingCount();
    return n > 0 ? { value: n, tooltip: `${n} agent session${n === 1 ? '' : 's'} waiting on you` } : undefined;
  }

  /** Whether the age timer runs (for tests). */
  get ticking(): boolean {
    return this.timer !== undefined;
  }

  dispose(): void {
    this.stopTimer();
    this.subscription.dispose();
    this.emitter.dispose();
  }

  private changed(ids: readonly string[] | undefined): void {
    if (ids === undefined) {
      for (const id of [...this.shown.keys()]) {
        if (!this.store.get(id)) {
          this.shown.delete(id);
        }
      }
      this.emitter.fire();
    } else {
      this.emitter.fire([...ids]);
    }
    this.updateTimer();
  }

  /** The rows whose age text changed. */
  private tick(): void {
    const rows = this.store
      .records()
      .filter((r) => this.shown.has(r.agent_id) && this.shown.get(r.agent_id) !== visible(sessionDescription(r, this.now(), this.home)))
      .map((r) => r.agent_id);
    if (rows.length > 0) {
      this.emitter.fire(rows);
    }
  }

  private updateTimer(): void {
    if (!this.timers) {
      return;
    }
    // The count, not records(): that sorts the list, and a replay of 2,000
    // sessions calls this once per session.
    const any = this.store.size > 0;
    if (any && this.timer === undefined) {
      this.timer = this.timers.setInterval(() => this.tick(), AGE_TICK_MS);
    } else if (!any) {
      this.stopTimer();
    }
  }

  private stopTimer(): void {
    if (this.timer !== undefined) {
      this.timers?.clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/** What a row's click does, given how to open a prompt and read the process tree. */
export interface OpenSessionDeps {
  store: SessionStore;
  queue: PromptQueue;
  /** Open a pending prompt, as the Pending view's row does. */
  answer: (promptId: string) => void;
  /** The process tree (tests pass a fake); default /proc. */
  parentOf?: ParentOf;
  home?: string;
}

/**
 * The oldest prompt the session waits on that this window has (its ids are the
 * hub's: permission requests first, then oldest first; the queue knows when
 * each was asked).
 */
export function oldestPrompt(r: SessionRecord, queue: PromptQueue): string | undefined {
  const held = r.prompt_ids.map((id) => queue.get(id)?.record).filter((p) => p !== undefined);
  held.sort((a, b) => a.created_at - b.created_at);
  return held[0]?.id;
}

/**
 * A row's click (`hive.openSession`): its oldest prompt, or its terminal, or a
 * message saying where it runs.
 */
export async function openSession(arg: unknown, deps: OpenSessionDeps): Promise<void> {
  const agentId = typeof arg === 'string' ? arg : undefined;
  const r = agentId === undefined ? undefined : deps.store.get(agentId);
  if (!r) {
    vscode.window.setStatusBarMessage('Hive: that session is no longer listed', 5000);
    return;
  }
  const prompt = oldestPrompt(r, deps.queue);
  if (prompt) {
    deps.answer(prompt);
    return;
  }
  const label = visible(sessionLabel(r));
  if (r.pid !== null && r.state !== 'gone') {
    const candidates = await Promise.all(
      vscode.window.terminals.map(async (terminal) => ({ terminal, pid: await terminalPid(terminal) })),
    );
    const terminal = terminalOf(r.pid, candidates, deps.parentOf);
    if (terminal) {
      terminal.show();
      return;
    }
  }
  void vscode.window.showInformationMessage(whereItRuns(r, label, deps.home ?? homedir()));
}

async function terminalPid(terminal: vscode.Terminal): Promise<number | undefined> {
  try {
    return await terminal.processId;
  } catch {
    return undefined;
  }
}

/** The message for a session no terminal of this window runs. */
export function whereItRuns(r: SessionRecord, label: string, home: string | undefined): string {
  if (r.state === 'gone') {
    return `Hive: ${label} has ended${r.project_dir ? ` (it ran in ${tildePath(visible(r.project_dir), home)})` : ''}.`;
  }
  const facts: string[] = [];
  if (r.terminal) {
    facts.push(`in ${visible(r.terminal)}`);
  }
  if (r.project_dir) {
    facts.push(`in ${tildePath(visible(r.project_dir), home)}`);
  }
  if (r.pid !== null) {
    facts.push(`as pid ${r.pid}`);
  }
  const where = facts.length > 0 ? ` runs ${facts.join(', ')}` : ' runs outside VS Code';
  const waits = r.in_terminal ? ' It waits on you in its own terminal.' : '';
  return `Hive: ${label}${where}; no terminal of this window runs it.${waits}`;
}
