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
export function detailDocumentText(
  record: Pick<PromptRecord, 'id' | 'agent_id' | 'question' | 'kind' | 'detail'> & { schema?: PromptRecord['schema'] },
): string {
  const what = asksPermission(record) ? 'asks permission' : 'asks';
  return `${record.agent_id} ${what} (prompt ${record.id}):\n${record.question}\n\n${detailOf(record) ?? ''}\n`;
}

/** The title of each field's free-text entry in Claude Code's own questions (core/claude_questions.py OWN_ANSWER). */
const CLAUDE_OWN_ANSWER = 'Other: type your own answer';

/**
 * Whether the prompt is Claude Code asking the human a question (its
 * AskUserQuestion tool), not asking to run something: the hub sends it as a
 * permission (only an approver answers it) with a schema of fields `q1`,
 * `q2` ..., each ending in one's own answer (core/claude_questions.py
 * `is_questions_schema`). A label, not a proof: it only changes the words.
 */
export function isClaudeQuestion(record: Pick<PromptRecord, 'kind'> & { schema?: PromptRecord['schema'] }): boolean {
  if (record.kind !== 'permission' || !record.schema || typeof record.schema.properties !== 'object') {
    return false;
  }
  const fields = Object.entries(record.schema.properties);
  if (fields.length === 0) {
    return false;
  }
  return fields.every(([name, field], i) => {
    if (name !== `q${i + 1}` || !field || typeof field !== 'object') {
      return false;
    }
    const choices = field.items?.anyOf ?? field.anyOf;
    const last = Array.isArray(choices) ? choices[choices.length - 1] : undefined;
    return !!last && last.type === 'string' && last.title === CLAUDE_OWN_ANSWER;
  });
}

/** Whether the prompt asks permission for an action (a permission that is no Claude Code question). */
export function asksPermission(record: Pick<PromptRecord, 'kind'> & { schema?: PromptRecord['schema'] }): boolean {
  return isPermission(record) && !isClaudeQuestion(record);
}

/** An Edit request's change (Claude Code's Edit tool: `file_path`, `old_string`, `new_string`), or undefined. */
export interface EditChange {
  filePath: string;
  before: string;
  after: string;
}

export function editChangeOf(record: Pick<PromptRecord, 'detail'>): EditChange | undefined {
  const detail = detailOf(record);
  if (detail === undefined) {
    return undefined;
  }
  try {
    const input: unknown = JSON.parse(detail);
    if (input && typeof input === 'object' && !Array.isArray(input)) {
      const f = input as Record<string, unknown>;
      if (typeof f.old_string === 'string' && typeof f.new_string === 'string') {
        return { filePath: typeof f.file_path === 'string' ? f.file_path : '(no file_path)', before: f.old_string, after: f.new_string };
      }
    }
  } catch {
    // not JSON (cut, or no tool input): no diff
  }
  return undefined;
}

/** Questions longer than this open their whole text beside the box, and the box shows their start. */
export const LONG_QUESTION_CHARS = 400;
/** How much of a long question the box shows. */
const BOX_QUESTION_CHARS = 300;
export const WHOLE_QUESTION_BESIDE = '… (the whole question is in the editor beside)';

/** The question as the box shows it: a long one's start (the box would overflow the window). */
export function boxQuestion(question: string): string {
  return question.length > LONG_QUESTION_CHARS ? question.slice(0, BOX_QUESTION_CHARS) + WHOLE_QUESTION_BESIDE : question;
}
