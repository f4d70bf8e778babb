/**
 * The widgets of one prompt's steps: an input box or a quick pick, open until
 * the human answers, declines (the button), defers (Escape, or anything that
 * hides it), or the prompt is closed from outside. Each shows the agent, the
 * field, the countdown (ticking every second until the first keystroke, which
 * sends `hive/typing` through `onFirstKey`) and how many more prompts wait.
 *
 * A prompt with a detail (a permission's whole tool input, src/promptDetail.ts)
 * has a "Show details" button, and in a single pick a first item of that name
 * whose own detail line previews it: Enter there shows the whole of it in a
 * read-only editor (`showDetail`) and answers nothing, so the human sees what
 * runs before picking an answer.
 *
 * The keyboard stays the human's: in the first moment of a box that opened by
 * itself (`hive.openGraceSeconds`), keys were meant for the editor: they go
 * back to it, and the step ends as `grace`.
 *
 * What the steps are and how their results make the answer is
 * src/promptForm.ts (pure); which prompt is asked, src/promptFlow.ts.
 */
import * as vscode from 'vscode';
import { autoDismissText, countdownText } from './countdown';
import { iconless, plain, visible } from './plainText';
import {
  asksPermission,
  boxQuestion,
  detailOf,
  detailPreview,
  HUB_AGENT,
  SHOW_DETAIL_DESCRIPTION,
  SHOW_DETAIL_LABEL,
  SHOW_DETAIL_TOOLTIP,
} from './promptDetail';
import type { PromptRecord } from './protocol';
import type { InputRequest, PickItem, PickRequest, StepAsker, StepInfo, StepResult } from './promptForm';
import type { PromptQueue, QueueEntry } from './queue';

export const DECLINE_TOOLTIP = 'Decline: tell the agent no answer will come';
/** What the input box says under the input line, after the question. */
export const KEYS_HINT = '(Enter answers, Escape defers)';

export interface Timers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

/** The currently open UI element, and how to close it from outside. */
export interface OpenStep {
  ui: vscode.InputBox | vscode.QuickPick<vscode.QuickPickItem>;
  /** Close it without deferring (the prompt was dismissed, or another is asked). */
  close(result: StepResult): void;
  /** Redraw the countdown and the "N more waiting" text. */
  render(): void;
}

/** One prompt being asked, as its steps see it. */
export interface StepSession {
  readonly id: string;
  step?: OpenStep;
  /** It opened by itself (not asked for): its first moment is not for answering. */
  readonly auto: boolean;
  /** When it opened (float seconds, `now()`). */
  readonly openedAt: number;
  /** The editor the human was in when it opened by itself: where early keys go back. */
  readonly target?: vscode.TextEditor;
  /** Keys of the opening moment are being given back: the box takes no more. */
  givingBack: boolean;
}

export interface PromptStepsOptions {
  queue: PromptQueue;
  /** Now in float Unix seconds. */
  now: () => number;
  /** Timers for the countdown. */
  timers: Timers;
  /** Seconds after a prompt opened by itself during which a key is not an answer. */
  openGrace: () => number;
  /** The human's first keystroke in a prompt (once per prompt): stop its countdown. */
  onFirstKey: (entry: QueueEntry) => void;
  /** Show the prompt's whole detail without answering (src/detailDocuments.ts). */
  showDetail?: (record: PromptRecord) => void;
}

type Item = vscode.QuickPickItem & { value: unknown };

/** The value of the "Show details" item: not an answer. */
const SHOW_DETAIL = Symbol('show detail');

export class PromptSteps {
  readonly declineButton: vscode.QuickInputButton;
  readonly detailButton: vscode.QuickInputButton;

  constructor(private readonly options: PromptStepsOptions) {
    this.declineButton = { iconPath: new vscode.ThemeIcon('circle-slash'), tooltip: DECLINE_TOOLTIP };
    this.detailButton = { iconPath: new vscode.ThemeIcon('file-code'), tooltip: SHOW_DETAIL_TOOLTIP };
  }

  /** The title bar's buttons: "Show details" when there is a detail, then Decline. */
  private buttonsFor(record: PromptRecord): vscode.QuickInputButton[] {
    return detailOf(record) === undefined ? [this.declineButton] : [this.detailButton, this.declineButton];
  }

  private showDetail(record: PromptRecord): void {
    this.options.showDetail?.(record);
  }

  /** The steps of one session, as the form walker (src/promptForm.ts) asks them. */
  askerFor(session: StepSession, entry: QueueEntry): StepAsker {
    return {
      pick: (request) => this.pick(session, entry, request),
      input: (request) => this.input(session, entry, request),
    };
  }

  /** "Agent NAME needs input", plus the field, countdown and queue length. */
  title(entry: QueueEntry, options: { countdown?: boolean; stepInfo?: StepInfo } = {}): string {
    const r = entry.record;
    let who = r.agent_id === HUB_AGENT ? 'The hub itself (hive-rpc)' : `Agent ${iconless(r.agent_id)}`;
    // Where the asker runs ("Claude Code in ~/src/app", "project ~/src/app"): which of
    // several agents of the same name this is.
    if (typeof r.origin === 'string' && r.origin.trim() !== '') {
      who += ` (${iconless(r.origin.trim())})`;
    }
    let title = asksPermission(r) ? `${who} asks permission` : `${who} needs input`;
    if (r.urgent) {
      title += ' (urgent)';
    }
    const step = options.stepInfo;
    if (step && step.count > 1) {
      title += ` — ${iconless(step.field.label)} (${step.index + 1}/${step.count})`;
    } else if (step && step.field.label !== step.field.name) {
      // A lone field with a title of its own (a Claude Code question's header).
      title += ` — ${iconless(step.field.label)}`;
    }
    if (options.countdown) {
      const c = countdownText(r, this.options.now(), entry.typed);
      if (c) {
        title += ` — ${c}`;
      }
    }
    const waiting = this.options.queue.waitingBesides(r.id);
    if (waiting > 0) {
      title += ` · ${waiting} more waiting`;
    }
    return title;
  }

  /** Within the first moment of a prompt that opened by itself: keys are not answers. */
  private inGrace(session: StepSession): boolean {
    const grace = Number(this.options.openGrace());
    return session.auto && Number.isFinite(grace) && grace > 0 && this.options.now() - session.openedAt < grace;
  }

  /**
   * A key in the opening moment was meant for the editor the human was typing
   * in: put what the box got there (and a line break for Enter), then close
   * the box without answering or deferring. The text is inserted before the
   * box closes, and again while more keys arrive, so the keys stay in order.
   */
  private async giveBack(
    session: StepSession,
    ui: { value: string },
    extra: string,
    finish: (result: StepResult) => void,
  ): Promise<void> {
    session.givingBack = true;
    const target = session.target;
    let sent = '';
    try {
      for (;;) {
        const want = ui.value + extra;
        if (want.length <= sent.length || !want.startsWith(sent) || !target || target.document.isClosed) {
          break;
        }
        const more = want.slice(sent.length);
        sent = want;
        const ok = await target.edit((b) => {
          for (const selection of target.selections) {
            b.replace(selection, more);
          }
        });
        if (!ok) {
          break;
        }
      }
    } finally {
      finish({ kind: 'grace' });
    }
  }

  /** One input box: free text, or a string/number/integer field. */
  input(session: StepSession, entry: QueueEntry, opts: InputRequest): Promise<StepResult> {
    const { now, timers } = this.options;
    return new Promise<StepResult>((resolve) => {
      const box = vscode.window.createInputBox();
      const life = new StepLife(timers, box, resolve, () => {
        if (session.step === step) {
          session.step = undefined;
        }
      });
      const disposables = life.disposables;
      const finish = (result: StepResult): void => life.finish(result);
      const render = (): void => {
        box.title = this.title(entry, { stepInfo: opts.stepInfo });
        const countdown = autoDismissText(entry.record, now(), entry.typed);
        box.placeholder = countdown ?? '';
        if (!countdown) {
          life.stopTicking();
        }
      };
      // The line under the input shows `validationMessage` if set, else the
      // prompt followed by VS Code's own "(Press 'Enter' to confirm or 'Escape'
      // to cancel)", which is wrong here (Escape defers). So the message is
      // always set: the question and our keys, and a problem goes before the
      // question, never instead of it.
      const showMessage = (problem?: string): void => {
        box.validationMessage = inputMessage(opts.prompt, problem);
      };
      const step: OpenStep = { ui: box, close: finish, render };
      session.step = step;
      box.ignoreFocusOut = true;
      box.prompt = plain(boxQuestion(opts.prompt));
      // Text left in this step by an Escape comes back (a refused answer's text wins).
      const draftKey = opts.stepInfo?.field.name ?? '';
      const draft = opts.retryMessage === undefined ? this.options.queue.draft(entry.record.id, draftKey) : undefined;
      box.value = draft ?? opts.value;
      if (draft !== undefined) {
        // The cursor after the text, not the text selected (a key would replace it).
        box.valueSelection = [draft.length, draft.length];
      }
      box.buttons = this.buttonsFor(entry.record);
      showMessage(opts.retryMessage);
      render();
      if (countdownText(entry.record, now(), entry.typed)) {
        life.startTicking(render);
      }
      disposables.push(
        box.onDidChangeValue((text) => {
          if (session.givingBack) {
            return;
          }
          if (this.inGrace(session)) {
            void this.giveBack(session, box, '', finish);
            return;
          }
          if (!entry.typed) {
            this.options.onFirstKey(entry);
            render();
          }
          if (opts.parse) {
            const p = opts.parse(text);
            showMessage(p.ok ? undefined : p.message);
          } else {
            showMessage();
          }
        }),
        box.onDidAccept(() => {
          if (session.givingBack) {
            return;
          }
          if (this.inGrace(session)) {
            void this.giveBack(session, box, '\n', finish);
            return;
          }
          if (!opts.parse) {
            this.options.queue.setDraft(entry.record.id, draftKey, '');
            finish({ kind: 'value', value: box.value });
            return;
          }
          const p = opts.parse(box.value);
          if (!p.ok) {
            showMessage(p.message);
          } else if ('omit' in p) {
            finish({ kind: 'omit' });
          } else {
            finish({ kind: 'value', value: p.value });
          }
        }),
        box.onDidTriggerButton((button) => {
          if (button === this.declineButton) {
            finish({ kind: 'decline' });
          } else if (button === this.detailButton) {
            this.showDetail(entry.record);
          }
        }),
        box.onDidHide(() => {
          if (!session.givingBack) {
            this.options.queue.setDraft(entry.record.id, draftKey, box.value);
          }
          finish(this.inGrace(session) ? { kind: 'grace' } : { kind: 'defer' });
        }),
      );
      box.show();
    });
  }

  /** One quick pick: choices, Yes/No, an enum or a multi-select field. */
  pick(session: StepSession, entry: QueueEntry, opts: PickRequest): Promise<StepResult> {
    const { now, timers } = this.options;
    return new Promise<StepResult>((resolve) => {
      const pick = vscode.window.createQuickPick<Item>();
      let problem: string | undefined = opts.retryMessage;
      const life = new StepLife(timers, pick, resolve, () => {
        if (session.step === step) {
          session.step = undefined;
        }
      });
      const disposables = life.disposables;
      const finish = (result: StepResult): void => life.finish(result);
      const render = (): void => {
        pick.title = this.title(entry, { countdown: true, stepInfo: opts.stepInfo });
        // A placeholder is plain text (no icons): only what cannot be seen goes.
        pick.placeholder = visible(
          problem ? `${problem} — ${boxQuestion(opts.placeholder)}` : boxQuestion(opts.placeholder),
        );
        if (!countdownText(entry.record, now(), entry.typed)) {
          life.stopTicking();
        }
      };
      const step: OpenStep = { ui: pick as unknown as vscode.QuickPick<vscode.QuickPickItem>, close: finish, render };
      session.step = step;
      pick.ignoreFocusOut = true;
      const detail = detailOf(entry.record);
      const items = opts.items.map(toQuickPickItem);
      if (detail !== undefined && !opts.canSelectMany) {
        items.unshift({
          label: SHOW_DETAIL_LABEL,
          description: SHOW_DETAIL_DESCRIPTION,
          detail: detailPreview(detail),
          alwaysShow: true,
          value: SHOW_DETAIL,
        });
      }
      pick.items = items;
      // Opened by itself: no choice is pre-selected, so an Enter meant for
      // something else accepts nothing (the human moves to a choice first).
      const noPreselection = (): void => {
        if (session.auto) {
          pick.activeItems = [];
        }
      };
      noPreselection();
      pick.canSelectMany = opts.canSelectMany ?? false;
      pick.matchOnDescription = true;
      pick.buttons = this.buttonsFor(entry.record);
      render();
      if (countdownText(entry.record, now(), entry.typed)) {
        life.startTicking(render);
      }
      disposables.push(
        pick.onDidChangeValue(() => {
          if (session.givingBack) {
            return;
          }
          if (this.inGrace(session)) {
            void this.giveBack(session, pick, '', finish);
            return;
          }
          if (!entry.typed) {
            this.options.onFirstKey(entry);
            render();
          }
        }),
        pick.onDidAccept(() => {
          if (session.givingBack) {
            return;
          }
          if (this.inGrace(session)) {
            void this.giveBack(session, pick, '\n', finish);
            return;
          }
          if (pick.canSelectMany) {
            const values = pick.selectedItems.map((item) => item.value);
            const bad = opts.validateMany?.(values) ?? null;
            if (bad) {
              problem = bad;
              render();
              return;
            }
            finish({ kind: 'value', value: values });
            return;
          }
          const item = pick.selectedItems[0] ?? pick.activeItems[0];
          if (item?.value === SHOW_DETAIL) {
            this.showDetail(entry.record);
          } else if (item) {
            finish({ kind: 'value', value: item.value });
          }
        }),
        pick.onDidTriggerButton((button) => {
          if (button === this.declineButton) {
            finish({ kind: 'decline' });
          } else if (button === this.detailButton) {
            this.showDetail(entry.record);
          }
        }),
        pick.onDidHide(() => finish(this.inGrace(session) ? { kind: 'grace' } : { kind: 'defer' })),
      );
      pick.show();
      noPreselection();
    });
  }
}

/** An item as the pick shows it: agent text (a choice, an option's title and
 * description) with no icon and nothing invisible (`iconless`); its value, the
 * answer, stays exact. */
function toQuickPickItem(item: PickItem): Item {
  return {
    label: iconless(item.label),
    ...(item.description === undefined ? {} : { description: iconless(item.description) }),
    ...(item.detail === undefined ? {} : { detail: iconless(item.detail) }),
    value: item.value,
  };
}

/**
 * The life of one open input box or quick pick: the countdown timer that ticks
 * while it is open, and its end, which happens once (answer, decline, defer or
 * dismiss) and then stops the timer, runs `onEnd`, disposes the listeners and
 * the widget, and resolves the step.
 */
class StepLife {
  readonly disposables: { dispose(): void }[] = [];
  private timer: unknown;
  private done = false;

  constructor(
    private readonly timers: Timers,
    private readonly ui: { hide(): void; dispose(): void },
    private readonly resolve: (result: StepResult) => void,
    private readonly onEnd: () => void,
  ) {}

  startTicking(tick: () => void): void {
    this.timer = this.timers.setInterval(tick, 1000);
  }

  stopTicking(): void {
    if (this.timer !== undefined) {
      this.timers.clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  finish(result: StepResult): void {
    if (this.done) {
      return;
    }
    this.done = true;
    this.stopTicking();
    this.onEnd();
    for (const d of this.disposables) {
      d.dispose();
    }
    this.ui.hide();
    this.ui.dispose();
    this.resolve(result);
  }
}

/**
 * The input box's message: the question and the keys, or a problem (a value
 * the field refuses, the hub's reason for refusing an answer) before them.
 */
export function inputMessage(whole: string, problem?: string): vscode.InputBoxValidationMessage {
  // A long question's start: the box would overflow the window (its whole text is beside).
  const question = boxQuestion(whole);
  if (problem) {
    return {
      message: `${plain(problem)} — ${plain(question)} ${KEYS_HINT}`,
      severity: vscode.InputBoxValidationSeverity.Error,
    };
  }
  return { message: `${plain(question)} ${KEYS_HINT}`, severity: vscode.InputBoxValidationSeverity.Info };
}
