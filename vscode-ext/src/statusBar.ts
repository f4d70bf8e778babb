/**
 * The status bar item, where the eye already is: while N prompts
 * wait, `$(comment-discussion) N` (`$(shield) N` while one of them asks
 * permission) and the most urgent countdown (`N · 25s`), on the warning
 * background under 30 seconds or while one is urgent; then, while some
 * expired before anyone saw them, `· K expired unseen`. Hidden when there is
 * nothing to say. Clicking it opens the next question (the human's act).
 * While the sidecar has lost the hub (`hive/connection`), it says so instead.
 * While the hub's store is degraded (`hive/health`), it shows `$(warning) N`
 * on the warning background, even at 0, with the reason in its tooltip.
 */
import * as vscode from 'vscode';
import type { Attention } from './attention';
import { countdownText, hasCountdown, nowSeconds, secondsLeft } from './countdown';
import { asksPermission } from './promptDetail';
import { Command } from './protocol';
import type { PromptQueue } from './queue';

/** Under this many seconds left, the countdown is shown on the warning background. */
export const WARN_SECONDS = 30;
/** Queue sizes the status bar redraws for at every change (`updateSoon`). */
export const BURST_SIZE = 200;
/** Past `BURST_SIZE`, the least time between two redraws. */
export const BURST_DELAY_MS = 100;

export class HiveStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private readonly subscriptions: { dispose(): void }[] = [];
  private lost: string | undefined;
  private degraded: string | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private pending: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly queue: PromptQueue,
    private readonly attention?: Attention,
    private readonly now: () => number = nowSeconds,
    private readonly later: (fn: () => void, ms: number) => ReturnType<typeof setTimeout> = setTimeout,
  ) {
    this.item = vscode.window.createStatusBarItem('hive.pending', vscode.StatusBarAlignment.Left, 100);
    this.item.name = 'Hive: Pending Prompts';
    this.subscriptions.push(queue.onDidChange(() => this.updateSoon()));
    if (attention) {
      this.subscriptions.push(attention.onDidChange(() => this.update()));
    }
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

  /**
   * After a change of the queue: at once while it is short; past
   * `BURST_SIZE` prompts, once per `BURST_DELAY_MS` (a new subscription's
   * snapshot brings up to 100,000, one change each, and each redraw reads them all).
   */
  private updateSoon(): void {
    if (this.queue.size <= BURST_SIZE) {
      this.update();
    } else if (this.pending === undefined) {
      this.pending = this.later(() => {
        this.pending = undefined;
        this.update();
      }, BURST_DELAY_MS);
    }
  }

  update(): void {
    const records = this.queue.records();
    const n = records.length;
    const unseen = this.attention?.count ?? 0;
    const unseenText = unseen > 0 ? ` · ${unseen} expired unseen` : '';
    this.item.command = n > 0 ? Command.answerNext : unseen > 0 ? Command.showExpired : Command.showPending;
    const counting = records.filter((r) => hasCountdown(r, this.queue.get(r.id)?.typed));
    this.tick(counting.length > 0);
    if (this.lost !== undefined) {
      this.item.text = `$(debug-disconnect) ${n}`;
      this.item.tooltip = `Hive: the sidecar ${this.lost}; answers wait until the hub is back`;
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
      this.item.show();
      return;
    }
    const urgent = records.filter((r) => r.urgent).length;
    if (this.degraded !== undefined) {
      this.item.text = `$(warning) ${n}${unseenText}`;
      this.item.tooltip =
        `Hive: the hub's store is degraded: ${this.degraded} (hive-rpc doctor checks it)` +
        (n > 0 ? ` — ${n} question${n === 1 ? '' : 's'} waiting` + (urgent > 0 ? ` (${urgent} urgent)` : '') : '');
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
      this.item.show();
      return;
    }
    if (n === 0 && unseen === 0) {
      this.item.hide();
      return;
    }
    if (n === 0) {
      this.item.text = `$(eye-closed) ${unseen} expired unseen`;
      this.item.tooltip =
        `Hive: ${unseen} question${unseen === 1 ? '' : 's'} expired before you saw ${unseen === 1 ? 'it' : 'them'}` +
        ' — click to see and dismiss';
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
      this.item.show();
      return;
    }
    const now = this.now();
    // The most urgent countdown: the least time left among those counting down.
    const soonest = counting.sort((a, b) => a.deadline_at - b.deadline_at)[0];
    const left = soonest ? secondsLeft(soonest, now) : undefined;
    const countdown = soonest ? countdownText(soonest, now, this.queue.get(soonest.id)?.typed) : null;
    const permissions = records.filter(asksPermission).length;
    const among = [
      ...(urgent > 0 ? [`${urgent} urgent`] : []),
      ...(permissions > 0 ? [`${permissions} permission request${permissions === 1 ? '' : 's'}`] : []),
    ];
    this.item.text =
      `$(${permissions > 0 ? 'shield' : 'comment-discussion'}) ${n}` +
      (countdown ? ` · ${countdown.replace(/ left$/, '')}` : '') +
      unseenText;
    this.item.tooltip =
      `Hive: ${n} question${n === 1 ? '' : 's'} from agents waiting` +
      (among.length > 0 ? ` (${among.join(', ')})` : '') +
      (countdown ? `; the soonest expires in ${countdown.replace(/ left$/, '')}` : '') +
      (unseen > 0 ? `; ${unseen} expired unseen (Hive: Show Expired Unseen Questions)` : '') +
      ' — click to answer the next (Hive: Answer Next Question)';
    const warn = urgent > 0 || (left !== undefined && left < WARN_SECONDS);
    this.item.backgroundColor = warn ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.item.show();
  }

  dispose(): void {
    this.tick(false);
    if (this.pending !== undefined) {
      clearTimeout(this.pending);
      this.pending = undefined;
    }
    for (const s of this.subscriptions.splice(0)) {
      s.dispose();
    }
    this.item.dispose();
  }

  /** Redraw every second while a countdown runs. */
  private tick(on: boolean): void {
    if (on && this.timer === undefined) {
      this.timer = setInterval(() => this.update(), 1000);
    } else if (!on && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/** The hub's reason as shown: one line, without its "store: " prefix, at most 200 characters. */
export function healthReason(degraded: string): string {
  // eslint-disable-next-line no-control-regex
  const line = degraded.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ').replace(/^store: /, '');
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
