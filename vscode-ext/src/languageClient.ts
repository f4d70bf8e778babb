/**
 * Starting `hive-rpc lsp` with vscode-languageclient, and the HubClient
 * adapter the UI talks to.
 */
import * as vscode from 'vscode';
import { CloseAction, ErrorAction, LanguageClient } from 'vscode-languageclient/node';
import type {
  ErrorHandler,
  LanguageClientOptions,
  NotificationType,
  RequestType,
  RequestType0,
  ServerOptions,
} from 'vscode-languageclient/node';
import type { ServerCommand } from './config';
import { endText as endRunText } from './sidecar';
import type { Sidecar } from './sidecar';
import type { AnyRequest, Disposable, HubClient } from './hubClient';
import { CLIENT_ID, CLIENT_NAME } from './protocol';
import type { InitializationOptions } from './protocol';

/**
 * A LanguageClient that never raises its own error notifications ("couldn't
 * create connection to server", "Pending response rejected ..."): they only
 * go to the log, and the extension says what failed instead (src/sidecar.ts).
 */
class HiveLanguageClient extends LanguageClient {
  override error(message: string, data?: unknown, _showNotification?: boolean | 'force'): void {
    super.error(message, data, false);
  }
}

/**
 * A client whose sidecar is spawned by `sidecar` (so its exit code and stderr
 * are known). A crash of a running sidecar is restarted within a budget; when
 * the budget is spent, `onGiveUp` gets the run that ended. A sidecar that did
 * not start is not restarted: `start()` rejects and the caller reports it.
 */
/**
 * Added to the sidecar's environment. PYTHONSAFEPATH (Python 3.11+): `python -m
 * hive_rpc` must not put the working directory (the workspace folder) first on
 * sys.path, or a workspace holding a `hive_rpc/` folder (a checkout of this
 * project, a namesake) would run its code instead of the installed package.
 */
export const SIDECAR_ENV = { PYTHONUNBUFFERED: '1', PYTHONSAFEPATH: '1' } as const;

export function createLanguageClient(
  server: ServerCommand,
  outputChannel: vscode.LogOutputChannel,
  sidecar: Sidecar,
  onGiveUp: () => void,
  /** Where the message trace goes (src/trace.ts: `hive.trace.server` alone turns it on); default the output channel. */
  traceOutputChannel?: vscode.LogOutputChannel,
): LanguageClient {
  const cwd = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file')?.uri.fsPath;
  // A function, not {command, args}: the extension spawns the process itself.
  // Nothing is added to the arguments (TransportKind.stdio would append
  // `--stdio`), and vscode-languageclient still copies its stderr into the
  // output channel. `command`/`args` say what it runs (logs, tests).
  const serverOptions: ServerOptions = Object.assign(
    () => Promise.resolve(sidecar.spawn(server, { cwd, env: { ...process.env, ...SIDECAR_ENV } })),
    { command: server.command, args: server.args },
  );
  const errorHandler: ErrorHandler = {
    error: (_error, _message, count) => ({
      action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown,
      handled: true,
    }),
    closed: async () => {
      const restart = sidecar.shouldRestart();
      const run = await sidecar.whenEnded(2000);
      if (restart) {
        outputChannel.warn(`the sidecar ${run ? endRunText(run) : 'stopped'}; restarting it`);
        return { action: CloseAction.Restart, handled: true };
      }
      if (run?.running) {
        onGiveUp();
      }
      return { action: CloseAction.DoNotRestart, handled: true };
    },
  };
  // The extension shows pending prompts itself (status bar, view), so the
  // sidecar's work-done progress per prompt would only duplicate them.
  const initializationOptions: InitializationOptions = { progress: false };
  const clientOptions: LanguageClientOptions = {
    // The sidecar serves no documents: it only relays hive/* messages.
    documentSelector: [],
    outputChannel,
    traceOutputChannel,
    initializationOptions,
    errorHandler,
    // Not the bare "Pending response rejected since connection got disposed"
    // pop-up: start() rejects and the extension says what failed.
    initializationFailedHandler: () => false,
  };
  return new HiveLanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
}

/** The HubClient view of a language client. */
export function hubClientOf(client: LanguageClient): HubClient {
  function sendRequest<R>(type: RequestType0<R, void>): Promise<R>;
  function sendRequest<P, R>(type: RequestType<P, R, void>, params: P): Promise<R>;
  function sendRequest<P, R>(type: AnyRequest<P, R>, params?: P): Promise<R> {
    // `unknown` params: the client's own overloads map P through a conditional
    // type that a generic P cannot be checked against (callers were checked).
    return params === undefined
      ? client.sendRequest(type as RequestType0<R, void>)
      : client.sendRequest(type as RequestType<unknown, R, void>, params);
  }
  return {
    sendRequest,
    sendNotification<P>(type: NotificationType<P>, params: P): void {
      client.sendNotification(type as NotificationType<unknown>, params).catch((err: unknown) => {
        client.outputChannel.appendLine(`${type.method} not sent: ${String(err)}`);
      });
    },
    onNotification<P>(type: NotificationType<P>, handler: (params: P) => void): Disposable {
      return client.onNotification(type, handler);
    },
  };
}
