/**
 * Which VS Code terminal runs an agent: the one whose shell's process is an
 * ancestor of the agent's process, read from the kernel (`/proc/PID/stat`), a
 * fact, not a guess from a terminal's name. No `vscode` import.
 */
import { readFileSync } from 'node:fs';

/** A process's parent pid, or undefined if the process is gone (or not readable). */
export type ParentOf = (pid: number) => number | undefined;

/**
 * The parent pid from `/proc/PID/stat`. Its second field, the command name in
 * parentheses, may hold spaces and parentheses itself: the fields after it start
 * after the last `)`.
 */
export function procParent(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  return parentFromStat(stat);
}

/** `/proc/PID/stat`'s fourth field (ppid), read after the command name. */
export function parentFromStat(stat: string): number | undefined {
  const end = stat.lastIndexOf(')');
  if (end < 0) {
    return undefined;
  }
  const fields = stat.slice(end + 1).trim().split(/\s+/);
  const ppid = Number(fields[1]);
  return Number.isInteger(ppid) && ppid >= 0 ? ppid : undefined;
}

/** The most parents walked: deeper than any real process tree, and a stop for a loop. */
const MAX_DEPTH = 256;

/** Whether `ancestor` is `pid` itself or one of its parents, grandparents ... */
export function isAncestor(ancestor: number, pid: number, parentOf: ParentOf = procParent): boolean {
  let current: number | undefined = pid;
  for (let i = 0; i < MAX_DEPTH && current !== undefined && current > 0; i++) {
    if (current === ancestor) {
      return true;
    }
    const parent = parentOf(current);
    if (parent === current) {
      return false;
    }
    current = parent;
  }
  return false;
}

/**
 * The first of `candidates` (a terminal and its shell's pid, which may be
 * unknown) whose process is an ancestor of `pid`.
 */
export function terminalOf<T>(
  pid: number,
  candidates: readonly { terminal: T; pid: number | undefined }[],
  parentOf: ParentOf = procParent,
): T | undefined {
  return candidates.find((c) => c.pid !== undefined && c.pid > 0 && isAncestor(c.pid, pid, parentOf))?.terminal;
}
