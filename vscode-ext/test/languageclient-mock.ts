/**
 * A MOCK of `vscode-languageclient/node`, for the activation test of
 * src/extension.ts only. The real client needs the real VS Code API, and VS
 * Code itself cannot be downloaded or run on this machine. The real sidecar
 * protocol is covered by test/protocol.lsp.test.ts instead.
 */
import { EventEmitter } from './vscode-mock';

export enum TransportKind {
  stdio = 0,
  ipc = 1,
  pipe = 2,
  socket = 3,
}

export enum State {
  Stopped = 1,
  Starting = 3,
  Running = 2,
}

/** A method name, or a typed constant of src/protocol.ts (vscode-jsonrpc's RequestType, NotificationType). */
type Message = string | { method: string };

function methodOf(type: Message): string {
  return typeof type === 'string' ? type : type.method;
}

export class LanguageClient {
  static instances: LanguageClient[] = [];
  readonly stateEmitter = new EventEmitter<{ oldState: State; newState: State }>();
  readonly onDidChangeState = this.stateEmitter.event;
  readonly requests: { method: string; params: unknown }[] = [];
  readonly notifications: { method: string; params: unknown }[] = [];
  readonly handlers = new Map<string, (p: unknown) => void>();
  started = false;
  stopped = false;
  /** What sendRequest resolves to, by method. */
  results: Record<string, unknown> = { 'hive/subscribe': { subscribed: true, pending: 0 } };

  constructor(
    public readonly id: string,
    public readonly name: string,
    public readonly serverOptions: { command: string; args: string[]; transport: TransportKind },
    public readonly clientOptions: {
      outputChannel: unknown;
      traceOutputChannel?: unknown;
      initializationOptions: unknown;
      documentSelector: unknown;
    },
  ) {
    LanguageClient.instances.push(this);
  }
  get outputChannel(): { appendLine(s: string): void } {
    return this.clientOptions.outputChannel as { appendLine(s: string): void };
  }
  async start(): Promise<void> {
    this.started = true;
    this.stateEmitter.fire({ oldState: State.Starting, newState: State.Running });
  }
  async stop(): Promise<void> {
    this.stopped = true;
    this.stateEmitter.fire({ oldState: State.Running, newState: State.Stopped });
  }
  sendRequest<R>(type: Message, params?: unknown): Promise<R> {
    const method = methodOf(type);
    this.requests.push({ method, params });
    return Promise.resolve(this.results[method] as R);
  }
  sendNotification(type: Message, params?: unknown): Promise<void> {
    this.notifications.push({ method: methodOf(type), params });
    return Promise.resolve();
  }
  onNotification(type: Message, handler: (p: unknown) => void): { dispose(): void } {
    const method = methodOf(type);
    this.handlers.set(method, handler);
    return { dispose: () => this.handlers.delete(method) };
  }
  /** The server sends a notification. */
  emit(method: string, params: unknown): void {
    this.handlers.get(method)?.(params);
  }
}
