/**
 * "Hive: Show Expired Unseen Questions": the questions that expired before any
 * editor showed them, each with its whole text, and a way to clear their
 * trace (one, or all).
 */
import * as vscode from 'vscode';
import type { Attention } from './attention';
import { plain } from './plainText';
import { askerOf } from './promptDetail';

const DISMISS_ALL = 'Dismiss all';

export async function showExpired(attention: Attention): Promise<void> {
  await attention.refresh();
  const records = attention.records();
  if (records.length === 0) {
    vscode.window.setStatusBarMessage('Hive: no question expired unseen', 5000);
    return;
  }
  const items: (vscode.QuickPickItem & { id?: string })[] = [
    { label: DISMISS_ALL, description: `clear all ${records.length}: you have seen them now`, alwaysShow: true },
    ...records.map((r) => ({
      label: `Dismiss: ${plain(askerOf(r))}`,
      description: r.expired_at ? `expired ${new Date(r.expired_at * 1000).toLocaleTimeString()}` : 'expired',
      detail: plain(r.question.replace(/\s+/g, ' ')),
      id: r.id,
    })),
  ];
  const picked = await vscode.window.showQuickPick(items, {
    title: `Hive: ${records.length} question${records.length === 1 ? '' : 's'} expired before you saw ${records.length === 1 ? 'it' : 'them'} (the agents were told)`,
    placeHolder: 'Pick one to dismiss its trace, or Dismiss all; Escape keeps them',
    matchOnDetail: true,
  });
  if (!picked) {
    return;
  }
  const n = await attention.dismiss(picked.id);
  vscode.window.setStatusBarMessage(`Hive: ${n} expired unseen question${n === 1 ? '' : 's'} dismissed`, 5000);
}
