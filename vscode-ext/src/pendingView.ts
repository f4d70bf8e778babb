/**
 * The "Hive: Pending" tree view: one item per pending prompt, with its agent,
 * question and time left, and inline actions to answer or withdraw it
 * (package.json: `view/item/context`, group `inline`); then the questions
 * that expired before anyone saw them (src/attention.ts), each with an inline
 * Dismiss. While the sidecar is not connected to the hub, the view says so
 * (its message): an empty list then does not mean that nobody asks.
 *
 * It refreshes as little as it can. The tree's elements are the prompt ids
 * (strings, so the same element stays the same across record updates), and a
 * change fires `onDidChangeTreeData` with only the rows that changed; the whole
 * tree is refreshed only when prompts come or go. The countdowns are shown to
 * the minute (`14m left`): the timer checks once a second, only while some row
 * counts down, and refreshes a row only when its text changed, about once a
 * minute. Every redraw of a row replaces its inline buttons, and a click
 * pressed on the old button and released on the new one is lost: a whole-tree
 * refresh every second lost 2 of 12 Withdraw clicks made at human speed in a
 * real VS Code, and a refresh of each counting row every second (its seconds
 * changing) still lost 1 of 12.
 */
import * as vscode from 'vscode';
import { hasCountdown, nowSeconds, timeLeftText } from './countdown';
import { visible } from './plainText';
import type { Attention } from './attention';
import { askerOf, asksPermission } from './promptDetail';
import { Command, EXPIRED_CONTEXT_VALUE, PROMPT_CONTEXT_VALUE } from './protocol';
import type { PromptQueue } from './queue';

const MAX_LABEL = 80;

export function oneLine(text: string, max = MAX_LABEL): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

interface Timers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

const realTimers: Timers = {
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (h) => clearInterval(h as ReturnType<typeof setInterval>),
};

/** A tree element: the prompt's id; an expired-unseen one's is prefixed with EXPIRED_PREFIX. */
export type PendingElement = string;
export const EXPIRED_PREFIX = 'expired:';

export class PendingTreeProvider implements vscode.TreeDataProvider<PendingElement>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<PendingElement | PendingElement[] | undefined | void>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly subscription: { dispose(): void };
  private timer: unknown;
  /** The time text each row was last given, to refresh only the rows it changed for. */
  private readonly shown = new Map<string, string>();

  constructor(
    private readonly queue: PromptQueue,
    private readonly now: () => number = nowSeconds,
    /** Tick the countdowns every second while a row counts down (tests pass fakes, or null for none). */
    private readonly timers: Timers | null = realTimers,
    private readonly attention?: Attention,
  ) {
    this.subscription = queue.onDidChange((ids) => this.changed(ids));
    this.attentionSubscription = attention?.onDidChange(() => this.emitter.fire());
  }

  private readonly attentionSubscription: { dispose(): void } | undefined;

  /** What the view says above its rows: why it may be empty (no sidecar, no hub), or nothing. */
  static connectionMessage(running: boolean, lost: string | undefined): string | undefined {
    if (!running) {
      return 'The Hive sidecar is not running, so no question can arrive here (Hive: Show Sidecar Log says why; Hive: Restart Sidecar).';
    }
    if (lost !== undefined) {
      return `Not connected to the hive-rpc hub (${lost}): questions arrive once it is back.`;
    }
    return undefined;
  }

  getChildren(element?: PendingElement): PendingElement[] {
    if (element) {
      return [];
    }
    const expired = this.attention?.records().map((r) => EXPIRED_PREFIX + r.id) ?? [];
    return [...this.queue.records().map((r) => r.id), ...expired];
  }

  getTreeItem(id: PendingElement): vscode.TreeItem {
    if (id.startsWith(EXPIRED_PREFIX)) {
      return this.expiredItem(id);
    }
    const entry = this.queue.get(id);
    if (!entry) {
      // Closed between the refresh and this call: the next refresh drops it.
      const gone = new vscode.TreeItem('(no longer pending)', vscode.TreeItemCollapsibleState.None);
      gone.id = id;
      return gone;
    }
    const record = entry.record;
    const left = this.timeText(id);
    // A permission (an agent's tool waits on it) says so first, with its own icon:
    // in a list of questions it is the one whose answer lets a command run.
    const permission = asksPermission(record);
    const asker = visible(askerOf(record));
    const label = `${permission ? 'Permission · ' : ''}${asker}: ${oneLine(visible(record.question))}`;
    const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
    item.id = record.id;
    item.description = left;
    item.tooltip =
      `${asker}${record.urgent ? ' (urgent)' : ''} ${permission ? 'asks permission' : 'asks'}:\n` +
      `${visible(record.question)}\n\n${left} · id ${record.id}`;
    item.iconPath = new vscode.ThemeIcon(permission ? 'shield' : record.urgent ? 'warning' : 'comment-discussion');
    item.contextValue = PROMPT_CONTEXT_VALUE;
    item.command = { command: Command.answerPrompt, title: 'Answer', arguments: [record.id] };
    this.shown.set(id, left);
    return item;
  }

  private expiredItem(element: string): vscode.TreeItem {
    const record = this.attention?.get(element.slice(EXPIRED_PREFIX.length));
    if (!record) {
      const gone = new vscode.TreeItem('(dismissed)', vscode.TreeItemCollapsibleState.None);
      gone.id = element;
      return gone;
    }
    const asker = visible(askerOf(record));
    const item = new vscode.TreeItem(
      `Expired unseen · ${asker}: ${oneLine(visible(record.question))}`,
      vscode.TreeItemCollapsibleState.None,
    );
    item.id = element;
    const when = record.expired_at ? new Date(record.expired_at * 1000).toLocaleTimeString() : '';
    item.description = when ? `expired ${when}` : 'expired';
    item.tooltip =
      `${asker} asked, and nobody saw it before its countdown ran out:\n${visible(record.question)}\n\n` +
      `The agent was told "expired unseen". Dismiss clears this trace. · id ${record.id}`;
    item.iconPath = new vscode.ThemeIcon('eye-closed');
    item.contextValue = EXPIRED_CONTEXT_VALUE;
    return item;
  }

  /** Refresh the whole tree. */
  refresh(): void {
    this.emitter.fire();
  }

  dispose(): void {
    this.stopTimer();
    this.subscription.dispose();
    this.attentionSubscription?.dispose();
    this.emitter.dispose();
  }

  /** Whether the countdown timer runs (for tests). */
  get ticking(): boolean {
    return this.timer !== undefined;
  }

  private timeText(id: string): string {
    const entry = this.queue.get(id);
    return entry ? timeLeftText(entry.record, this.now(), entry.typed, true) : '';
  }

  private changed(ids: readonly string[] | undefined): void {
    if (ids === undefined) {
      for (const id of [...this.shown.keys()]) {
        if (!this.queue.has(id)) {
          this.shown.delete(id);
        }
      }
      this.emitter.fire();
    } else {
      const rows = ids.filter((id) => this.queue.has(id));
      if (rows.length > 0) {
        this.emitter.fire(rows);
      }
    }
    this.updateTimer();
  }

  /** Once a second: the rows whose countdown text changed. */
  private tick(): void {
    const rows = this.queue
      .records()
      .map((r) => r.id)
      .filter((id) => this.shown.has(id) && this.shown.get(id) !== this.timeText(id));
    if (rows.length > 0) {
      this.emitter.fire(rows);
    }
    this.updateTimer();
  }

  /** The timer runs only while some row counts down. */
  private updateTimer(): void {
    if (!this.timers) {
      return;
    }
    const counting = this.queue.records().some((r) => hasCountdown(r, this.queue.get(r.id)?.typed));
    if (counting && this.timer === undefined) {
      this.timer = this.timers.setInterval(() => this.tick(), 1000);
    } else if (!counting) {
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

/** The prompt id from a command argument: an id, a record or a tree item (an expired row's id included). */
export function promptIdOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') {
    return arg.startsWith(EXPIRED_PREFIX) ? arg.slice(EXPIRED_PREFIX.length) : arg;
  }
  if (arg && typeof arg === 'object' && 'id' in arg && typeof (arg as { id: unknown }).id === 'string') {
    return (arg as { id: string }).id;
  }
  return undefined;
}
