/**
 * The hub's protocol, as offered by `hive-rpc lsp` (see docs/protocol.md).
 *
 * The methods and notifications as typed vscode-jsonrpc constants (params and
 * result types), error codes and the shapes of the records. This module does
 * not import `vscode`, so tests and pure logic can use it.
 */
import { NotificationType, RequestType } from 'vscode-jsonrpc';

/**
 * A params value's JSON type, as the hub's method table writes it
 * (`hive-rpc methods --json`; hive_rpc's `Param.type`).
 */
export type JsonType = 'string' | 'number' | 'boolean' | 'array' | 'object' | 'any';

/** The JSON type of a TypeScript type (tuples: no distribution over unions). */
type JsonTypeOf<T> = [T] extends [string]
  ? 'string'
  : [T] extends [number]
    ? 'number'
    : [T] extends [boolean]
      ? 'boolean'
      : [T] extends [readonly unknown[]]
        ? 'array'
        : [T] extends [object]
          ? 'object'
          : 'any';

/**
 * Every param of `P`, by name, with its JSON type. The compiler checks that a
 * message's row names each field of its params type with the right type, and
 * test/protocol.table.test.ts checks each against the hub's table: a param the
 * hub does not declare (or declares with another type) fails there, not in use.
 */
export type ParamTypes<P> = { readonly [K in keyof P]-?: JsonTypeOf<Exclude<P[K], undefined>> };

/** A request to the hub with params: vscode-jsonrpc's typed `RequestType`, plus its params' names and types. */
export class HubRequest<P extends object, R> extends RequestType<P, R, void> {
  constructor(
    method: string,
    readonly paramTypes: ParamTypes<P>,
  ) {
    super(method);
  }
}

/** A notification to the hub: vscode-jsonrpc's typed `NotificationType`, plus its params' names and types. */
export class HubNotification<P extends object> extends NotificationType<P> {
  constructor(
    method: string,
    readonly paramTypes: ParamTypes<P>,
  ) {
    super(method);
  }
}

/**
 * Requests the extension sends (client to hub, relayed by `hive-rpc lsp`
 * under the same names). A new one gets a row here, and the table test checks
 * it against the hub's method table.
 */
export const Requests = {
  ask: new HubRequest<AskParams, PromptRecord>('hive/ask', {
    question: 'string',
    choices: 'array',
    schema: 'object',
    urgent: 'boolean',
    timeout_s: 'number',
    agent_id: 'string',
    task_id: 'string',
    in_reply_to: 'string',
  }),
  await: new HubRequest<AwaitParams, PromptRecord>('hive/await', {
    id: 'string',
    timeout_s: 'number',
    agent_id: 'string',
  }),
  respond: new HubRequest<RespondParams, PromptRecord>('hive/respond', {
    id: 'string',
    answer: 'any',
    by: 'string',
    action: 'string',
  }),
  cancel: new HubRequest<CancelParams, PromptRecord>('hive/cancel', { id: 'string', by: 'string', agent_id: 'string' }),
  /**
   * The hub then sends hive/prompt for each pending prompt, and what follows;
   * with `sessions`, hive/session for each agent session and each change
   * (`hive-rpc lsp` passes the flag on: src/sessions.ts).
   */
  subscribe: new HubRequest<SubscribeParams, SubscribeResult>('hive/subscribe', { sessions: 'boolean' }),
  /** Every agent session, waiting ones first (what the Sessions view shows). */
  sessions: new HubRequest<SessionsParams, SessionRecord[]>('hive/sessions', { agent_id: 'string' }),
} as const;

/**
 * The human's attention: the question was put before the human
 * (`hive/shown`), the expired-unseen ones (`hive/list {expired_unseen}`), and
 * clearing their trace (`hive/clearUnseen`; each cleared one is then
 * broadcast as `hive/unseenCleared {id}`). A hub without them
 * answers -32601 (method not found): the extension then does without
 * (src/attention.ts).
 */
export const AttentionRequests = {
  shown: new HubRequest<ShownParams, PromptRecord>('hive/shown', { id: 'string' }),
  listExpiredUnseen: new HubRequest<ListParams, PromptRecord[]>('hive/list', { expired_unseen: 'boolean' }),
  clearUnseen: new HubRequest<ClearUnseenParams, ClearUnseenResult>('hive/clearUnseen', { id: 'string', all: 'boolean' }),
} as const;

/** Notifications the extension sends (client to hub). */
export const ClientNotifications = {
  /** The human's first keystroke in a prompt's box: the hub stops its countdown. */
  typing: new HubNotification<TypingParams>('hive/typing', { id: 'string' }),
  /** The box of a prompt typed into here closed unanswered: the hub restarts its countdown. */
  defer: new HubNotification<TypingParams>('hive/defer', { id: 'string' }),
} as const;

/** Notifications sent by the server to a subscribed client. */
export const ServerNotifications = {
  prompt: new NotificationType<PromptRecord>('hive/prompt'),
  /** A prompt still pending has a new record (someone started typing its answer). */
  update: new NotificationType<PromptRecord>('hive/update'),
  dismiss: new NotificationType<DismissParams>('hive/dismiss'),
  /** The human cleared an expired-unseen question's trace (here or in another editor). */
  unseenCleared: new NotificationType<{ id: string }>('hive/unseenCleared'),
  /** Sent by `hive-rpc lsp` only: it lost the hub, or has it back. */
  connection: new NotificationType<ConnectionParams>('hive/connection'),
  /** The hub's store is degraded (a reason), or works again (null). */
  health: new NotificationType<HealthParams>('hive/health'),
  /** An agent session, new or changed (`hive/subscribe` with `sessions: true`). */
  session: new NotificationType<SessionRecord>('hive/session'),
  /** An agent session left the hub's list. */
  sessionRemoved: new NotificationType<{ agent_id: string }>('hive/sessionRemoved'),
} as const;

/**
 * The hub's own error codes (JSON-RPC `error.code`), each named after its
 * `data.kind`: the rows of hive_rpc/protocol/methods.py's `ERRORS` the extension
 * acts on (tests/service/test_protocol_copies.py checks them against it).
 */
export const ErrorCode = {
  notFound: -32001,
  alreadyAnswered: -32002,
  closed: -32003,
  invalidAnswer: -32004,
  invalidParams: -32602,
  methodNotFound: -32601,
  /** A bug in the hub, for that request only. */
  internal: -32603,
  /** `hive-rpc lsp` could not reach the hub for this request; it reconnects. */
  hubUnreachable: -32014,
} as const;

/** `unknown`: in a dismiss after a hub restart, the new hub did not know the prompt. */
export type PromptStatus = 'pending' | 'responded' | 'expired' | 'cancelled' | 'unknown';
export type RespondAction = 'accept' | 'decline' | 'cancel';

/**
 * One entry of a property's `oneOf`/`anyOf`: a value (`const`) with its title and
 * description; or, in an `anyOf`, the free-text entry `{type: 'string'}` that
 * takes the human's own answer (core/schema.py).
 */
export interface SchemaOption {
  const?: unknown;
  type?: 'string';
  title?: string;
  description?: string;
}

/** One property of the flat elicitation schema. */
export interface SchemaProperty {
  type: 'string' | 'number' | 'integer' | 'boolean' | 'array';
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  enumNames?: string[];
  oneOf?: SchemaOption[];
  anyOf?: SchemaOption[];
  minLength?: number;
  maxLength?: number;
  format?: 'email' | 'uri' | 'date' | 'date-time';
  minimum?: number;
  maximum?: number;
  items?: {
    type?: string;
    enum?: unknown[];
    oneOf?: SchemaOption[];
    anyOf?: SchemaOption[];
  };
  minItems?: number;
  maxItems?: number;
}

/** The flat schema: `{type: "object", properties, required}`. */
export interface PromptSchema {
  type: 'object';
  properties: Record<string, SchemaProperty>;
  required?: string[];
  title?: string;
  description?: string;
}

/** The prompt record (`Prompt.to_record()`); times are float Unix seconds. */
export interface PromptRecord {
  id: string;
  agent_id: string;
  question: string;
  created_at: number;
  deadline_at: number;
  max_deadline_at: number;
  choices: string[] | null;
  schema: PromptSchema | null;
  urgent: boolean;
  timeout_s: number | null;
  task_id: string | null;
  in_reply_to: string | null;
  /** `permission`: a decision about what an agent may do (a Claude Code tool use); absent from older hubs. */
  kind?: 'question' | 'permission';
  /** Long text behind the question (a permission's whole tool input), shown on demand (src/promptDetail.ts). */
  detail?: string | null;
  /** Choices to confirm before sending, each with what it does in the asker's words (src/confirmText.ts); absent from older hubs. */
  confirm?: { choice: string; text: string }[] | null;
  /** What each choice of a permission prompt decides, for the audit trail; absent from older hubs. */
  decisions?: Record<string, 'allow' | 'deny'> | null;
  status: PromptStatus;
  typing_at: number | null;
  answered_at: number | null;
  expired_at: number | null;
  cancelled_at: number | null;
  expiry_reason: 'timeout' | 'max_lifetime' | null;
  answer: unknown;
  by: string | null;
  action: RespondAction | null;
  expired: boolean;
  /** When an editor first put the question before the human (`hive/shown`); absent from older hubs. */
  shown_at?: number | null;
  /** Expired and never shown: the human never saw it (derived by the hub). */
  unseen?: boolean;
  /** The human acknowledged an expired-unseen question (`hive/clearUnseen`). */
  cleared_at?: number | null;
  /** Where the asker runs, in words ("Claude Code in ~/src/app", "project ~/src/app"). */
  origin?: string | null;
}

/** What an agent session is doing, as the hub sees it (docs/protocol.md "Sessions"). */
export type SessionState = 'waiting' | 'working' | 'idle' | 'gone';

/** An agent session (`hive/sessions`, `hive/session`); times are float Unix seconds. */
export interface SessionRecord {
  agent_id: string;
  /** The agent's kind: `claude-code`, `codex`, `gemini`, or null for a name of its own. */
  agent: string | null;
  display: string | null;
  state: SessionState;
  activity: 'working' | 'idle';
  questions: number;
  permissions: number;
  /** Its pending prompts, permission requests first, oldest first. */
  prompt_ids: string[];
  /** It waits on the human in its own terminal (its own dialog). */
  in_terminal: boolean;
  /** The agent's process, when the hub checked it. */
  pid: number | null;
  project_dir: string | null;
  /** Where the agent says it runs (`tmux:%3@SOCKET`, `zellij:SESSION:PANE`): a hint. */
  terminal: string | null;
  ling: string | null;
  last_event: string | null;
  message: string | null;
  started_at: number;
  changed_at: number;
}

export interface ShownParams {
  id: string;
}

export interface ListParams {
  expired_unseen?: boolean;
}

/** `hive/clearUnseen`: clear one expired-unseen trace, or all. */
export interface ClearUnseenParams {
  id?: string;
  all?: boolean;
}

export interface ClearUnseenResult {
  cleared: number;
}

/** `hive/dismiss` parameters. */
export interface DismissParams {
  id: string;
  status: Exclude<PromptStatus, 'pending'>;
  by: string | null;
  action: RespondAction | null;
  /** It expired before any editor showed it (older hubs leave it out). */
  unseen?: boolean;
}

/** `hive/connection`: whether `hive-rpc lsp` has the hub, and why not. */
export interface ConnectionParams {
  connected: boolean;
  message: string;
}

/**
 * `hive/health`: why the hub's own store writes fail (e.g. "store: database or
 * disk is full"), or null when they work again. Sent when it changes, and right
 * after `hive/subscribe` if the hub is degraded then.
 */
export interface HealthParams {
  degraded: string | null;
}

export interface RespondParams {
  id: string;
  answer?: unknown;
  by?: string;
  action?: RespondAction;
}

export interface CancelParams {
  id: string;
  by?: string;
  /** The asking agent withdrawing its own prompt (the language-model tool). */
  agent_id?: string;
}

/** `hive/await`: wait up to `timeout_s` for the prompt to close. */
export interface AwaitParams {
  id: string;
  timeout_s: number;
  agent_id?: string;
}

export interface TypingParams {
  id: string;
}

export interface AskParams {
  question: string;
  choices?: string[];
  schema?: PromptSchema;
  urgent?: boolean;
  timeout_s?: number;
  agent_id?: string;
  task_id?: string;
  in_reply_to?: string;
}

export interface SubscribeParams {
  /** Also hive/session and hive/sessionRemoved. */
  sessions?: boolean;
}

/** `hive/sessions`: every session, or (with `agent_id`) that one. */
export interface SessionsParams {
  agent_id?: string;
}

export interface SubscribeResult {
  subscribed: true;
  pending: number | null;
}

/** `initializationOptions` understood by `hive-rpc lsp`. */
export interface InitializationOptions {
  progress?: boolean;
}

/** The language client id; VS Code reads `hive.trace.server` for it. */
export const CLIENT_ID = 'hive';
export const CLIENT_NAME = 'Hive';
/** Agent id used by "Hive: Ask (test)". */
export const TEST_AGENT_ID = 'vscode';

/** Command ids contributed in package.json. */
export const Command = {
  answerNext: 'hive.answerNext',
  showPending: 'hive.showPending',
  ask: 'hive.ask',
  restart: 'hive.restart',
  showLog: 'hive.showLog',
  answerPrompt: 'hive.answerPrompt',
  cancelPrompt: 'hive.cancelPrompt',
  /** "Not now" for the whole queue. */
  deferAll: 'hive.deferAll',
  /** The expired-unseen questions: look at them and clear their trace. */
  showExpired: 'hive.showExpired',
  dismissExpired: 'hive.dismissExpired',
  /** Answer a prompt with one of its choices (a notification's link). */
  answerWith: 'hive.answerWith',
  /** Defer one prompt (a notification's link). */
  deferPrompt: 'hive.deferPrompt',
  /** A Sessions row's click: its oldest prompt, or its terminal, or where it runs. */
  openSession: 'hive.openSession',
} as const;

/** The pending view's id, contributed in package.json. */
export const PENDING_VIEW_ID = 'hive.pending';
/** The Sessions view's id, contributed in package.json. */
export const SESSIONS_VIEW_ID = 'hive.sessions';
/** The contextValue of a session's row, by state: `hiveSession.waiting` ... */
export const SESSION_CONTEXT_VALUE = 'hiveSession';
/** The tree items' contextValue, used by the inline menus. */
export const PROMPT_CONTEXT_VALUE = 'hivePrompt';
/** The contextValue of an expired-unseen row. */
export const EXPIRED_CONTEXT_VALUE = 'hiveExpired';
