/**
 * Entry point: wires the sidecar's connection (src/sidecarConnection.ts), the
 * prompt flow (src/promptFlow.ts), the status bar (src/statusBar.ts), the
 * pending view (src/pendingView.ts), the sessions view (src/sessionsView.ts),
 * the commands and the language-model tool
 * (src/lmTool.ts). No logic of its own beyond that: every object it makes goes
 * into `context.subscriptions`, and `deactivate` returns the sidecar's stop.
 */
import * as vscode from 'vscode';
import { askTest } from './askTest';
import { Attention } from './attention';
import { restartNeeded } from './config';
import { DETAIL_SCHEME, DetailDocuments } from './detailDocuments';
import { SwitchableHubClient } from './hubClient';
import { IdleTracker, watchEditorActivity } from './idle';
import { registerHumanInputTool } from './lmTool';
import { PendingTreeProvider, promptIdOf } from './pendingView';
import { PromptFlow } from './promptFlow';
import { Command, PENDING_VIEW_ID, ServerNotifications, SESSIONS_VIEW_ID } from './protocol';
import { PromptQueue } from './queue';
import { deferredStore } from './deferredStore';
import { showExpired } from './expiredPick';
import { SessionFeed, SessionStore } from './sessions';
import { openSession, SessionsTreeProvider } from './sessionsView';
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
  const attention = new Attention(hub, (line) => output.info(line));
  // The deferred questions, kept across a window reload (a reload never asks them again).
  const queue = new PromptQueue(deferredStore(context, (line) => output.warn(line)));
  const flow = new PromptFlow(hub, queue, {
    by: answeredBy,
    autoAsk: () => currentSettings().autoAsk,
    idle,
    openGrace: currentOpenGrace,
    // The API does not say whether the keyboard is in a terminal: with one open,
    // nothing opens by itself (docs/vscode.md).
    terminalActive: () => vscode.window.terminals.length > 0,
    attention,
    showDetail: (record) => {
      details.show(record).catch((e: unknown) => output.error(`cannot show the details: ${String(e)}`));
    },
  });
  const bar = new HiveStatusBar(flow.queue, attention);
  const pending = new PendingTreeProvider(flow.queue, undefined, undefined, attention);
  const view = vscode.window.createTreeView(PENDING_VIEW_ID, { treeDataProvider: pending });
  let lostHub: string | undefined;
  const updateViewMessage = (): void => {
    view.message = PendingTreeProvider.connectionMessage(hub.connected, lostHub);
  };
  updateViewMessage();
  // The agent sessions (src/sessions.ts): live by the hub's hive/session, in their own view.
  const sessionStore = new SessionStore();
  const feed = new SessionFeed(hub, sessionStore, (line) => output.info(line));
  const sessions = new SessionsTreeProvider(sessionStore);
  const sessionsView = vscode.window.createTreeView(SESSIONS_VIEW_ID, { treeDataProvider: sessions });
  const updateBadge = (): void => {
    sessionsView.badge = sessions.badge();
  };
  const sidecar = new SidecarConnection({
    hub,
    output,
    trace,
    settings: currentSettings,
    onReset: () => {
      flow.reset();
      bar.setHealth(null);
      feed.reset();
    },
    onSubscribed: () => {
      void attention.refresh();
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
    hub.onNotification(ServerNotifications.connection, (p) => {
      const message = typeof p.message === 'string' ? p.message : '';
      bar.setConnection(p.connected === true, message);
      lostHub = p.connected === true ? undefined : message || 'lost the hub';
      updateViewMessage();
      if (p.connected === true) {
        void attention.refresh();
      }
    }),
    hub.onDidChangeTarget(() => {
      lostHub = undefined;
      updateViewMessage();
    }),
    hub.onNotification(ServerNotifications.health, (p) =>
      bar.setHealth(typeof p?.degraded === 'string' ? p.degraded : null),
    ),
    pending,
    view,
    feed,
    sessions,
    sessionsView,
    sessionStore.onDidChange(updateBadge),
    vscode.commands.registerCommand(Command.openSession, (arg: unknown) =>
      openSession(arg, { store: sessionStore, queue: flow.queue, answer: (id) => flow.answer(id) }),
    ),
    vscode.commands.registerCommand(Command.answerNext, () => flow.answerNext()),
    vscode.commands.registerCommand(Command.deferAll, () => flow.deferAll()),
    vscode.commands.registerCommand(Command.deferPrompt, (arg: unknown) => {
      const id = promptIdOf(arg);
      if (id) {
        flow.deferOne(id);
      }
    }),
    vscode.commands.registerCommand(Command.answerWith, (id: unknown, choice: unknown) =>
      typeof id === 'string' && typeof choice === 'string' ? flow.answerWith(id, choice) : undefined,
    ),
    vscode.commands.registerCommand(Command.showExpired, () => showExpired(attention)),
    vscode.commands.registerCommand(Command.dismissExpired, async (arg: unknown) => {
      const id = promptIdOf(arg);
      try {
        const n = await attention.dismiss(id);
        vscode.window.setStatusBarMessage(`Hive: ${n} expired unseen question${n === 1 ? '' : 's'} dismissed`, 5000);
      } catch (err) {
        void vscode.window.showWarningMessage(`Hive: cannot dismiss: ${String((err as Error)?.message ?? err)}`);
      }
    }),
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
      if (e.affectsConfiguration('hive.autoAsk')) {
        flow.recheckAuto();
      }
    }),
    vscode.window.onDidCloseTerminal(() => flow.recheckAuto()),
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
