/**
 * Building `hive/respond` and `hive/cancel` parameters, reading the hub's
 * errors, and the messages shown when a prompt goes away. Pure logic, no
 * `vscode` import.
 */
import { ErrorCode } from './protocol';
import type { AskParams, CancelParams, DismissParams, RespondParams } from './protocol';

/** Accept: `{id, answer, by}` (`by` left out when empty: the hub says "human"). */
export function acceptParams(id: string, answer: unknown, by?: string): RespondParams {
  const params: RespondParams = { id, answer };
  if (by) {
    params.by = by;
  }
  return params;
}

/** Decline: `{id, action: "decline", by}`, with no answer. */
export function declineParams(id: string, by?: string): RespondParams {
  const params: RespondParams = { id, action: 'decline' };
  if (by) {
    params.by = by;
  }
  return params;
}

export function cancelParams(id: string, by?: string): CancelParams {
  return by ? { id, by } : { id };
}

/**
 * What to do after a failed respond:
 * - `invalid`: -32004, the hub refused the answer; keep the prompt and ask again;
 * - `gone`: -32002/-32003/-32001, answered or closed elsewhere; drop it;
 * - `other`: anything else (the sidecar is down, ...); keep it for later.
 */
export type RespondFailure = 'invalid' | 'gone' | 'other';

export function errorCode(err: unknown): number | undefined {
  if (err && typeof err === 'object' && 'code' in err && typeof (err as { code: unknown }).code === 'number') {
    return (err as { code: number }).code;
  }
  return undefined;
}

export function errorMessage(err: unknown): string {
  if (err && typeof err === 'object' && 'message' in err) {
    return String((err as { message: unknown }).message);
  }
  return String(err);
}

export function classifyRespondError(err: unknown): RespondFailure {
  switch (errorCode(err)) {
    case ErrorCode.invalidAnswer:
      return 'invalid';
    case ErrorCode.alreadyAnswered:
    case ErrorCode.closed:
    case ErrorCode.notFound:
      return 'gone';
    default:
      return 'other';
  }
}

/** What happened to a prompt, in words: `answered by alice`, `expired`, ... */
export function dismissReason(params: Pick<DismissParams, 'status' | 'by' | 'action'>): string {
  let what: string;
  switch (params.status) {
    case 'responded':
      what = params.action === 'decline' ? 'declined' : params.action === 'cancel' ? 'dismissed' : 'answered';
      break;
    case 'expired':
      what = 'expired';
      break;
    case 'cancelled':
      what = 'withdrawn';
      break;
    case 'unknown':
      what = 'lost with a hub that stopped';
      break;
    default:
      what = String(params.status);
  }
  return params.by ? `${what} by ${params.by}` : what;
}

/** The message shown when the open prompt is closed elsewhere. */
export function dismissMessage(params: Pick<DismissParams, 'status' | 'by' | 'action'>): string {
  // "expired", not "was expired": nobody expired it.
  return params.status === 'expired'
    ? `Hive: that question ${dismissReason(params)}`
    : `Hive: that question was ${dismissReason(params)}`;
}

/**
 * `hive/ask` parameters for "Hive: Ask (test)": choices typed comma-separated
 * (empty for free text), the timeout from `hive.timeoutSeconds` (0 or less
 * means no countdown).
 */
export function askParams(question: string, choicesText: string, timeoutSeconds: number, agentId: string): AskParams {
  const params: AskParams = { question, agent_id: agentId };
  const choices = choicesText
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '');
  if (choices.length > 0) {
    params.choices = [...new Set(choices)];
  }
  if (Number.isFinite(timeoutSeconds) && timeoutSeconds > 0) {
    params.timeout_s = timeoutSeconds;
  }
  return params;
}
