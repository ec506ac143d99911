import { objectStore } from '../../platform/aws/object-store.ts';
import { restrictRetrievals } from '../../knowledge-bases/records/index.ts';
import { decryptSecret, encryptSecret, recordContext } from '../../platform/crypto/envelope.ts';
import { badRequest, conflict, notFound } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { piiCategoriesOf, redactPiiDeep, type PiiCategory } from '../../platform/text/pii.ts';
import { objectKeys } from '../../platform/store/keys.ts';
import { TransactionCancelled, type TransactOp } from '../../platform/store/table.ts';
import {
  deleteUnscrubbed,
  deleteUnscrubbedLines,
  deleteUnscrubbedOp,
  getUnscrubbed,
  getUnscrubbedLines,
  putUnscrubbedLinesOnce,
  putUnscrubbedOnce,
  readUnscrubbedLinesSealed,
  scrubCallOp,
  transact,
} from './store.ts';
import { readEntries, rewriteEntries, type ControlItem, type LineItem, type TranscriptLine } from '../line-store.ts';
import { artifactSettings, syntheticRecording } from './recordings.ts';
import type { CallView } from '../schemas.ts';
import { callNotFound, findCallItem, getCallWithTranscript, type CallItem, type RecordingState } from '../store.ts';
import { assembleTranscript } from '../transcript.ts';
import { toCallView } from '../view.ts';

/*
 * remove-call-sensitive-data and get-call-unscrubbed (docs/calls.md, Call artifacts).
 *
 * Scrubbing replaces the personal data the agent's `pii_config.categories` name (those
 * Parley detects: credit_card with the Luhn check, ssn, email, phone_number; all four when
 * the agent names none) with `[<category>]` in the transcript, transcript_object,
 * transcript_with_tool_calls (the call's lines, line-store.ts, and the fields of a call
 * stored with them on the item), both dynamic-variable maps, call_analysis, the texts of
 * the call's live controls (supervisor-say, additional context) and the queries of its
 * knowledge-base retrievals, and silences the scrubbed turns in the sandbox's recording (a
 * media server's recording cannot be edited here, so it is removed). What it replaced is
 * kept as an encrypted copy (envelope encryption, context naming the call) only while the
 * call's data storage setting is `everything`; under `everything_except_pii` or
 * `basic_attributes_only` no copy is kept and an existing one is deleted. Scrubbing again is
 * harmless: the copy is written once, and scrubbed text has nothing left to find.
 *
 * Order, so a request cut short at any point leaves the original safe and a retry finishes:
 * objects (the recording), then the lines' copy (once), then the lines and controls that
 * changed and the retrievals, then one transaction of the call and its own fields' copy.
 * The controls' texts and the retrievals' queries are not copied: the unscrubbed view
 * answers neither.
 *
 * The data storage setting `everything_except_pii` runs the same scrub by itself once the
 * call's analysis has run (data-storage.ts).
 */

/** The call fields scrubbing rewrites, and the copy keeps as they were. */
const SCRUBBED_FIELDS = [
  'transcript',
  'transcript_object',
  'transcript_with_tool_calls',
  'retell_llm_dynamic_variables',
  'collected_dynamic_variables',
  'call_analysis',
  // A call stored before its live controls were items of their own keeps them here.
  'live_log',
  'live_say',
] as const satisfies readonly (keyof CallItem)[];

const copyContext = (call: Pick<CallItem, 'workspace_id' | 'call_id'>) => recordContext(call.workspace_id, `call_unscrubbed:${call.call_id}`);
const linesCopyContext = (call: Pick<CallItem, 'workspace_id' | 'call_id'>) => recordContext(call.workspace_id, `call_unscrubbed_lines:${call.call_id}`);

/** The call of this workspace as stored, its lines and its live controls (read side by side), or 404. */
async function callAndEntries(workspaceId: string, callId: string): Promise<{ raw: CallItem; lines: LineItem[]; controls: ControlItem[] }> {
  const [call, { lines, controls }] = await Promise.all([findCallItem(callId), readEntries(callId)]);
  if (!call || call.workspace_id !== workspaceId) throw callNotFound();
  return { raw: call, lines, controls };
}

/** A transcript entry scrubbed; its word timings go when its text changed (they would spell out what was removed). */
function scrubTurn(turn: Record<string, unknown>, categories: readonly PiiCategory[]): Record<string, unknown> {
  const scrubbed = redactPiiDeep(turn, categories) as Record<string, unknown>;
  if (scrubbed.content !== turn.content && Array.isArray(turn.words)) scrubbed.words = [];
  return scrubbed;
}

/** `POST /v2/remove-call-sensitive-data/{call_id}`: answers the scrubbed call. */
export async function removeCallSensitiveData(workspaceId: string, callId: string): Promise<CallView> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await scrubOnce(workspaceId, callId);
    } catch (error) {
      // Another write reached the call (its analysis, a concurrent scrub) between the read and the write: read again.
      if (!(error instanceof TransactionCancelled) || attempt >= 2) {
        if (error instanceof TransactionCancelled) throw conflict('The call changed while it was being scrubbed; retry the request');
        throw error;
      }
    }
  }
}

async function scrubOnce(workspaceId: string, callId: string): Promise<CallView> {
  const { raw, lines, controls } = await callAndEntries(workspaceId, callId);
  if (raw.call_status === 'registered' || raw.call_status === 'ongoing') {
    throw badRequest(`Sensitive data can only be removed from a call that has ended; this call is ${raw.call_status}`);
  }
  const settings = await artifactSettings(raw);
  const categories = piiCategoriesOf(settings.piiCategories);
  const keepCopy = settings.dataStorage === 'everything';

  // The item's own fields (the transcript's only on a call stored with it there).
  const set: Record<string, unknown> = { scrubbed_timestamp: Date.now() };
  const original: Record<string, unknown> = {};
  for (const field of SCRUBBED_FIELDS) {
    const value = raw[field];
    if (value === undefined) continue;
    original[field] = value;
    set[field] =
      field === 'transcript_object' || field === 'transcript_with_tool_calls'
        ? (value as Record<string, unknown>[]).map((turn) => scrubTurn(turn, categories))
        : redactPiiDeep(value, categories);
  }
  // The lines: each entry scrubbed; those that changed are rewritten.
  const scrubbedLines: TranscriptLine[] = lines.map((line) => ({ ...line, entry: scrubTurn(line.entry, categories) }));
  const changed = lines.flatMap((line, index) =>
    JSON.stringify(scrubbedLines[index]!.entry) === JSON.stringify(line.entry) ? [] : [{ key: { pk: line.pk, sk: line.sk }, entry: scrubbedLines[index]!.entry }],
  );
  // The controls' texts (supervisor-say, additional context): those that changed are rewritten, without a copy.
  const changedControls = controls.flatMap((control) => {
    const entry = redactPiiDeep(control.entry, categories) as Record<string, unknown>;
    return JSON.stringify(entry) === JSON.stringify(control.entry) ? [] : [{ key: { pk: control.pk, sk: control.sk }, entry }];
  });
  const call = assembleTranscript(raw, lines);
  const scrubbed = assembleTranscript({ ...raw, ...set } as CallItem, scrubbedLines);
  const turns = call.transcript_object ?? [];
  const scrubbedTurns = scrubbed.transcript_object ?? [];
  const silenced = turns.flatMap((turn, index) => (scrubbedTurns[index]?.content !== turn.content ? [index] : []));

  const remove: string[] = [];
  const removeAfter: string[] = [];
  if (raw.recording) {
    const recording = await scrubRecording(call, raw.recording, silenced, keepCopy, settings.retentionDays);
    set.recording = recording;
    if (recording.removed) remove.push('recording_url');
    if (!keepCopy && raw.recording.unscrubbed_key) removeAfter.push(raw.recording.unscrubbed_key);
  }
  const expiresAt = (createdMs: number) => (settings.retentionDays ? { expires_at: Math.floor((raw.end_timestamp ?? createdMs) / 1000) + settings.retentionDays * 86_400 } : {});

  // The lines' originals are sealed and kept (once) before any line changes.
  if (keepCopy && lines.length > 0 && !(await getUnscrubbedLines(callId))) {
    const createdMs = Date.now();
    const originals = lines.map(({ entry, in_transcript }) => ({ entry, in_transcript }));
    await putUnscrubbedLinesOnce(
      { workspace_id: workspaceId, call_id: callId, created_timestamp: createdMs, ...expiresAt(createdMs) },
      await encryptSecret(JSON.stringify(originals), linesCopyContext(raw)),
    );
  }
  await rewriteEntries([...changed, ...changedControls]);
  // The user's words its knowledge-base retrievals recorded, redacted alike (no copy).
  await restrictRetrievals(workspaceId, callId, { setting: 'everything_except_pii', piiCategories: settings.piiCategories });

  const existing = await getUnscrubbed(callId);
  const ops: TransactOp[] = [scrubCallOp(callId, workspaceId, raw.engine.analysis_seq, set, remove)];
  if (keepCopy && !existing) {
    const createdMs = Date.now();
    ops.push(
      putUnscrubbedOnce({
        workspace_id: workspaceId,
        call_id: callId,
        sealed: await encryptSecret(JSON.stringify(original), copyContext(raw)),
        created_timestamp: createdMs,
        ...expiresAt(createdMs),
      }),
    );
  } else if (!keepCopy && existing) {
    ops.push(deleteUnscrubbedOp(callId));
  }
  await transact(ops);
  if (!keepCopy) await deleteUnscrubbedLines(callId);
  await Promise.all(removeAfter.map((key) => objectStore().delete(key)));
  return toCallView({ ...scrubbed, ...Object.fromEntries(remove.map((field) => [field, undefined])) } as CallItem);
}

/**
 * The recording after scrubbing: the sandbox's tones with the scrubbed turns silenced (the
 * untouched file kept beside it when a copy may be kept); a media server's recording moved
 * aside (or deleted) and marked removed. Object writes come before the call's write, so a
 * request that fails in between leaves the original safe and a retry finishes the work.
 */
async function scrubRecording(
  call: CallItem,
  recording: RecordingState,
  silenced: number[],
  keepCopy: boolean,
  retentionDays: number | undefined,
): Promise<RecordingState> {
  const store = objectStore();
  const already = new Set(recording.silenced_turns ?? []);
  const all = [...new Set([...already, ...silenced])].sort((a, b) => a - b);
  if (recording.removed || (all.length === already.size && (!keepCopy || recording.unscrubbed_key))) return { ...recording, silenced_turns: all };
  const unscrubbedKey = objectKeys.callArtifact(call.workspace_id, call.call_id, 'recording.unscrubbed.wav');
  let unscrubbed = recording.unscrubbed_key;
  if (keepCopy && !unscrubbed) {
    // Written once: a retried scrub finds it and never replaces the original with a scrubbed file.
    if (!(await store.get(unscrubbedKey))) {
      const current = await store.get(recording.key);
      if (current) await store.put(unscrubbedKey, current.body, current.contentType, { retentionDays });
    }
    unscrubbed = unscrubbedKey;
  }
  if (!recording.synthetic) {
    await store.delete(recording.key);
    return { ...recording, silenced_turns: all, removed: true, ...(unscrubbed ? { unscrubbed_key: unscrubbed } : {}) };
  }
  if (all.length !== already.size) {
    const wav = syntheticRecording(call.transcript_object ?? [], recording.duration_ms, new Set(all));
    await store.put(recording.key, wav, 'audio/wav', { retentionDays });
  }
  return { ...recording, silenced_turns: all, ...(unscrubbed ? { unscrubbed_key: unscrubbed } : {}) };
}

/**
 * `GET /v2/get-call-unscrubbed/{call_id}` (scope admin): the call with the fields as they were
 * before scrubbing, and a signed URL of the untouched recording when one is kept. A call
 * never scrubbed is answered as it is. 404 when the copy is not kept (the data storage
 * setting, or its retention ran out).
 */
export async function getCallUnscrubbed(workspaceId: string, callId: string): Promise<CallView> {
  const { raw, lines } = await callAndEntries(workspaceId, callId);
  if (raw.scrubbed_timestamp === undefined) return toCallView(assembleTranscript(raw, lines));
  const copy = await getUnscrubbed(callId);
  if (!copy || copy.workspace_id !== workspaceId) {
    const settings = await artifactSettings(raw);
    throw notFound(
      settings.dataStorage === 'everything'
        ? `No unscrubbed copy of call ${callId} is kept any more`
        : `No unscrubbed copy of call ${callId} is kept: its data storage setting is ${settings.dataStorage}`,
    );
  }
  const fields = JSON.parse(await decryptSecret(copy.sealed, copyContext(raw))) as Record<string, unknown>;
  const view = toCallView(assembleTranscript({ ...raw, ...fields } as CallItem, (await originalLines(raw)) ?? lines));
  const unscrubbedKey = raw.recording?.unscrubbed_key;
  if (unscrubbedKey) {
    const settings = await artifactSettings(raw);
    view.recording_url = await objectStore().signedUrl(unscrubbedKey, Date.now() + settings.signedUrlExpirationMs, {
      downloadName: `${callId}.unscrubbed.wav`,
    });
  }
  return view;
}

/** The call's lines as they were before scrubbing, when their copy is kept. */
async function originalLines(call: CallItem): Promise<TranscriptLine[] | undefined> {
  const head = await getUnscrubbedLines(call.call_id);
  if (!head || head.workspace_id !== call.workspace_id) return undefined;
  const sealed = await readUnscrubbedLinesSealed(head);
  if (sealed === undefined) {
    logger.warn('a part of the unscrubbed lines is missing; answering the scrubbed lines', { call_id: call.call_id });
    return undefined;
  }
  return JSON.parse(await decryptSecret(sealed, linesCopyContext(call))) as TranscriptLine[];
}

/** delete-call: the call's stored objects and its unscrubbed copy go with it (failures logged, not fatal: the call is gone). */
export async function deleteCallArtifacts(old: Pick<CallItem, 'call_id' | 'recording'>): Promise<void> {
  const keys = [old.recording?.key, old.recording?.unscrubbed_key].filter((key): key is string => !!key);
  await Promise.all([deleteUnscrubbed(old.call_id), ...keys.map((key) => objectStore().delete(key))]).catch((error) =>
    logger.warn('deleting a call\'s artifacts failed; the lifecycle rules remove them', { call_id: old.call_id, error: error as Error }),
  );
}

/** What is stored for one call, for the privacy view (GET /privacy/call/{call_id}). */
export interface CallStorageFacts {
  call: CallView;
  /** When the call was created (epoch ms): what retention counts from. */
  created_timestamp: number;
  recording: boolean;
  scrubbed: boolean;
  unscrubbed_copy: boolean;
  data_storage_setting: 'everything' | 'everything_except_pii' | 'basic_attributes_only';
  data_storage_retention_days: number | null;
}

export async function callStorageFacts(workspaceId: string, callId: string): Promise<CallStorageFacts> {
  const item = await getCallWithTranscript(workspaceId, callId);
  const [settings, unscrubbed] = await Promise.all([artifactSettings(item), getUnscrubbed(callId)]);
  return {
    call: toCallView(item),
    created_timestamp: item.created_timestamp,
    recording: item.recording !== undefined && !item.recording.removed,
    scrubbed: item.scrubbed_timestamp !== undefined,
    unscrubbed_copy: unscrubbed !== undefined,
    data_storage_setting: settings.dataStorage,
    data_storage_retention_days: settings.retentionDays ?? null,
  };
}
