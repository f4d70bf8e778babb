/**
 * The sidecar's language client over its life: start it (and say what failed,
 * with the command, how it ended and its stderr), subscribe each time it runs
 * (first start or an automatic restart after a crash), restart it when the
 * settings its command line is made of change, and stop it (killing a process
 * that ignored `exit`). This is the state src/extension.ts would otherwise
 * keep in module variables.
 */
import * as vscode from 'vscode';
import { State } from 'vscode-languageclient/node';
import type { LanguageClient } from 'vscode-languageclient/node';
import { serverCommand } from './config';
import type { HiveSettings } from './config';
import type { SwitchableHubClient } from './hubClient';
import { createLanguageClient, hubClientOf } from './languageClient';
import { plain } from './plainText';
import { Requests } from './protocol';
import { errorMessage } from './respond';
import { commandLine, failureMessage, Sidecar } from './sidecar';

/** The error notifications' button that opens the "Hive" output channel. */
const SHOW_LOG = 'Show Log';

export interface SidecarConnectionOptions {
  /** What the UI talks to: pointed at each new client once it runs. */
  hub: SwitchableHubClient;
  output: vscode.LogOutputChannel;
  /** Where the message trace goes (src/trace.ts). */
  trace?: vscode.LogOutputChannel;
  settings: () => HiveSettings;
  /** The prompts shown are forgotten: the next sidecar's hub resends the pending ones. */
  onReset: () => void;
  /** The sidecar subscribed: ask the hub what the subscription does not resend (the expired-unseen questions). */
  onSubscribed?: () => void;
}

export class SidecarConnection {
  private client: LanguageClient | undefined;
  /** The processes of `client`'s sidecar: how the last one ended. */
  private sidecar: Sidecar | undefined;
  /** The command line of the running sidecar: a settings change that leaves it as it is keeps the sidecar. */
  private startedLine: string | undefined;

  constructor(private readonly options: SidecarConnectionOptions) {}

  async start(): Promise<void> {
    const { hub, output } = this.options;
    let server;
    try {
      server = serverCommand(this.options.settings());
    } catch (err) {
      void vscode.window.showErrorMessage(`Hive: ${plain(errorMessage(err))}`);
      return;
    }
    this.startedLine = commandLine(server.command, server.args);
    output.info(`starting ${this.startedLine}`);
    const proc = new Sidecar();
    const c = createLanguageClient(
      server,
      output,
      proc,
      () => {
        if (this.client === c && proc.last) {
          void this.reportFailure(failureMessage(proc.last, { crashes: proc.crashCount }));
        }
      },
      this.options.trace,
    );
    this.client = c;
    this.sidecar = proc;
    c.onDidChangeState((e) => {
      if (this.client !== c) {
        return;
      }
      if (e.newState === State.Running) {
        proc.markRunning();
        // First start, or an automatic restart after a crash: subscribe again
        // (a degraded hub says so again right after).
        this.options.onReset();
        hub.setTarget(hubClientOf(c));
        // With the agent sessions: the hub sends each one, then each change; the
        // sidecar asks the same of every hub it reconnects to (src/sessions.ts).
        hub.sendRequest(Requests.subscribe, { sessions: true }).then(
          (r) => {
            output.info(`subscribed; ${r.pending ?? 0} pending`);
            this.options.onSubscribed?.();
          },
          (err) => output.info(`hive/subscribe failed: ${errorMessage(err)}`),
        );
      } else if (e.newState === State.Stopped) {
        hub.setTarget(undefined);
      }
    });
    try {
      await c.start();
    } catch (err) {
      // Say what failed: the command, how it ended, its last stderr lines (the
      // rejection itself is "Pending response rejected since connection got
      // disposed", which says nothing).
      const run = await proc.whenEnded(2000);
      if (this.client === c) {
        const text = run
          ? failureMessage(run, { reason: errorMessage(err) })
          : `Hive: the sidecar did not start: ${errorMessage(err)}`;
        output.error(text);
        // Not awaited: activation (and every command of the extension, Show
        // Sidecar Log included) would wait until the notification is closed.
        void this.reportFailure(text);
      }
    }
  }

  async stop(): Promise<void> {
    const c = this.client;
    const proc = this.sidecar;
    this.client = undefined;
    this.sidecar = undefined;
    this.options.hub.setTarget(undefined);
    this.options.onReset();
    if (c) {
      try {
        await c.stop();
      } catch (err) {
        this.options.output.info(`stopping the sidecar: ${errorMessage(err)}`);
      }
    }
    // The extension spawned it, so vscode-languageclient does not kill it: one
    // that ignored `exit` (or never started speaking LSP) must not outlive us.
    proc?.kill();
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /**
   * `hive.pythonPath`, `hive.command` or `hive.socket` changed: a new sidecar,
   * unless its command line is the same (`hive.pythonPath` while `hive.command`
   * is set). Deferred questions stay deferred across the restart (PromptQueue).
   */
  async settingsChanged(): Promise<void> {
    let line: string | undefined;
    try {
      const server = serverCommand(this.options.settings());
      line = commandLine(server.command, server.args);
    } catch {
      line = undefined; // start() says what is wrong with it
    }
    if (this.client && line !== undefined && line === this.startedLine) {
      this.options.output.info(`settings changed; the sidecar's command is unchanged, kept: ${line}`);
      return;
    }
    this.options.output.info('a setting of the sidecar changed: restarting it');
    await this.restart();
  }

  /** An error notification with a button that opens the sidecar's log. */
  private async reportFailure(text: string): Promise<void> {
    // Plain: it quotes the sidecar's stderr and the hub's words (no links, no icons).
    const choice = await vscode.window.showErrorMessage(plain(text), SHOW_LOG);
    if (choice === SHOW_LOG) {
      this.options.output.show();
    }
  }
}
