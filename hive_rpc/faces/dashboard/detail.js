// A prompt's detail, shown whole above its answers: a permission's tool input as text,
// or a Claude Code Edit as the diff of what it changes.

import { el, visible } from "./dom.js";

// A prompt's detail (a permission's whole tool input): shown whole, above the
// answers, so what runs is read before it is approved; text in a <pre>, never
// HTML. Long input scrolls in its box, which takes the keyboard to scroll. A Claude
// Code Edit request is shown as the diff of what it changes, not as the JSON of
// its old_string and new_string.
export function detailBlock(record, pid) {
  if (typeof record.detail !== "string" || record.detail === "") return null;
  const edit = record.kind === "permission" ? editOf(record.detail) : null;
  const label = edit ? (edit.all ? "Edit (every occurrence)" : "Edit") : record.kind === "permission" ? "Tool input" : "Detail";
  const pre = el("pre", {
    className: edit ? "detail diff" : "detail",
    id: `d-${pid}`,
    tabindex: "0",
    "aria-label": edit ? `${label}, as a diff` : `${label}, in full`,
  });
  if (edit) pre.append(...diffLines(edit));
  else pre.textContent = visible(record.detail);
  return el("div", { className: "detail-block" }, el("p", { className: "detail-label", text: label }), pre);
}

// The Edit a detail asks for ({file_path, old_string, new_string}), or null.
function editOf(detail) {
  let input;
  try {
    input = JSON.parse(detail);
  } catch {
    return null;
  }
  if (!input || typeof input.old_string !== "string" || typeof input.new_string !== "string") return null;
  const file = typeof input.file_path === "string" ? input.file_path : "(no file_path)";
  return { file, before: input.old_string, after: input.new_string, all: input.replace_all === true };
}

// The lines of a unified diff of the edit, as elements (a block each): "--- FILE (now)",
// "+++ FILE (after the edit)", then each line kept (" "), removed ("-") or added
// ("+"), from the longest common subsequence of the two texts' lines. Past
// MAX_DIFF_CELLS the table is not built: every old line is shown removed and every
// new one added, still the whole truth, in linear time.
const MAX_DIFF_CELLS = 250000;
function diffLines(edit) {
  const a = edit.before.split("\n");
  const b = edit.after.split("\n");
  const ops = [];
  if (a.length * b.length > MAX_DIFF_CELLS) {
    a.forEach((line) => ops.push(["-", line]));
    b.forEach((line) => ops.push(["+", line]));
  } else {
    // common[i][j]: the longest common subsequence of a[i:] and b[j:].
    const common = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
    for (let i = a.length - 1; i >= 0; i--) {
      for (let j = b.length - 1; j >= 0; j--) {
        common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < a.length || j < b.length) {
      if (i < a.length && j < b.length && a[i] === b[j]) {
        ops.push([" ", a[i++]]);
        j++;
      } else if (i < a.length && (j === b.length || common[i + 1][j] >= common[i][j + 1])) {
        ops.push(["-", a[i++]]); // removed lines before added ones, as diff -u has them
      } else {
        ops.push(["+", b[j++]]);
      }
    }
  }
  const lines = [
    el("span", { className: "diff-head", text: `--- ${edit.file} (now)` }),
    el("span", { className: "diff-head", text: `+++ ${edit.file} (after the edit)` }),
  ];
  const cls = { " ": "diff-same", "-": "diff-del", "+": "diff-add" };
  ops.forEach(([mark, line]) => lines.push(el("span", { className: cls[mark], text: `${mark}${line}` })));
  return lines;
}
