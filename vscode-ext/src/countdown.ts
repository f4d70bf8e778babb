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

/** "Time left" for the pending view: until deadline_at, whatever its cause. */
export function timeLeftText(record: Pick<PromptRecord, 'deadline_at'>, now: number): string {
  return formatDuration(secondsLeft(record, now));
}
