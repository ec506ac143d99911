/**
 * Custom SIP headers (a call's `custom_sip_headers`, a batch task's, a `transfer_call`
 * tool's or node's): at most 50, each name an RFC 3261 token of 1 to 128 characters, each
 * value at most 1024 characters on one line. A name or value that could end the header
 * line (CR, LF, other control characters) would let a client write headers of its own
 * into the INVITE or REFER, so it is refused rather than passed to the media server.
 */
const MAX_SIP_HEADERS = 50;
const NAME = /^[A-Za-z0-9!%'*+.\-_`~]{1,128}$/;
/** Horizontal tab (9) is allowed in a header value; no other control character (below 32, and DEL) is. */
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if ((code < 32 && code !== 9) || code === 127) return true;
  }
  return false;
}

/** One problem: the header it concerns (absent: the whole set) and what is wrong. */
export interface SipHeaderProblem {
  name?: string;
  message: string;
}

export function sipHeaderProblems(headers: Record<string, unknown>): SipHeaderProblem[] {
  const problems: SipHeaderProblem[] = [];
  const names = Object.keys(headers);
  if (names.length > MAX_SIP_HEADERS) problems.push({ message: `Must have at most ${MAX_SIP_HEADERS} headers` });
  for (const name of names) {
    const value = headers[name];
    if (!NAME.test(name)) problems.push({ name, message: "Must be a SIP header name: 1 to 128 letters, digits or !%'*+-._`~" });
    else if (typeof value !== 'string') problems.push({ name, message: `Expected string, received ${value === null ? 'null' : typeof value}` });
    else if (value.length > 1024) problems.push({ name, message: 'Must be at most 1024 characters' });
    else if (hasControl(value)) problems.push({ name, message: 'Must be one line without control characters' });
  }
  return problems;
}

/** The headers without those a filled-in placeholder made invalid (a value with a line break, too long). */
export function validSipHeaders(headers: Record<string, string>): Record<string, string> {
  const bad = new Set(sipHeaderProblems(headers).flatMap((problem) => (problem.name === undefined ? [] : [problem.name])));
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !bad.has(name)).slice(0, MAX_SIP_HEADERS));
}
