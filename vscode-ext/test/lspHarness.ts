/**
 * Harness for the tests against the REAL `hive-rpc lsp` sidecar and a REAL hub
 * (no mocks): a hub is started with `python -m hive_rpc serve` on a socket in a
 * fresh directory under /tmp, each "window" is a `python -m hive_rpc lsp
 * --no-start` process spoken to with vscode-jsonrpc over its stdio, exactly as
 * vscode-languageclient does, and agents are played by the `hive-rpc` CLI.
 *
 * Environment:
 * - HIVE_PYTHON: the interpreter. Unset, the project's venv
 *   (`REPO/.venv/bin/python`, what scripts/test-all.sh makes), and only
 *   without one a `python3` on PATH, if it runs `hive_rpc lsp` (the system
 *   Python usually lacks trio and the hub's other dependencies: using it
 *   blindly failed with "No module named 'jeepney'"). The repository root is
 *   added to PYTHONPATH so `hive_rpc` imports from the checkout too.
 * - If `python -m hive_rpc lsp --help` fails, the tests FAIL, saying so.
 *   HIVE_ALLOW_MISSING_LSP=1 turns that into a skip (for a tree where the
 *   Python side has not landed yet).
 * - HIVE_TEST_TRANSPORT=hub-socket connects each "window" straight to the
 *   hub's socket instead of through `hive-rpc lsp` (no LSP initialize or
 *   shutdown). It only checks this file's own expectations against the real
 *   hub; the default, and what `npm test` runs, is the real `hive-rpc lsp`.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, execFile } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import {
  createMessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  SocketMessageReader,
  SocketMessageWriter,
} from 'vscode-jsonrpc/node';
import type { MessageConnection, MessageSignature } from 'vscode-jsonrpc/node';
import type { HubClient } from '../src/hubClient';
import type { DismissParams, PromptRecord, SubscribeResult } from '../src/protocol';

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
export const VIA_HUB_SOCKET = process.env.HIVE_TEST_TRANSPORT === 'hub-socket';
export const TIMEOUT_MS = 20_000;

/** The environment of every Python run here: the checkout first on PYTHONPATH. */
export const baseEnv: NodeJS.ProcessEnv = {
  ...process.env,
  PYTHONPATH: [REPO_ROOT, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter),
  PYTHONUNBUFFERED: '1',
};

/** Why `python -m hive_rpc lsp --help` fails, or null when it works. */
function lspFails(python: string): string | null {
  const r = spawnSync(python, ['-m', 'hive_rpc', 'lsp', '--help'], { env: baseEnv, encoding: 'utf8', timeout: 30_000 });
  if (r.status === 0) {
    return null;
  }
  const why = (r.stderr || String(r.error ?? '')).trim().split('\n').slice(-3).join('\n');
  return `"${python} -m hive_rpc lsp --help" failed (exit ${r.status}): ${why}`;
}

/**
 * The interpreter for the tests, and why none works. Exported for its test:
 * `env` is the environment, `exists` and `fails` stand for the file system
 * and a run of `-m hive_rpc lsp --help`.
 */
export function pickPython(
  env: NodeJS.ProcessEnv,
  venvPython: string,
  exists: (file: string) => boolean,
  fails: (python: string) => string | null,
): { python: string; ok: boolean; why: string } {
  if (env.HIVE_PYTHON) {
    const why = fails(env.HIVE_PYTHON);
    return { python: env.HIVE_PYTHON, ok: why === null, why: why ? `HIVE_PYTHON: ${why}` : '' };
  }
  if (exists(venvPython)) {
    const why = fails(venvPython);
    return {
      python: venvPython,
      ok: why === null,
      why: why ? `the project's venv: ${why}; reinstall it (.venv/bin/pip install -e '.[test]') or set HIVE_PYTHON` : '',
    };
  }
  const why = fails('python3');
  return {
    python: 'python3',
    ok: why === null,
    why: why
      ? `no Python runs hive_rpc: HIVE_PYTHON is not set, ${venvPython} does not exist, and ${why}. ` +
        `Make the venv (python3 -m venv .venv && .venv/bin/pip install -e '.[test]' in the repository) or set HIVE_PYTHON`
      : '',
  };
}

const picked = VIA_HUB_SOCKET
  ? { python: process.env.HIVE_PYTHON || path.join(REPO_ROOT, '.venv', 'bin', 'python'), ok: true, why: '' }
  : pickPython(process.env, path.join(REPO_ROOT, '.venv', 'bin', 'python'), fs.existsSync, lspFails);
/** The interpreter that runs the hub, `hive-rpc lsp` and the CLI in these tests. */
export const PYTHON = picked.python;
export const lsp = { ok: picked.ok, why: picked.why };
export const skip: string | false = !lsp.ok && process.env.HIVE_ALLOW_MISSING_LSP === '1' ? `hive-rpc lsp is missing: ${lsp.why}` : false;

let dir = '';
let sock = '';
let dataDir = '';
let hub: ChildProcess | undefined;
let hubLog = '';
const windows: Window[] = [];

/** The running hub process (undefined before startHub). */
export function hubProcess(): ChildProcess | undefined {
  return hub;
}

/** Make a fresh directory under /tmp and start a hub on a socket there. */
export async function startHub(): Promise<void> {
  if (!lsp.ok) {
    throw new Error(`${lsp.why}\n(set HIVE_ALLOW_MISSING_LSP=1 to skip these tests)`);
  }
  dir = fs.mkdtempSync('/tmp/hvx-');
  sock = path.join(dir, 'hub.sock');
  dataDir = path.join(dir, 'data');
  await spawnHub();
}

/** Close every window, stop the hub, remove the directory. */
export async function stopHub(): Promise<void> {
  for (const w of windows.splice(0)) {
    w.close();
  }
  if (hub && hub.exitCode === null) {
    hub.removeAllListeners('exit');
    const gone = new Promise((r) => hub!.once('exit', r));
    hub.kill('SIGTERM');
    await withTimeout(gone, 'the hub to stop', 10_000).catch(() => hub?.kill('SIGKILL'));
  }
  if (dir) {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function env(): NodeJS.ProcessEnv {
  return { ...baseEnv, HIVE_RPC_SOCKET: sock, HIVE_RPC_DATA_DIR: dataDir };
}

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `python -m hive_rpc ARGS --socket S --data-dir D --no-start`. */
export function cli(...args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      PYTHON,
      ['-m', 'hive_rpc', ...args, '--socket', sock, '--data-dir', dataDir, '--no-start'],
      { env: env(), timeout: TIMEOUT_MS },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Ask as an agent with the CLI; returns the prompt id. */
export async function ask(question: string, ...options: string[]): Promise<string> {
  const r = await cli('ask', question, '--agent', 'tester', '--json', ...options);
  assert.equal(r.code, 0, `hive-rpc ask failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { id: string; status: string };
  assert.equal(out.status, 'pending');
  return out.id;
}

export async function pollJson(id: string): Promise<{ code: number; record: PromptRecord }> {
  const r = await cli('poll', id, '--json');
  return { code: r.code, record: JSON.parse(r.stdout) as PromptRecord };
}

/**
 * Stop the hub and start another on the same socket, as a person restarting it
 * does; `forget` starts it on an empty data directory, so it knows none of the
 * old hub's questions (and so none of their agents' sessions).
 */
export async function restartHub(forget: boolean): Promise<void> {
  const old = hub!;
  if (old.exitCode === null) {
    const gone = new Promise((r) => old.once('exit', r));
    old.kill('SIGTERM');
    await withTimeout(gone, 'the hub to stop', 10_000);
  }
  if (forget) {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  hubLog = '';
  await spawnHub();
}

function spawnHub(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, ['-m', 'hive_rpc', 'serve', '--socket', sock, '--data-dir', dataDir], {
      env: env(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    hub = child;
    const timer = setTimeout(() => reject(new Error(`the hub did not come up:\n${hubLog}`)), TIMEOUT_MS);
    const onData = (chunk: Buffer): void => {
      hubLog += chunk.toString();
      // `hive-rpc serve` prints this once the socket accepts connections.
      if (hubLog.includes('hive-rpc hub listening on')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the hub exited (${code}):\n${hubLog}`));
    });
  });
}

/** Wait for a value to appear in a list that notifications fill. */
export class Inbox<T> {
  readonly items: T[] = [];
  private waiters: { pred: (t: T) => boolean; resolve: (t: T) => void }[] = [];
  push(item: T): void {
    this.items.push(item);
    this.waiters = this.waiters.filter((w) => {
      if (w.pred(item)) {
        w.resolve(item);
        return false;
      }
      return true;
    });
  }
  wait(pred: (t: T) => boolean, what: string, ms = TIMEOUT_MS): Promise<T> {
    const found = this.items.find(pred);
    if (found !== undefined) {
      return Promise.resolve(found);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
      this.waiters.push({
        pred,
        resolve: (t) => {
          clearTimeout(timer);
          resolve(t);
        },
      });
    });
  }
}

/** One editor window: a `hive-rpc lsp` process and a JSON-RPC connection to it. */
export class Window {
  readonly prompts = new Inbox<PromptRecord>();
  readonly dismisses = new Inbox<DismissParams>();
  readonly serverRequests: string[] = [];
  stderr = '';
  child?: ChildProcess;
  socket?: net.Socket;
  conn!: MessageConnection;
  exited?: Promise<number | null>;

  static async open(): Promise<Window> {
    const w = new Window();
    windows.push(w);
    if (VIA_HUB_SOCKET) {
      const s = net.connect(sock);
      await new Promise<void>((resolve, reject) => {
        s.once('connect', resolve);
        s.once('error', reject);
      });
      w.socket = s;
      w.conn = createMessageConnection(new SocketMessageReader(s), new SocketMessageWriter(s));
    } else {
      const child = spawn(
        PYTHON,
        ['-m', 'hive_rpc', 'lsp', '--socket', sock, '--data-dir', dataDir, '--no-start'],
        { env: env(), stdio: ['pipe', 'pipe', 'pipe'] },
      );
      w.child = child;
      child.stderr!.on('data', (c: Buffer) => (w.stderr += c.toString()));
      w.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
      w.conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    }
    w.conn.onNotification('hive/prompt', (p: PromptRecord) => {
      w.prompts.push(p);
      w.emit('hive/prompt', p);
    });
    w.conn.onNotification('hive/dismiss', (p: DismissParams) => {
      w.dismisses.push(p);
      w.emit('hive/dismiss', p);
    });
    // Every other notification, for hubClient()'s listeners (hive/session, hive/connection, ...).
    w.conn.onNotification((method: string, params: unknown) => w.emit(method, params));
    // Requests a language server may send to its client (window/workDoneProgress/create, ...).
    w.conn.onRequest((method: string) => {
      w.serverRequests.push(method);
      return null;
    });
    w.conn.listen();
    return w;
  }

  private listeners: { method: string; handler: (p: unknown) => void }[] = [];

  private emit(method: string, params: unknown): void {
    for (const l of this.listeners.filter((x) => x.method === method)) {
      l.handler(params);
    }
  }

  /** This window as the extension's HubClient (what src/languageClient.ts provides). */
  hubClient(): HubClient {
    return {
      sendRequest: <R>(type: MessageSignature, params?: unknown) => this.request<R>(type.method, params as object),
      sendNotification: (type: MessageSignature, params?: unknown) => {
        void this.conn.sendNotification(type.method, params);
      },
      onNotification: <P>(type: MessageSignature, handler: (params: P) => void) => {
        const entry = { method: type.method, handler: handler as (p: unknown) => void };
        this.listeners.push(entry);
        return { dispose: () => (this.listeners = this.listeners.filter((x) => x !== entry)) };
      },
    };
  }

  /** LSP initialize + initialized, as vscode-languageclient does. */
  async initialize(): Promise<{ capabilities: object; serverInfo?: { name: string } } | undefined> {
    if (VIA_HUB_SOCKET) {
      return undefined;
    }
    const result = await this.conn.sendRequest<{ capabilities: object; serverInfo?: { name: string } }>('initialize', {
      processId: process.pid,
      clientInfo: { name: 'hive-rpc-vscode-tests' },
      rootUri: null,
      capabilities: {},
      initializationOptions: { progress: false },
    });
    await this.conn.sendNotification('initialized', {});
    return result;
  }

  async subscribed(): Promise<SubscribeResult> {
    await this.initialize();
    return this.conn.sendRequest<SubscribeResult>('hive/subscribe');
  }

  request<R>(method: string, params?: object): Promise<R> {
    return params === undefined ? this.conn.sendRequest<R>(method) : this.conn.sendRequest<R>(method, params);
  }

  /** LSP shutdown + exit; resolves with the process's exit code. */
  async shutdown(): Promise<number | null> {
    if (VIA_HUB_SOCKET) {
      this.conn.dispose();
      this.socket!.end();
      return 0;
    }
    const r = await this.conn.sendRequest('shutdown');
    assert.equal(r, null);
    await this.conn.sendNotification('exit');
    return withTimeout(this.exited!, 'the lsp process to exit after exit');
  }

  close(): void {
    this.conn.dispose();
    this.socket?.destroy();
    if (this.child && this.child.exitCode === null) {
      this.child.kill('SIGTERM');
    }
  }
}

export function withTimeout<T>(p: Promise<T>, what: string, ms = TIMEOUT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<T>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export function rpcCode(err: unknown): number | undefined {
  return err instanceof ResponseError ? err.code : (err as { code?: number })?.code;
}

