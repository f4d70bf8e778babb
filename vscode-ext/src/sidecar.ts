/**
 * Starting `hive-rpc lsp` ourselves, so that a failure says what failed.
 *
 * vscode-languageclient, left to spawn the command, reports a sidecar that
 * could not start as "Pending response rejected since connection got
 * disposed": the command, its exit code and its stderr are lost, and the user
 * is sent to check settings that may be right. Here the extension spawns the
 * process (the language client takes it through a ServerOptions function),
 * keeps the last lines of its stderr, and learns how it ended, so the message
 * names the command that was run, its exit code or signal (or why it could not
 * be run at all), and what it last printed.
 *
 * No `vscode` import: the language client wiring is in src/languageClient.ts.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import type { ServerCommand } from './config';

/** How many stderr lines a run keeps (the message shows the last few). */
const KEEP_LINES = 50;
/** How many of them a failure message quotes. */
const SHOW_LINES = 4;
/** A restart budget like vscode-languageclient's: 4 restarts within 3 minutes. */
const MAX_RESTARTS = 4;
const RESTART_WINDOW_MS = 3 * 60 * 1000;

/** One run of the sidecar: what was run and how it went. */
export interface SidecarRun {
  command: string;
  args: string[];
  /** The last lines of its stderr, oldest first. */
  stderr: string[];
  /** It answered `initialize` (the client reached Running). */
  running: boolean;
  /** Set once it ended. */
  exit?: { code: number | null; signal: string | null };
  /** Why it could not be run (spawn's error, e.g. `spawn hive-rpc ENOENT`). */
  spawnError?: { code?: string; message: string };
}

/** The command line as the user would type it, for messages and the log. */
export function commandLine(command: string, args: string[]): string {
  return [command, ...args].map((w) => (w === '' || /[\s"'\\]/.test(w) ? JSON.stringify(w) : w)).join(' ');
}

/** The human-readable end of a run: `exited with code 3`, `was killed by SIGKILL`. */
export function endText(run: SidecarRun): string {
  if (run.spawnError) {
    const missing = run.spawnError.code === 'ENOENT' ? `: ${run.command} was not found` : '';
    return `could not be run (${run.spawnError.message}${missing})`;
  }
  if (!run.exit) {
    return 'did not answer';
  }
  if (run.exit.signal) {
    return `was killed by ${run.exit.signal}`;
  }
  return `exited with code ${run.exit.code}`;
}

/** A hint when the cause is a setting: no such program, or no hive_rpc for that Python. */
function hint(run: SidecarRun): string {
  const noModule = run.stderr.some((l) => /No module named '?hive_rpc/.test(l));
  if (run.spawnError?.code === 'ENOENT' || run.spawnError?.code === 'EACCES' || noModule) {
    return (
      ' Set Hive: Python Path (hive.pythonPath) to a Python that has hive-rpc installed, or Hive: Command' +
      ' (hive.command) to the full command: Settings (Ctrl+,) > Extensions > Hive, on the Remote tab when' +
      ' VS Code runs on a server (code-server, Remote-SSH, WSL: the extension runs there), else on the User tab.'
    );
  }
  return '';
}

/**
 * What the human reads when the sidecar could not start or keeps exiting:
 * the command, how it ended, and the last lines of its stderr.
 */
export function failureMessage(run: SidecarRun, context: { crashes?: number; reason?: string } = {}): string {
  const cmd = commandLine(run.command, run.args);
  let text: string;
  if (context.crashes !== undefined) {
    text = `Hive: the sidecar ${endText(run)} (${context.crashes} times in 3 minutes) and is not restarted: ${cmd}.`;
  } else {
    text = `Hive: the sidecar did not start: ${cmd} ${endText(run)}.`;
    if (!run.exit && !run.spawnError && context.reason) {
      text += ` ${context.reason}.`;
    }
  }
  const tail = run.stderr.filter((l) => l.trim() !== '').slice(-SHOW_LINES);
  if (tail.length > 0) {
    text += ` Its last output: ${tail.map((l) => `"${l.trim()}"`).join(' · ')}.`;
  } else if (run.exit || run.spawnError) {
    text += ' It printed nothing on stderr.';
  }
  return text + hint(run);
}

/** Splits a byte stream into lines, keeping the last `KEEP_LINES`. */
class LineTail {
  private partial = '';
  constructor(private readonly lines: string[]) {}
  push(chunk: string): void {
    const parts = (this.partial + chunk).split(/\r?\n/);
    this.partial = parts.pop() ?? '';
    this.lines.push(...parts);
    this.trim();
  }
  end(): void {
    if (this.partial !== '') {
      this.lines.push(this.partial);
      this.partial = '';
      this.trim();
    }
  }
  private trim(): void {
    if (this.lines.length > KEEP_LINES) {
      this.lines.splice(0, this.lines.length - KEEP_LINES);
    }
  }
}

type Spawn = (command: string, args: string[], options: SpawnOptions) => ChildProcess;

/**
 * The sidecar's processes, one at a time: spawns each run, records how it
 * went, and decides whether a crash is restarted.
 */
export class Sidecar {
  private run: SidecarRun | undefined;
  private child: ChildProcess | undefined;
  private ended: Promise<void> = Promise.resolve();
  private readonly crashes: number[] = [];

  constructor(
    private readonly spawnFn: Spawn = spawn,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** The current (or last) run. */
  get last(): SidecarRun | undefined {
    return this.run;
  }

  /** Spawn a run; its stdin/stdout carry LSP, its stderr also goes to `onStderr`. */
  spawn(server: ServerCommand, options: SpawnOptions, onStderr?: (text: string) => void): ChildProcess {
    const run: SidecarRun = { command: server.command, args: [...server.args], stderr: [], running: false };
    this.run = run;
    const child = this.spawnFn(server.command, server.args, { ...options, stdio: 'pipe' });
    this.child = child;
    const tail = new LineTail(run.stderr);
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      tail.push(chunk);
      onStderr?.(chunk);
    });
    this.ended = new Promise<void>((resolve) => {
      child.on('error', (err: NodeJS.ErrnoException) => {
        // Spawning failed (no such program, not executable): no 'exit' follows.
        if (child.pid === undefined && !run.spawnError) {
          run.spawnError = { code: err.code, message: err.message };
          resolve();
        }
      });
      child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
        tail.end();
        if (!run.spawnError) {
          run.exit = { code, signal };
        }
        resolve();
      });
    });
    return child;
  }

  /** The client reached Running with the current run. */
  markRunning(): void {
    if (this.run) {
      this.run.running = true;
    }
  }

  /** Resolves once the current run ended, or after `waitMs` if it does not. */
  async whenEnded(waitMs: number): Promise<SidecarRun | undefined> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.ended,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs);
      }),
    ]);
    clearTimeout(timer);
    return this.run;
  }

  /**
   * The connection closed: restart a sidecar that had been running, unless it
   * crashed more than the budget allows; never restart one that did not start
   * (the same error again, five times, helps nobody).
   */
  shouldRestart(): boolean {
    if (!this.run?.running) {
      return false;
    }
    const t = this.now();
    this.crashes.push(t);
    while (this.crashes.length > 0 && t - this.crashes[0] > RESTART_WINDOW_MS) {
      this.crashes.shift();
    }
    return this.crashes.length <= MAX_RESTARTS;
  }

  /** Crashes counted in the restart window. */
  get crashCount(): number {
    return this.crashes.length;
  }

  /** Kill the current process if it is still alive (after stop()). */
  kill(): void {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      child.kill();
    }
  }
}
