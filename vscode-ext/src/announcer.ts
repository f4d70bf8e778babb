/**
 * The announcement of a waiting question: one notification, never focused,
 * that stays while the question waits and goes away by itself when it is
 * answered (here or elsewhere), deferred or withdrawn. It announces the oldest
 * question not deferred, says how many more wait, and offers links: the
 * choices (src/announceText.ts), "Answer…" (opens the box) and "Not now"
 * (defers them all). While a box is open there is none: the box says it.
 *
 * VS Code's message notifications cannot be closed by an extension (one
 * lingered after its question was answered elsewhere and said "no longer
 * pending" when clicked), so this is a progress notification
 * (`window.withProgress`, location Notification): it stays while its task runs
 * and closes when the task ends, which is when the question stops waiting.
 * Its message carries the links (a progress notification has no buttons of
 * the extension's own).
 *
 * A notification that shows the question's text is the question put before
 * the human (docs/protocol.md `hive/shown`): `onShown` is called while the
 * window has the focus (else as soon as it gets it).
 */
import * as vscode from 'vscode';
import { announceMessage } from './announceText';
import type { PromptQueue } from './queue';

export interface AnnouncerOptions {
  queue: PromptQueue;
  /** The prompt open in a box, if any: no notification meanwhile. */
  openId: () => string | undefined;
  /** The notification shows this question to the human (the window has the focus). */
  onShown: (id: string) => void;
}

interface Showing {
  id: string;
  message: string;
  report: (message: string) => void;
  end: () => void;
}

export class Announcer implements vscode.Disposable {
  private showing: Showing | undefined;
  private readonly subscriptions: { dispose(): void }[] = [];
  private disposed = false;

  constructor(private readonly options: AnnouncerOptions) {
    this.subscriptions.push(
      options.queue.onDidChange(() => this.refreshSoon()),
      vscode.window.onDidChangeWindowState((state) => {
        if (state.focused && this.showing) {
          this.options.onShown(this.showing.id);
        }
      }),
    );
  }

  /** The prompt announced now, if any. */
  get currentId(): string | undefined {
    return this.showing?.id;
  }

  private scheduled = false;

  /**
   * Refresh once the change is done: a prompt that arrives and opens at once
   * (with `hive.autoAsk`) is never announced too.
   */
  refreshSoon(): void {
    if (this.scheduled) {
      return;
    }
    this.scheduled = true;
    void Promise.resolve().then(() => {
      this.scheduled = false;
      this.refresh();
    });
  }

  /** Announce what waits now: the oldest prompt not deferred, unless a box is open. */
  refresh(): void {
    const { queue } = this.options;
    const open = this.options.openId();
    const target = this.disposed || open !== undefined ? undefined : queue.next({ includeDeferred: false });
    if (this.showing && this.showing.id !== target?.record.id) {
      const ending = this.showing;
      this.showing = undefined;
      ending.end();
    }
    if (!target) {
      return;
    }
    const message = announceMessage(target.record, queue.waitingBesides(target.record.id));
    if (this.showing) {
      if (this.showing.message !== message) {
        this.showing.message = message;
        this.showing.report(message);
      }
      return;
    }
    this.show(target.record.id, message);
  }

  dispose(): void {
    this.disposed = true;
    const ending = this.showing;
    this.showing = undefined;
    ending?.end();
    for (const s of this.subscriptions.splice(0)) {
      s.dispose();
    }
  }

  private show(id: string, message: string): void {
    let end: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    const showing: Showing = { id, message, report: () => undefined, end };
    this.showing = showing;
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Hive', cancellable: false },
      (progress) => {
        showing.report = (m) => progress.report({ message: m });
        progress.report({ message: showing.message });
        return ended;
      },
    );
    if (vscode.window.state.focused) {
      this.options.onShown(id);
    }
  }
}
