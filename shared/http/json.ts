import { invalidJson } from '../errors.ts';

export const MAX_JSON_DEPTH = 64;

/**
 * JSON.parse silently keeps the last of duplicate keys and accepts any depth. A request
 * body must be unambiguous, so one linear pass over the text rejects duplicate keys
 * within an object and nesting deeper than MAX_JSON_DEPTH before JSON.parse runs.
 */
export function parseJsonBody(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidJson();
  }
  if (typeof value === 'object' && value !== null) checkStructure(text);
  return value;
}

function checkStructure(text: string): void {
  // One frame per open container: the keys seen so far (null for arrays).
  const frames: (Set<string> | null)[] = [];
  let expectingKey = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      const end = endOfString(text, i);
      const frame = frames[frames.length - 1];
      if (expectingKey && frame) {
        const raw = text.slice(i, end + 1);
        const key = raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        if (frame.has(key)) throw invalidJson(`duplicate key "${truncate(key)}"`);
        frame.add(key);
        expectingKey = false;
      }
      i = end;
    } else if (ch === 0x7b /* { */ || ch === 0x5b /* [ */) {
      frames.push(ch === 0x7b ? new Set<string>() : null);
      if (frames.length > MAX_JSON_DEPTH) throw invalidJson(`nesting deeper than ${MAX_JSON_DEPTH} levels`);
      expectingKey = ch === 0x7b;
    } else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) {
      frames.pop();
      expectingKey = false;
    } else if (ch === 0x2c /* , */) {
      expectingKey = frames[frames.length - 1] instanceof Set;
    }
  }
}

/** Index of the closing quote of the string that opens at `start` (the text is valid JSON). */
function endOfString(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const next = text.indexOf('"', i);
    let backslashes = 0;
    for (let j = next - 1; text.charCodeAt(j) === 0x5c; j--) backslashes++;
    if (backslashes % 2 === 0) return next;
    i = next + 1;
  }
}

function truncate(key: string): string {
  return key.length > 64 ? `${key.slice(0, 64)}…` : key;
}
