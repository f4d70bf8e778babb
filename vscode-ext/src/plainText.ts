/**
 * Agent text as plain text. Pure logic, no `vscode` import.
 *
 * The quick input's message and the notifications render `$(name)` as an icon
 * and `[label](command:...)` as a link that runs a command when clicked; an
 * agent's question (or the hub's words, or a sidecar's stderr) must not do
 * either. Nor may it hide text from the human: control characters, and the
 * characters a person cannot see, go (`visible`).
 */

/**
 * What a person cannot see, by Unicode category and property, not by a list
 * (the rule of the hub's core/terminal_text.py and of the Emacs package):
 * control characters but tab and newline (Cc), format characters (Cf: soft
 * hyphen, zero-width spaces and joiners, bidi controls, the byte-order mark,
 * tag characters), lone surrogates (Cs) and every other
 * Default_Ignorable_Code_Point (the grapheme joiner, Hangul fillers, variation
 * selectors). The zero-width joiner goes too, so a joined emoji shows as its
 * parts.
 */
const INVISIBLE = /(?![\t\n])[\p{Cc}\p{Cf}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu;
/** Line and paragraph separators: a line break in some programs, not in others. */
const SEPARATORS = /[\u2028\u2029]/g;

/** The text without control characters (tab and newline kept) and invisible ones. */
export function visible(text: string): string {
  return text.replace(SEPARATORS, '\n').replace(INVISIBLE, '');
}

/** `$(name)` and `$(name~spin)`, and an escaped `\$(name)`: VS Code's own syntax. */
const ICON = /(\\)?\$\([A-Za-z0-9-]+(?:~[A-Za-z]+)?\)/g;

/**
 * The text as a quick pick item's label, description or detail, or a quick
 * input's title, shows it: `visible`, and each `$(name)` escaped as VS Code's
 * own `escapeIcons` does (`\$(name)`, drawn as the text `$(name)`, not as an
 * icon). An item's label is no link, and a backslash is visible text, not an
 * invisible character.
 */
export function iconless(text: string): string {
  return visible(text).replace(ICON, (icon: string, escaped?: string) => (escaped ? icon : `\\${icon}`));
}

/**
 * A message's text (notifications, the input box's line): `visible`, then a zero-width space after `$` and `]`
 * breaks both icon and link (inserted after the stripping, which would take it
 * out again).
 */
export function plain(text: string): string {
  return visible(text)
    .replace(/\$\(/g, () => '$\u200b(')
    .replace(/\]\(/g, () => ']\u200b(');
}
