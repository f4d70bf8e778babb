/**
 * "Is the human typing?": VS Code has no global key hook, so activity is what
 * typing and moving around produce (a text document changing in a visible
 * editor, a selection moving, another editor becoming active). A question
 * opens on its own only once none of these happened for `hive.idleSeconds`:
 * an input box that opens mid-sentence takes the rest of the sentence, and
 * Enter sends it to the agent. The Emacs package follows the same
 * rule with its idle timer (docs/emacs.md).
 *
 * No `vscode` import at run time: `watchEditorActivity` takes the event
 * sources as arguments, so the tracker is tested without an editor.
 */
import type * as vscode from 'vscode';

export interface Disposable {
  dispose(): void;
}

export interface IdleTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** What PromptFlow needs to know about the human's activity. */
export interface Idleness {
  /** True when nothing happened for the idle time (always true at 0). */
  isIdle(): boolean;
  /** Run `fn` once the human is idle (at once, synchronously, if idle now). */
  whenIdle(fn: () => void): Disposable;
  /** The human did something the editor's events do not show (keys in a closed box). */
  activity(): void;
}

const realTimers: IdleTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/**
 * Remembers when the human last did something, and wakes waiters once that is
 * `seconds()` ago. One timer at most, set for the earliest moment the human
 * can be idle; activity only moves a timestamp, and a timer that fires too
 * early (activity came since) is set again for the new moment.
 */
export class IdleTracker implements Idleness, Disposable {
  private last = Number.NEGATIVE_INFINITY;
  private readonly waiters = new Set<() => void>();
  private timer: unknown;

  constructor(
    /** The idle time in seconds (`hive.idleSeconds`), read at each check. */
    private readonly seconds: () => number,
    /** Now in milliseconds (tests pass a fake clock). */
    private readonly now: () => number = () => Date.now(),
    private readonly timers: IdleTimers = realTimers,
  ) {}

  /** The human did something. */
  activity(): void {
    this.last = this.now();
  }

  isIdle(): boolean {
    const s = this.idleMs();
    return s <= 0 || this.now() - this.last >= s;
  }

  whenIdle(fn: () => void): Disposable {
    if (this.isIdle()) {
      fn();
      return { dispose: () => undefined };
    }
    this.waiters.add(fn);
    this.arm();
    return {
      dispose: () => {
        this.waiters.delete(fn);
        if (this.waiters.size === 0) {
          this.disarm();
        }
      },
    };
  }

  /** Check again now (the idle time setting changed). */
  recheck(): void {
    this.disarm();
    this.check();
  }

  dispose(): void {
    this.waiters.clear();
    this.disarm();
  }

  private idleMs(): number {
    const s = Number(this.seconds());
    return Number.isFinite(s) && s > 0 ? s * 1000 : 0;
  }

  private arm(): void {
    if (this.timer !== undefined || this.waiters.size === 0) {
      return;
    }
    const wait = Math.max(0, this.last + this.idleMs() - this.now());
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      this.check();
    }, wait);
  }

  private disarm(): void {
    if (this.timer !== undefined) {
      this.timers.clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private check(): void {
    if (this.waiters.size === 0) {
      return;
    }
    if (!this.isIdle()) {
      this.arm();
      return;
    }
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const fn of waiting) {
      fn();
    }
  }
}

/**
 * The opening moment (`hive.openGraceSeconds`, default 1): the seconds after a
 * question opened by itself during which a key goes back to the editor. Off
 * when `hive.idleSeconds` is 0: a question that opens at once by choice would
 * close again at every key.
 */
export function openGraceSeconds(idleSeconds: number, setting: unknown): number {
  if (!(idleSeconds > 0)) {
    return 0;
  }
  const n = Number(setting);
  return setting !== undefined && setting !== null && Number.isFinite(n) && n >= 0 ? n : 1;
}

/** The parts of `vscode.window` and `vscode.workspace` that show activity. */
export interface ActivitySources {
  window: Pick<
    typeof vscode.window,
    'onDidChangeTextEditorSelection' | 'onDidChangeActiveTextEditor' | 'visibleTextEditors'
  >;
  workspace: Pick<typeof vscode.workspace, 'onDidChangeTextDocument'>;
}

/**
 * Feed the tracker from the editor's events. A document change counts only in
 * a visible editor (what typing changes; not a file reloaded in the
 * background), and never in an output channel (our own log would keep the
 * human "busy" forever).
 */
export function watchEditorActivity(tracker: IdleTracker, sources: ActivitySources): Disposable {
  const counts = (doc: vscode.TextDocument): boolean => doc.uri.scheme !== 'output';
  const subscriptions = [
    sources.workspace.onDidChangeTextDocument((e) => {
      if (
        e.contentChanges.length > 0 &&
        counts(e.document) &&
        sources.window.visibleTextEditors.some((ed) => ed.document === e.document)
      ) {
        tracker.activity();
      }
    }),
    sources.window.onDidChangeTextEditorSelection((e) => {
      if (counts(e.textEditor.document)) {
        tracker.activity();
      }
    }),
    sources.window.onDidChangeActiveTextEditor(() => tracker.activity()),
  ];
  return {
    dispose: () => {
      for (const s of subscriptions) {
        s.dispose();
      }
    },
  };
}
