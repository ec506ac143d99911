/**
 * A unified diff (`diff -u`, three lines of context) of `before` → `after`, where `after`
 * is `before` with lines appended or its last line changed: what the assistant's prompt
 * proposals are, so the user can read them and apply them with any patch tool.
 */
export function appendDiff(name: string, before: string, after: string): string {
  const old = before === '' ? [] : before.split('\n');
  const next = after === '' ? [] : after.split('\n');
  let same = 0;
  while (same < old.length && same < next.length && old[same] === next[same]) same++;
  const context = Math.min(3, same);
  const start = same - context;
  const oldPart = old.slice(start);
  const newPart = next.slice(start);
  const range = (from: number, count: number) => (count === 0 ? `${from},0` : `${from + 1},${count}`);
  const lines = [
    `--- a/${name}`,
    `+++ b/${name}`,
    `@@ -${range(start, oldPart.length)} +${range(start, newPart.length)} @@`,
    ...old.slice(start, same).map((line) => ` ${line}`),
    ...old.slice(same).map((line) => `-${line}`),
    ...next.slice(same).map((line) => `+${line}`),
  ];
  return lines.join('\n');
}
