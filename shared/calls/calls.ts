import { randomInt } from 'node:crypto';
import { assertRunnable, getAgent, resolveAgentVersion } from '../agents/lookups/index.ts';
import { assertCanSpend } from '../billing/index.ts';
import { contactVariables } from '../contacts/lookups/index.ts';
import { cpsLimitFor, takeDialToken, verificationStatus, workspaceNumber, type NumberItem } from '../numbers/index.ts';
import type { Principal } from '../platform/auth/gate.ts';
import { config } from '../platform/config.ts';
import { badRequest, notFound, NotFound, TooManyRequests, unprocessable } from '../platform/errors.ts';
import { sha256 } from '../platform/crypto/hash.ts';
import { newTimeOrderedId } from '../platform/ids.ts';
import { canonicalE164, countryOfNumber } from '../platform/telephony/phone.ts';
import { checkedAgentOverride } from './agent-override.ts';
import { acquireSlot, releaseSlot, SLOT_RECHECK_MS, sweepDueSlots, sweepSlotsWhenFull, type CallKind, type DueSweepResult, type SlotVerdict } from './concurrency.ts';
import { applyCallDataStorage, DEFAULT_CALLEE_LINES } from './engine/engine.ts';
import { finishCall, queueAnalysis, scheduleFirstStep } from './engine/finish.ts';
import { withIdempotency } from './idempotency.ts';
import { getCall } from './history.ts';
import { listCallItems } from './listing.ts';
import { mediaKind, startMedia, webCallAccess } from './engine/media.ts';
import { assertNotLooser } from './artifacts/recordings.ts';
import {
  MAX_SANDBOX_CALL_MS,
  type CallView,
  type CreatePhoneCallInput,
  type CreateWebCallInput,
  type ListCallsInput,
  type RegisterPhoneCallInput,
  type UpdateCallInput,
} from './schemas.ts';
import {
  findCallItem,
  getCallItem,
  newCallItem,
  putNewCall,
  updateCallFields,
  type CallItem,
  type EngineState,
} from './store.ts';
import { withTranscript } from './transcript.ts';
import { toCallView } from './view.ts';

/*
 * The calls API (spec: Calls: detailed shapes). Creating a call checks everything that can
 * be refused before anything is written, then in this order: spend, the number's
 * calls-per-second token, a concurrency slot; each refusal leaves nothing behind (a slot
 * taken for a call whose record then fails to write is given back).
 */

// ---------------------------------------------------------------------------------------
// Agents and versions

export interface ChosenAgent {
  agentId: string;
  version: number;
  agentName?: string;
  /** The environment tag that chose the version, and its variables (merged below the call's). */
  tag?: string;
  tagVariables?: Record<string, string>;
}

/** A weighted pick among a number's agent entries (weights are positive). */
export function weightedPick<T extends { weight: number }>(entries: readonly T[]): T | undefined {
  if (entries.length <= 1) return entries[0];
  const total = entries.reduce((sum, entry) => sum + entry.weight, 0);
  let point = (randomInt(0, 1_000_000) / 1_000_000) * total;
  for (const entry of entries) {
    point -= entry.weight;
    if (point < 0) return entry;
  }
  return entries.at(-1);
}

export type AgentChooser = (workspaceId: string, agentId: string, reference: string) => Promise<ChosenAgent>;

export async function chooseAgent(workspaceId: string, agentId: string, reference: string): Promise<ChosenAgent> {
  // The version must run (a flow still in progress is 400 naming its problems: issue 9).
  await assertRunnable(workspaceId, agentId, reference);
  const resolved = (await resolveAgentVersion(workspaceId, agentId, reference)) as {
    version: number;
    tag?: string;
    variables?: Record<string, string>;
  };
  const agent = await getAgent(workspaceId, agentId, resolved.version);
  return {
    agentId,
    version: resolved.version,
    agentName: agent.agent_name ?? undefined,
    tag: resolved.tag,
    tagVariables: resolved.variables,
  };
}

function metadataObject(metadata: unknown): Record<string, unknown> | undefined {
  return metadata && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as Record<string, unknown>) : undefined;
}

/** The sandbox script a call's metadata asks for (docs/calls.md, The sandbox). */
export function sandboxScript(metadata: unknown): EngineState['sandbox'] | undefined {
  const meta = metadataObject(metadata);
  if (!meta) return undefined;
  const says = meta.sandbox_user_says;
  const callMs = meta.sandbox_call_ms;
  const ringMs = meta.sandbox_transfer_ring_ms;
  const transferSays = meta.sandbox_transfer_says;
  if (says !== undefined && (!Array.isArray(says) || says.some((line) => typeof line !== 'string') || says.length > 200)) {
    throw badRequest('metadata.sandbox_user_says: Must be an array of at most 200 strings');
  }
  if (callMs !== undefined && (typeof callMs !== 'number' || !Number.isInteger(callMs) || callMs < 0 || callMs > MAX_SANDBOX_CALL_MS)) {
    throw badRequest(`metadata.sandbox_call_ms: Must be a whole number from 0 to ${MAX_SANDBOX_CALL_MS}`);
  }
  if (ringMs !== undefined && (typeof ringMs !== 'number' || !Number.isInteger(ringMs) || ringMs < 0 || ringMs > MAX_SANDBOX_CALL_MS)) {
    throw badRequest(`metadata.sandbox_transfer_ring_ms: Must be a whole number from 0 to ${MAX_SANDBOX_CALL_MS}`);
  }
  if (transferSays !== undefined && (!Array.isArray(transferSays) || transferSays.some((line) => typeof line !== 'string') || transferSays.length > 50)) {
    throw badRequest('metadata.sandbox_transfer_says: Must be an array of at most 50 strings');
  }
  if (says === undefined && callMs === undefined && ringMs === undefined && transferSays === undefined) return undefined;
  return {
    user_lines: (says as string[] | undefined) ?? DEFAULT_CALLEE_LINES,
    // Ordinary lines fill the length asked for; only a script's lines hold the hang-up.
    ...(says === undefined ? { unscripted: true } : {}),
    call_ms: (callMs as number | undefined) ?? config.SANDBOX_CALL_MS,
    ...(ringMs !== undefined ? { transfer_ring_ms: ringMs as number } : {}),
    ...(transferSays !== undefined ? { transfer_lines: transferSays as string[] } : {}),
  };
}

/** The call's metadata with the keys the service sets (spec: `environment_tag`). */
export function callMetadata(metadata: unknown, chosen: ChosenAgent): unknown {
  if (!chosen.tag) return metadata;
  return { ...(metadataObject(metadata) ?? {}), environment_tag: chosen.tag };
}

// ---------------------------------------------------------------------------------------
// Create

/**
 * What an outbound dial checks before anything is written (create-phone-call and batch
 * dials alike): the callee is E.164, the caller ID a number of this workspace, and the
 * callee's country one the number may call.
 */
export async function outboundDialTarget(
  workspaceId: string,
  fromNumber: string,
  to: string,
  numberOf: (workspaceId: string, phoneNumber: string) => Promise<NumberItem | undefined> = workspaceNumber,
): Promise<{ toNumber: string; number: NumberItem }> {
  const toNumber = canonicalE164(to);
  if (!toNumber) throw badRequest(`to_number ${to} is not a valid E.164 number`);
  const number = await numberOf(workspaceId, fromNumber);
  if (!number) throw notFound(`from_number ${fromNumber} is not a number in this workspace`);
  const country = countryOfNumber(toNumber);
  const allowed = number.allowed_outbound_country_list;
  if (allowed && allowed.length > 0 && (!country || !allowed.includes(country))) {
    throw badRequest(`to_number ${toNumber} is in ${country ?? 'an unknown country'}, which is not in allowed_outbound_country_list of ${number.phone_number}`);
  }
  return { toNumber, number };
}

export async function createPhoneCall(principal: Principal, input: CreatePhoneCallInput): Promise<CallView> {
  const workspaceId = principal.workspaceId;
  const { toNumber, number } = await outboundDialTarget(workspaceId, input.from_number, input.to_number);
  const sandbox = sandboxScript(input.metadata);
  const agentOverride = await checkedAgentOverride(workspaceId, input.agent_override);

  return withIdempotency({
    workspaceId,
    key: input.idempotency_key,
    request: { route: 'create-phone-call', ...input },
    run: async () => {
      const chosen = await outboundAgent(workspaceId, number, input);
      // The callee's contact (when contact memory is on), below the tag's and the call's own variables.
      const contact = await contactVariables(workspaceId, toNumber);
      await assertCanSpend(workspaceId, 'phone_call', { verificationStatus: () => verificationStatus(workspaceId) });
      await takeDialToken(number.phone_number, cpsLimitFor(number));
      const call = await admitAndStore(workspaceId, 'outbound', (callId, burst, nowMs) =>
        newCallItem({
          call_id: callId,
          workspace_id: workspaceId,
          created_timestamp: nowMs,
          call_type: 'phone_call',
          call_status: 'registered',
          direction: 'outbound',
          agent_id: chosen.agentId,
          agent_version: chosen.version,
          ...(chosen.agentName ? { agent_name: chosen.agentName } : {}),
          from_number: number.phone_number,
          to_number: toNumber,
          metadata: callMetadata(input.metadata, chosen),
          retell_llm_dynamic_variables: { ...contact, ...(chosen.tagVariables ?? {}), ...(input.retell_llm_dynamic_variables ?? {}) },
          ...(input.custom_sip_headers ? { custom_sip_headers: input.custom_sip_headers } : {}),
          ...(input.idempotency_key !== undefined ? { idempotency_claim: sha256(input.idempotency_key) } : {}),
          concurrency_burst: burst,
          engine: {
            slot: true,
            media: mediaKind(),
            origin: 'create-phone-call',
            ...(sandbox ? { sandbox } : {}),
            ...(agentOverride ? { agent_override: agentOverride } : {}),
          },
        }),
      );
      await scheduleFirstStep(call, 'dial', Date.now());
      return toCallView(call);
    },
  });
}

export async function outboundAgent(
  workspaceId: string,
  number: NumberItem,
  input: Pick<CreatePhoneCallInput, 'override_agent_id' | 'override_agent_version' | 'agent_version'>,
  choose: AgentChooser = chooseAgent,
): Promise<ChosenAgent> {
  if (input.override_agent_id) {
    const reference = input.override_agent_version ?? input.agent_version ?? String(number.outbound_agent_version ?? 'latest');
    return choose(workspaceId, input.override_agent_id, reference);
  }
  const entry = weightedPick(number.outbound_agents ?? []);
  if (!entry) {
    throw badRequest(`${number.phone_number} has no outbound agent: set override_agent_id, or give the number outbound_agents`);
  }
  const reference = input.agent_version ?? input.override_agent_version ?? String(entry.agent_version ?? number.outbound_agent_version ?? 'latest');
  return choose(workspaceId, entry.agent_id, reference);
}

/**
 * Takes a concurrency slot for a new call ID and writes the call. A call whose record
 * cannot be written gives its slot back, so a refusal leaves nothing behind.
 */
async function admitAndStore(
  workspaceId: string,
  kind: 'outbound' | 'web' | 'inbound',
  build: (callId: string, burst: boolean, nowMs: number) => CallItem,
): Promise<CallItem> {
  const nowMs = Date.now();
  const callId = newTimeOrderedId('call', nowMs);
  const { burst } = await admitWithSweep(workspaceId, callId, kind);
  const call = build(callId, burst, nowMs);
  try {
    await putNewCall(call);
  } catch (error) {
    await releaseSlot(workspaceId, callId);
    throw error;
  }
  return call;
}

/**
 * A slot for the call; when the workspace is full, the slots of calls that are no longer
 * in progress (an instance that crashed before releasing) are swept and the call tries
 * once more, so a lost release never keeps a workspace full. The sweep is rate-limited and
 * bounded (sweepSlotsWhenFull); the scheduled sweep reaches every slot within minutes.
 */
export async function admitWithSweep(workspaceId: string, callId: string, kind: CallKind) {
  try {
    return await acquireSlot({ workspaceId, callId, kind });
  } catch (error) {
    if (!(error instanceof TooManyRequests)) throw error;
    const stranded: CallItem[] = [];
    // At most one such sweep per workspace every half minute, over its oldest slots (concurrency.ts).
    const swept = await sweepSlotsWhenFull(workspaceId, (id) => isCallInProgress(id, stranded));
    // Stranded calls end now (their slots went with the sweep; finishCall's release finds them gone).
    await Promise.all(stranded.map((call) => finishCall(call, { status: 'error', reason: 'error_unknown' })));
    if (!swept || swept.released.length === 0) throw error;
    return acquireSlot({ workspaceId, callId, kind });
  }
}

/**
 * How long a call may stay `registered` before a sweep takes it for stranded: longer than any
 * legitimate wait in that state (a web or registered call's join timeout, up to 10 minutes;
 * a dial's CPS wait and ringing; an inbound call's queue wait), plus a margin.
 */
export const STRANDED_REGISTERED_MS = 15 * 60_000;

/**
 * Whether a call still holds its slot rightly. A call `registered` for longer than
 * STRANDED_REGISTERED_MS was left by an instance that died between writing it and queueing
 * its first step (nothing would ever move it): it goes into `stranded`, for the caller to
 * end `error_unknown` once the sweep has released its slot.
 */
async function isCallInProgress(callId: string, stranded: CallItem[]): Promise<boolean> {
  return (await slotVerdict(callId, Date.now(), stranded)).keep;
}

/**
 * The one judgement of both sweeps: a slot is kept while its call is `ongoing`, or
 * `registered` for less than STRANDED_REGISTERED_MS (looked at again by then); anything else
 * (ended, never written, stranded) gives it back. A stranded call goes into `stranded`.
 */
async function slotVerdict(callId: string, nowMs: number, stranded: CallItem[]): Promise<SlotVerdict> {
  const call = await findCallItem(callId);
  if (!call) return { keep: false };
  if (call.call_status === 'ongoing') return { keep: true, recheckAt: nowMs + SLOT_RECHECK_MS };
  if (call.call_status !== 'registered') return { keep: false };
  const strandedAt = call.created_timestamp + STRANDED_REGISTERED_MS;
  if (nowMs < strandedAt) return { keep: true, recheckAt: Math.min(nowMs + SLOT_RECHECK_MS, strandedAt) };
  stranded.push(call);
  return { keep: false };
}

/**
 * The scheduled concurrency sweep (the call-steps job's `concurrency-sweep` message, every
 * minute): across every workspace, the slots held past the setup grace whose calls are no
 * longer in progress (an instance crashed before releasing, or before writing the call) are
 * released, and calls stranded in `registered` end `error_unknown`, exactly as the sweep
 * before a refusal does, without waiting for a request to fill the workspace.
 */
export async function sweepHeldSlots(options: { now?: () => number } = {}): Promise<DueSweepResult & { ended: string[] }> {
  const now = options.now ?? Date.now;
  const stranded: CallItem[] = [];
  const result = await sweepDueSlots((slot) => slotVerdict(slot.call_id, now(), stranded), { now });
  // Their slots went with the sweep (or another release); finishCall's own release finds them gone.
  await Promise.all(stranded.map((call) => finishCall(call, { status: 'error', reason: 'error_unknown' })));
  return { ...result, ended: stranded.map((call) => call.call_id) };
}

export async function createWebCall(principal: Principal, input: CreateWebCallInput) {
  const workspaceId = principal.workspaceId;
  const chosen = await chooseAgent(workspaceId, input.agent_id, input.agent_version ?? 'latest');
  const sandbox = sandboxScript(input.metadata);
  const agentOverride = await checkedAgentOverride(workspaceId, input.agent_override);
  await assertCanSpend(workspaceId, 'web_call');
  const call = await admitAndStore(workspaceId, 'web', (callId, burst, nowMs) =>
    newCallItem({
      call_id: callId,
      workspace_id: workspaceId,
      created_timestamp: nowMs,
      call_type: 'web_call',
      call_status: 'registered',
      agent_id: chosen.agentId,
      agent_version: chosen.version,
      ...(chosen.agentName ? { agent_name: chosen.agentName } : {}),
      metadata: callMetadata(input.metadata, chosen),
      retell_llm_dynamic_variables: { ...(chosen.tagVariables ?? {}), ...(input.retell_llm_dynamic_variables ?? {}) },
      concurrency_burst: burst,
      engine: {
        slot: true,
        media: mediaKind(),
        origin: 'create-web-call',
        ...(sandbox ? { sandbox } : {}),
        ...(agentOverride ? { agent_override: agentOverride } : {}),
      },
    }),
  );
  // With LiveKit the room and the agent worker's dispatch exist before the user joins.
  if (call.engine.media === 'livekit') await startMedia(call);
  const access = await webCallAccess(call.call_id);
  // Nobody on the line yet: a sandbox web call with a script joins by itself (docs/calls.md);
  // otherwise the user must join (the media server says so) before the join timeout.
  if (sandbox && call.engine.media === 'sandbox') await scheduleFirstStep(call, 'join', Date.now() + 500);
  await scheduleFirstStep(call, 'join_timeout', Date.now() + config.CALL_JOIN_TIMEOUT_MS);
  return { ...toCallView(call), ...access };
}

/**
 * Where a customer's own SIP stack sends a registered call: `sip:<call_id>@<host>` on the
 * media server's SIP service (LIVEKIT_SIP_URI, whose parameters are kept), or undefined
 * when SIP routing is not configured (no media server, or no SIP URI for it).
 */
function registeredCallSipUri(callId: string): string | undefined {
  const service = config.LIVEKIT_SIP_URI;
  if (!service || mediaKind() !== 'livekit') return undefined;
  const scheme = service.slice(0, service.indexOf(':') + 1).toLowerCase();
  return `${scheme}${callId}@${service.slice(scheme.length)}`;
}

/** A tracked number of a registered call: E.164 (canonical) unless the caller waived the check. */
function trackedNumber(field: 'from_number' | 'to_number', value: string | undefined, ignoreE164: boolean | undefined): string | undefined {
  if (value === undefined || ignoreE164) return value;
  const canonical = canonicalE164(value);
  if (!canonical) throw badRequest(`${field} ${value} is not a valid E.164 number (set ignore_e164_validation to store it as it is)`);
  return canonical;
}

/**
 * register-phone-call: a call for the customer's own SIP stack to bridge to the agent. The
 * call waits in `registered` until the SIP leg arrives at the media server's SIP service
 * (`sip:<call_id>@<LIVEKIT_SIP_URI host>`, answered as `sip_uri`): LiveKit's webhook then
 * makes it ongoing and dispatches the agent (live/events.ts). Nobody arriving within
 * CALL_JOIN_TIMEOUT_MS ends it `registered_call_timeout`. Without SIP routing (the sandbox,
 * or LiveKit without LIVEKIT_SIP_URI) it is 422 (spec Errors 422). Spend, admission and
 * idempotency as create-phone-call; an inbound registered call may use reserved inbound slots.
 */
export async function registerPhoneCall(principal: Principal, input: RegisterPhoneCallInput): Promise<CallView & { sip_uri: string }> {
  const workspaceId = principal.workspaceId;
  // A bad override is the caller's mistake whatever the routing: 400 before the 422.
  const agentOverride = await checkedAgentOverride(workspaceId, input.agent_override);
  if (mediaKind() !== 'livekit') {
    throw unprocessable('SIP routing is not configured: register-phone-call needs a media server with SIP (set LIVEKIT_URL and LIVEKIT_SIP_URI; docs/calls-media.md)');
  }
  if (!config.LIVEKIT_SIP_URI) {
    throw unprocessable('SIP routing is not configured: set LIVEKIT_SIP_URI to the media server\'s SIP URI (docs/calls-media.md)');
  }
  const fromNumber = trackedNumber('from_number', input.from_number, input.ignore_e164_validation);
  const toNumber = trackedNumber('to_number', input.to_number, input.ignore_e164_validation);
  const direction = input.direction ?? 'inbound';

  return withIdempotency({
    workspaceId,
    key: input.idempotency_key,
    request: { route: 'register-phone-call', ...input },
    run: async () => {
      const chosen = await chooseAgent(workspaceId, input.agent_id, input.agent_version ?? 'latest');
      // The other party's contact (when contact memory is on), below the tag's and the call's own variables.
      const otherParty = direction === 'inbound' ? fromNumber : toNumber;
      const contact = otherParty ? await contactVariables(workspaceId, otherParty) : {};
      await assertCanSpend(workspaceId, 'register_call');
      const call = await admitAndStore(workspaceId, direction, (callId, burst, nowMs) =>
        newCallItem({
          call_id: callId,
          workspace_id: workspaceId,
          created_timestamp: nowMs,
          call_type: 'phone_call',
          call_status: 'registered',
          direction,
          agent_id: chosen.agentId,
          agent_version: chosen.version,
          ...(chosen.agentName ? { agent_name: chosen.agentName } : {}),
          ...(fromNumber !== undefined ? { from_number: fromNumber } : {}),
          ...(toNumber !== undefined ? { to_number: toNumber } : {}),
          metadata: callMetadata(input.metadata, chosen),
          retell_llm_dynamic_variables: { ...contact, ...(chosen.tagVariables ?? {}), ...(input.retell_llm_dynamic_variables ?? {}) },
          ...(input.idempotency_key !== undefined ? { idempotency_claim: sha256(input.idempotency_key) } : {}),
          concurrency_burst: burst,
          engine: { slot: true, media: 'livekit', origin: 'register-phone-call', ...(agentOverride ? { agent_override: agentOverride } : {}) },
        }),
      );
      // Nobody on the line yet: the SIP leg must arrive before the join timeout.
      await scheduleFirstStep(call, 'join_timeout', Date.now() + config.CALL_JOIN_TIMEOUT_MS);
      return { ...toCallView(call), sip_uri: registeredCallSipUri(call.call_id)! };
    },
  });
}

// ---------------------------------------------------------------------------------------
// Read, list, change

/**
 * retell-sdk's `call.list` reads a page; everything else gets the spec's array (docs/calls.md).
 * The calls come without their transcripts (as the compatible API's v3 list answers them):
 * a transcript is lines of its own, one Query per call, and get-call answers it.
 */
export async function listCalls(workspaceId: string, input: ListCallsInput, options: { page: boolean }) {
  const { items, hasMore, total } = await listCallItems(workspaceId, input);
  const views = items.map((item) => toCallView(item, { transcript: false }));
  if (!options.page) return views;
  return {
    items: views,
    has_more: hasMore,
    ...(hasMore && views.length ? { pagination_key: views.at(-1)!.call_id } : {}),
    ...(total !== undefined ? { total } : {}),
  };
}

/**
 * update-call. A data storage setting may only be as strict or stricter than the one the
 * call has (its own, else its agent version's): what a stricter one removed cannot come
 * back. On a call that is over (and analysed) the new setting is applied at once.
 */
export async function updateCall(workspaceId: string, callId: string, input: UpdateCallInput): Promise<CallView> {
  const current = await getCallItem(workspaceId, callId);
  if (input.data_storage_setting) await assertNotLooser(current, input.data_storage_setting);
  const fields: Record<string, unknown> = {
    metadata: input.metadata,
    data_storage_setting: input.data_storage_setting,
    opt_in_signed_url: input.opt_in_signed_url,
  };
  if (input.custom_attributes) {
    fields.custom_attributes = { ...((current as { custom_attributes?: Record<string, unknown> }).custom_attributes ?? {}), ...input.custom_attributes };
  }
  const updated = await updateCallFields(workspaceId, callId, fields);
  const applied = input.data_storage_setting ? await applyCallDataStorage(workspaceId, callId) : undefined;
  return withWebCallToken(toCallView(await withTranscript(applied ?? updated)));
}

/**
 * A web call as the workspace's own key reads it (get-call, update-call, rerun-call-analysis)
 * carries an access token to its room, as create-web-call's answer did: retell-sdk's
 * WebCallResponse requires one. Tokens are not stored (a stored one would be a secret to
 * seal, and would expire): each read mints one like create-web-call's, for the same room and
 * web user, valid an hour from the read, with its `expires_at`. Listings and other domains'
 * reads of calls (CRM syncs, exports) carry none.
 */
async function withWebCallToken(view: CallView): Promise<CallView> {
  if (view.call_type !== 'web_call') return view;
  const { access_token, expires_at } = await webCallAccess(view.call_id);
  return { ...view, access_token, expires_at };
}

/** `GET /v2/get-call/{call_id}`: the call, and a web call's access token (withWebCallToken). */
export async function getCallWithAccess(workspaceId: string, callId: string): Promise<CallView> {
  return withWebCallToken(await getCall(workspaceId, callId));
}

/** Ends a registered or ongoing call (`manual_stopped`); stopping an ended call is 400. */
export async function stopCall(workspaceId: string, callId: string): Promise<CallView> {
  const call = await getCallItem(workspaceId, callId);
  if (call.call_status !== 'registered' && call.call_status !== 'ongoing') {
    throw badRequest(`Call ${callId} is ${call.call_status}: only a registered or ongoing call can be stopped`);
  }
  const ended = await finishCall(call, { status: 'ended', reason: 'manual_stopped' });
  return toCallView(await withTranscript(ended ?? (await getCallItem(workspaceId, callId))));
}

/** A call that keeps basic attributes only has no transcript left to analyse (data-storage.ts). */
const transcriptDropped = (call: CallItem) => call.data_storage_applied === 'basic_attributes_only';

export async function rerunCallAnalysis(workspaceId: string, callId: string): Promise<CallView> {
  const call = await getCallItem(workspaceId, callId);
  if (call.call_status !== 'ended') throw badRequest('Call analysis can only be rerun on ended calls');
  if (transcriptDropped(call)) {
    throw badRequest(`Call ${callId} keeps no transcript to analyse again: its data storage setting is basic_attributes_only`);
  }
  await queueAnalysis(call);
  return withWebCallToken(toCallView(await withTranscript(call)));
}

/** Queues analysis for ended calls (given IDs, else the workspace's ended calls in a time range). */
export async function backfillCallAnalysis(
  workspaceId: string,
  input: { call_ids?: string[]; start_timestamp?: number; end_timestamp?: number; agent_id?: string },
): Promise<{ status: 'accepted'; queued: number }> {
  let calls: CallItem[];
  if (input.call_ids) {
    // An ID that names no call of the workspace is skipped; a store that did not answer fails the request.
    const found = await Promise.all(
      input.call_ids.map((id) =>
        getCallItem(workspaceId, id).catch((error: unknown) => {
          if (error instanceof NotFound) return undefined;
          throw error;
        }),
      ),
    );
    calls = found.filter((call): call is CallItem => call !== undefined);
  } else {
    calls = (
      await listCallItems(workspaceId, {
        limit: 1000,
        sort_order: 'descending',
        filter_criteria: {
          call_status: ['ended'],
          ...(input.agent_id ? { agent_id: [input.agent_id] } : {}),
          ...(input.start_timestamp !== undefined || input.end_timestamp !== undefined
            ? { start_timestamp: { lower_threshold: input.start_timestamp, upper_threshold: input.end_timestamp } }
            : {}),
        },
      })
    ).items;
  }
  // A call that keeps basic attributes only has nothing to analyse again: its analysis stays.
  const ended = calls.filter((call) => call.call_status === 'ended' && !transcriptDropped(call));
  await Promise.all(ended.map((call) => queueAnalysis(call)));
  return { status: 'accepted', queued: ended.length };
}

;
