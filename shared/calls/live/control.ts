import { randomBytes } from 'node:crypto';
import { badRequest, conflict, notFound, unavailable } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { checkedAgentOverride } from '../agent-override.ts';
import { publishCallChange } from './push.ts';
import type { UpdateLiveCallInput } from './schemas.ts';
import { mergeOverride } from './state.ts';
import { deleteViewerOp, getViewer, listViewerItems, putViewerOp, writeLiveControl, type LiveWrite, type ViewerItem } from './store.ts';
import { allowViewerToPublish, removeViewer, sendLiveControl, viewerAccess } from '../engine/media.ts';
import { assertNotLooser } from '../artifacts/recordings.ts';
import { scheduleStep } from '../engine/schedule.ts';
import { findCallItem, getCallItem, type CallItem } from '../store.ts';

/*
 * Live call control (docs/calls.md, Live calls): update-live-call, listen, take-over,
 * supervisor-say, viewers, leave. Each works on an ongoing call only (400 naming the
 * status), is written as one conditional write (live/store.ts: the call still ongoing, its
 * transcript where it was read, the viewer item with it), reaches the agent (the sandbox's
 * engine at its next turn; on LiveKit the agent worker, by a data message in the room), and
 * shows in the monitors (live_control frames).
 */

/** Most viewers (listeners and supervisors) one call may have. */
export const MAX_VIEWERS = 20;
/** Tries of a control whose call changed under it (a transcript line arrived in between). */
const WRITE_TRIES = 5;

const newParticipant = (role: ViewerItem['role']) => `${role}_${randomBytes(12).toString('hex')}`;

function assertOngoing(call: CallItem): void {
  if (call.call_status !== 'ongoing') {
    throw badRequest(`Call ${call.call_id} is ${call.call_status}: live control needs an ongoing call`);
  }
}

/**
 * Reads the call, checks it, and writes the control; a call that changed under the write
 * (a transcript line, another control) is read again, and one that ended is the 400.
 */
async function control(
  workspaceId: string,
  callId: string,
  build: (call: CallItem) => LiveWrite | Promise<LiveWrite>,
  refused: () => Error = () => conflict(`Call ${callId} changed; try again`),
): Promise<CallItem> {
  let call = await getCallItem(workspaceId, callId);
  for (let attempt = 1; attempt <= WRITE_TRIES; attempt++) {
    assertOngoing(call);
    const write = await build(call);
    const outcome = await writeLiveControl(call, write);
    if (outcome === 'refused') throw refused();
    const fresh = await findCallItem(callId);
    if (!fresh || fresh.workspace_id !== workspaceId) throw notFound('Call not found');
    if (outcome === 'written') {
      await publishCallChange(fresh);
      return fresh;
    }
    call = fresh;
  }
  throw unavailable(`Call ${callId} is changing too fast for the control to be written; retry`, 1);
}

/** Tells the LiveKit agent worker; the sandbox's engine reads the call itself. A failure is logged: the control is recorded. */
async function tellWorker(call: CallItem, message: Record<string, unknown>): Promise<void> {
  if (call.engine.media !== 'livekit') return;
  await sendLiveControl(call, message);
}

// ---------------------------------------------------------------------------------------

/** update-live-call: variables, metadata, data storage and agent_override for the rest of the call. */
export async function updateLiveCall(workspaceId: string, callId: string, input: UpdateLiveCallInput): Promise<{ success: true }> {
  const override = await checkedAgentOverride(workspaceId, input.agent_override);
  const fields = input.fields_to_override ?? {};
  const context = input.call_control?.additional_context;
  const changed = [
    ...(fields.override_dynamic_variables !== undefined ? ['override_dynamic_variables'] : []),
    ...(fields.metadata !== undefined ? ['metadata'] : []),
    ...(fields.data_storage_setting !== undefined ? ['data_storage_setting'] : []),
    ...(override ? ['agent_override'] : []),
  ];
  const updated = await control(workspaceId, callId, async (call) => {
    if (fields.data_storage_setting !== undefined) await assertNotLooser(call, fields.data_storage_setting);
    const patch = call.live_patch ?? { seq: 0 };
    // The variables the call was created with, kept once, so `null` can take every override back.
    const base = (call as { live_base_variables?: Record<string, string> }).live_base_variables ?? call.retell_llm_dynamic_variables ?? {};
    const overrides =
      fields.override_dynamic_variables === null ? {} : { ...(patch.dynamic_variables ?? {}), ...(fields.override_dynamic_variables ?? {}) };
    const touchesAgent = fields.override_dynamic_variables !== undefined || override !== undefined;
    return {
      entry: context !== undefined && changed.length === 0 ? { type: 'additional_context', text: context } : { type: 'live_update', fields: changed, ...(context !== undefined ? { text: context } : {}) },
      set: {
        ...(fields.metadata !== undefined ? { metadata: fields.metadata } : {}),
        ...(fields.data_storage_setting !== undefined ? { data_storage_setting: fields.data_storage_setting } : {}),
        ...(fields.override_dynamic_variables !== undefined
          ? { retell_llm_dynamic_variables: { ...base, ...overrides }, live_base_variables: base }
          : {}),
        ...(touchesAgent
          ? {
              live_patch: {
                seq: patch.seq + 1,
                dynamic_variables: fields.override_dynamic_variables === null ? base : { ...base, ...overrides },
                ...(mergeOverride(patch.agent_override, override) ? { agent_override: mergeOverride(patch.agent_override, override) } : {}),
              },
            }
          : {}),
      },
    };
  });
  await tellWorker(updated, {
    type: 'update',
    ...(fields.override_dynamic_variables !== undefined ? { dynamic_variables: updated.retell_llm_dynamic_variables } : {}),
    ...(override ? { agent_override: updated.live_patch?.agent_override } : {}),
    ...(context !== undefined ? { additional_context: context } : {}),
    ...(input.call_control?.trigger_response ? { trigger_response: true } : {}),
  }).catch((error: unknown) => logger.warn('the agent worker was not told of a live update', { call_id: callId, error }));
  return { success: true };
}

/** listen: a subscribe-only token for the call's room; the listener is a viewer until it leaves. */
export async function listenLive(workspaceId: string, callId: string) {
  const participantId = newParticipant('listener');
  const call = await control(workspaceId, callId, async (current) => {
    if ((await listViewerItems(callId)).length >= MAX_VIEWERS) throw conflict(`Call ${callId} has ${MAX_VIEWERS} viewers, the most it may have`);
    return {
      entry: { type: 'listener_joined', participant_id: participantId },
      with: [putViewerOp(current.call_id, { participant_id: participantId, role: 'listener', joined_timestamp: Date.now() })],
    };
  });
  return viewerAccess(call, participantId, false);
}

/**
 * take-over: the agent stops and a person (a listener, or a new supervisor) talks to the
 * caller with a publishing token. The call goes on and ends `call_take_over`.
 */
export async function takeOverLive(workspaceId: string, callId: string, input: { participant_id?: string }) {
  const given = input.participant_id;
  if (given) {
    const viewer = await getViewer(callId, given);
    await getCallItem(workspaceId, callId);
    if (!viewer) throw notFound(`Participant ${given} is not a viewer of call ${callId}`);
  }
  const participantId = given ?? newParticipant('supervisor');
  const call = await control(
    workspaceId,
    callId,
    (current) => {
      if (current.live_take_over) throw conflict(`Call ${callId} was already taken over by ${current.live_take_over.participant_id}`);
      return {
        entry: { type: 'take_over', participant_id: participantId },
        set: { live_take_over: { participant_id: participantId, timestamp: Date.now() } },
        condition: { expression: 'attribute_not_exists(live_take_over)' },
        with: [putViewerOp(current.call_id, { participant_id: participantId, role: 'supervisor', joined_timestamp: Date.now() }, { mustExist: !!given })],
      };
    },
    () => notFound(`Participant ${participantId} is not a viewer of call ${callId}`),
  );
  if (call.engine.media === 'livekit') {
    await allowViewerToPublish(call, participantId);
    await tellWorker(call, { type: 'take_over', participant_id: participantId });
  }
  return { success: true, ...(await viewerAccess(call, participantId, true)) };
}

/** supervisor-say: the agent says `text` next (sandbox: its next line; LiveKit: the worker speaks it). */
export async function supervisorSay(workspaceId: string, callId: string, input: { text: string }): Promise<{ success: true }> {
  const call = await control(workspaceId, callId, (current) => {
    if (current.live_take_over) throw conflict(`Call ${callId} was taken over: the agent no longer speaks`);
    // The text is the control's own item; the sandbox agent reads the says it has not said (live/state.ts).
    return { entry: { type: 'supervisor_say', text: input.text } };
  });
  await tellWorker(call, { type: 'say', text: input.text });
  // The sandbox agent says it next too, without waiting for the callee's next line (engine/engine.ts, sayNext).
  if (call.engine.media !== 'livekit') await scheduleStep({ call_id: call.call_id, workspace_id: call.workspace_id, step: 'say', seq: 0 }, Date.now());
  return { success: true };
}

/** viewers: who listens (and who took over), oldest first. */
export async function listViewers(workspaceId: string, callId: string): Promise<ViewerItem[]> {
  const call = await getCallItem(workspaceId, callId);
  assertOngoing(call);
  return listViewerItems(callId);
}

/** leave: a viewer is gone (removed from the room on LiveKit). */
export async function leaveLive(workspaceId: string, callId: string, input: { participant_id: string }): Promise<{ success: true }> {
  const missing = () => notFound(`Participant ${input.participant_id} is not a viewer of call ${callId}`);
  const call = await control(
    workspaceId,
    callId,
    async (current) => {
      if (!(await getViewer(callId, input.participant_id))) throw missing();
      return { entry: { type: 'listener_left', participant_id: input.participant_id }, with: [deleteViewerOp(current.call_id, input.participant_id)] };
    },
    missing,
  );
  if (call.engine.media === 'livekit') await removeViewer(call, input.participant_id);
  return { success: true };
}
