/**
 * The queue of pending prompts, oldest first. Pure logic, no `vscode` import.
 *
 * The queue mirrors the hub: `hive/prompt` adds, `hive/dismiss` (or a
 * successful respond/cancel) removes. Each entry also remembers what this
 * window did with the prompt: deferred (Escape), typed (hive/typing sent),
 * and a retry message after the hub refused an answer.
 */
import type { PromptRecord } from './protocol';

export interface QueueEntry {
  record: PromptRecord;
  /** The human pressed Escape: not asked again on its own. */
  deferred: boolean;
  /** The countdown is stopped: hive/typing was sent, here or elsewhere (`typing_at`). */
  typed: boolean;
  /**
   * This window typed into it (it sent hive/typing): when its box then closes
   * unanswered, this window sends hive/defer, which gives the countdown back.
   */
  typedHere?: boolean;
  /** The hub refused the last answer (-32004) with this message. */
  retryMessage?: string;
  /** The refused answer, offered again as the starting value. */
  lastAnswer?: unknown;
  /** Text typed into its input boxes and left unsent (Escape), by step: offered again when it reopens. */
  drafts?: Record<string, string>;
}

/** Where the deferred prompts' ids are kept across window reloads (the extension's `workspaceState`). */
export interface DeferredStore {
  get(): readonly string[];
  set(ids: readonly string[]): void;
}

/** At most this many deferred ids are remembered (the oldest go first). */
const REMEMBER_DEFERRED = 500;

/**
 * Told of every change. `changed` lists the prompts whose entry changed (a
 * new record, deferred, typed) when the list itself did not; it is undefined
 * when prompts came or went. The pending view refreshes just those rows: a
 * refresh of the whole tree re-renders every row and loses a click that lands
 * meanwhile.
 */
export type QueueListener = (changed?: readonly string[]) => void;

export class PromptQueue {
  private readonly entries = new Map<string, QueueEntry>();
  /**
   * The entries oldest first, kept while prompts come in order (a new
   * subscription's snapshot: up to 100,000 of them, each asking for the order
   * again); undefined once it must be sorted again.
   */
  private order: QueueEntry[] | undefined;
  private readonly listeners: QueueListener[] = [];
  /**
   * The prompts the human deferred, remembered while they are pending and
   * across a sidecar restart (the hub resends every pending prompt) and a
   * window reload (`store`): one coming back stays deferred, so neither asks
   * again what the human put aside.
   */
  private readonly deferredIds: Set<string>;

  constructor(private readonly store?: DeferredStore) {
    this.deferredIds = new Set(store?.get() ?? []);
  }

  /** Add a pending prompt, or refresh its record. Returns true if it is new. */
  add(record: PromptRecord): boolean {
    const existing = this.entries.get(record.id);
    if (existing) {
      this.refresh(existing, record);
      return false;
    }
    const entry: QueueEntry = {
      record,
      deferred: this.deferredIds.has(record.id),
      typed: record.typing_at !== null,
    };
    this.entries.set(record.id, entry);
    const last = this.order?.[this.order.length - 1];
    if (this.order && (last === undefined || last.record.created_at <= record.created_at)) {
      this.order.push(entry); // where the stable sort would put it
    } else {
      this.order = undefined;
    }
    this.changed();
    return true;
  }

  /**
   * `hive/update`: the new record of a prompt still pending (someone started
   * typing its answer, maybe in another editor). A prompt not queued here is
   * ignored: it is no new question. Returns true if it was queued.
   */
  update(record: PromptRecord): boolean {
    const existing = this.entries.get(record.id);
    if (!existing || record.status !== 'pending') {
      return false;
    }
    this.refresh(existing, record);
    return true;
  }

  /** Remove a prompt; returns its entry, or undefined if it was not queued. */
  remove(id: string): QueueEntry | undefined {
    this.forgetDeferred(id);
    const entry = this.entries.get(id);
    if (entry) {
      this.entries.delete(id);
      this.order = undefined;
      this.changed();
    }
    return entry;
  }

  get(id: string): QueueEntry | undefined {
    return this.entries.get(id);
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Pending records, oldest first. */
  records(): PromptRecord[] {
    return this.sorted().map((e) => e.record);
  }

  /**
   * The next prompt to ask: the oldest one not excluded. Deferred prompts are
   * skipped unless `includeDeferred` (Answer Next asks them too).
   */
  next(options: { includeDeferred?: boolean; exclude?: string } = {}): QueueEntry | undefined {
    return this.sorted().find(
      (e) => e.record.id !== options.exclude && (options.includeDeferred || !e.deferred),
    );
  }

  /** How many other prompts wait while `currentId` is shown. */
  waitingBesides(currentId: string | undefined): number {
    return this.size - (currentId !== undefined && this.has(currentId) ? 1 : 0);
  }

  defer(id: string): void {
    const entry = this.entries.get(id);
    if (entry && !entry.deferred) {
      entry.deferred = true;
      this.rememberDeferred(id);
      this.changed([id]);
    }
  }

  /** Defer every prompt not deferred yet; returns how many. */
  deferAll(except?: string): number {
    const ids = this.sorted()
      .filter((e) => !e.deferred && e.record.id !== except)
      .map((e) => e.record.id);
    for (const id of ids) {
      this.entries.get(id)!.deferred = true;
      this.deferredIds.add(id);
    }
    if (ids.length > 0) {
      this.saveDeferred();
      this.changed(ids);
    }
    return ids.length;
  }

  undefer(id: string): void {
    const entry = this.entries.get(id);
    if (entry && entry.deferred) {
      entry.deferred = false;
      this.forgetDeferred(id);
      this.changed([id]);
    }
  }

  /** The text left in a step's input box, or undefined. */
  draft(id: string, step: string): string | undefined {
    return this.entries.get(id)?.drafts?.[step];
  }

  /** Keep (or, when empty, forget) the text left in a step's input box. */
  setDraft(id: string, step: string, text: string): void {
    const entry = this.entries.get(id);
    if (!entry) {
      return;
    }
    entry.drafts ??= {};
    if (text === '') {
      delete entry.drafts[step];
    } else {
      entry.drafts[step] = text;
    }
  }

  private rememberDeferred(id: string): void {
    this.deferredIds.delete(id);
    this.deferredIds.add(id);
    this.saveDeferred();
  }

  private forgetDeferred(id: string): void {
    if (this.deferredIds.delete(id)) {
      this.saveDeferred();
    }
  }

  private saveDeferred(): void {
    while (this.deferredIds.size > REMEMBER_DEFERRED) {
      this.deferredIds.delete(this.deferredIds.values().next().value as string);
    }
    this.store?.set([...this.deferredIds]);
  }

  /** Mark the prompt typed into; true only the first time (send hive/typing once). */
  markTyped(id: string): boolean {
    const entry = this.entries.get(id);
    if (!entry || entry.typed) {
      return false;
    }
    entry.typed = true;
    entry.typedHere = true;
    this.changed([id]);
    return true;
  }

  /**
   * The human left the prompt unanswered: if this window had typed into it,
   * its countdown runs again. True then (send hive/defer), else false
   * ("hidden blank": nothing was stopped here, nothing to give back).
   */
  markLeft(id: string): boolean {
    const entry = this.entries.get(id);
    if (!entry?.typedHere) {
      return false;
    }
    entry.typedHere = false;
    entry.typed = false;
    this.changed([id]);
    return true;
  }

  /** Remember that the hub refused an answer, to ask again with its message. */
  setRetry(id: string, message: string, lastAnswer: unknown): void {
    const entry = this.entries.get(id);
    if (entry) {
      entry.retryMessage = message;
      entry.lastAnswer = lastAnswer;
      entry.deferred = false;
      this.forgetDeferred(id);
    }
  }

  clearRetry(id: string): void {
    const entry = this.entries.get(id);
    if (entry) {
      entry.retryMessage = undefined;
      entry.lastAnswer = undefined;
    }
  }

  /** Forget every prompt; the deferred ones stay deferred if they come back. */
  clear(): void {
    if (this.entries.size > 0) {
      this.entries.clear();
      this.order = undefined;
      this.changed();
    }
  }

  onDidChange(listener: QueueListener): { dispose(): void } {
    this.listeners.push(listener);
    return {
      dispose: () => {
        const i = this.listeners.indexOf(listener);
        if (i >= 0) {
          this.listeners.splice(i, 1);
        }
      },
    };
  }

  private sorted(): readonly QueueEntry[] {
    // Map keeps insertion order; a stable sort by created_at keeps it for ties.
    this.order ??= [...this.entries.values()].sort((a, b) => a.record.created_at - b.record.created_at);
    return this.order;
  }

  private refresh(entry: QueueEntry, record: PromptRecord): void {
    entry.record = record;
    if (typeof record.typing_at === 'number') {
      entry.typed = true;
    } else if (!entry.typedHere) {
      // hive/defer elsewhere: the countdown runs again (our own typing, not yet
      // seen by the hub, keeps it stopped).
      entry.typed = false;
    }
    this.changed([record.id]);
  }

  private changed(ids?: readonly string[]): void {
    for (const listener of [...this.listeners]) {
      listener(ids);
    }
  }
}
