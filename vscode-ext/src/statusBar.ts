/**
 * The status bar item: `$(comment-discussion) N` while N prompts are pending,
 * hidden at 0. Clicking it runs "Hive: Show Pending Prompts". While the
 * sidecar has lost the hub (`hive/connection`), it says so instead.
 */
import * as vscode from 'vscode';
import { Command } from './protocol';
import type { PromptQueue } from './queue';

export class HiveStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private readonly subscription: { dispose(): void };
  private lost: string | undefined;

  constructor(private readonly queue: PromptQueue) {
    this.item = vscode.window.createStatusBarItem('hive.pending', vscode.StatusBarAlignment.Left, 100);
    this.item.name = 'Hive: Pending Prompts';
    this.item.command = Command.showPending;
    this.subscription = queue.onDidChange(() => this.update());
    this.update();
  }

  /** From `hive/connection`: show the lost hub until it is back. */
  setConnection(connected: boolean, message: string): void {
    this.lost = connected ? undefined : message || 'lost the hub';
    this.update();
  }

  update(): void {
    const records = this.queue.records();
    const n = records.length;
    if (this.lost !== undefined) {
      this.item.text = `$(debug-disconnect) ${n}`;
      this.item.tooltip = `Hive: the sidecar ${this.lost}; answers wait until the hub is back`;
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
      this.item.show();
      return;
    }
    if (n === 0) {
      this.item.hide();
      return;
    }
    const urgent = records.filter((r) => r.urgent).length;
    this.item.text = `$(comment-discussion) ${n}`;
    this.item.tooltip =
      `Hive: ${n} question${n === 1 ? '' : 's'} from agents waiting` +
      (urgent > 0 ? ` (${urgent} urgent)` : '') +
      ' — click to see them';
    this.item.backgroundColor = urgent > 0 ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.item.show();
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }
}
