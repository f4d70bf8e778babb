/**
 * Prompts' details as read-only documents (scheme `hive-detail:`): "Show
 * details" opens one beside the editor without taking the keyboard from the
 * open quick pick, so the human reads the whole input and then answers. A
 * content provider, not an untitled file: nothing to save, nothing editable.
 * The text is src/promptDetail.ts's.
 */
import * as vscode from 'vscode';
import { detailDocumentText } from './promptDetail';
import type { PromptRecord } from './protocol';

export const DETAIL_SCHEME = 'hive-detail';
/** Documents kept for the provider; older ones are dropped (a reopened one shows empty). */
const KEEP = 50;

export class DetailDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '';
  }

  /** Open the detail of `record` beside, keeping the focus where it is. */
  async show(record: PromptRecord): Promise<void> {
    const path = `/${record.id}`;
    this.texts.delete(path);
    this.texts.set(path, detailDocumentText(record));
    for (const old of this.texts.keys()) {
      if (this.texts.size <= KEEP) {
        break;
      }
      this.texts.delete(old);
    }
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: DETAIL_SCHEME, path }));
    await vscode.window.showTextDocument(doc, {
      preview: true,
      preserveFocus: true,
      viewColumn: vscode.ViewColumn.Beside,
    });
  }
}
