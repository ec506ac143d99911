import { invalidJson } from '../errors.ts';

export const MAX_JSON_DEPTH = 64;
/**
 * No string in a request body, key or value, may be longer than this many characters (the
 * largest field, a prompt, is 100,000). Free-form JSON a route keeps as sent (`z.json()`,
 * loose objects) has no per-field cap of its own, and every later step that scans a string
 * (templates, patterns, storage) stays bounded by this one.
 */
export const MAX_JSON_STRING = 100_000;

/**
 * JSON.parse silently keeps the last of duplicate keys and accepts any depth. A request
 * body must be unambiguous, so one linear pass over the text rejects duplicate keys
 * within an object, nesting deeper than MAX_JSON_DEPTH and strings longer than
 * MAX_JSON_STRING (or the route's own `maxJsonString`, e.g. a CSV sent as one string)
 * before JSON.parse's value is used.
 */
export function parseJsonBody(text: string, maxString = MAX_JSON_STRING): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidJson();
  }
  if (typeof value === 'object' && value !== null) checkStructure(text, maxString);
  else if (typeof value === 'string' && value.length > maxString) throw tooLong([], maxString);
  return value;
}

interface Frame {
  /** The keys seen so far in an object; null for an array. */
  keys: Set<string> | null;
  /** The member being read: the last key (objects) or the element index (arrays). */
  at: string | number;
}

function checkStructure(text: string, maxString: number): void {
  const frames: Frame[] = [];
  let expectingKey = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      const end = endOfString(text, i);
      const frame = frames[frames.length - 1];
      const raw = text.slice(i, end + 1);
      // Escapes only make the text longer than the string, so most strings need no decoding.
      const decoded = () => (raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1));
      if (raw.length - 2 > maxString && decoded().length > maxString) {
        throw tooLong(expectingKey ? frames.slice(0, -1) : frames, maxString);
      }
      if (expectingKey && frame?.keys) {
        const key = decoded();
        if (frame.keys.has(key)) throw invalidJson(`duplicate key "${truncate(key)}"`);
        frame.keys.add(key);
        frame.at = key;
        expectingKey = false;
      }
      i = end;
    } else if (ch === 0x7b /* { */ || ch === 0x5b /* [ */) {
      frames.push({ keys: ch === 0x7b ? new Set<string>() : null, at: 0 });
      if (frames.length > MAX_JSON_DEPTH) throw invalidJson(`nesting deeper than ${MAX_JSON_DEPTH} levels`);
      expectingKey = ch === 0x7b;
    } else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) {
      frames.pop();
      expectingKey = false;
    } else if (ch === 0x2c /* , */) {
      const frame = frames[frames.length - 1];
      expectingKey = frame?.keys instanceof Set;
      if (frame && !frame.keys) frame.at = (frame.at as number) + 1;
    }
  }
}

function tooLong(frames: Frame[], maxString: number): Error {
  const path = frames.map((frame) => (typeof frame.at === 'number' ? `[${frame.at}]` : `.${truncate(frame.at)}`)).join('');
  const where = path ? ` at ${path.startsWith('.') ? path.slice(1) : path}` : '';
  return invalidJson(`a string is longer than ${maxString} characters${where}`);
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
