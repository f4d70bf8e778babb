/**
 * Starting `hive-rpc lsp` with vscode-languageclient, and the HubClient
 * adapter the UI talks to.
 */
import * as vscode from 'vscode';
import { LanguageClient } from 'vscode-languageclient/node';
import type { LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';
import type { ServerCommand } from './config';
import type { Disposable, HubClient } from './hubClient';
import { CLIENT_ID, CLIENT_NAME } from './protocol';
import type { InitializationOptions } from './protocol';

export function createLanguageClient(server: ServerCommand, outputChannel: vscode.LogOutputChannel): LanguageClient {
  const serverOptions: ServerOptions = {
    command: server.command,
    args: server.args,
    // No `transport`: vscode-languageclient then spawns the command with stdio
    // pipes and adds nothing to its arguments (TransportKind.stdio would append
    // `--stdio`, which `hive-rpc lsp` accepts but older versions rejected).
    options: { env: { ...process.env, PYTHONUNBUFFERED: '1' } },
  };
  // The extension shows pending prompts itself (status bar, view), so the
  // sidecar's work-done progress per prompt would only duplicate them.
  const initializationOptions: InitializationOptions = { progress: false };
  const clientOptions: LanguageClientOptions = {
    // The sidecar serves no documents: it only relays hive/* messages.
    documentSelector: [],
    outputChannel,
    initializationOptions,
  };
  return new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
}

/** The HubClient view of a language client. */
export function hubClientOf(client: LanguageClient): HubClient {
  return {
    sendRequest<R>(method: string, params?: object): Promise<R> {
      return params === undefined ? client.sendRequest<R>(method) : client.sendRequest<R>(method, params);
    },
    sendNotification(method: string, params?: object): void {
      client.sendNotification(method, params).catch((err: unknown) => {
        client.outputChannel.appendLine(`${method} not sent: ${String(err)}`);
      });
    },
    onNotification<P>(method: string, handler: (params: P) => void): Disposable {
      return client.onNotification(method, handler);
    },
  };
}
