/**
 * `hive.trace.server` as users of other language extensions expect it: set to
 * `messages` or `verbose`, the JSON-RPC messages between VS Code and the
 * sidecar show in the "Hive" output channel, at once, with nothing else to set.
 *
 * vscode-languageclient 11 traces only while its trace channel's log level is
 * Trace, and a channel's level is the user's (the Output view's gear, or
 * "Developer: Set Log Level"): an extension cannot set it. With the Hive
 * channel at its default level (Info), `hive.trace.server` alone traced
 * nothing. So the client is given this trace channel instead: it says its
 * level is Trace while the setting is not `off` (or while the Hive channel's
 * own level is Trace, which then traces `messages` as vscode-languageclient
 * does), tells the client when that changes, and writes the trace lines into
 * the Hive channel at a level it shows.
 */
import * as vscode from 'vscode';

/** The setting, under `hive`: `off`, `messages` or `verbose`. */
export const TRACE_SETTING = 'trace.server';

/** `hive.trace.server` as set (anything but `messages` or `verbose` is `off`). */
export function traceSetting(): 'off' | 'messages' | 'verbose' {
  const value = vscode.workspace.getConfiguration('hive').get<unknown>(TRACE_SETTING);
  return value === 'messages' || value === 'verbose' ? value : 'off';
}

export class TraceChannel implements vscode.LogOutputChannel {
  private readonly emitter = new vscode.EventEmitter<vscode.LogLevel>();
  readonly onDidChangeLogLevel = this.emitter.event;
  private level: vscode.LogLevel;
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly channel: vscode.LogOutputChannel,
    private readonly setting: () => string = traceSetting,
  ) {
    this.level = this.wanted();
    this.subscriptions = [
      channel.onDidChangeLogLevel(() => this.update()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`hive.${TRACE_SETTING}`)) {
          this.update();
        }
      }),
    ];
  }

  get name(): string {
    return this.channel.name;
  }

  get logLevel(): vscode.LogLevel {
    return this.level;
  }

  /** A trace line: at Trace if the Hive channel shows those, else at Info, so that it shows. */
  trace(message: string, ...args: unknown[]): void {
    if (this.channel.logLevel === vscode.LogLevel.Trace) {
      this.channel.trace(message, ...args);
    } else {
      this.channel.info(message, ...args);
    }
  }

  debug(message: string, ...args: unknown[]): void {
    this.channel.debug(message, ...args);
  }

  info(message: string, ...args: unknown[]): void {
    this.channel.info(message, ...args);
  }

  warn(message: string, ...args: unknown[]): void {
    this.channel.warn(message, ...args);
  }

  error(error: string | Error, ...args: unknown[]): void {
    this.channel.error(error, ...args);
  }

  append(value: string): void {
    this.channel.append(value);
  }

  appendLine(value: string): void {
    this.channel.appendLine(value);
  }

  replace(value: string): void {
    this.channel.replace(value);
  }

  clear(): void {
    this.channel.clear();
  }

  show(columnOrPreserveFocus?: vscode.ViewColumn | boolean, preserveFocus?: boolean): void {
    if (typeof columnOrPreserveFocus === 'boolean') {
      this.channel.show(columnOrPreserveFocus);
    } else {
      this.channel.show(columnOrPreserveFocus, preserveFocus);
    }
  }

  hide(): void {
    this.channel.hide();
  }

  /** Stops following the setting; the Hive channel itself is the extension's to dispose. */
  dispose(): void {
    for (const s of this.subscriptions.splice(0)) {
      s.dispose();
    }
    this.emitter.dispose();
  }

  private wanted(): vscode.LogLevel {
    return this.setting() !== 'off' ? vscode.LogLevel.Trace : this.channel.logLevel;
  }

  private update(): void {
    const level = this.wanted();
    if (level !== this.level) {
      this.level = level;
      this.emitter.fire(level);
    }
  }
}
