/**
 * The small interface the UI needs from the language client. The extension
 * wraps vscode-languageclient's LanguageClient in it (src/languageClient.ts),
 * and the tests use a fake. No `vscode` import here.
 *
 * Messages are the typed constants of src/protocol.ts (vscode-jsonrpc's
 * `RequestType`/`NotificationType`), never method strings: the params and the
 * result are checked by the compiler, and the names against the hub's table.
 */
import type { NotificationType, RequestType, RequestType0 } from 'vscode-jsonrpc';

export interface Disposable {
  dispose(): void;
}

/** A request of src/protocol.ts: with params (`RequestType`) or without (`RequestType0`). */
export type AnyRequest<P, R> = RequestType<P, R, void> | RequestType0<R, void>;

export interface HubClient {
  /** Send a request; rejects with an error carrying `code` and `message`. */
  sendRequest<R>(type: RequestType0<R, void>): Promise<R>;
  sendRequest<P, R>(type: RequestType<P, R, void>, params: P): Promise<R>;
  /** Send a notification (no response). */
  sendNotification<P>(type: NotificationType<P>, params: P): void;
  /** Register a handler for a notification from the server. */
  onNotification<P>(type: NotificationType<P>, handler: (params: P) => void): Disposable;
}

/**
 * The handlers of one notification method, kept to register them again on the
 * next sidecar. The target gets one handler per method that calls them all:
 * vscode-languageclient keeps one handler per method, and a second
 * `onNotification` for a method replaces the first.
 */
interface MethodHandlers {
  type: NotificationType<never>;
  handlers: ((params: never) => void)[];
  reg?: Disposable;
}
/**
 * A HubClient that forwards to the current language client. The UI keeps this
 * one object while the sidecar is restarted underneath it.
 */
export class SwitchableHubClient implements HubClient {
  private target: HubClient | undefined;
  private readonly handlers = new Map<string, MethodHandlers>();
  private readonly connectedWaiters: (() => void)[] = [];
  private readonly targetListeners: ((running: boolean) => void)[] = [];

  /** Told when a sidecar starts running (true) or stops (false). */
  onDidChangeTarget(listener: (running: boolean) => void): Disposable {
    this.targetListeners.push(listener);
    return {
      dispose: () => {
        const i = this.targetListeners.indexOf(listener);
        if (i >= 0) {
          this.targetListeners.splice(i, 1);
        }
      },
    };
  }

  setTarget(target: HubClient | undefined): void {
    const was = this.target !== undefined;
    for (const h of this.handlers.values()) {
      h.reg?.dispose();
      h.reg = undefined;
    }
    this.target = target;
    if (target) {
      for (const h of this.handlers.values()) {
        h.reg = this.register(target, h);
      }
      for (const wake of this.connectedWaiters.splice(0)) {
        wake();
      }
    }
    if (was !== (target !== undefined)) {
      for (const l of [...this.targetListeners]) {
        l(target !== undefined);
      }
    }
  }

  /**
   * Resolves once a sidecar is running: at once if one is, or, with `next`,
   * only when the next one starts (a request just failed on this one).
   */
  whenConnected(next = false): Promise<void> {
    if (this.target && !next) {
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.connectedWaiters.push(resolve));
  }

  get connected(): boolean {
    return this.target !== undefined;
  }

  sendRequest<R>(type: RequestType0<R, void>): Promise<R>;
  sendRequest<P, R>(type: RequestType<P, R, void>, params: P): Promise<R>;
  sendRequest<P, R>(type: AnyRequest<P, R>, params?: P): Promise<R> {
    if (!this.target) {
      return Promise.reject(new Error('the Hive sidecar is not running (see the "Hive" output channel)'));
    }
    return forward(this.target, type, params);
  }

  sendNotification<P>(type: NotificationType<P>, params: P): void {
    this.target?.sendNotification(type, params);
  }

  onNotification<P>(type: NotificationType<P>, handler: (params: P) => void): Disposable {
    const fn = handler as (params: never) => void;
    let h = this.handlers.get(type.method);
    if (!h) {
      h = { type: type as NotificationType<never>, handlers: [] };
      this.handlers.set(type.method, h);
      if (this.target) {
        h.reg = this.register(this.target, h);
      }
    }
    h.handlers.push(fn);
    const entry = h;
    return {
      dispose: () => {
        const i = entry.handlers.indexOf(fn);
        if (i >= 0) {
          entry.handlers.splice(i, 1);
        }
        if (entry.handlers.length === 0 && this.handlers.get(type.method) === entry) {
          entry.reg?.dispose();
          this.handlers.delete(type.method);
        }
      },
    };
  }

  /** One handler on `target` that calls each of `h`'s, in the order they were added. */
  private register(target: HubClient, h: MethodHandlers): Disposable {
    return target.onNotification(h.type, (params: never) => {
      for (const handler of [...h.handlers]) {
        handler(params);
      }
    });
  }
}

/**
 * Send `type` through `client`, with params only if there are any (a request
 * without params goes out without a `params` member, as `RequestType0` says).
 */
export function forward<P, R>(client: HubClient, type: AnyRequest<P, R>, params?: P): Promise<R> {
  return params === undefined
    ? client.sendRequest(type as RequestType0<R, void>)
    : client.sendRequest(type as RequestType<P, R, void>, params);
}
