/**
 * The extension's settings and how they start `hive-rpc lsp`. No `vscode`
 * import: src/extension.ts reads the settings and passes them here. Pure logic,
 * but for `findOnPath` (reads the file system).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface HiveSettings {
  /**
   * `hive.pythonPath`: interpreter for `-m hive_rpc lsp`. Empty: `hive-rpc lsp`
   * if `hive-rpc` is on PATH, else `python3 -m hive_rpc lsp`.
   */
  pythonPath: string;
  /** `hive.command`: the full command that runs `hive-rpc lsp`; wins if set. */
  command: string | string[] | null;
  /** `hive.socket`: the hub's socket, passed as `--socket`. */
  socket: string;
  /** `hive.timeoutSeconds`: timeout of questions asked with Hive: Ask (test). */
  timeoutSeconds: number;
  /** `hive.by`: the name recorded as who answered. */
  by: string;
  /** `hive.autoAsk`: open each new question on its own (default false: only when the human asks). */
  autoAsk: boolean;
  /** `hive.idleSeconds`: open a question on its own only after this long without typing (0: at once). */
  idleSeconds: number;
}

export const DEFAULT_SETTINGS: HiveSettings = {
  pythonPath: '',
  command: null,
  socket: '',
  timeoutSeconds: 300,
  by: '',
  autoAsk: false,
  idleSeconds: 2,
};

/**
 * The settings that make the sidecar's command line, read only when it starts:
 * a change restarts it. Every other `hive.*` setting is read each time it is
 * used (`timeoutSeconds`, `by`, `autoAsk`, `idleSeconds`) or followed by the
 * language client (`trace.server`), so a change applies at once and the
 * sidecar, its subscription and the open question stay as they are.
 */
export const RESTART_SETTINGS = ['hive.pythonPath', 'hive.command', 'hive.socket'] as const;

/** Whether a configuration change (`affectsConfiguration`) touches a setting that needs a new sidecar. */
export function restartNeeded(affects: (section: string) => boolean): boolean {
  return RESTART_SETTINGS.some((section) => affects(section));
}

export interface ServerCommand {
  command: string;
  args: string[];
}

/**
 * Split a command line into words. Spaces separate words; single and double
 * quotes group, and a backslash escapes the next character (outside single
 * quotes). No other shell syntax.
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) {
        quote = null;
      } else if (c === '\\' && quote === '"' && i + 1 < line.length) {
        word += line[++i];
      } else {
        word += c;
      }
    } else if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) {
        words.push(word);
        word = '';
        inWord = false;
      }
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote) {
    throw new Error(`unterminated ${quote} quote in ${JSON.stringify(line)}`);
  }
  if (inWord) {
    words.push(word);
  }
  return words;
}

/**
 * The command that starts the sidecar: `hive.command` if set (an array, or a
 * string split into words), else `<hive.pythonPath> -m hive_rpc lsp` if that is
 * set, else `hive-rpc lsp` if `hive-rpc` is on PATH (`onPath` finds it; a pipx
 * or venv install puts only the command there, not a `python3` that imports
 * hive_rpc), else `python3 -m hive_rpc lsp`; then `--socket PATH` if
 * `hive.socket` is set.
 */
export function serverCommand(
  settings: Pick<HiveSettings, 'pythonPath' | 'command' | 'socket'>,
  onPath: (name: string) => string | undefined = findOnPath,
): ServerCommand {
  let words: string[];
  const cmd = settings.command;
  if (Array.isArray(cmd) && cmd.length > 0) {
    words = cmd.map(String);
  } else if (typeof cmd === 'string' && cmd.trim() !== '') {
    words = splitCommandLine(cmd);
  } else if (settings.pythonPath.trim() !== '') {
    words = [settings.pythonPath.trim(), '-m', 'hive_rpc', 'lsp'];
  } else {
    const hiveRpc = onPath('hive-rpc');
    words = hiveRpc ? [hiveRpc, 'lsp'] : ['python3', '-m', 'hive_rpc', 'lsp'];
  }
  if (words.length === 0 || words[0] === '') {
    throw new Error('hive.command is empty');
  }
  const args = words.slice(1);
  if (settings.socket.trim() !== '') {
    args.push('--socket', settings.socket.trim());
  }
  return { command: words[0], args };
}

/** The executable `name` in a directory of `PATH` (the extension host's), or undefined. */
export function findOnPath(name: string, pathVar: string = process.env.PATH ?? ''): string | undefined {
  for (const dir of pathVar.split(path.delimiter)) {
    if (dir === '') {
      continue;
    }
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) {
        return candidate;
      }
    } catch {
      // not there, or not executable: the next directory
    }
  }
  return undefined;
}

/** Read the settings from a getter (vscode's WorkspaceConfiguration.get). */
export function readSettings(get: <T>(key: string) => T | undefined): HiveSettings {
  const command = get<string | string[] | null>('command');
  const timeout = Number(get<number>('timeoutSeconds'));
  return {
    pythonPath: String(get<string>('pythonPath') ?? ''),
    command: command === undefined ? null : command,
    socket: String(get<string>('socket') ?? ''),
    timeoutSeconds: Number.isFinite(timeout) ? timeout : DEFAULT_SETTINGS.timeoutSeconds,
    by: String(get<string>('by') ?? ''),
    autoAsk: get<boolean>('autoAsk') === true,
    idleSeconds: nonNegative(get<number>('idleSeconds'), DEFAULT_SETTINGS.idleSeconds),
  };
}

/** A number of seconds from a setting: a negative or non-number value gets the default. */
function nonNegative(value: unknown, fallback: number): number {
  const n = Number(value);
  return value !== undefined && value !== null && Number.isFinite(n) && n >= 0 ? n : fallback;
}
