/**
 * Small string helpers that replace regular expressions which would scan user input in
 * super-linear time (eslint-plugin-regexp's no-super-linear-move: `/\/+$/` on a string of
 * many slashes followed by another character is quadratic).
 */

/** `text` without any run of `characters` at its end, in one pass from the end. */
export function trimTrailing(text: string, characters: string): string {
  let end = text.length;
  while (end > 0 && characters.includes(text[end - 1]!)) end--;
  return end === text.length ? text : text.slice(0, end);
}

/** Text for HTML: every character that could end an element or an attribute, escaped. */
export const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);
