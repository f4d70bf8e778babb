/**
 * Agent text as plain text. Pure logic, no `vscode` import.
 *
 * The quick input's message and the notifications render `$(name)` as an icon
 * and `[label](command:...)` as a link that runs a command when clicked; an
 * agent's question (or the hub's words, or a sidecar's stderr) must not do
 * either.
 */

/** The text as it reads: a zero-width space after `$` and `]` breaks both icon and link. */
export function plain(text: string): string {
  return text.replace(/\$\(/g, () => '$\u200b(').replace(/\]\(/g, () => ']\u200b(');
}
