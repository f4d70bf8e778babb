/**
 * The "Hive: Pending" tree view: one item per pending prompt, with its agent,
 * question and time left, and inline actions to answer or withdraw it
 * (package.json: `view/item/context`, group `inline`).
 */
import * as vscode from 'vscode';
import { nowSeconds, timeLeftText } from './countdown';
import { Command, PROMPT_CONTEXT_VALUE } from './protocol';
import type { PromptRecord } from './protocol';
import type { PromptQueue } from './queue';

const MAX_LABEL = 80;

export function oneLine(text: string, max = MAX_LABEL): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export class PendingTreeProvider implements vscode.TreeDataProvider<PromptRecord>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<PromptRecord | undefined | void>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly subscription: { dispose(): void };
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly queue: PromptQueue,
    private readonly now: () => number = nowSeconds,
    /** Refresh the times every second while prompts are pending. */
    private readonly tick = true,
  ) {
    this.subscription = queue.onDidChange(() => this.changed());
  }

  getChildren(element?: PromptRecord): PromptRecord[] {
    return element ? [] : this.queue.records();
  }

  getTreeItem(record: PromptRecord): vscode.TreeItem {
    const left = timeLeftText(record, this.now());
    const item = new vscode.TreeItem(`${record.agent_id}: ${oneLine(record.question)}`, vscode.TreeItemCollapsibleState.None);
    item.id = record.id;
    item.description = `${left} left`;
    item.tooltip = `${record.agent_id}${record.urgent ? ' (urgent)' : ''} asks:\n${record.question}\n\n${left} left · id ${record.id}`;
    item.iconPath = new vscode.ThemeIcon(record.urgent ? 'warning' : 'comment-discussion');
    item.contextValue = PROMPT_CONTEXT_VALUE;
    item.command = { command: Command.answerPrompt, title: 'Answer', arguments: [record.id] };
    return item;
  }

  refresh(): void {
    this.emitter.fire();
  }

  dispose(): void {
    this.stopTimer();
    this.subscription.dispose();
    this.emitter.dispose();
  }

  private changed(): void {
    this.refresh();
    if (this.tick && this.queue.size > 0 && this.timer === undefined) {
      this.timer = setInterval(() => this.refresh(), 1000);
    } else if (this.queue.size === 0) {
      this.stopTimer();
    }
  }

  private stopTimer(): void {
    if (this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/** The prompt id from a command argument: an id, a record or a tree item. */
export function promptIdOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') {
    return arg;
  }
  if (arg && typeof arg === 'object' && 'id' in arg && typeof (arg as { id: unknown }).id === 'string') {
    return (arg as { id: string }).id;
  }
  return undefined;
}
