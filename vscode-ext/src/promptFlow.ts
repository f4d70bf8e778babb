/**
 * Asking the human: one prompt at a time, oldest first, in an input box or a
 * quick pick. Behaves like the Emacs client (docs/emacs.md):
 *
 * - a countdown until deadline_at, updated every second, that stops on the
 *   first keystroke, which sends `hive/typing` once;
 * - Enter answers (`hive/respond`), Escape defers (the prompt stays pending
 *   and "Hive: Answer Next Prompt" asks it again), the Decline button
 *   declines (`action: "decline"`);
 * - `hive/dismiss` closes the box when the prompt was closed elsewhere;
 * - a refused answer (-32004) asks again with the hub's message; a prompt
 *   answered or closed elsewhere (-32002, -32003) is dropped;
 * - the keyboard stays the human's: a new prompt opens on its own only once
 *   the human has been idle (src/idle.ts); until then it is announced in a
 *   notification with an "Answer" button, which does not take focus. Keys in
 *   the first moment of a box that opened by itself (`hive.openGraceSeconds`)
 *   were meant for the editor: they go back to it, and the box closes.
 */
import * as vscode from 'vscode';
import { countdownText, nowSeconds, timeLeftText } from './countdown';
import type { HubClient } from './hubClient';
import type { Disposable, Idleness } from './idle';
import { Method, Notification } from './protocol';
import type { DismissParams, PromptRecord, RespondParams } from './protocol';
import { PromptQueue } from './queue';
import type { QueueEntry } from './queue';
import {
  acceptParams,
  cancelParams,
  classifyRespondError,
  declineParams,
  dismissMessage,
  errorMessage,
} from './respond';
import {
  booleanAnswer,
  checkMulti,
  fieldsOf,
  initialText,
  parseFieldText,
  promptKind,
} from './schema';
import type { Field, FieldOption } from './schema';

/** How one step of a prompt ended. */
type StepResult =
  | { kind: 'value'; value: unknown }
  | { kind: 'omit' }
  | { kind: 'defer' }
  | { kind: 'decline' }
  | { kind: 'dismissed' }
  | { kind: 'grace' };

/** How a whole prompt ended. */
type Outcome =
  | { kind: 'answer'; answer: unknown }
  | { kind: 'defer' }
  | { kind: 'decline' }
  | { kind: 'dismissed' }
  /** A key in the opening moment: given back to the editor; asked again at the next pause. */
  | { kind: 'grace' };

interface Timers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export interface PromptFlowOptions {
  /** Who answers (`by`); empty lets the hub record "human". */
  by?: () => string;
  /** Now in float Unix seconds (tests pass a fake clock). */
  now?: () => number;
  /** Timers for the countdown (tests pass fakes). */
  timers?: Timers;
  /** Ask new prompts on their own when nothing is open (default true; `hive.autoAsk`). */
  autoAsk?: boolean | (() => boolean);
  /** Whether the human is idle (default: always, as with `hive.idleSeconds` 0). */
  idle?: Idleness;
  /** Seconds after a prompt opened by itself during which a key is not an answer (default 0: off). */
  openGrace?: () => number;
}

const ALWAYS_IDLE: Idleness = {
  isIdle: () => true,
  activity: () => undefined,
  whenIdle: (fn) => {
    fn();
    return { dispose: () => undefined };
  },
};

/** The currently open UI element, and how to close it from outside. */
interface OpenStep {
  ui: vscode.InputBox | vscode.QuickPick<vscode.QuickPickItem>;
  /** Close it without deferring (the prompt was dismissed, or another is asked). */
  close(result: StepResult): void;
  /** Redraw the countdown and the "N more waiting" text. */
  render(): void;
}

interface Session {
  id: string;
  step?: OpenStep;
  /** An answer, decline or cancel is on its way to the hub. */
  sending: boolean;
  /** It opened by itself (not asked for): its first moment is not for answering. */
  auto: boolean;
  /** When it opened (float seconds, `now()`). */
  openedAt: number;
  /** The editor the human was in when it opened by itself: where early keys go back. */
  target?: vscode.TextEditor;
  /** Keys of the opening moment are being given back: the box takes no more. */
  givingBack: boolean;
}

export const DECLINE_TOOLTIP = 'Decline: tell the agent no answer will come';
/** The button of the notification that announces a prompt. */
export const ANSWER_BUTTON = 'Answer';
/** What the input box says under the input line, after the question. */
export const KEYS_HINT = '(Enter answers, Escape defers)';
const YES_LABEL = 'Yes';
const NO_LABEL = 'No';
const SKIP_LABEL = '(leave empty)';

export class PromptFlow implements vscode.Disposable {
  readonly queue: PromptQueue;
  private session: Session | undefined;
  /** Prompts whose respond/cancel this window sent: their dismiss is ours. */
  private readonly ours = new Set<string>();
  private readonly by: () => string;
  private readonly now: () => number;
  private readonly timers: Timers;
  private readonly autoAsk: () => boolean;
  private readonly idle: Idleness;
  private readonly openGrace: () => number;
  /** Waiting for the human to be idle before asking on our own. */
  private idleWait: Disposable | undefined;
  /** Prompts already announced in a notification (kept across a sidecar restart). */
  private readonly announced = new Set<string>();
  private readonly subscriptions: { dispose(): void }[] = [];
  readonly declineButton: vscode.QuickInputButton;

  constructor(
    private readonly client: HubClient,
    queue?: PromptQueue,
    options: PromptFlowOptions = {},
  ) {
    this.queue = queue ?? new PromptQueue();
    this.by = options.by ?? (() => '');
    this.now = options.now ?? nowSeconds;
    this.timers = options.timers ?? {
      setInterval: (fn, ms) => setInterval(fn, ms),
      clearInterval: (h) => clearInterval(h as ReturnType<typeof setInterval>),
    };
    const autoAsk = options.autoAsk ?? true;
    this.autoAsk = typeof autoAsk === 'function' ? autoAsk : () => autoAsk;
    this.idle = options.idle ?? ALWAYS_IDLE;
    this.openGrace = options.openGrace ?? (() => 0);
    this.declineButton = { iconPath: new vscode.ThemeIcon('circle-slash'), tooltip: DECLINE_TOOLTIP };
    this.subscriptions.push(
      client.onNotification<PromptRecord>(Notification.prompt, (p) => this.onPrompt(p)),
      client.onNotification<DismissParams>(Notification.dismiss, (p) => this.onDismiss(p)),
      // Someone typed (maybe in another editor): the new record stops the countdowns.
      client.onNotification<PromptRecord>(Notification.update, (p) => {
        if (p && typeof p.id === 'string') {
          this.queue.update(p);
        }
      }),
      this.queue.onDidChange(() => this.session?.step?.render()),
    );
  }

  /** The id of the prompt being asked, if any. */
  get currentId(): string | undefined {
    return this.session?.id;
  }

  /**
   * `hive/prompt`: queue it, and ask it if nothing else is open: now if the
   * human is idle, else announce it and ask once they are.
   */
  onPrompt(record: PromptRecord): void {
    if (!record || typeof record.id !== 'string' || record.status !== 'pending') {
      return;
    }
    // A prompt deferred before the sidecar restarted comes back deferred: not asked, not announced.
    const isNew = this.queue.add(record) && !this.queue.get(record.id)?.deferred;
    if (isNew && !this.session && this.autoAsk()) {
      if (!this.idle.isIdle()) {
        this.announce(record);
      }
      this.autoAskNext();
    }
  }

  /** `hive/dismiss`: drop it; close its box if open, saying why. */
  onDismiss(params: DismissParams): void {
    if (!params || typeof params.id !== 'string') {
      return;
    }
    // A queued prompt just leaves the queue (the status bar and view update).
    this.queue.remove(params.id);
    this.announced.delete(params.id);
    if (this.session?.id === params.id) {
      if (!this.ours.has(params.id) && !this.session.sending) {
        void vscode.window.showInformationMessage(plain(dismissMessage(params)));
      }
      // The session's end asks the next prompt.
      this.session.step?.close({ kind: 'dismissed' });
    }
  }

  /** "Hive: Answer Next Prompt": the oldest waiting prompt, deferred ones included. */
  answerNext(): void {
    if (this.session) {
      this.session.step?.ui.show();
      return;
    }
    if (!this.askNext(true)) {
      void vscode.window.showInformationMessage('Hive: no question is waiting');
    }
  }

  /** Answer one prompt (from the tree view or the pending list). */
  answer(id: string): void {
    const entry = this.queue.get(id);
    if (!entry) {
      void vscode.window.showInformationMessage('Hive: that question is no longer pending');
      return;
    }
    if (this.session?.id === id) {
      this.session.step?.ui.show();
      return;
    }
    if (this.session?.sending) {
      return;
    }
    if (this.session) {
      // Put the open one back in the queue (not deferred) and ask this one.
      const open = this.session;
      this.session = undefined;
      open.step?.close({ kind: 'dismissed' });
    }
    this.ask(entry);
  }

  /** Withdraw a prompt as a coordinator, after confirming. */
  async cancel(id: string): Promise<void> {
    const entry = this.queue.get(id);
    if (!entry) {
      void vscode.window.showInformationMessage('Hive: that question is no longer pending');
      return;
    }
    const choice = await vscode.window.showWarningMessage(
      `Withdraw this question from ${entry.record.agent_id}? "${entry.record.question}"`,
      { modal: true },
      'Withdraw',
    );
    if (choice !== 'Withdraw') {
      return;
    }
    this.ours.add(id);
    try {
      await this.client.sendRequest<PromptRecord>(Method.cancel, cancelParams(id, this.by()));
      this.queue.remove(id);
      if (this.session?.id === id) {
        this.session.step?.close({ kind: 'dismissed' });
      }
      void vscode.window.showInformationMessage('Hive: withdrawn');
    } catch (err) {
      if (classifyRespondError(err) === 'gone') {
        this.queue.remove(id);
        if (this.session?.id === id) {
          this.session.step?.close({ kind: 'dismissed' });
        }
        void vscode.window.showInformationMessage(plain(`Hive: ${errorMessage(err)}`));
      } else {
        void vscode.window.showErrorMessage(plain(`Hive: cancel refused: ${errorMessage(err)}`));
      }
    } finally {
      this.ours.delete(id);
    }
  }

  /** "Hive: Show Pending Prompts": pick one to answer. */
  async showPending(): Promise<void> {
    const records = this.queue.records();
    if (records.length === 0) {
      void vscode.window.showInformationMessage('Hive: no question is waiting');
      return;
    }
    const now = this.now();
    const items = records.map((r) => ({
      label: `${r.urgent ? '$(warning) ' : ''}${plain(r.agent_id)}`,
      description: timeLeftText(r, now, this.queue.get(r.id)?.typed),
      detail: plain(r.question),
      id: r.id,
    }));
    const picked = await vscode.window.showQuickPick(items, {
      title: `Hive: ${records.length} pending`,
      placeHolder: 'Pick a question to answer',
      matchOnDetail: true,
    });
    if (picked) {
      this.answer(picked.id);
    }
  }

  /** Forget everything (the sidecar restarts and will resend the pending prompts). */
  reset(): void {
    this.idleWait?.dispose();
    this.idleWait = undefined;
    const open = this.session;
    this.session = undefined;
    open?.step?.close({ kind: 'dismissed' });
    this.queue.clear();
  }

  dispose(): void {
    this.reset();
    this.announced.clear();
    for (const s of this.subscriptions.splice(0)) {
      s.dispose();
    }
  }

  /**
   * Ask the next waiting prompt on our own (not deferred ones): at once if the
   * human is idle, else once they are. The human asking (Answer Next, the
   * view, the notification's button) does not wait.
   */
  private autoAskNext(fromTheBox = false): void {
    if (this.session || !this.autoAsk() || !this.queue.next({ includeDeferred: false })) {
      return;
    }
    if (this.idle.isIdle()) {
      // Right after the human answered, declined or deferred in the box, the
      // next one follows as if asked for: their keys are for it, not an editor.
      this.askNext(false, !fromTheBox);
      return;
    }
    this.idleWait ??= this.idle.whenIdle(() => {
      this.idleWait = undefined;
      this.autoAskNext();
    });
  }

  /** Say that a prompt waits, without taking the keyboard (a notification has no focus). */
  private announce(record: PromptRecord): void {
    if (this.announced.has(record.id)) {
      return;
    }
    this.announced.add(record.id);
    const text = `Hive: ${plain(record.agent_id)} asks: ${plain(record.question)}`;
    const shown = record.urgent
      ? vscode.window.showWarningMessage(text, ANSWER_BUTTON)
      : vscode.window.showInformationMessage(text, ANSWER_BUTTON);
    void Promise.resolve(shown).then((choice) => {
      if (choice === ANSWER_BUTTON) {
        this.answer(record.id);
      }
    });
  }

  /** Ask the next prompt; returns false if none is waiting. */
  private askNext(includeDeferred: boolean, auto = false): boolean {
    if (this.session) {
      return true;
    }
    const entry = this.queue.next({ includeDeferred });
    if (!entry) {
      return false;
    }
    this.ask(entry, auto);
    return true;
  }

  private ask(entry: QueueEntry, auto = false): void {
    const session: Session = {
      id: entry.record.id,
      sending: false,
      auto,
      openedAt: this.now(),
      target: auto ? vscode.window.activeTextEditor : undefined,
      givingBack: false,
    };
    this.session = session;
    this.queue.undefer(session.id);
    void this.run(session, entry).catch((err) => {
      void vscode.window.showErrorMessage(plain(`Hive: ${errorMessage(err)}`));
      if (this.session === session) {
        this.session = undefined;
      }
    });
  }

  private async run(session: Session, entry: QueueEntry): Promise<void> {
    const outcome = await this.read(session, entry);
    if (this.session !== session) {
      return; // replaced (answer() on another prompt, or reset()).
    }
    const id = session.id;
    switch (outcome.kind) {
      case 'dismissed':
        break;
      case 'grace':
        // Not deferred: it opens again at the human's next pause.
        this.idle.activity();
        vscode.window.setStatusBarMessage(
          'Hive: your keys went to your editor; the question waits for your next pause',
          5000,
        );
        break;
      case 'defer':
        if (this.queue.has(id)) {
          this.queue.defer(id);
          void vscode.window.showInformationMessage(
            'Hive: deferred; run "Hive: Answer Next Prompt" to answer it later',
          );
        }
        break;
      case 'decline':
        await this.send(session, declineParams(id, this.by()), undefined);
        break;
      case 'answer':
        await this.send(session, acceptParams(id, outcome.answer, this.by()), outcome.answer);
        break;
    }
    if (this.session === session) {
      this.session = undefined;
      const retry = this.queue.get(id);
      if (retry?.retryMessage !== undefined) {
        this.ask(retry);
      } else {
        this.autoAskNext(outcome.kind === 'answer' || outcome.kind === 'decline' || outcome.kind === 'defer');
      }
    }
  }

  /** Send a respond; on -32004 keep the prompt for a retry with the hub's message. */
  private async send(session: Session, params: RespondParams, answer: unknown): Promise<void> {
    const id = session.id;
    session.sending = true;
    this.ours.add(id);
    try {
      await this.client.sendRequest<PromptRecord>(Method.respond, params);
      this.queue.remove(id);
      if (params.action === 'decline') {
        void vscode.window.showInformationMessage('Hive: declined');
      }
    } catch (err) {
      const message = errorMessage(err);
      switch (classifyRespondError(err)) {
        case 'invalid':
          this.queue.setRetry(id, message, answer);
          void vscode.window.showWarningMessage(plain(`Hive: answer refused: ${message}`));
          break;
        case 'gone':
          this.queue.remove(id);
          void vscode.window.showInformationMessage(plain(`Hive: ${message}`));
          break;
        default:
          this.queue.defer(id);
          void vscode.window.showErrorMessage(plain(`Hive: the answer was not sent: ${message}`));
      }
    } finally {
      session.sending = false;
      this.ours.delete(id);
    }
  }

  /** Read the answer for a prompt, step by step. */
  private async read(session: Session, entry: QueueEntry): Promise<Outcome> {
    const record = entry.record;
    const retryMessage = entry.retryMessage;
    const lastAnswer = entry.lastAnswer;
    this.queue.clearRetry(record.id);
    switch (promptKind(record)) {
      case 'boolean': {
        const r = await this.pickStep(session, entry, {
          items: [{ label: YES_LABEL }, { label: NO_LABEL }],
          placeholder: record.question,
          retryMessage,
        });
        return r.kind === 'value'
          ? { kind: 'answer', answer: booleanAnswer(record, r.value === YES_LABEL) }
          : toOutcome(r);
      }
      case 'choices': {
        const r = await this.pickStep(session, entry, {
          items: (record.choices ?? []).map((c) => ({ label: c })),
          placeholder: record.question,
          retryMessage,
        });
        return r.kind === 'value' ? { kind: 'answer', answer: r.value } : toOutcome(r);
      }
      case 'text': {
        const r = await this.inputStep(session, entry, {
          prompt: record.question,
          value: typeof lastAnswer === 'string' ? lastAnswer : '',
          retryMessage,
        });
        return r.kind === 'value' ? { kind: 'answer', answer: r.value } : toOutcome(r);
      }
      case 'schema':
        return this.readSchema(session, entry, retryMessage, lastAnswer);
    }
  }

  private async readSchema(
    session: Session,
    entry: QueueEntry,
    retryMessage: string | undefined,
    lastAnswer: unknown,
  ): Promise<Outcome> {
    const record = entry.record;
    const fields = fieldsOf(record.schema!);
    const previous = (lastAnswer && typeof lastAnswer === 'object' ? lastAnswer : {}) as Record<string, unknown>;
    const answer: Record<string, unknown> = {};
    for (let i = 0; i < fields.length; i++) {
      if (!this.queue.has(record.id)) {
        return { kind: 'dismissed' };
      }
      const field = fields[i];
      const stepInfo = { field, index: i, count: fields.length };
      const message = i === 0 ? retryMessage : undefined;
      let r: StepResult;
      switch (field.kind) {
        case 'boolean': {
          const items = [{ label: YES_LABEL }, { label: NO_LABEL }];
          if (!field.required) {
            items.push({ label: SKIP_LABEL });
          }
          r = await this.pickStep(session, entry, {
            items,
            placeholder: fieldPlaceholder(record.question, field),
            retryMessage: message,
            stepInfo,
          });
          if (r.kind === 'value') {
            r = r.value === SKIP_LABEL ? { kind: 'omit' } : { kind: 'value', value: r.value === YES_LABEL };
          }
          break;
        }
        case 'enum':
        case 'multi': {
          const options: FieldOption[] = field.options ?? [];
          const items: (vscode.QuickPickItem & { option?: FieldOption })[] = options.map((o) => ({
            label: o.label,
            description: o.label !== String(o.value) ? String(o.value) : undefined,
            option: o,
          }));
          if (field.kind === 'enum' && !field.required) {
            items.push({ label: SKIP_LABEL });
          }
          r = await this.pickStep(session, entry, {
            items,
            placeholder: fieldPlaceholder(record.question, field),
            retryMessage: message,
            stepInfo,
            canSelectMany: field.kind === 'multi',
            selectValue: (item) => item.option?.value,
            validateMany: (values) => checkMulti(field, values),
          });
          if (r.kind === 'value' && field.kind === 'enum' && r.value === undefined) {
            r = { kind: 'omit' };
          }
          if (r.kind === 'value' && field.kind === 'multi' && !field.required && (r.value as unknown[]).length === 0) {
            r = { kind: 'omit' };
          }
          break;
        }
        default:
          r = await this.inputStep(session, entry, {
            prompt: fieldPlaceholder(record.question, field),
            value: initialText(field, previous[field.name]),
            retryMessage: message,
            stepInfo,
            parse: (text) => parseFieldText(field, text),
          });
      }
      if (r.kind === 'omit') {
        continue;
      }
      if (r.kind !== 'value') {
        return toOutcome(r);
      }
      answer[field.name] = r.value;
    }
    return { kind: 'answer', answer };
  }

  /** "Agent NAME needs input", plus the field, countdown and queue length. */
  title(entry: QueueEntry, options: { countdown?: boolean; stepInfo?: StepInfo } = {}): string {
    const r = entry.record;
    let title = `Agent ${r.agent_id} needs input`;
    if (r.urgent) {
      title += ' (urgent)';
    }
    if (options.stepInfo && options.stepInfo.count > 1) {
      title += ` — ${options.stepInfo.field.label} (${options.stepInfo.index + 1}/${options.stepInfo.count})`;
    }
    if (options.countdown) {
      const c = countdownText(r, this.now(), entry.typed);
      if (c) {
        title += ` — ${c}`;
      }
    }
    const waiting = this.queue.waitingBesides(r.id);
    if (waiting > 0) {
      title += ` · ${waiting} more waiting`;
    }
    return title;
  }

  /** Within the first moment of a prompt that opened by itself: keys are not answers. */
  private inGrace(session: Session): boolean {
    const grace = Number(this.openGrace());
    return session.auto && Number.isFinite(grace) && grace > 0 && this.now() - session.openedAt < grace;
  }

  /**
   * A key in the opening moment was meant for the editor the human was typing
   * in: put what the box got there (and a line break for Enter), then close
   * the box without answering or deferring. The text is inserted before the
   * box closes, and again while more keys arrive, so the keys stay in order.
   */
  private async giveBack(
    session: Session,
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

  /** Send `hive/typing` once, on the first keystroke; stops the countdown. */
  private typed(entry: QueueEntry): void {
    if (this.queue.markTyped(entry.record.id)) {
      this.client.sendNotification(Method.typing, { id: entry.record.id });
    }
  }

  /** One input box: free text, or a string/number/integer field. */
  private inputStep(
    session: Session,
    entry: QueueEntry,
    opts: {
      prompt: string;
      value: string;
      retryMessage?: string;
      stepInfo?: StepInfo;
      parse?: (text: string) => ReturnType<typeof parseFieldText>;
    },
  ): Promise<StepResult> {
    return new Promise<StepResult>((resolve) => {
      const box = vscode.window.createInputBox();
      const life = new StepLife(this.timers, box, resolve, () => {
        if (session.step === step) {
          session.step = undefined;
        }
      });
      const disposables = life.disposables;
      const finish = (result: StepResult): void => life.finish(result);
      const render = (): void => {
        box.title = this.title(entry, { stepInfo: opts.stepInfo });
        const countdown = countdownText(entry.record, this.now(), entry.typed);
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
      box.prompt = opts.prompt;
      box.value = opts.value;
      box.buttons = [this.declineButton];
      showMessage(opts.retryMessage);
      render();
      if (countdownText(entry.record, this.now(), entry.typed)) {
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
            this.typed(entry);
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
          }
        }),
        box.onDidHide(() => finish(this.inGrace(session) ? { kind: 'grace' } : { kind: 'defer' })),
      );
      box.show();
    });
  }

  /** One quick pick: choices, Yes/No, an enum or a multi-select field. */
  private pickStep<T extends vscode.QuickPickItem>(
    session: Session,
    entry: QueueEntry,
    opts: {
      items: T[];
      placeholder: string;
      retryMessage?: string;
      stepInfo?: StepInfo;
      canSelectMany?: boolean;
      selectValue?: (item: T) => unknown;
      validateMany?: (values: unknown[]) => string | null;
    },
  ): Promise<StepResult> {
    return new Promise<StepResult>((resolve) => {
      const pick = vscode.window.createQuickPick<T>();
      let problem: string | undefined = opts.retryMessage;
      const life = new StepLife(this.timers, pick, resolve, () => {
        if (session.step === step) {
          session.step = undefined;
        }
      });
      const disposables = life.disposables;
      const finish = (result: StepResult): void => life.finish(result);
      const render = (): void => {
        pick.title = this.title(entry, { countdown: true, stepInfo: opts.stepInfo });
        pick.placeholder = problem ? `${problem} — ${opts.placeholder}` : opts.placeholder;
        if (!countdownText(entry.record, this.now(), entry.typed)) {
          life.stopTicking();
        }
      };
      const step: OpenStep = { ui: pick as unknown as vscode.QuickPick<vscode.QuickPickItem>, close: finish, render };
      session.step = step;
      pick.ignoreFocusOut = true;
      pick.items = opts.items;
      pick.canSelectMany = opts.canSelectMany ?? false;
      pick.matchOnDescription = true;
      pick.buttons = [this.declineButton];
      render();
      if (countdownText(entry.record, this.now(), entry.typed)) {
        life.startTicking(render);
      }
      const valueOf = (item: T): unknown => (opts.selectValue ? opts.selectValue(item) : item.label);
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
            this.typed(entry);
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
            const values = pick.selectedItems.map(valueOf);
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
          if (item) {
            finish({ kind: 'value', value: valueOf(item) });
          }
        }),
        pick.onDidTriggerButton((button) => {
          if (button === this.declineButton) {
            finish({ kind: 'decline' });
          }
        }),
        pick.onDidHide(() => finish(this.inGrace(session) ? { kind: 'grace' } : { kind: 'defer' })),
      );
      pick.show();
    });
  }
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

interface StepInfo {
  field: Field;
  index: number;
  count: number;
}

function toOutcome(r: StepResult): Outcome {
  switch (r.kind) {
    case 'defer':
    case 'decline':
    case 'dismissed':
    case 'grace':
      return { kind: r.kind };
    default:
      throw new Error(`unexpected step result ${r.kind}`);
  }
}

/**
 * The input box's message: the question and the keys, or a problem (a value
 * the field refuses, the hub's reason for refusing an answer) before them.
 */
export function inputMessage(question: string, problem?: string): vscode.InputBoxValidationMessage {
  if (problem) {
    return {
      message: `${plain(problem)} — ${plain(question)} ${KEYS_HINT}`,
      severity: vscode.InputBoxValidationSeverity.Error,
    };
  }
  return { message: `${plain(question)} ${KEYS_HINT}`, severity: vscode.InputBoxValidationSeverity.Info };
}

/**
 * Agent text as plain text. The quick input's message and the notifications
 * render `$(name)` as an icon and `[label](command:...)` as a link that runs a
 * command when clicked; an agent's question must not do either. A zero-width
 * space after `$` and `]` leaves the text as it reads and breaks both.
 */
export function plain(text: string): string {
  return text.replace(/\$\(/g, () => '$\u200b(').replace(/\]\(/g, () => ']\u200b(');
}

function fieldPlaceholder(question: string, field: Field): string {
  let text = `${question} (${field.label}${field.required ? '' : ', optional'})`;
  if (field.description) {
    text += ` — ${field.description}`;
  }
  return text;
}
