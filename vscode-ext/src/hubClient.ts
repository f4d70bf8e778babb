/**
 * The small interface the UI needs from the language client. The extension
 * wraps vscode-languageclient's LanguageClient in it (src/languageClient.ts),
 * and the tests use a fake. No `vscode` import here.
 */

export interface Disposable {
  dispose(): void;
}

export interface HubClient {
  /** Send a request; rejects with an error carrying `code` and `message`. */
  sendRequest<R>(method: string, params?: object): Promise<R>;
  /** Send a notification (no response). */
  sendNotification(method: string, params?: object): void;
  /** Register a handler for a notification from the server. */
  onNotification<P>(method: string, handler: (params: P) => void): Disposable;
}

/**
 * A HubClient that forwards to the current language client. The UI keeps this
 * one object while the sidecar is restarted underneath it.
 */
export class SwitchableHubClient implements HubClient {
  private target: HubClient | undefined;
  private readonly handlers: { method: string; handler: (params: never) => void; reg?: Disposable }[] = [];
  private readonly connectedWaiters: (() => void)[] = [];

  setTarget(target: HubClient | undefined): void {
    for (const h of this.handlers) {
      h.reg?.dispose();
      h.reg = undefined;
    }
    this.target = target;
    if (target) {
      for (const h of this.handlers) {
        h.reg = target.onNotification(h.method, h.handler);
      }
      for (const wake of this.connectedWaiters.splice(0)) {
        wake();
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

  sendRequest<R>(method: string, params?: object): Promise<R> {
    if (!this.target) {
      return Promise.reject(new Error('the Hive sidecar is not running (see the "Hive" output channel)'));
    }
    return this.target.sendRequest<R>(method, params);
  }

  sendNotification(method: string, params?: object): void {
    this.target?.sendNotification(method, params);
  }

  onNotification<P>(method: string, handler: (params: P) => void): Disposable {
    const entry: { method: string; handler: (params: never) => void; reg?: Disposable } = {
      method,
      handler: handler as (params: never) => void,
    };
    entry.reg = this.target?.onNotification(method, handler);
    this.handlers.push(entry);
    return {
      dispose: () => {
        entry.reg?.dispose();
        const i = this.handlers.indexOf(entry);
        if (i >= 0) {
          this.handlers.splice(i, 1);
        }
      },
    };
  }
}
