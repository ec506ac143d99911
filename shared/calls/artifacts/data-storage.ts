import { restrictRetrievals } from '../../knowledge-bases/records/index.ts';
import { objectStore } from '../../platform/aws/object-store.ts';
import { conflict } from '../../platform/errors.ts';
import { piiCategoriesOf, redactPiiDeep, type PiiCategory } from '../../platform/text/pii.ts';
import { deleteUnscrubbed } from './store.ts';
import { deleteLines } from '../line-store.ts';
import { artifactSettings, type ArtifactSettings } from './recordings.ts';
import { removeCallSensitiveData } from './scrubbing.ts';
import { findCallItem, transitionCall, type CallItem, type EngineState } from '../store.ts';

/*
 * What a call keeps once it is over, by its data storage setting (the call's own, else its
 * agent version's; docs/privacy.md, What the data storage setting keeps). While the call runs
 * everything it says is stored as said (the conversation needs it, the live monitors show
 * it); once it is over and, when it ended, its post-call analysis has run (the analysis
 * reads the transcript; `call_analyzed` goes out with it), the setting is applied:
 *
 * - `everything`: nothing changes.
 * - `everything_except_pii`: remove-call-sensitive-data's scrub (scrubbing.ts), which keeps
 *   no unscrubbed copy under this setting, and the live call's working state goes.
 * - `basic_attributes_only`: the transcript lines, live controls and any unscrubbed copy are
 *   deleted, the transcript fields of a call stored with them on the item, both
 *   dynamic-variable maps, the analysis' summary, the recording and the live call's working
 *   state are removed from the item, and the retrievals keep no words; the analysis keeps
 *   its verdicts and the custom data with personal data redacted.
 *
 * Applying is idempotent: every deletion finds nothing the second time, and the call's last
 * write records the setting applied (`data_storage_applied`), so a redelivered step, or a
 * later one, finds it done and writes nothing. That write is conditional on the analysis
 * counter read, so a new analysis (rerun-call-analysis, which removes the mark) is applied
 * again. Run by the call-steps job after the analysis (engine.ts) or, for a call that did
 * not end `ended`, as its own step; and by update-call when it tightens an ended call's setting.
 */

/** The item's fields that hold what was said, or what the caller's variables were: gone under basic_attributes_only. */
const NOT_BASIC = [
  'transcript',
  'transcript_object',
  'transcript_with_tool_calls',
  'line_count',
  'live_log',
  'live_say',
  'control_count',
  'say_count',
  'retell_llm_dynamic_variables',
  'collected_dynamic_variables',
  'recording_url',
] as const satisfies readonly (keyof CallItem)[];

/** The live call's working copies (update-live-call's variables and override): nothing reads them once the call is over. */
const WORKING_STATE = ['live_patch', 'live_base_variables'] as const;

/** Whether a call's setting applies now: it is over, and a call that ended `ended` has been analysed. */
export function storageDue(call: Pick<CallItem, 'call_status' | 'engine'>): boolean {
  if (call.call_status === 'registered' || call.call_status === 'ongoing') return false;
  return call.call_status !== 'ended' || (call.engine.analysis_seq ?? 0) >= 1;
}

/**
 * Applies the call's data storage setting to what it stores (above), when it is due; answers
 * the call as stored after (undefined when it is gone or another workspace's).
 */
export async function applyDataStorage(workspaceId: string, callId: string): Promise<CallItem | undefined> {
  for (let attempt = 0; ; attempt++) {
    const call = await findCallItem(callId);
    if (!call || call.workspace_id !== workspaceId) return undefined;
    if (!storageDue(call)) return call;
    const settings = await artifactSettings(call);
    const setting = settings.dataStorage;
    // Nothing more to take from a call applied at basic_attributes_only.
    if (setting === 'everything' || call.data_storage_applied === setting || call.data_storage_applied === 'basic_attributes_only') return call;
    const categories = piiCategoriesOf(settings.piiCategories);
    const done = setting === 'basic_attributes_only' ? await keepBasicAttributes(call, categories) : await keepWithoutPii(call, settings);
    if (done) return done;
    // The call changed under the last write (an analysis landed): read it again and apply to what it is now.
    if (attempt >= 2) throw conflict(`Call ${callId} kept changing while its data storage setting was applied; retry`);
  }
}

async function keepWithoutPii(call: CallItem, settings: ArtifactSettings): Promise<CallItem | undefined> {
  await removeCallSensitiveData(call.workspace_id, call.call_id);
  const scrubbed = await findCallItem(call.call_id);
  if (!scrubbed) return undefined;
  return transitionCall(call.call_id, {
    from: [scrubbed.call_status],
    guard: { field: 'analysis_seq', equals: scrubbed.engine.analysis_seq ?? 0 },
    set: { engine: withoutWorkingState(scrubbed.engine), data_storage_applied: settings.dataStorage },
    remove: WORKING_STATE,
  });
}

async function keepBasicAttributes(call: CallItem, categories: readonly PiiCategory[]): Promise<CallItem | undefined> {
  // What lives beside the item first, so a run cut short is finished by the next, which finds the item unmarked.
  // (A recording exists only when the setting was tightened after the call started; an unscrubbed copy, after it was scrubbed.)
  const objects = [call.recording?.key, call.recording?.unscrubbed_key].filter((key): key is string => key !== undefined);
  await Promise.all([
    deleteLines(call.call_id),
    deleteUnscrubbed(call.call_id),
    restrictRetrievals(call.workspace_id, call.call_id, { setting: 'basic_attributes_only' }),
    ...objects.map((key) => objectStore().delete(key)),
  ]);
  const analysis = call.call_analysis as Record<string, unknown> | undefined;
  return transitionCall(call.call_id, {
    from: [call.call_status],
    guard: { field: 'analysis_seq', equals: call.engine.analysis_seq ?? 0 },
    set: {
      engine: withoutWorkingState(call.engine),
      data_storage_applied: 'basic_attributes_only',
      ...(analysis ? { call_analysis: basicAnalysis(analysis, categories) } : {}),
      // Marked removed rather than forgotten: a media server's file that lands later is deleted then (recordings.ts).
      ...(call.recording ? { recording: { ...withoutKey(call.recording, 'unscrubbed_key'), removed: true } } : {}),
    },
    remove: [...NOT_BASIC, ...WORKING_STATE],
  });
}

/**
 * The analysis a call keeps under basic_attributes_only: its verdicts (`call_successful`,
 * `user_sentiment`, `in_voicemail`) and the custom data the agent asked for, with the
 * personal data found in it redacted; not `call_summary`, which retells the conversation.
 */
export function basicAnalysis(analysis: Record<string, unknown>, categories: readonly PiiCategory[]): Record<string, unknown> {
  const { call_summary: _summary, ...kept } = analysis;
  return redactPiiDeep(kept, categories) as Record<string, unknown>;
}

/** The engine's state without the conversation's history and the sandbox's script (the callee's lines): the call is over. */
function withoutWorkingState(engine: EngineState): EngineState {
  const { conversation: _conversation, ...rest } = engine;
  if (!rest.sandbox) return rest;
  const { transfer_lines: _transferLines, ...sandbox } = rest.sandbox;
  return { ...rest, sandbox: { ...sandbox, user_lines: [] } };
}

function withoutKey<T extends object, K extends keyof T>(value: T, key: K): Omit<T, K> {
  const { [key]: _dropped, ...rest } = value;
  return rest;
}
