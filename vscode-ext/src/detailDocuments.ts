/**
 * Prompts' details as read-only documents (scheme `hive-detail:`): the whole
 * text behind a question (a permission's tool input, a long question) opens
 * beside the box without taking the keyboard from it (`preserveFocus`), as a
 * preview, wrapped (language `hive-detail`, whose `editor.wordWrap` is on in
 * package.json's configurationDefaults), so the human reads all of it, its
 * end included, and then answers. An Edit request (`old_string` and
 * `new_string`) opens as a diff of the two. A content provider, not an
 * untitled file: nothing to save, nothing editable. The text is
 * src/promptDetail.ts's.
 */
import * as vscode from 'vscode';
import { detailDocumentText, editChangeOf } from './promptDetail';
import type { PromptRecord } from './protocol';

export const DETAIL_SCHEME = 'hive-detail';
/** The language of the detail documents: wrapped (package.json configurationDefaults). */
export const DETAIL_LANGUAGE = 'hive-detail';
/** Documents kept for the provider; older ones are dropped (a reopened one shows empty). */
const KEEP = 50;

export class DetailDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '';
  }

  /** Open the detail of `record` beside, keeping the focus where it is. */
  async show(record: PromptRecord): Promise<void> {
    const change = editChangeOf(record);
    if (change) {
      const name = change.filePath.split('/').pop() || 'file';
      const before = this.uri(`/${record.id}/before/${name}`, change.before);
      const after = this.uri(`/${record.id}/after/${name}`, change.after);
      // Wrapped too: a long line's end is what the human must see.
      for (const uri of [before, after]) {
        const doc = await vscode.workspace.openTextDocument(uri);
        if (doc.languageId !== DETAIL_LANGUAGE) {
          await vscode.languages.setTextDocumentLanguage(doc, DETAIL_LANGUAGE);
        }
      }
      await vscode.commands.executeCommand(
        'vscode.diff',
        before,
        after,
        `Edit ${change.filePath} (asked, not applied)`,
        { preview: true, preserveFocus: true, viewColumn: vscode.ViewColumn.Beside },
      );
      return;
    }
    const uri = this.uri(`/${record.id}`, detailDocumentText(record));
    let doc = await vscode.workspace.openTextDocument(uri);
    if (doc.languageId !== DETAIL_LANGUAGE) {
      doc = await vscode.languages.setTextDocumentLanguage(doc, DETAIL_LANGUAGE);
    }
    await vscode.window.showTextDocument(doc, {
      preview: true,
      preserveFocus: true,
      viewColumn: vscode.ViewColumn.Beside,
    });
  }

  private uri(path: string, text: string): vscode.Uri {
    this.texts.delete(path);
    this.texts.set(path, text);
    for (const old of this.texts.keys()) {
      if (this.texts.size <= KEEP) {
        break;
      }
      this.texts.delete(old);
    }
    return vscode.Uri.from({ scheme: DETAIL_SCHEME, path });
  }
}
