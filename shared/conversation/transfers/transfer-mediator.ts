/*
 * Parley's built-in mediator of an agentic warm transfer (docs/calls.md, Agentic warm
 * transfer): what it says to the answered destination, and how it reads the answer. The
 * sandbox's consultation and the voice worker's both use it, so a destination is asked and
 * understood the same way whichever media runs the call.
 */

const ACCEPT_WORDS = ['yes', 'sure', 'accept', 'okay', 'connect'];
const DECLINE_WORDS = ['decline', 'cannot', 'busy', 'unavailable', 'refuse'];

/** The mediator's opening to the destination, with the caller's last line when there is one. */
export function mediatorGreeting(lastCallerLine: string | undefined): string {
  return `Hello, I have a caller on hold who asked to be transferred to you.${lastCallerLine ? ` They said: "${lastCallerLine}"` : ''} Can you take the call?`;
}

/** The destination's answer read by its words: a decline word wins over an accept word; neither decides nothing. */
export function mediatorDecision(line: string): 'bridge' | 'cancel' | undefined {
  const words = line.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const has = (list: readonly string[]) => list.some((keyword) => words.some((word) => word.startsWith(keyword)));
  return has(DECLINE_WORDS) ? 'cancel' : has(ACCEPT_WORDS) ? 'bridge' : undefined;
}
