/**
 * The status bar item: `$(comment-discussion) N` while N prompts are pending
 * (`$(shield) N` while one of them is a permission request), hidden at 0. Clicking it runs "Hive: Show Pending Prompts". While the
 * sidecar has lost the hub (`hive/connection`), it says so instead. While the
 * hub's store is degraded (`hive/health`), it shows `$(warning) N` on the
 * warning background, even at 0, with the reason in its tooltip.
 */
import * as vscode from 'vscode';
import { Command } from './protocol';
import { isPermission } from './promptDetail';
import type { PromptQueue } from './queue';

export class HiveStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private readonly subscription: { dispose(): void };
  private lost: string | undefined;
  private degraded: string | undefined;

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
    if (!connected) {
      // The next hub says again if it is degraded (right after subscribing).
      this.degraded = undefined;
    }
    this.update();
  }

  /** From `hive/health`: the hub's reason its store is degraded, or null. */
  setHealth(degraded: string | null): void {
    this.degraded = degraded ? healthReason(degraded) : undefined;
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
    const urgent = records.filter((r) => r.urgent).length;
    if (this.degraded !== undefined) {
      this.item.text = `$(warning) ${n}`;
      this.item.tooltip =
        `Hive: the hub's store is degraded: ${this.degraded} (hive-rpc doctor checks it)` +
        (n > 0 ? ` — ${n} question${n === 1 ? '' : 's'} waiting` + (urgent > 0 ? ` (${urgent} urgent)` : '') : '');
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
      this.item.show();
      return;
    }
    if (n === 0) {
      this.item.hide();
      return;
    }
    const permissions = records.filter(isPermission).length;
    const among = [
      ...(urgent > 0 ? [`${urgent} urgent`] : []),
      ...(permissions > 0 ? [`${permissions} permission request${permissions === 1 ? '' : 's'}`] : []),
    ];
    this.item.text = `$(${permissions > 0 ? 'shield' : 'comment-discussion'}) ${n}`;
    this.item.tooltip =
      `Hive: ${n} question${n === 1 ? '' : 's'} from agents waiting` +
      (among.length > 0 ? ` (${among.join(', ')})` : '') +
      ' — click to see them';
    this.item.backgroundColor = urgent > 0 ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.item.show();
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }
}

/** The hub's reason as shown: one line, without its "store: " prefix, at most 200 characters. */
export function healthReason(degraded: string): string {
  // eslint-disable-next-line no-control-regex
  const line = degraded.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/^store: /, '');
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
