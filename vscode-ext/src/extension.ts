/**
 * Entry point: wires the language client (src/languageClient.ts), the prompt
 * flow (src/promptFlow.ts), the status bar (src/statusBar.ts) and the pending
 * view (src/pendingView.ts). No logic of its own beyond that.
 */
import * as vscode from 'vscode';
import { State } from 'vscode-languageclient/node';
import type { LanguageClient } from 'vscode-languageclient/node';
import { readSettings, serverCommand } from './config';
import type { HiveSettings } from './config';
import { SwitchableHubClient } from './hubClient';
import { IdleTracker, watchEditorActivity } from './idle';
import { createLanguageClient, hubClientOf } from './languageClient';
import { PendingTreeProvider, promptIdOf } from './pendingView';
import { PromptFlow } from './promptFlow';
import { Command, Method, Notification, PENDING_VIEW_ID, TEST_AGENT_ID } from './protocol';
import type { ConnectionParams, HealthParams, PromptRecord, SubscribeResult } from './protocol';
import { askParams, errorMessage } from './respond';
import { HiveStatusBar } from './statusBar';
import * as os from 'node:os';

let client: LanguageClient | undefined;
let hub: SwitchableHubClient | undefined;
let flow: PromptFlow | undefined;
let output: vscode.LogOutputChannel | undefined;
let statusBar: HiveStatusBar | undefined;

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
    void vscode.window.showErrorMessage(`Hive: ${errorMessage(err)}`);
    return;
  }
  output.info(`starting ${[server.command, ...server.args].join(' ')}`);
  const c = createLanguageClient(server, output);
  client = c;
  const hubRef = hub;
  const flowRef = flow;
  c.onDidChangeState((e) => {
    if (client !== c) {
      return;
    }
    if (e.newState === State.Running) {
      // First start, or an automatic restart after a crash: subscribe again
      // (a degraded hub says so again right after).
      flowRef.reset();
      statusBar?.setHealth(null);
      hubRef.setTarget(hubClientOf(c));
      hubRef.sendRequest<SubscribeResult>(Method.subscribe).then(
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
    const choice = await vscode.window.showErrorMessage(
      `Hive: could not start the sidecar (${errorMessage(err)}). Check hive.pythonPath or hive.command.`,
      'Show Output',
    );
    if (choice === 'Show Output') {
      output.show();
    }
  }
}

async function stopClient(): Promise<void> {
  const c = client;
  client = undefined;
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
    const record = await hub.sendRequest<PromptRecord>(
      Method.ask,
      askParams(question, choices, settings().timeoutSeconds, TEST_AGENT_ID),
    );
    void vscode.window.showInformationMessage(`Hive: asked ${record.id}`);
  } catch (err) {
    void vscode.window.showErrorMessage(`Hive: ask failed: ${errorMessage(err)}`);
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('Hive', { log: true });
  hub = new SwitchableHubClient();
  // Questions open on their own only once the human stopped typing (src/idle.ts).
  const idle = new IdleTracker(() => settings().idleSeconds);
  const activity = watchEditorActivity(idle, { window: vscode.window, workspace: vscode.workspace });
  flow = new PromptFlow(hub, undefined, { by: answeredBy, autoAsk: () => settings().autoAsk, idle });
  const bar = new HiveStatusBar(flow.queue);
  statusBar = bar;
  const connection = hub.onNotification<ConnectionParams>(Notification.connection, (p) =>
    bar.setConnection(p.connected === true, typeof p.message === 'string' ? p.message : ''),
  );
  const health = hub.onNotification<HealthParams>(Notification.health, (p) =>
    bar.setHealth(typeof p?.degraded === 'string' ? p.degraded : null),
  );
  const pending = new PendingTreeProvider(flow.queue);
  const f = flow;
  context.subscriptions.push(
    output,
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
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('hive')) {
        void restartClient();
      }
    }),
  );
  await startClient();
}

export async function deactivate(): Promise<void> {
  await stopClient();
}
