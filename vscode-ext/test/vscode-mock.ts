/**
 * A MOCK of the `vscode` module, for the UI tests.
 *
 * It exists BECAUSE VS Code itself cannot be downloaded or run on the machine
 * where this extension was built and tested, so the UI modules
 * (src/promptFlow.ts, src/statusBar.ts, src/pendingView.ts) are tested against
 * this fake instead of the real editor. It imitates only what those modules
 * use: createInputBox, createQuickPick, createStatusBarItem, the message
 * functions, EventEmitter, TreeItem, ThemeIcon/ThemeColor, commands,
 * workspace, and read-only documents from a content provider (Uri,
 * openTextDocument, showTextDocument: what src/detailDocuments.ts uses). test/register-vscode-mock.ts makes `require('vscode')` return it.
 *
 * Tests drive the fakes with the helpers (type, accept, escape, pick, press)
 * and inspect what the UI did through `mock`.
 */

export type Listener<T> = (e: T) => unknown;

export interface Disposable {
  dispose(): void;
}

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return {
      dispose: () => {
        this.listeners = this.listeners.filter((l) => l !== listener);
      },
    };
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) {
      l(e);
    }
  }
  get listenerCount(): number {
    return this.listeners.length;
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class ThemeIcon {
  constructor(
    public readonly id: string,
    public readonly color?: ThemeColor,
  ) {}
}

export class Uri {
  private constructor(
    public readonly scheme: string,
    public readonly path: string,
  ) {}
  static from(parts: { scheme: string; path: string }): Uri {
    return new Uri(parts.scheme, parts.path);
  }
  toString(): string {
    return `${this.scheme}:${this.path}`;
  }
}

export enum ViewColumn {
  Active = -1,
  Beside = -2,
  One = 1,
}

/** A document opened from a registered content provider: its text, as VS Code would show it. */
export interface FakeDocument {
  uri: Uri;
  text: string;
  languageId?: string;
}

export class ThemeColor {
  constructor(public readonly id: string) {}
}

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}

export enum LogLevel {
  Off = 0,
  Trace = 1,
  Debug = 2,
  Info = 3,
  Warning = 4,
  Error = 5,
}

/** A fake LogOutputChannel: `lines` holds what was written, `[level] text`. */
export class FakeLogOutputChannel {
  readonly lines: string[] = [];
  logLevel = LogLevel.Info;
  private readonly levelChange = new EventEmitter<LogLevel>();
  readonly onDidChangeLogLevel = this.levelChange.event;
  constructor(readonly name: string) {}
  /** The user picks another level for the channel (the Output view's gear). */
  setLogLevel(level: LogLevel): void {
    this.logLevel = level;
    this.levelChange.fire(level);
  }
  appendLine = (s: string): void => void this.lines.push(`[info] ${s}`);
  append = (s: string): void => void this.lines.push(`[info] ${s}`);
  info = (s: string): void => void this.lines.push(`[info] ${s}`);
  warn = (s: string): void => void this.lines.push(`[warning] ${s}`);
  error = (s: string | Error): void => void this.lines.push(`[error] ${String(s)}`);
  debug = (s: string): void => void this.lines.push(`[debug] ${s}`);
  trace = (s: string): void => void this.lines.push(`[trace] ${s}`);
  replace(): void {}
  clear(): void {}
  show(): void {}
  hide(): void {}
  dispose(): void {}
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

/** A progress notification (window.withProgress): its messages, and whether its task ended. */
export interface FakeProgress {
  title: string | undefined;
  messages: string[];
  ended: boolean;
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: string;
  iconPath?: ThemeIcon;
  contextValue?: string;
  command?: { command: string; title: string; arguments?: unknown[] };
  constructor(
    public label: string,
    public collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {}
}

export interface QuickInputButton {
  iconPath: ThemeIcon;
  tooltip?: string;
}

export interface QuickPickItem {
  label: string;
  description?: string;
  detail?: string;
}

/** Common part of the fake InputBox and QuickPick. */
class FakeQuickInput {
  title: string | undefined;
  placeholder: string | undefined;
  value = '';
  ignoreFocusOut = false;
  buttons: readonly QuickInputButton[] = [];
  visible = false;
  disposed = false;
  readonly changeValue = new EventEmitter<string>();
  readonly acceptEmitter = new EventEmitter<void>();
  readonly hideEmitter = new EventEmitter<void>();
  readonly buttonEmitter = new EventEmitter<QuickInputButton>();
  readonly onDidChangeValue = this.changeValue.event;
  readonly onDidAccept = this.acceptEmitter.event;
  readonly onDidHide = this.hideEmitter.event;
  readonly onDidTriggerButton = this.buttonEmitter.event;

  show(): void {
    this.visible = true;
    mock.shown.push(this);
  }
  hide(): void {
    if (this.visible) {
      this.visible = false;
      this.hideEmitter.fire();
    }
  }
  dispose(): void {
    this.hide();
    this.disposed = true;
  }

  // --- test helpers ---
  /** The human types `text` (each call is one keystroke changing the value). */
  type(text: string): void {
    this.value += text;
    this.changeValue.fire(this.value);
  }
  /** The human replaces the whole value. */
  setValue(text: string): void {
    this.value = text;
    this.changeValue.fire(this.value);
  }
  /** Enter. */
  accept(): void {
    this.acceptEmitter.fire();
  }
  /** Escape (VS Code hides the box). */
  escape(): void {
    this.hide();
  }
  /** Click the button whose tooltip starts with `tooltip`. */
  press(tooltip: string): void {
    const b = this.buttons.find((x) => (x.tooltip ?? '').startsWith(tooltip));
    if (!b) {
      throw new Error(`no button "${tooltip}" in ${JSON.stringify(this.buttons)}`);
    }
    this.buttonEmitter.fire(b);
  }
}

export enum InputBoxValidationSeverity {
  Info = 1,
  Warning = 2,
  Error = 3,
}

export class FakeInputBox extends FakeQuickInput {
  readonly kind = 'inputBox';
  prompt: string | undefined;
  password = false;
  validationMessage: string | { message: string; severity: InputBoxValidationSeverity } | undefined;
  /** The text under the input line, as VS Code shows it (validationMessage wins over prompt). */
  message(): string {
    const v = this.validationMessage;
    if (v) {
      return typeof v === 'string' ? v : v.message;
    }
    return this.prompt ? `${this.prompt} (Press 'Enter' to confirm or 'Escape' to cancel)` : "Press 'Enter' to confirm your input or 'Escape' to cancel";
  }
  /** The message's severity (a plain string is an error, as in VS Code). */
  severity(): InputBoxValidationSeverity | undefined {
    const v = this.validationMessage;
    return v === undefined ? undefined : typeof v === 'string' ? InputBoxValidationSeverity.Error : v.severity;
  }
}

export class FakeQuickPick<T extends QuickPickItem = QuickPickItem> extends FakeQuickInput {
  readonly kind = 'quickPick';
  items: readonly T[] = [];
  selectedItems: readonly T[] = [];
  activeItems: readonly T[] = [];
  canSelectMany = false;
  matchOnDescription = false;
  matchOnDetail = false;

  /** Select the items with these labels (and make the first one active). */
  pick(...labels: string[]): void {
    const chosen = labels.map((l) => {
      const item = this.items.find((i) => i.label === l);
      if (!item) {
        throw new Error(`no item "${l}" in ${this.items.map((i) => i.label).join(', ')}`);
      }
      return item;
    });
    this.selectedItems = chosen;
    this.activeItems = chosen.slice(0, 1);
  }
  labels(): string[] {
    return this.items.map((i) => i.label);
  }
}

export class FakeStatusBarItem {
  text = '';
  tooltip: string | undefined;
  command: string | undefined;
  name: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible = false;
  disposed = false;
  constructor(
    public readonly id: string | undefined,
    public readonly alignment: StatusBarAlignment,
    public readonly priority: number | undefined,
  ) {}
  show(): void {
    this.visible = true;
  }
  hide(): void {
    this.visible = false;
  }
  dispose(): void {
    this.disposed = true;
    this.visible = false;
  }
}

export interface Message {
  level: 'info' | 'warning' | 'error';
  text: string;
  items: unknown[];
}

/** Everything the fakes recorded, and canned answers for modal questions. */
export const mock = {
  inputBoxes: [] as FakeInputBox[],
  quickPicks: [] as FakeQuickPick[],
  shown: [] as FakeQuickInput[],
  statusBarItems: [] as FakeStatusBarItem[],
  messages: [] as Message[],
  /** window.setStatusBarMessage texts. */
  statusMessages: [] as string[],
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  /** What showWarningMessage/showInformationMessage/showErrorMessage resolve to. */
  messageAnswer: undefined as string | undefined,
  /** What showQuickPick resolves to: a function of the items. */
  quickPickAnswer: undefined as ((items: QuickPickItem[]) => QuickPickItem | undefined) | undefined,
  config: {} as Record<string, unknown>,
  outputChannels: [] as { name: string; options?: unknown }[],
  /** The channels themselves, in the order of outputChannels. */
  outputChannelObjects: [] as FakeLogOutputChannel[],
  treeProviders: new Map<string, unknown>(),
  treeViews: new Map<
    string,
    { message: string | undefined; badge?: { value: number; tooltip: string }; visible?: boolean; setVisible?(v: boolean): void }
  >(),
  /** Content providers by scheme, and the documents shown (showTextDocument) with their options. */
  contentProviders: new Map<string, { provideTextDocumentContent(uri: Uri): string }>(),
  shownDocuments: [] as { document: FakeDocument; options: unknown }[],
  /** Progress notifications (window.withProgress at Notification), in order. */
  progress: [] as FakeProgress[],
  /** Executed commands that are not registered here (vscode.diff ...), with their arguments. */
  executed: [] as { id: string; args: unknown[] }[],

  /** The progress notifications still shown (their task not ended). */
  openProgress(): FakeProgress[] {
    return this.progress.filter((p) => !p.ended);
  },

  reset(): void {
    this.progress = [];
    this.executed = [];
    window.state.focused = true;
    window.terminals = [];
    this.inputBoxes = [];
    this.quickPicks = [];
    this.shown = [];
    this.statusBarItems = [];
    this.messages = [];
    this.statusMessages = [];
    window.activeTextEditor = undefined;
    this.commands.clear();
    this.messageAnswer = undefined;
    this.quickPickAnswer = undefined;
    this.config = {};
    this.outputChannels = [];
    this.outputChannelObjects = [];
    this.treeProviders.clear();
    this.treeViews.clear();
    this.contentProviders.clear();
    this.shownDocuments = [];
  },
  /** The open (visible, not disposed) input box or quick pick, if any. */
  open(): FakeInputBox | FakeQuickPick | undefined {
    const all = [...this.inputBoxes, ...this.quickPicks].filter((x) => x.visible && !x.disposed);
    if (all.length > 1) {
      throw new Error(`${all.length} quick inputs open at once`);
    }
    return all[0];
  },
};

function message(level: Message['level']) {
  return (text: string, ...items: unknown[]): Promise<string | undefined> => {
    mock.messages.push({ level, text, items });
    return Promise.resolve(mock.messageAnswer);
  };
}

export const window = {
  createInputBox(): FakeInputBox {
    const box = new FakeInputBox();
    mock.inputBoxes.push(box);
    return box;
  },
  createQuickPick<T extends QuickPickItem>(): FakeQuickPick<T> {
    const pick = new FakeQuickPick<T>();
    mock.quickPicks.push(pick as unknown as FakeQuickPick);
    return pick;
  },
  createStatusBarItem(id?: string, alignment = StatusBarAlignment.Left, priority?: number): FakeStatusBarItem {
    const item = new FakeStatusBarItem(id, alignment, priority);
    mock.statusBarItems.push(item);
    return item;
  },
  /** The editor with the keyboard (tests set it). */
  activeTextEditor: undefined as unknown,
  setStatusBarMessage(text: string): Disposable {
    mock.statusMessages.push(text);
    return { dispose: () => undefined };
  },
  showInformationMessage: message('info'),
  showWarningMessage: message('warning'),
  showErrorMessage: message('error'),
  showQuickPick<T extends QuickPickItem>(items: T[]): Promise<T | undefined> {
    return Promise.resolve(mock.quickPickAnswer?.(items) as T | undefined);
  },
  showInputBox(): Promise<string | undefined> {
    return Promise.resolve(undefined);
  },
  showTextDocument(document: FakeDocument, options?: unknown): Promise<unknown> {
    mock.shownDocuments.push({ document, options });
    return Promise.resolve({ document });
  },
  createOutputChannel(name: string, options?: { log: true } | string) {
    mock.outputChannels.push({ name, options });
    const channel = new FakeLogOutputChannel(name);
    mock.outputChannelObjects.push(channel);
    return channel;
  },
  registerTreeDataProvider(viewId: string, provider: unknown): Disposable {
    mock.treeProviders.set(viewId, provider);
    return { dispose: () => mock.treeProviders.delete(viewId) };
  },
  createTreeView(viewId: string, options: { treeDataProvider: unknown }) {
    mock.treeProviders.set(viewId, options.treeDataProvider);
    const visibility = new EventEmitter<{ visible: boolean }>();
    const view = {
      message: undefined as string | undefined,
      badge: undefined as { value: number; tooltip: string } | undefined,
      visible: false,
      onDidChangeVisibility: (l: Listener<{ visible: boolean }>) => visibility.event(l),
      /** The test shows or hides the view. */
      setVisible(visible: boolean): void {
        view.visible = visible;
        visibility.fire({ visible });
      },
      dispose: () => mock.treeProviders.delete(viewId),
    };
    mock.treeViews.set(viewId, view);
    return view;
  },
  withProgress<R>(
    options: { location: ProgressLocation; title?: string },
    task: (progress: { report(value: { message?: string }): void }, token: unknown) => Thenable<R>,
  ): Thenable<R> {
    const p: FakeProgress = { title: options.title, messages: [], ended: false };
    mock.progress.push(p);
    const done = task({ report: (v) => v.message !== undefined && p.messages.push(v.message) }, {});
    return Promise.resolve(done).finally(() => {
      p.ended = true;
    });
  },
  state: { focused: true },
  onDidChangeWindowState: (l: Listener<{ focused: boolean }>) => editorEvents.windowState.event(l),
  terminals: [] as unknown[],
  onDidCloseTerminal: (l: Listener<unknown>) => editorEvents.closeTerminal.event(l),
  /** Editor activity (src/idle.ts): tests fire these through `editorEvents`. */
  onDidChangeTextEditorSelection: (l: Listener<unknown>) => editorEvents.selection.event(l),
  onDidChangeActiveTextEditor: (l: Listener<unknown>) => editorEvents.activeEditor.event(l),
  visibleTextEditors: [] as { document: unknown }[],
};

export const editorEvents = {
  selection: new EventEmitter<unknown>(),
  activeEditor: new EventEmitter<unknown>(),
  documentChange: new EventEmitter<unknown>(),
  windowState: new EventEmitter<{ focused: boolean }>(),
  closeTerminal: new EventEmitter<unknown>(),
};

export const languages = {
  setTextDocumentLanguage(document: FakeDocument, languageId: string): Promise<FakeDocument> {
    document.languageId = languageId;
    return Promise.resolve(document);
  },
};

export const commands = {
  registerCommand(id: string, fn: (...args: unknown[]) => unknown): Disposable {
    mock.commands.set(id, fn);
    return { dispose: () => mock.commands.delete(id) };
  },
  executeCommand(id: string, ...args: unknown[]): Promise<unknown> {
    const fn = mock.commands.get(id);
    if (!fn) {
      mock.executed.push({ id, args });
    }
    return Promise.resolve(fn?.(...args));
  },
};

const configChange = new EventEmitter<{ affectsConfiguration(s: string): boolean }>();

export const workspace = {
  getConfiguration(section?: string) {
    return {
      get<T>(key: string, dflt?: T): T | undefined {
        const full = section ? `${section}.${key}` : key;
        return full in mock.config ? (mock.config[full] as T) : dflt;
      },
    };
  },
  onDidChangeConfiguration: configChange.event,
  onDidChangeTextDocument: (l: Listener<unknown>) => editorEvents.documentChange.event(l),
  registerTextDocumentContentProvider(
    scheme: string,
    provider: { provideTextDocumentContent(uri: Uri): string },
  ): Disposable {
    mock.contentProviders.set(scheme, provider);
    return { dispose: () => mock.contentProviders.delete(scheme) };
  },
  openTextDocument(uri: Uri): Promise<FakeDocument> {
    const provider = mock.contentProviders.get(uri.scheme);
    if (!provider) {
      return Promise.reject(new Error(`no content provider for ${uri.toString()}`));
    }
    return Promise.resolve({ uri, text: provider.provideTextDocumentContent(uri) });
  },
};

/** Change settings as the user would, firing onDidChangeConfiguration. */
export function changeConfig(values: Record<string, unknown>): void {
  Object.assign(mock.config, values);
  configChange.fire({
    affectsConfiguration: (section: string) =>
      Object.keys(values).some((k) => k === section || k.startsWith(`${section}.`)),
  });
}
