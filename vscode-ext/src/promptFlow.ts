/**
 * Asking the human: one prompt at a time, oldest first, in an input box or a
 * quick pick. Behaves like the Emacs client (docs/emacs.md):
 *
 * - a countdown until deadline_at, updated every second, that stops on the
 *   first keystroke, which sends `hive/typing` once;
 * - Enter answers (`hive/respond`), Escape defers (the prompt stays pending
 *   and "Hive: Answer Next Prompt" asks it again; if the human had typed into
 *   it, `hive/defer` gives its countdown back), the Decline button
 *   declines (`action: "decline"`);
 * - `hive/dismiss` closes the box when the prompt was closed elsewhere;
 * - a refused answer (-32004) asks again with the hub's message; a prompt
 *   answered or closed elsewhere (-32002, -32003) is dropped;
 * - the keyboard is the human's: a prompt opens only when the
 *   human asks for it (Answer Next, the status bar, a notification's link, a
 *   Pending view row). Until then it is announced without focus: the status
 *   bar's count and countdown, and one notification (src/announcer.ts) that
 *   goes away when the prompt stops waiting. Opening by itself is an opt-in
 *   (`hive.autoAsk`, option `autoAsk`): then a prompt opens once the human
 *   has been idle (src/idle.ts), never while a terminal is open
 *   (`terminalActive`), with no choice pre-selected, and keys in its first
 *   moment (`hive.openGraceSeconds`) go back to the editor; after an Escape
 *   nothing opens by itself until a new prompt arrives;
 * - "Not now" for all: `deferAll` defers the whole queue;
 * - a prompt put before the human is reported (`hive/shown`, src/attention.ts).
 *
 * This module is the queue's side: which prompt is asked when, and what its
 * outcome does (send, defer, drop, ask again). The steps a prompt takes and
 * the answer they make are src/promptForm.ts (pure); the widgets that show
 * them, src/promptSteps.ts.
 */
import * as vscode from 'vscode';
import { nowSeconds, timeLeftText } from './countdown';
import { Announcer } from './announcer';
import { Attention } from './attention';
import type { HubClient } from './hubClient';
import type { Disposable, Idleness } from './idle';
import { plain } from './plainText';
import { askerOf, detailOf, LONG_QUESTION_CHARS } from './promptDetail';
import { confirmAnswer } from './confirmAnswer';
import { readAnswer } from './promptForm';
import type { Outcome } from './promptForm';
import { PromptSteps } from './promptSteps';
import type { StepSession, Timers } from './promptSteps';
import { ClientNotifications, Requests, ServerNotifications } from './protocol';
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

export interface PromptFlowOptions {
  /** Who answers (`by`); empty lets the hub record "human". */
  by?: () => string;
  /** Now in float Unix seconds (tests pass a fake clock). */
  now?: () => number;
  /** Timers for the countdown (tests pass fakes). */
  timers?: Timers;
  /** Ask new prompts on their own when nothing is open (default true here; `hive.autoAsk`, default off). */
  autoAsk?: boolean | (() => boolean);
  /** A terminal is open in the window: nothing opens by itself (default: none). */
  terminalActive?: () => boolean;
  /** Tell the hub what was shown, and keep the expired-unseen questions (default: one of its own). */
  attention?: Attention;
  /** Whether the human is idle (default: always, as with `hive.idleSeconds` 0). */
  idle?: Idleness;
  /** Seconds after a prompt opened by itself during which a key is not an answer (default 0: off). */
  openGrace?: () => number;
  /** Show a prompt's whole detail without answering (src/detailDocuments.ts; default: nothing). */
  showDetail?: (record: PromptRecord) => void;
}

const ALWAYS_IDLE: Idleness = {
  isIdle: () => true,
  activity: () => undefined,
  whenIdle: (fn) => {
    fn();
    return { dispose: () => undefined };
  },
};

interface Session extends StepSession {
  /** An answer, decline or cancel is on its way to the hub. */
  sending: boolean;
}


export class PromptFlow implements vscode.Disposable {
  readonly queue: PromptQueue;
  private session: Session | undefined;
  /** Prompts whose respond/cancel this window sent: their dismiss is ours. */
  private readonly ours = new Set<string>();
  private readonly by: () => string;
  private readonly now: () => number;
  private readonly autoAsk: () => boolean;
  private readonly idle: Idleness;
  /** Waiting for the human to be idle before asking on our own. */
  private idleWait: Disposable | undefined;
  /** The human said "not now" (Escape, a hidden box, Not now): nothing opens by itself until a new prompt comes. */
  private autoPaused = false;
  private readonly terminalActive: () => boolean;
  readonly attention: Attention;
  readonly announcer: Announcer;
  private readonly showDetail: ((record: PromptRecord) => void) | undefined;
  private readonly subscriptions: { dispose(): void }[] = [];
  /** The widgets of the prompt being asked. */
  private readonly steps: PromptSteps;

  constructor(
    private readonly client: HubClient,
    queue?: PromptQueue,
    options: PromptFlowOptions = {},
  ) {
    this.queue = queue ?? new PromptQueue();
    this.by = options.by ?? (() => '');
    this.now = options.now ?? nowSeconds;
    const autoAsk = options.autoAsk ?? true;
    this.autoAsk = typeof autoAsk === 'function' ? autoAsk : () => autoAsk;
    this.idle = options.idle ?? ALWAYS_IDLE;
    this.terminalActive = options.terminalActive ?? (() => false);
    this.attention = options.attention ?? new Attention(client);
    this.showDetail = options.showDetail;
    this.steps = new PromptSteps({
      queue: this.queue,
      now: this.now,
      timers: options.timers ?? {
        setInterval: (fn, ms) => setInterval(fn, ms),
        clearInterval: (h) => clearInterval(h as ReturnType<typeof setInterval>),
      },
      openGrace: options.openGrace ?? (() => 0),
      onFirstKey: (entry) => this.typed(entry),
      showDetail: options.showDetail,
    });
    this.subscriptions.push(
      client.onNotification(ServerNotifications.prompt, (p) => this.onPrompt(p)),
      client.onNotification(ServerNotifications.dismiss, (p) => this.onDismiss(p)),
      client.onNotification(ServerNotifications.unseenCleared, (p) => {
        if (p && typeof p.id === 'string') {
          this.attention.cleared(p.id);
        }
      }),
      // Someone typed (maybe in another editor): the new record stops the countdowns.
      // An expired one the human never saw leaves its trace (src/attention.ts).
      client.onNotification(ServerNotifications.update, (p) => {
        if (p && typeof p.id === 'string') {
          this.queue.update(p);
          this.attention.note(p);
        }
      }),
      this.queue.onDidChange(() => this.session?.step?.render()),
    );
    this.announcer = new Announcer({
      queue: this.queue,
      openId: () => this.session?.id,
      onShown: (id) => this.attention.shown(id),
    });
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
    // A prompt deferred before the sidecar restarted (or the window reloaded)
    // comes back deferred: not asked, not announced.
    const isNew = this.queue.add(record) && !this.queue.get(record.id)?.deferred;
    if (isNew) {
      this.autoPaused = false;
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
    if (params.status === 'expired' && params.unseen !== false) {
      // Expired unseen (or an older hub that does not say): the hub's list has its record.
      void this.attention.refresh();
    }
    if (this.session?.id === params.id) {
      if (!this.ours.has(params.id) && !this.session.sending) {
        void vscode.window.showInformationMessage(plain(dismissMessage(params)));
      }
      // The session's end asks the next prompt.
      this.session.step?.close({ kind: 'dismissed' });
    }
  }

  /** "Hive: Answer Next Question": the oldest waiting prompt, deferred ones included. */
  answerNext(): void {
    if (this.session) {
      this.session.step?.ui.show();
      return;
    }
    if (!this.askNext(true)) {
      void vscode.window.showInformationMessage('Hive: no question is waiting');
    }
  }

  /** "Not now" for all: every waiting prompt deferred, the open one too; nothing opens by itself until a new one comes. */
  deferAll(): void {
    this.autoPaused = true;
    this.idleWait?.dispose();
    this.idleWait = undefined;
    const open = this.session;
    const n = this.queue.deferAll(open?.id);
    if (open) {
      // Its end defers it (and gives its countdown back if it was typed into).
      open.step?.ui.hide();
    }
    const total = n + (open ? 1 : 0);
    vscode.window.setStatusBarMessage(
      total === 0
        ? 'Hive: no question is waiting'
        : `Hive: ${total} question${total === 1 ? '' : 's'} deferred; Hive: Answer Next Question opens them`,
      5000,
    );
  }

  /** Defer one prompt (not asked again by itself). */
  deferOne(id: string): void {
    if (this.session?.id === id) {
      this.session.step?.ui.hide();
      return;
    }
    this.autoPaused = true;
    this.queue.defer(id);
  }

  /** Answer a prompt with one of its choices (a notification's link): the human read it there. */
  async answerWith(id: string, choice: string): Promise<void> {
    const entry = this.queue.get(id);
    if (!entry || !Array.isArray(entry.record.choices) || !entry.record.choices.includes(choice)) {
      vscode.window.setStatusBarMessage('Hive: that question is no longer waiting', 5000);
      return;
    }
    if (this.session?.id === id) {
      return;
    }
    this.attention.shown(id);
    this.ours.add(id);
    try {
      await this.client.sendRequest(Requests.respond, acceptParams(id, choice, this.by()));
      this.queue.remove(id);
      vscode.window.setStatusBarMessage(plain(`Hive: answered ${choice}`), 5000);
    } catch (err) {
      if (classifyRespondError(err) === 'gone') {
        this.queue.remove(id);
      }
      void vscode.window.showWarningMessage(plain(`Hive: the answer was not sent: ${errorMessage(err)}`));
    } finally {
      this.ours.delete(id);
    }
  }

  /** Look again whether a prompt may open by itself (a terminal closed, a setting changed). */
  recheckAuto(): void {
    this.autoAskNext();
  }

  /** Answer one prompt (from the tree view or the pending list). */
  answer(id: string): void {
    const entry = this.queue.get(id);
    if (!entry) {
      // Answered or withdrawn meanwhile (its notification was already going away).
      vscode.window.setStatusBarMessage('Hive: that question is no longer waiting', 5000);
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
      await this.client.sendRequest(Requests.cancel, cancelParams(id, this.by()));
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
      label: `${r.urgent ? '$(warning) ' : ''}${plain(askerOf(r))}`,
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
    this.attention.reset();
  }

  dispose(): void {
    this.reset();
    this.announcer.dispose();
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
    if (this.session || this.autoPaused || !this.autoAsk() || !this.queue.next({ includeDeferred: false })) {
      return;
    }
    if (this.terminalActive()) {
      // The API cannot tell whether the keyboard is in the terminal: never open over one.
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
    this.announcer.refreshSoon();
    // The question is before the human now, by their act (one that opened by
    // itself counts once they answer or type in it); a long one or one with a
    // detail shows its whole text beside, without taking the keyboard.
    if (!auto) {
      this.attention.shown(session.id);
    }
    if (detailOf(entry.record) !== undefined || entry.record.question.length > LONG_QUESTION_CHARS) {
      this.showDetail?.(entry.record);
    }
    void this.run(session, entry).catch((err) => {
      void vscode.window.showErrorMessage(plain(`Hive: ${errorMessage(err)}`));
      if (this.session === session) {
        this.session = undefined;
        this.announcer.refreshSoon();
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
        // Not now: nothing opens by itself until a new prompt comes (an Escape
        // never opens the next one; a box hidden by Quick Open never reopens).
        this.autoPaused = true;
        if (this.queue.has(id)) {
          this.queue.defer(id);
          if (this.queue.markLeft(id)) {
            // Typed then left: without this the agent waits for the hub's maximum lifetime.
            this.client.sendNotification(ClientNotifications.defer, { id });
          }
          vscode.window.setStatusBarMessage('Hive: deferred; Hive: Answer Next Question opens it again', 5000);
        }
        break;
      case 'decline':
        this.attention.shown(id);
        await this.send(session, declineParams(id, this.by()), undefined);
        break;
      case 'answer':
        this.attention.shown(id);
        if (await confirmAnswer(entry.record, outcome.answer)) {
          await this.send(session, acceptParams(id, outcome.answer, this.by()), outcome.answer);
        } else {
          // Not confirmed: the question opens again, for another answer.
          this.queue.setRetry(id, 'not sent: pick again', outcome.answer);
        }
        break;
    }
    if (this.session === session) {
      this.session = undefined;
      this.announcer.refreshSoon();
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
      await this.client.sendRequest(Requests.respond, params);
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

  /** Read the answer for a prompt, step by step (src/promptForm.ts), in this session's widgets. */
  private read(session: Session, entry: QueueEntry): Promise<Outcome> {
    const retry = { message: entry.retryMessage, lastAnswer: entry.lastAnswer };
    this.queue.clearRetry(entry.record.id);
    return readAnswer(entry.record, retry, this.steps.askerFor(session, entry), () => this.queue.has(entry.record.id));
  }

  /** Send `hive/typing` once, on the first keystroke; stops the countdown. */
  private typed(entry: QueueEntry): void {
    this.attention.shown(entry.record.id);
    if (this.queue.markTyped(entry.record.id)) {
      this.client.sendNotification(ClientNotifications.typing, { id: entry.record.id });
    }
  }
}
