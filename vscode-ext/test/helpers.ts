/** Fakes shared by the UI tests: a HubClient, timers, a clock and records. */
import type { MessageSignature } from 'vscode-jsonrpc';
import type { Disposable, HubClient } from '../src/hubClient';
import type { PromptRecord, SessionRecord } from '../src/protocol';

export interface SentRequest {
  method: string;
  params: unknown;
}

/** A HubClient whose server is a function; records what the UI sent (by method name). */
export class FakeHub implements HubClient {
  requests: SentRequest[] = [];
  notifications: SentRequest[] = [];
  private handlers = new Map<string, ((p: unknown) => void)[]>();
  /** Answers requests; throw `{code, message}` to refuse. */
  server: (method: string, params: unknown) => unknown = (_m, p) => ({ ...(p as object), status: 'responded' });

  async sendRequest<R>(type: MessageSignature, params?: unknown): Promise<R> {
    const method = type.method;
    this.requests.push({ method, params });
    await Promise.resolve();
    return this.server(method, params) as R;
  }
  sendNotification(type: MessageSignature, params?: unknown): void {
    this.notifications.push({ method: type.method, params });
  }
  onNotification<P>(type: MessageSignature, handler: (params: P) => void): Disposable {
    const method = type.method;
    const list = this.handlers.get(method) ?? [];
    list.push(handler as (p: unknown) => void);
    this.handlers.set(method, list);
    return { dispose: () => this.handlers.set(method, (this.handlers.get(method) ?? []).filter((h) => h !== handler)) };
  }
  /** The server sends a notification. */
  emit(method: string, params: unknown): void {
    for (const h of this.handlers.get(method) ?? []) {
      h(params);
    }
  }
  sent(method: string): SentRequest[] {
    return this.requests.filter((r) => r.method === method);
  }
}

/** setInterval/clearInterval that only run when the test says so. */
export class FakeTimers {
  private next = 1;
  readonly active = new Map<number, () => void>();
  setInterval = (fn: () => void): unknown => {
    const h = this.next++;
    this.active.set(h, fn);
    return h;
  };
  clearInterval = (h: unknown): void => {
    this.active.delete(h as number);
  };
  tick(): void {
    for (const fn of [...this.active.values()]) {
      fn();
    }
  }
}

export class Clock {
  constructor(public t = 1_800_000_000) {}
  now = (): number => this.t;
  advance(seconds: number): void {
    this.t += seconds;
  }
}

let counter = 0;

/** A pending prompt record as the hub sends it in hive/prompt. */
export function record(clock: Clock, fields: Partial<PromptRecord> = {}): PromptRecord {
  counter++;
  const created = fields.created_at ?? clock.t - 6 + counter * 1e-3;
  const timeout = fields.timeout_s === undefined ? 300 : fields.timeout_s;
  return {
    id: `0000${counter.toString(16).padStart(12, '0')}`,
    agent_id: 'deployer',
    question: 'Deploy?',
    created_at: created,
    deadline_at: timeout === null ? created + 86400 : created + timeout,
    max_deadline_at: created + 86400,
    choices: null,
    schema: null,
    urgent: false,
    timeout_s: timeout,
    task_id: null,
    in_reply_to: null,
    status: 'pending',
    typing_at: null,
    answered_at: null,
    expired_at: null,
    cancelled_at: null,
    expiry_reason: null,
    answer: null,
    by: null,
    action: null,
    expired: false,
    ...fields,
  };
}

/** Let pending promise callbacks run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setImmediate(r));
  }
}

/** A JSON-RPC style error as the language client rejects with. */
export function rpcError(code: number, message: string): Error & { code: number } {
  return Object.assign(new Error(message), { code });
}

/** An ExtensionContext's workspaceState, in memory (the deferred questions are kept there). */
export function fakeMemento(): { get<T>(key: string): T | undefined; update(key: string, value: unknown): Promise<void> } {
  const values = new Map<string, unknown>();
  return {
    get: <T>(key: string) => values.get(key) as T | undefined,
    update: (key: string, value: unknown) => {
      values.set(key, value);
      return Promise.resolve();
    },
  };
}

/** The clock of the session records below. */
export const T0 = 1_800_000_000;

/** An agent session's record as the hub sends it (hive/session, hive/sessions). */
export function session(fields: Partial<SessionRecord> & { agent_id: string }): SessionRecord {
  return {
    agent: 'claude-code',
    display: 'Claude Code',
    state: 'idle',
    activity: 'idle',
    questions: 0,
    permissions: 0,
    prompt_ids: [],
    in_terminal: false,
    pid: null,
    project_dir: null,
    terminal: null,
    ling: null,
    last_event: 'start',
    message: null,
    started_at: T0 - 3600,
    changed_at: T0 - 60,
    ...fields,
  };
}

