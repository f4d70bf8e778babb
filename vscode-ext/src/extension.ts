/**
 * Entry point: wires the sidecar's connection (src/sidecarConnection.ts), the
 * prompt flow (src/promptFlow.ts), the status bar (src/statusBar.ts), the
 * pending view (src/pendingView.ts), the commands and the language-model tool
 * (src/lmTool.ts). No logic of its own beyond that: every object it makes goes
 * into `context.subscriptions`, and `deactivate` returns the sidecar's stop.
 */
import * as vscode from 'vscode';
import { askTest } from './askTest';
import { restartNeeded } from './config';
import { DETAIL_SCHEME, DetailDocuments } from './detailDocuments';
import { SwitchableHubClient } from './hubClient';
import { IdleTracker, watchEditorActivity } from './idle';
import { registerHumanInputTool } from './lmTool';
import { PendingTreeProvider, promptIdOf } from './pendingView';
import { PromptFlow } from './promptFlow';
import { Command, PENDING_VIEW_ID, ServerNotifications } from './protocol';
import { SidecarConnection } from './sidecarConnection';
import { HiveStatusBar } from './statusBar';
import { TraceChannel } from './trace';
import { answeredBy, currentOpenGrace, currentSettings } from './workspaceSettings';

/** The running extension's sidecar, for `deactivate`. */
let connection: SidecarConnection | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('Hive', { log: true });
  // The client's trace channel: `hive.trace.server` alone turns the trace on (src/trace.ts).
  const trace = new TraceChannel(output);
  const hub = new SwitchableHubClient();
  // Questions open on their own only once the human stopped typing (src/idle.ts).
  const idle = new IdleTracker(() => currentSettings().idleSeconds);
  const activity = watchEditorActivity(idle, { window: vscode.window, workspace: vscode.workspace });
  const details = new DetailDocuments();
  const flow = new PromptFlow(hub, undefined, {
    by: answeredBy,
    autoAsk: () => currentSettings().autoAsk,
    idle,
    openGrace: currentOpenGrace,
    showDetail: (record) => {
      details.show(record).catch((e: unknown) => output.error(`cannot show the details: ${String(e)}`));
    },
  });
  const bar = new HiveStatusBar(flow.queue);
  const pending = new PendingTreeProvider(flow.queue);
  const sidecar = new SidecarConnection({
    hub,
    output,
    trace,
    settings: currentSettings,
    onReset: () => {
      flow.reset();
      bar.setHealth(null);
    },
  });
  connection = sidecar;
  context.subscriptions.push(
    output,
    trace,
    idle,
    activity,
    flow,
    vscode.workspace.registerTextDocumentContentProvider(DETAIL_SCHEME, details),
    bar,
    hub.onNotification(ServerNotifications.connection, (p) =>
      bar.setConnection(p.connected === true, typeof p.message === 'string' ? p.message : ''),
    ),
    hub.onNotification(ServerNotifications.health, (p) =>
      bar.setHealth(typeof p?.degraded === 'string' ? p.degraded : null),
    ),
    pending,
    vscode.window.registerTreeDataProvider(PENDING_VIEW_ID, pending),
    vscode.commands.registerCommand(Command.answerNext, () => flow.answerNext()),
    vscode.commands.registerCommand(Command.showPending, () => flow.showPending()),
    vscode.commands.registerCommand(Command.ask, () => askTest(hub, currentSettings().timeoutSeconds)),
    vscode.commands.registerCommand(Command.restart, () => sidecar.restart()),
    vscode.commands.registerCommand(Command.showLog, () => output.show()),
    vscode.commands.registerCommand(Command.answerPrompt, (arg: unknown) => {
      const id = promptIdOf(arg);
      if (id) {
        flow.answer(id);
      }
    }),
    vscode.commands.registerCommand(Command.cancelPrompt, (arg: unknown) => {
      const id = promptIdOf(arg);
      return id ? flow.cancel(id) : undefined;
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
        void sidecar.settingsChanged();
      }
    }),
  );
  // request_human_input for VS Code's chat (src/lmTool.ts), where the API exists.
  const tool = registerHumanInputTool(hub, (line) => output.info(line));
  if (tool) {
    context.subscriptions.push(tool);
  }
  await sidecar.start();
}

export function deactivate(): Promise<void> | undefined {
  const c = connection;
  connection = undefined;
  return c?.stop();
}
