/*
 * Finding personal data in text, for remove-call-sensitive-data and the data storage setting
 * `everything_except_pii` (calls, chats, knowledge-base retrievals): card numbers (13 to 19
 * digits passing the Luhn check), US social security numbers, email addresses and phone
 * numbers. Hand-written scanners, not regular expressions: each is one pass over the text,
 * so a transcript of any length (or built to be hostile) costs linear time, and the
 * patterns stay readable.
 */

const PII_CATEGORIES = ['credit_card', 'ssn', 'email', 'phone_number'] as const;
export type PiiCategory = (typeof PII_CATEGORIES)[number];

/**
 * The categories an agent's `pii_config.categories` names that are detected here; all of
 * them when it names none (removing personal data with nothing named removes everything found).
 */
export function piiCategoriesOf(configured: readonly string[] | undefined): PiiCategory[] {
  const supported = (configured ?? []).filter((name): name is PiiCategory => (PII_CATEGORIES as readonly string[]).includes(name));
  return configured && configured.length > 0 ? supported : [...PII_CATEGORIES];
}

export interface PiiMatch {
  category: PiiCategory;
  start: number;
  end: number;
}

const isDigit = (ch: string) => ch >= '0' && ch <= '9';
/** What may sit between the digits of a spoken or typed number: `4111 1111-1111.1111`, `(415) 555-0142`, `+1 415…`. */
const isNumberSeparator = (ch: string) => ch === ' ' || ch === '-' || ch === '.' || ch === '(' || ch === ')' || ch === '+';

export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return digits.length > 0 && sum % 10 === 0;
}

/** What a run of digits and separators is, judged whole. */
function classifyNumber(text: string, wanted: ReadonlySet<PiiCategory>): PiiCategory | undefined {
  let digits = '';
  for (const ch of text) if (isDigit(ch)) digits += ch;
  if (wanted.has('credit_card') && digits.length >= 13 && digits.length <= 19 && luhnValid(digits)) return 'credit_card';
  // SSN: 123-45-6789 or 123 45 6789 (three groups 3-2-4), or nine digits written together.
  if (wanted.has('ssn') && digits.length === 9) {
    const groups = text.trim().split(/[ -]/);
    const grouped = groups.length === 3 && groups[0]!.length === 3 && groups[1]!.length === 2 && groups[2]!.length === 4;
    if (grouped || text.trim() === digits) {
      const area = digits.slice(0, 3);
      if (area !== '000' && area !== '666' && area[0] !== '9' && digits.slice(3, 5) !== '00' && digits.slice(5) !== '0000') return 'ssn';
    }
  }
  // Phone numbers: 7 digits (a local number) to 15 (E.164's maximum).
  if (wanted.has('phone_number') && digits.length >= 7 && digits.length <= 15) return 'phone_number';
  return undefined;
}

function numberMatches(text: string, wanted: ReadonlySet<PiiCategory>, out: PiiMatch[]): void {
  let i = 0;
  while (i < text.length) {
    if (!isDigit(text[i]!) && !(text[i] === '+' || text[i] === '(')) {
      i++;
      continue;
    }
    // A maximal run of digits and separators, not inside a word (`A12345678` is an ID, not a phone).
    let end = i;
    while (end < text.length && (isDigit(text[end]!) || isNumberSeparator(text[end]!))) end++;
    // Trailing separators (a sentence's full stop, a space) are not part of the number.
    while (end > i && !isDigit(text[end - 1]!) && text[end - 1] !== ')') end--;
    const attached = (i > 0 && /\w/.test(text[i - 1]!)) || (end < text.length && /\w/.test(text[end]!));
    if (end > i && !attached) {
      const run = text.slice(i, end);
      const whole = classifyNumber(run, wanted);
      if (whole) {
        out.push({ category: whole, start: i, end });
      } else {
        // Several numbers in one run ("4111111111111111 1234"): each space-separated piece alone.
        let at = i;
        for (const piece of run.split(' ')) {
          const category = piece ? classifyNumber(piece, wanted) : undefined;
          if (category) out.push({ category, start: at, end: at + piece.length });
          at += piece.length + 1;
        }
      }
    }
    i = Math.max(end, i + 1);
  }
}

const isEmailLocal = (ch: string) => /\w/.test(ch) || ch === '.' || ch === '+' || ch === '-' || ch === '%';
const isEmailDomain = (ch: string) => /\w/.test(ch) || ch === '.' || ch === '-';

function emailMatches(text: string, out: PiiMatch[]): void {
  let from = 0;
  for (;;) {
    const at = text.indexOf('@', from);
    if (at === -1) return;
    let start = at;
    while (start > 0 && isEmailLocal(text[start - 1]!)) start--;
    let end = at + 1;
    while (end < text.length && isEmailDomain(text[end]!)) end++;
    while (end > at + 1 && (text[end - 1] === '.' || text[end - 1] === '-')) end--;
    while (start < at && text[start] === '.') start++;
    const domain = text.slice(at + 1, end);
    const labels = domain.split('.');
    if (start < at && labels.length >= 2 && labels.every((label) => label.length > 0) && labels.at(-1)!.length >= 2) {
      out.push({ category: 'email', start, end });
    }
    from = Math.max(end, at + 1);
  }
}

/** The personal data of the given categories in `text`, in order, never overlapping (the earlier wins). */
export function findPii(text: string, categories: readonly PiiCategory[] = PII_CATEGORIES): PiiMatch[] {
  const wanted = new Set(categories);
  const found: PiiMatch[] = [];
  if (wanted.has('email')) emailMatches(text, found);
  if (wanted.has('credit_card') || wanted.has('ssn') || wanted.has('phone_number')) numberMatches(text, wanted, found);
  found.sort((a, b) => a.start - b.start);
  const kept: PiiMatch[] = [];
  for (const match of found) if (!kept.length || match.start >= kept.at(-1)!.end) kept.push(match);
  return kept;
}

/** `text` with each match replaced by `[<category>]`, e.g. `My card is [credit_card].` */
export function redactPii(text: string, categories: readonly PiiCategory[] = PII_CATEGORIES): string {
  const matches = findPii(text, categories);
  if (matches.length === 0) return text;
  let out = '';
  let at = 0;
  for (const match of matches) {
    out += text.slice(at, match.start) + `[${match.category}]`;
    at = match.end;
  }
  return out + text.slice(at);
}

/**
 * Every string inside `value` redacted (redactPii); objects and arrays rebuilt, other values
 * kept: what scrubbing a call's or chat's stored fields (variables, analysis, tool call
 * arguments) does.
 */
export function redactPiiDeep(value: unknown, categories: readonly PiiCategory[] = PII_CATEGORIES): unknown {
  if (typeof value === 'string') return redactPii(value, categories);
  if (Array.isArray(value)) return value.map((entry) => redactPiiDeep(entry, categories));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([name, entry]) => [name, redactPiiDeep(entry, categories)]));
  }
  return value;
}
