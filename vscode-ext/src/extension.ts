/**
 * Entry point: wires the language client (src/languageClient.ts), the prompt
 * flow (src/promptFlow.ts), the status bar (src/statusBar.ts) and the pending
 * view (src/pendingView.ts). No logic of its own beyond that.
 */
import * as vscode from 'vscode';
import { State } from 'vscode-languageclient/node';
import type { LanguageClient } from 'vscode-languageclient/node';
import { readSettings, restartNeeded, serverCommand } from './config';
import type { HiveSettings } from './config';
import { SwitchableHubClient } from './hubClient';
import { IdleTracker, openGraceSeconds, watchEditorActivity } from './idle';
import { createLanguageClient, hubClientOf } from './languageClient';
import { registerHumanInputTool } from './lmTool';
import { PendingTreeProvider, promptIdOf } from './pendingView';
import { plain } from './plainText';
import { PromptFlow } from './promptFlow';
import { Command, PENDING_VIEW_ID, Requests, ServerNotifications, TEST_AGENT_ID } from './protocol';
import { askParams, errorMessage } from './respond';
import { commandLine, failureMessage, Sidecar } from './sidecar';
import { HiveStatusBar } from './statusBar';
import { TraceChannel } from './trace';
import * as os from 'node:os';

let client: LanguageClient | undefined;
/** The processes of `client`'s sidecar: how the last one ended. */
let sidecar: Sidecar | undefined;
let hub: SwitchableHubClient | undefined;
let flow: PromptFlow | undefined;
let output: vscode.LogOutputChannel | undefined;
let statusBar: HiveStatusBar | undefined;
/** The client's trace channel: `hive.trace.server` alone turns the trace on (src/trace.ts). */
let trace: TraceChannel | undefined;
/** The command line of the running sidecar: a settings change that leaves it as it is keeps the sidecar. */
let startedLine: string | undefined;
/** The error notifications' button that opens the "Hive" output channel. */
const SHOW_LOG = 'Show Log';

function settings(): HiveSettings {
  const config = vscode.workspace.getConfiguration('hive');
  return readSettings((key) => config.get(key));
}

function answeredBy(): string {
  const by = settings().by.trim();
  if (by) {
    return by;
  }
  try {
    return os.userInfo().username || '';
  } catch {
    return '';
  }
}

async function startClient(): Promise<void> {
  if (!hub || !flow || !output) {
    return;
  }
  let server;
  try {
    server = serverCommand(settings());
  } catch (err) {
    void vscode.window.showErrorMessage(`Hive: ${plain(errorMessage(err))}`);
    return;
  }
  startedLine = commandLine(server.command, server.args);
  output.info(`starting ${startedLine}`);
  const proc = new Sidecar();
  const c = createLanguageClient(
    server,
    output,
    proc,
    () => {
      if (client === c && proc.last) {
        void reportFailure(failureMessage(proc.last, { crashes: proc.crashCount }));
      }
    },
    trace,
  );
  client = c;
  sidecar = proc;
  const hubRef = hub;
  const flowRef = flow;
  c.onDidChangeState((e) => {
    if (client !== c) {
      return;
    }
    if (e.newState === State.Running) {
      proc.markRunning();
      // First start, or an automatic restart after a crash: subscribe again
      // (a degraded hub says so again right after).
      flowRef.reset();
      statusBar?.setHealth(null);
      hubRef.setTarget(hubClientOf(c));
      hubRef.sendRequest(Requests.subscribe).then(
        (r) => output?.info(`subscribed; ${r.pending ?? 0} pending`),
        (err) => output?.info(`hive/subscribe failed: ${errorMessage(err)}`),
      );
    } else if (e.newState === State.Stopped) {
      hubRef.setTarget(undefined);
    }
  });
  try {
    await c.start();
  } catch (err) {
    // Say what failed: the command, how it ended, its last stderr lines (the
    // rejection itself is "Pending response rejected since connection got
    // disposed", which says nothing).
    const run = await proc.whenEnded(2000);
    if (client === c) {
      const text = run
        ? failureMessage(run, { reason: errorMessage(err) })
        : `Hive: the sidecar did not start: ${errorMessage(err)}`;
      output.error(text);
      // Not awaited: activation (and every command of the extension, Show
      // Sidecar Log included) would wait until the notification is closed.
      void reportFailure(text);
    }
  }
}

/** An error notification with a button that opens the sidecar's log. */
async function reportFailure(text: string): Promise<void> {
  // Plain: it quotes the sidecar's stderr and the hub's words (no links, no icons).
  const choice = await vscode.window.showErrorMessage(plain(text), SHOW_LOG);
  if (choice === SHOW_LOG) {
    output?.show();
  }
}

async function stopClient(): Promise<void> {
  const c = client;
  const proc = sidecar;
  client = undefined;
  sidecar = undefined;
  hub?.setTarget(undefined);
  flow?.reset();
  statusBar?.setHealth(null);
  if (c) {
    try {
      await c.stop();
    } catch (err) {
      output?.info(`stopping the sidecar: ${errorMessage(err)}`);
    }
  }
  // The extension spawned it, so vscode-languageclient does not kill it: one
  // that ignored `exit` (or never started speaking LSP) must not outlive us.
  proc?.kill();
}

/**
 * `hive.pythonPath`, `hive.command` or `hive.socket` changed: a new sidecar,
 * unless its command line is the same (`hive.pythonPath` while `hive.command`
 * is set). Deferred questions stay deferred across the restart (PromptQueue).
 */
async function sidecarSettingsChanged(): Promise<void> {
  let line: string | undefined;
  try {
    const server = serverCommand(settings());
    line = commandLine(server.command, server.args);
  } catch {
    line = undefined; // startClient says what is wrong with it
  }
  if (client && line !== undefined && line === startedLine) {
    output?.info(`settings changed; the sidecar's command is unchanged, kept: ${line}`);
    return;
  }
  output?.info('a setting of the sidecar changed: restarting it');
  await restartClient();
}

async function restartClient(): Promise<void> {
  await stopClient();
  await startClient();
}

async function askTest(): Promise<void> {
  if (!hub) {
    return;
  }
  const question = await vscode.window.showInputBox({
    title: 'Hive: Ask (test)',
    prompt: 'Question',
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() === '' ? 'Type a question' : undefined),
  });
  if (question === undefined) {
    return;
  }
  const choices = await vscode.window.showInputBox({
    title: 'Hive: Ask (test)',
    prompt: 'Choices (comma-separated, empty for free text)',
    ignoreFocusOut: true,
  });
  if (choices === undefined) {
    return;
  }
  try {
    const record = await hub.sendRequest(
      Requests.ask,
      askParams(question, choices, settings().timeoutSeconds, TEST_AGENT_ID),
    );
    void vscode.window.showInformationMessage(`Hive: asked ${record.id}`);
  } catch (err) {
    void vscode.window.showErrorMessage(`Hive: ask failed: ${plain(errorMessage(err))}`);
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('Hive', { log: true });
  trace = new TraceChannel(output);
  hub = new SwitchableHubClient();
  // Questions open on their own only once the human stopped typing (src/idle.ts).
  const idle = new IdleTracker(() => settings().idleSeconds);
  const activity = watchEditorActivity(idle, { window: vscode.window, workspace: vscode.workspace });
  flow = new PromptFlow(hub, undefined, {
    by: answeredBy,
    autoAsk: () => settings().autoAsk,
    idle,
    openGrace: () =>
      openGraceSeconds(settings().idleSeconds, vscode.workspace.getConfiguration('hive').get('openGraceSeconds')),
  });
  const bar = new HiveStatusBar(flow.queue);
  statusBar = bar;
  const connection = hub.onNotification(ServerNotifications.connection, (p) =>
    bar.setConnection(p.connected === true, typeof p.message === 'string' ? p.message : ''),
  );
  const health = hub.onNotification(ServerNotifications.health, (p) =>
    bar.setHealth(typeof p?.degraded === 'string' ? p.degraded : null),
  );
  const pending = new PendingTreeProvider(flow.queue);
  const f = flow;
  context.subscriptions.push(
    output,
    trace,
    idle,
    activity,
    flow,
    bar,
    connection,
    health,
    pending,
    vscode.window.registerTreeDataProvider(PENDING_VIEW_ID, pending),
    vscode.commands.registerCommand(Command.answerNext, () => f.answerNext()),
    vscode.commands.registerCommand(Command.showPending, () => f.showPending()),
    vscode.commands.registerCommand(Command.ask, askTest),
    vscode.commands.registerCommand(Command.restart, restartClient),
    vscode.commands.registerCommand(Command.showLog, () => output?.show()),
    vscode.commands.registerCommand(Command.answerPrompt, (arg: unknown) => {
      const id = promptIdOf(arg);
      if (id) {
        f.answer(id);
      }
    }),
    vscode.commands.registerCommand(Command.cancelPrompt, (arg: unknown) => {
      const id = promptIdOf(arg);
      if (id) {
        return f.cancel(id);
      }
      return undefined;
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('hive.idleSeconds')) {
        idle.recheck();
      }
    }),
    // Only the settings the sidecar's command line is made of restart it; the
    // others are read when used, and trace.server is followed by the client.
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (restartNeeded((section) => e.affectsConfiguration(section))) {
        void sidecarSettingsChanged();
      }
    }),
  );
  // request_human_input for VS Code's chat (src/lmTool.ts), where the API exists.
  const tool = registerHumanInputTool(hub, (line) => output?.info(line));
  if (tool) {
    context.subscriptions.push(tool);
  }
  await startClient();
}

export async function deactivate(): Promise<void> {
  await stopClient();
}
