// Building the page's elements from text that comes from agents: every such text goes
// through `visible` and lands as textContent, never as HTML.  Durations and clock times
// as the page shows them, and the screen reader's announcements.

export const $ = (id) => document.getElementById(id);

// What a person cannot see goes from every text the page shows, by Unicode category
// and property as every face does (hive_rpc/core/terminal_text.py): control characters
// but tab and newline, format characters (Cf: soft hyphen, zero-width spaces and
// joiners, bidi controls, tag characters), lone surrogates and the rest of
// Default_Ignorable_Code_Point (Hangul fillers, variation selectors).  Values sent back
// (a choice's value attribute) stay exact.
const INVISIBLE = /(?![\t\n])[\p{Cc}\p{Cf}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu;
export const visible = (text) => String(text).replace(/[\u2028\u2029]/g, "\n").replace(INVISIBLE, "");
const SHOWN_ATTRIBUTES = new Set(["title", "aria-label", "placeholder", "alt"]);

export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "className") node.className = value;
    else if (key === "text") node.textContent = visible(value);
    else if (SHOWN_ATTRIBUTES.has(key)) node.setAttribute(key, visible(value));
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(visible(child)) : child);
  }
  return node;
}

export function duration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${m % 60}m`;
}

export function clock(at) {
  return new Date(at * 1000).toLocaleTimeString();
}

export const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

export function announce(text) {
  const region = $("announcer");
  region.textContent = "";
  // A fresh text node in a cleared region is what screen readers announce.
  window.setTimeout(() => {
    region.textContent = visible(text);
  }, 50);
}
