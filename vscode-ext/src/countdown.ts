/**
 * Countdown text for prompts. Pure functions, no `vscode` import.
 * Times are float Unix seconds, like the hub's records.
 */
import type { PromptRecord } from './protocol';

/** Now, in float Unix seconds. */
export function nowSeconds(): number {
  return Date.now() / 1000;
}

/**
 * A duration the way the Emacs client shows it: `59s`, `4m55s`, `2h05m`,
 * `3d04h`. Negative durations count as 0. Seconds are rounded up, so a
 * countdown shows `1s` until the deadline has really passed.
 */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds));
  if (s < 60) {
    return `${s}s`;
  }
  if (s < 3600) {
    const m = Math.floor(s / 60);
    return `${m}m${pad(s % 60)}s`;
  }
  if (s < 86400) {
    const h = Math.floor(s / 3600);
    return `${h}h${pad(Math.floor((s % 3600) / 60))}m`;
  }
  const d = Math.floor(s / 86400);
  return `${d}d${pad(Math.floor((s % 86400) / 3600))}h`;
}

function pad(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

/** Seconds left until the prompt's deadline (never negative). */
export function secondsLeft(record: Pick<PromptRecord, 'deadline_at'>, now: number): number {
  return Math.max(0, record.deadline_at - now);
}

/**
 * Whether the prompt has a running countdown: the agent gave a timeout and
 * nobody has started typing (once typing starts, the hub moves the deadline
 * to the hard maximum lifetime).
 */
export function hasCountdown(
  record: Pick<PromptRecord, 'timeout_s' | 'typing_at'>,
  typed = false,
): boolean {
  return record.timeout_s !== null && record.timeout_s !== undefined && record.typing_at === null && !typed;
}

/**
 * The countdown shown in a prompt, e.g. `4m55s left`, or null when there is no
 * countdown (no timeout, or the human started typing).
 */
export function countdownText(
  record: Pick<PromptRecord, 'timeout_s' | 'typing_at' | 'deadline_at'>,
  now: number,
  typed = false,
): string | null {
  if (!hasCountdown(record, typed)) {
    return null;
  }
  return `${formatDuration(secondsLeft(record, now))} left`;
}

/**
 * The input box's placeholder while a countdown runs, in the words of Calva
 * Backseat Driver's human-intelligence tool ("Start typing to cancel
 * auto-dismiss (60s timeout)..."), followed by the time left: shown only while
 * the box is empty, it says what typing does before the human types. A timeout
 * under ten minutes is said in seconds, as the seed says its 60 s.
 */
export function autoDismissText(
  record: Pick<PromptRecord, 'timeout_s' | 'typing_at' | 'deadline_at'>,
  now: number,
  typed = false,
): string | null {
  const left = countdownText(record, now, typed);
  if (left === null || record.timeout_s === null || record.timeout_s === undefined) {
    return null;
  }
  const t = record.timeout_s;
  const timeout = t < 600 ? `${Math.ceil(t)}s` : formatDuration(t);
  return `Start typing to cancel auto-dismiss (${timeout} timeout)... ${left}`;
}

/**
 * A duration to the minute, for the pending view: `<1m`, `14m` (whole minutes
 * rounded up, so `1m` until less than a minute is left), `2h05m`, `3d04h`
 * (hours rounded up). Its text changes once a minute, not every second: each
 * change redraws the row, and a click that lands on a row being redrawn is
 * lost (a real VS Code lost one of 12 Withdraw clicks made at a person's pace
 * to once-a-second row updates).
 */
export function formatMinutes(seconds: number): string {
  const s = Math.max(0, seconds);
  if (s < 60) {
    return '<1m';
  }
  const m = Math.ceil(s / 60);
  if (m < 60) {
    return `${m}m`;
  }
  if (m < 24 * 60) {
    return `${Math.floor(m / 60)}h${pad(m % 60)}m`;
  }
  const h = Math.ceil(s / 3600);
  return `${Math.floor(h / 24)}d${pad(h % 24)}h`;
}

/** What the pending view and Show Pending say once someone has started typing an answer. */
export const TYPING_TEXT = 'typing: countdown stopped';
/** What they say for a question asked without a timeout. */
export const NO_LIMIT_TEXT = 'no time limit';

/**
 * The time a pending question has, as the pending view and "Show Pending
 * Prompts" show it: `4m55s left` while its countdown runs (`5m left` in the
 * view's rows), `typing: countdown
 * stopped` once someone (here or in another editor: `typing_at`) started
 * typing, `no time limit` when the agent gave no timeout. Neither of the last
 * two counts down to the hub's hard maximum lifetime (a day by default): a
 * `23h59m left` there would look like a countdown that is not the agent's.
 */
export function timeLeftText(
  record: Pick<PromptRecord, 'timeout_s' | 'typing_at' | 'deadline_at'>,
  now: number,
  typed = false,
  /** To the minute (`14m left`, formatMinutes), for the pending view's rows. */
  toTheMinute = false,
): string {
  if (typeof record.typing_at === 'number' || typed) {
    return TYPING_TEXT;
  }
  if (!hasCountdown(record)) {
    return NO_LIMIT_TEXT;
  }
  const left = secondsLeft(record, now);
  return `${toTheMinute ? formatMinutes(left) : formatDuration(left)} left`;
}
