import { eachLimited } from '../platform/parallel.ts';
import { readLines, type LineItem, type TranscriptLine } from './line-store.ts';
import type { CallItem } from './items.ts';

/*
 * A call's transcript as the API shows it, assembled from its lines (line-store.ts):
 * `transcript_with_tool_calls` is every line in the order said (the lines' sort keys: the
 * report's sequence, then the entry's place in it), `transcript_object` the agent's and
 * user's utterances among them (with their word timings), `transcript` those as text. A
 * call stored with its three fields on the item (no `line_count`) is read as it is, and
 * lines written after them (a call in flight while the layout changed) follow them.
 */

/** Marks a call whose transcript is assembled, so assembling it again (a spread copy too) changes nothing. */
const ASSEMBLED = Symbol('transcript assembled');

type Entry = Record<string, unknown>;

/**
 * What a write appends to the call's transcript (store.ts transitionCall): the events as
 * lines, after the lines the step read, keyed by the first one's position (the engine's
 * writes are ordered by the call's conditions; a LiveKit worker's by its report sequence).
 * Sandbox turns, transfers' consultations and handoffs record through it.
 */
export function transcriptAppend(call: CallItem, events: readonly object[], options: { heard?: boolean } = {}) {
  const after = call.line_count ?? 0;
  return { workspaceId: call.workspace_id, ordinal: after, after, lines: transcriptLines(events as Record<string, unknown>[], options) };
}

/** Turn events as lines: every event is a `transcript_with_tool_calls` entry; the agent's and user's lines are the caller's transcript too. */
export function transcriptLines(events: readonly Entry[], options: { heard?: boolean } = {}): TranscriptLine[] {
  return events.map((event) => ({
    entry: { ...event },
    in_transcript: options.heard !== false && (event.role === 'agent' || event.role === 'user') && typeof event.content === 'string',
  }));
}

const objectOf = (entry: Entry) => ({ role: entry.role, content: entry.content, words: (entry.words as unknown[] | undefined) ?? [] });
const textOf = (entry: { role?: unknown; content?: unknown }) => `${entry.role === 'agent' ? 'Agent' : 'User'}: ${String(entry.content)}\n`;

/** Whether the call keeps (some of) its transcript in lines. */
const hasLines = (call: Pick<CallItem, 'line_count'>): boolean => call.line_count !== undefined;

/** The call with its transcript fields built from its lines (`lines` in sort-key order). */
export function assembleTranscript<T extends CallItem>(call: T, lines: readonly TranscriptLine[]): T {
  if ((call as Record<symbol, unknown>)[ASSEMBLED] || (!hasLines(call) && lines.length === 0)) return call;
  const spoken = lines.filter((line) => line.in_transcript).map((line) => line.entry);
  return {
    ...call,
    transcript: (call.transcript ?? '') + spoken.map(textOf).join(''),
    transcript_object: [...(call.transcript_object ?? []), ...spoken.map(objectOf)] as CallItem['transcript_object'],
    transcript_with_tool_calls: [...(call.transcript_with_tool_calls ?? []), ...lines.map((line) => line.entry)] as CallItem['transcript_with_tool_calls'],
    [ASSEMBLED]: true,
  };
}

/** The call with its transcript: one Query of its lines when it has any (none for a call stored before lines). */
export async function withTranscript<T extends CallItem>(call: T): Promise<T> {
  if ((call as Record<symbol, unknown>)[ASSEMBLED] || !hasLines(call)) return call;
  return assembleTranscript(call, call.line_count ? await readLines(call.call_id) : []);
}

/**
 * Many calls with their transcripts (exports, the contacts and CRM jobs): one Query per call
 * that has lines, at most TRANSCRIPT_READS_IN_FLIGHT at once, in the given order.
 */
const TRANSCRIPT_READS_IN_FLIGHT = 16;

export async function withTranscripts<T extends CallItem>(calls: readonly T[]): Promise<T[]> {
  const out = [...calls];
  await eachLimited(calls, TRANSCRIPT_READS_IN_FLIGHT, async (call, index) => {
    out[index] = await withTranscript(call);
  });
  return out;
}

/**
 * The transcript entries in the order they were written, for the live monitors (live/frames.ts):
 * the item's own entries, then the lines by position, only those the call read counts
 * (`line_count`), so frames computed from this read number every entry as any later read will.
 */
export function liveEntries(call: CallItem, lines: readonly LineItem[]): Entry[] {
  const count = call.line_count ?? 0;
  const written = lines.filter((line) => line.position < count).sort((a, b) => a.position - b.position);
  return [...((call.transcript_with_tool_calls ?? []) as unknown as Entry[]), ...written.map((line) => line.entry)];
}

/** How many entries the monitors have seen of this call's transcript (what a live control's place is checked against). */
export const transcriptLength = (call: CallItem): number => (call.transcript_with_tool_calls?.length ?? 0) + (call.line_count ?? 0);
