/**
 * A prompt's detail: the long text behind its question (a Claude Code
 * permission's whole tool input, as `hive-rpc hook claude-code` sends it).
 * The human approves what runs, not a summary, so a prompt with a detail
 * shows it in its quick pick before it is answered (a preview line under the
 * "Show details" item, the first one) and whole one key away, in a read-only
 * document (src/detailDocuments.ts). Pure logic, no `vscode` import.
 */
import { plain } from './plainText';
import type { PromptRecord } from './protocol';

/** The first item of a prompt with a detail: Enter on it shows the detail, never answers. */
export const SHOW_DETAIL_LABEL = 'Show details';
export const SHOW_DETAIL_DESCRIPTION = 'the whole input, in an editor; does not answer';
export const SHOW_DETAIL_TOOLTIP = 'Show details: the whole input, in a read-only editor (does not answer)';
/** Characters of the detail's preview line; the document holds it all. */
export const PREVIEW_CHARS = 300;

/** The agent id of the hub's own questions (consent to type into a terminal). */
export const HUB_AGENT = 'hive-rpc';
/** How the hub's own questions name their asker: no agent may ask as hive-rpc (the
 * hub refuses the name), so a question shown so is the hub's, not an agent's. */
export const HUB_LABEL = 'the hub itself (hive-rpc)';

/** Who asks, as a person reads it: the hub's own questions are named as the hub's. */
export function askerOf(record: Pick<PromptRecord, 'agent_id'>): string {
  return record.agent_id === HUB_AGENT ? HUB_LABEL : record.agent_id;
}

/** Whether the prompt decides what an agent may do: its title says so. */
export function isPermission(record: Pick<PromptRecord, 'kind'>): boolean {
  return record.kind === 'permission';
}

/** The prompt's detail, or undefined when it has none. */
export function detailOf(record: Pick<PromptRecord, 'detail'>): string | undefined {
  return typeof record.detail === 'string' && record.detail !== '' ? record.detail : undefined;
}

/**
 * The detail on one line, as the quick pick item's detail shows it: whitespace
 * runs made one space, cut with "…" past `PREVIEW_CHARS` (the item says the
 * document has the rest), `$(` and `](` made inert (an item's detail renders
 * icons).
 */
export function detailPreview(detail: string): string {
  const printable = Array.from(detail, (ch) => {
    const code = ch.charCodeAt(0);
    return code < 0x20 || (code >= 0x7f && code <= 0x9f) || BIDI.test(ch) ? ' ' : ch;
  }).join('');
  const line = printable.replace(/\s+/g, ' ').trim();
  const cut = line.length > PREVIEW_CHARS ? `${line.slice(0, PREVIEW_CHARS - 1)}…` : line;
  return plain(cut);
}

/** Bidi controls, which could make the preview read otherwise than the input runs. */
const BIDI = /[\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** The read-only document: who asks what, then the detail exactly as sent. */
export function detailDocumentText(record: Pick<PromptRecord, 'id' | 'agent_id' | 'question' | 'kind' | 'detail'>): string {
  const what = isPermission(record) ? 'asks permission' : 'asks';
  return `${record.agent_id} ${what} (prompt ${record.id}):\n${record.question}\n\n${detailOf(record) ?? ''}\n`;
}
