/**
 * A unified diff (`diff -u`, three lines of context) of `before` → `after`, where `after`
 * is `before` with lines appended or its last lines changed: what the assistant's prompt
 * proposals are, so the user can read them and apply them with any patch tool (`git apply`,
 * `patch`) to a file holding the prompt exactly as stored.
 *
 * A prompt seldom ends with a newline, and a patch tool compares line endings too: a last
 * line without one is its own line (`\ No newline at end of file` after it, as `diff -u`
 * writes), so extending it shows as that line removed and added back with its newline.
 */
const NO_NEWLINE = '\\ No newline at end of file';

interface Line {
  text: string;
  /** Ends with a newline: every line but a file's last when the file does not end with one. */
  ended: boolean;
}

function linesOf(text: string): Line[] {
  if (text === '') return [];
  const parts = text.split('\n');
  const ended = parts.at(-1) === '';
  if (ended) parts.pop();
  return parts.map((part, index) => ({ text: part, ended: ended || index < parts.length - 1 }));
}

const sameLine = (a: Line, b: Line) => a.text === b.text && a.ended === b.ended;

export function appendDiff(name: string, before: string, after: string): string {
  const old = linesOf(before);
  const next = linesOf(after);
  let same = 0;
  while (same < old.length && same < next.length && sameLine(old[same]!, next[same]!)) same++;
  const start = same - Math.min(3, same);
  const oldCount = old.length - start;
  const newCount = next.length - start;
  // A zero-length range names the line before it (`-0,0` for an empty file), as diff -u does.
  const range = (count: number) => (count === 0 ? `${start},0` : `${start + 1},${count}`);
  const body = (prefix: string, lines: readonly Line[]) => lines.flatMap((line) => (line.ended ? [`${prefix}${line.text}`] : [`${prefix}${line.text}`, NO_NEWLINE]));
  return [
    `--- a/${name}`,
    `+++ b/${name}`,
    `@@ -${range(oldCount)} +${range(newCount)} @@`,
    ...body(' ', old.slice(start, same)),
    ...body('-', old.slice(same)),
    ...body('+', next.slice(same)),
  ].join('\n');
}
