/**
 * What the hub is told about the human's attention, and what it tells back
 * (docs/protocol.md): `hive/shown` when a question's text is put
 * before the human by their own act (they opened it, or a notification shows
 * it with its choices), and the questions that expired before any editor
 * showed them ("expired unseen"), kept until the human clears them
 * (`hive/clearUnseen`). No `vscode` import: the flow, the status bar and the
 * Pending view read this.
 *
 * A hub that does not know these methods (-32601) is no error: nothing is
 * sent again, and the expired-unseen list stays empty.
 */
import type { HubClient } from './hubClient';
import { AttentionRequests, ErrorCode } from './protocol';
import type { PromptRecord } from './protocol';
import { errorCode, errorMessage } from './respond';

type Listener = () => void;

/** At most this many expired-unseen questions are kept (the hub lists 100). */
const KEEP = 100;

export class Attention {
  /** Prompts this window said were shown (once each). */
  private readonly told = new Set<string>();
  private readonly expired = new Map<string, PromptRecord>();
  private readonly listeners: Listener[] = [];
  /** The hub answered -32601 to hive/shown or hive/list {expired_unseen}. */
  private shownMissing = false;
  private listMissing = false;

  constructor(
    private readonly client: HubClient,
    private readonly log: (line: string) => void = () => undefined,
  ) {}

  /** The question's text is before the human now: tell the hub, once. */
  shown(id: string): void {
    if (this.told.has(id) || this.shownMissing) {
      return;
    }
    this.told.add(id);
    this.client.sendRequest(AttentionRequests.shown, { id }).then(
      () => undefined,
      (err: unknown) => {
        if (errorCode(err) === ErrorCode.methodNotFound) {
          this.shownMissing = true;
          this.log('the hub has no hive/shown (an older hub): questions shown here are not reported');
        } else {
          // Refused or lost: a later showing tries again.
          this.told.delete(id);
          this.log(`hive/shown ${id}: ${errorMessage(err)}`);
        }
      },
    );
  }

  /** Whether this window told the hub the question was shown. */
  wasShown(id: string): boolean {
    return this.told.has(id);
  }

  /** The expired-unseen questions, oldest first. */
  records(): PromptRecord[] {
    return [...this.expired.values()].sort((a, b) => (a.expired_at ?? 0) - (b.expired_at ?? 0));
  }

  get count(): number {
    return this.expired.size;
  }

  get(id: string): PromptRecord | undefined {
    return this.expired.get(id);
  }

  /** A record from the hub (hive/update, hive/list): kept while expired-unseen and not dismissed. */
  note(record: PromptRecord): void {
    if (!record || typeof record.id !== 'string') {
      return;
    }
    const unseen = record.unseen === true && record.status === 'expired' && !record.cleared_at;
    if (unseen && !this.expired.has(record.id)) {
      this.expired.set(record.id, record);
      while (this.expired.size > KEEP) {
        this.expired.delete(this.records()[0].id);
      }
      this.changed();
    } else if (!unseen && this.expired.delete(record.id)) {
      this.changed();
    }
  }

  /**
   * Ask the hub for the expired-unseen questions (at connect, and when a
   * prompt expired: the list is the truth, a missed update is made good).
   */
  async refresh(): Promise<void> {
    if (this.listMissing) {
      return;
    }
    let records: PromptRecord[];
    try {
      records = await this.client.sendRequest(AttentionRequests.listExpiredUnseen, { expired_unseen: true });
    } catch (err) {
      if (errorCode(err) === ErrorCode.methodNotFound || errorCode(err) === ErrorCode.invalidParams) {
        this.listMissing = true;
      }
      this.log(`hive/list {expired_unseen}: ${errorMessage(err)}`);
      return;
    }
    if (!Array.isArray(records)) {
      return;
    }
    // An older hub ignores the flag and lists the pending prompts: none is unseen.
    const fresh = records.filter((r) => r && r.status === 'expired' && r.unseen === true && !r.cleared_at);
    const ids = new Set(fresh.map((r) => r.id));
    let changed = false;
    for (const id of [...this.expired.keys()]) {
      if (!ids.has(id)) {
        this.expired.delete(id);
        changed = true;
      }
    }
    for (const r of fresh) {
      if (!this.expired.has(r.id)) {
        this.expired.set(r.id, r);
        changed = true;
      }
    }
    if (changed) {
      this.changed();
    }
  }

  /** Clear the trace of one expired-unseen question, or of all (`id` undefined). Returns how many. */
  async dismiss(id?: string): Promise<number> {
    const params = id === undefined ? { all: true } : { id };
    const result = await this.client.sendRequest(AttentionRequests.clearUnseen, params);
    if (id === undefined) {
      this.expired.clear();
    } else {
      this.expired.delete(id);
    }
    this.changed();
    return typeof result?.cleared === 'number' ? result.cleared : 0;
  }

  /** `hive/unseenCleared`: cleared here or in another editor. */
  cleared(id: string): void {
    if (this.expired.delete(id)) {
      this.changed();
    }
  }

  /** Forget what was known of the hub (a new sidecar: `refresh` follows its subscribe). */
  reset(): void {
    this.told.clear();
    this.shownMissing = false;
    this.listMissing = false;
  }

  onDidChange(listener: Listener): { dispose(): void } {
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

  private changed(): void {
    for (const l of [...this.listeners]) {
      l();
    }
  }
}

