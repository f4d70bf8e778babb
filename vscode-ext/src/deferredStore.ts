/**
 * Where the deferred questions' ids are kept across a window reload: a small
 * file in the extension's storage for this workspace (`storageUri`, else
 * `globalStorageUri`), written at each change. Not `workspaceState`: in
 * code-server a reload (a page load) came before its write reached the
 * storage, and the new window took up the question the human had put aside.
 * The file lives where the extension host runs, written synchronously.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as vscode from 'vscode';
import type { DeferredStore } from './queue';

export function deferredStore(
  context: Pick<vscode.ExtensionContext, 'storageUri' | 'globalStorageUri'>,
  warn: (line: string) => void = () => undefined,
): DeferredStore | undefined {
  const dir = context.storageUri?.fsPath ?? context.globalStorageUri?.fsPath;
  if (!dir) {
    return undefined;
  }
  const file = path.join(dir, 'deferred.json');
  return {
    get: () => {
      try {
        const ids: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
        return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
      } catch {
        return [];
      }
    },
    set: (ids) => {
      try {
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(`${file}.tmp`, JSON.stringify(ids));
        fs.renameSync(`${file}.tmp`, file);
      } catch (err) {
        warn(`cannot keep the deferred questions in ${file}: ${String(err)}`);
      }
    },
  };
}
