import { runPreCallWorkflow } from '../../agent-tools/index.ts';
import { assertRunnable, getAgent, resolveAgentVersion } from '../../agents/lookups/index.ts';
import { contactVariables } from '../../contacts/lookups/index.ts';
import { numberHolder, type NumberItem } from '../../numbers/index.ts';
import { config } from '../../platform/config.ts';
import { egressFetch } from '../../platform/egress/egress.ts';
import { Invalid, NotFound, TooManyRequests } from '../../platform/errors.ts';
import { newTimeOrderedId } from '../../platform/ids.ts';
import { logger } from '../../platform/logger.ts';
import { signatureHeaders } from '../../platform/naming.ts';
import { canonicalE164, countryOfNumber } from '../../platform/telephony/phone.ts';
import { newDeliveryId, recordDirectAttempt, signWebhook, transportError, webhookSigningSecret } from '../../webhooks/index.ts';
import { inboundAgentOverride } from '../agent-override.ts';
import { admitWithSweep, weightedPick } from '../calls.ts';
import { releaseSlot } from '../concurrency.ts';
import { finishCall, scheduleFirstStep } from '../engine/finish.ts';
import { mediaKind } from '../engine/media.ts';
import { asVariableString, type CallView } from '../schemas.ts';
import { newCallItem, putNewCall, type CallItem, type SipLeg } from '../store.ts';
import { toCallView } from '../view.ts';

/*
 * An inbound call, in the spec's order (Inbound call webhook):
 *   1. the number is found; 2. the caller's country is checked against
 *   allowed_inbound_country_list; 3. an inbound agent is picked by weight; 4. the
 *   synchronous call_inbound webhook is sent (10 s an attempt, retries after 0.5 s and 1 s);
 *   5. its answer is applied; 6. without a chosen version the number's binding applies;
 *   7. the agent's pre-call workflow runs and its outputs join the dynamic variables (SIP
 *   headers < the webhook's dynamic_variables < workflow outputs); 8. admission under the
 *   concurrency limit, waiting up to INBOUND_QUEUE_TIMEOUT_MS for a slot.
 * `reject`, no agent, or an override agent not in the workspace end the call with no
 * record. The SIP edge (LiveKit's SIP dispatch in AWS) and the local runtime's
 * `POST /sandbox/inbound-call` both call `receiveInboundCall`.
 */

const INBOUND_WEBHOOK_TIMEOUT_MS = 10_000;
const INBOUND_WEBHOOK_RETRY_WAITS_MS = [500, 1000] as const;
/** How often a queued inbound call tries again for a slot. */
const SLOT_RETRY_MS = 500;
/** The pass-through SIP headers that become dynamic variables besides every `X-` header. */
const PASS_THROUGH_HEADERS = ['user-to-user', 'diversion', 'history-info', 'p-asserted-identity'];

export interface InboundCallInput {
  fromNumber: string;
  toNumber: string;
  sipHeaders?: Record<string, string>;
}

export interface InboundCallOptions {
  /** Only a number of this workspace answers (the sandbox route: the caller's key). */
  workspaceId?: string;
  /** The call ID to use (the LiveKit path claims its room for it first); a new one otherwise. */
  callId?: string;
  /** The media room the caller is already in, when not named after the call (LiveKit's dispatch rule). */
  room?: string;
  /** The caller's SIP participant identity in that room: what a cold transfer REFERs. */
  sipIdentity?: string;
  /** What LiveKit's participant_joined said about the caller's SIP leg (sip-leg.ts), kept for the SIP trace. */
  sipLeg?: SipLeg;
}

export type InboundOutcome =
  | { accepted: true; call: CallView }
  | { accepted: false; reason: string; fallback_number?: string };

interface WebhookAnswer {
  override_agent_id?: string;
  override_agent_version?: number;
  dynamic_variables?: Record<string, string>;
  metadata?: Record<string, unknown>;
  agent_override?: Record<string, unknown>;
  reject?: boolean;
}

/** A bare 8 to 15 digit caller gets a `+` (spec: call_inbound.from_number). */
function normalizeCaller(from: string): string {
  return /^[0-9]{8,15}$/.test(from) ? `+${from}` : from;
}

/** SIP `X-` headers and the pass-through headers, lower-cased, as dynamic variables (lowest precedence). */
function sipVariables(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const lower = name.toLowerCase();
    if (lower.startsWith('x-') || PASS_THROUGH_HEADERS.includes(lower)) out[lower] = value;
  }
  return out;
}

const isObject = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value);

/** The webhook's answer as the spec reads it: anything unreadable is "keep the defaults". */
function readWebhookAnswer(body: string): WebhookAnswer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return {};
  }
  const answer = isObject(parsed) && isObject(parsed.call_inbound) ? parsed.call_inbound : {};
  const result: WebhookAnswer = {};
  if (typeof answer.override_agent_id === 'string') result.override_agent_id = answer.override_agent_id;
  if (typeof answer.override_agent_version === 'number' && Number.isInteger(answer.override_agent_version)) {
    result.override_agent_version = answer.override_agent_version;
  }
  if (isObject(answer.dynamic_variables)) {
    result.dynamic_variables = Object.fromEntries(Object.entries(answer.dynamic_variables).map(([k, v]) => [k, asVariableString(v)]));
  }
  if (isObject(answer.metadata)) result.metadata = answer.metadata;
  if (isObject(answer.agent_override)) result.agent_override = answer.agent_override;
  if (answer.reject === true) result.reject = true;
  return result;
}

/**
 * Sends call_inbound and answers what came back; undefined when every attempt failed. Each
 * attempt goes into the workspace's delivery log (event `call_inbound`, one delivery ID for
 * its attempts; the log names no call).
 */
async function callInboundWebhook(number: NumberItem, payload: Record<string, unknown>): Promise<WebhookAnswer | undefined> {
  const body = JSON.stringify({ event: 'call_inbound', call_inbound: payload });
  const secret = await webhookSigningSecret(number.workspace_id);
  const url = number.inbound_webhook_url!;
  const deliveryId = newDeliveryId();
  const waits = [0, ...INBOUND_WEBHOOK_RETRY_WAITS_MS];
  for (const [attempt, wait] of waits.entries()) {
    if (wait) await new Promise((resolve) => setTimeout(resolve, wait));
    const signature = signWebhook(body, secret, Date.now());
    const startedAt = Date.now();
    const started = performance.now();
    let outcome: { success: boolean; status: number | null; error: string | null };
    let answer: WebhookAnswer | undefined;
    try {
      const res = await egressFetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...Object.fromEntries(signatureHeaders.map((name) => [name, signature])) },
        body,
        timeoutMs: INBOUND_WEBHOOK_TIMEOUT_MS,
        maxResponseBytes: 1024 * 1024,
      });
      const text = await res.text();
      const success = res.status >= 200 && res.status < 300;
      if (success) answer = readWebhookAnswer(text);
      else logger.info('call_inbound webhook answered non-2xx', { status: res.status, attempt: attempt + 1 });
      outcome = { success, status: res.status, error: success ? null : `Endpoint replied ${res.status}` };
    } catch (error) {
      logger.info('call_inbound webhook attempt failed', { error: (error as Error).message, attempt: attempt + 1 });
      outcome = { success: false, status: null, error: transportError(error, INBOUND_WEBHOOK_TIMEOUT_MS) };
    }
    const last = attempt === waits.length - 1;
    await recordDirectAttempt(
      number.workspace_id,
      { delivery_id: deliveryId, event: 'call_inbound', url, attempt: attempt + 1, will_retry: !outcome.success && !last },
      { ...outcome, latency_ms: Math.round(performance.now() - started), started_at: startedAt },
    ).catch((error: unknown) => logger.warn('call_inbound attempt not recorded in the delivery log', { error: (error as Error).message }));
    if (answer) return answer;
  }
  return undefined;
}

/** Waits for a concurrency slot up to INBOUND_QUEUE_TIMEOUT_MS; answers the burst flag or undefined. */
async function waitForSlot(workspaceId: string, callId: string): Promise<{ burst: boolean } | undefined> {
  const deadline = Date.now() + config.INBOUND_QUEUE_TIMEOUT_MS;
  for (;;) {
    try {
      return await admitWithSweep(workspaceId, callId, 'inbound');
    } catch (error) {
      if (!(error instanceof TooManyRequests)) throw error;
      if (Date.now() + SLOT_RETRY_MS > deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, SLOT_RETRY_MS));
    }
  }
}

/**
 * Step 7: the agent's pre-call workflow with the call's variables (plus the call's own
 * fields as inputs), answering its outputs. A failing or slow workflow never refuses the
 * call (docs/calls.md): its steps are bounded by the workflow's 10 s budget, a failed step
 * keeps what ran before it, and a failure of the run itself is logged and gives no outputs.
 */
async function preCallOutputs(
  workspaceId: string,
  agentId: string,
  variables: Record<string, string>,
  call: { call_id: string; from_number: string; to_number: string },
): Promise<Record<string, string>> {
  try {
    return await runPreCallWorkflow(workspaceId, agentId, {
      variables: { ...variables, call_id: call.call_id, agent_id: agentId, from_number: call.from_number, to_number: call.to_number, direction: 'inbound' },
      call_id: call.call_id,
    });
  } catch (error) {
    logger.error('the pre-call workflow could not run; the call goes on without its outputs', { call_id: call.call_id, agent_id: agentId, error });
    return {};
  }
}

export async function receiveInboundCall(input: InboundCallInput, options: InboundCallOptions = {}): Promise<InboundOutcome> {
  // 1. The number.
  const toNumber = canonicalE164(input.toNumber);
  const number = toNumber ? await numberHolder(toNumber) : undefined;
  if (!number || (options.workspaceId && number.workspace_id !== options.workspaceId)) {
    return { accepted: false, reason: `${input.toNumber} is not a number in this workspace` };
  }
  const workspaceId = number.workspace_id;
  const fromNumber = normalizeCaller(input.fromNumber);

  // 2. The caller's country.
  const allowed = number.allowed_inbound_country_list;
  if (allowed && allowed.length > 0) {
    const country = canonicalE164(fromNumber) ? countryOfNumber(fromNumber) : undefined;
    if (!country || !allowed.includes(country)) {
      return { accepted: false, reason: `caller ${fromNumber} is not in allowed_inbound_country_list` };
    }
  }

  // 3. The agent, by weight.
  const entry = weightedPick(number.inbound_agents ?? []);
  const callId = options.callId ?? newTimeOrderedId('call', Date.now());

  // 4–5. The webhook and its answer.
  const answer = number.inbound_webhook_url
    ? ((await callInboundWebhook(number, {
        call_id: callId,
        agent_id: entry?.agent_id ?? null,
        agent_version: typeof entry?.agent_version === 'number' ? entry.agent_version : null,
        from_number: fromNumber,
        to_number: number.phone_number,
      })) ?? {})
    : {};
  if (answer.reject) return { accepted: false, reason: 'rejected by the inbound webhook' };
  const agentId = answer.override_agent_id ?? entry?.agent_id;
  if (!agentId) return { accepted: false, reason: `${number.phone_number} has no inbound agent and the webhook named none` };

  // 6. The version: the override's, the entry's pin, else the number's binding.
  const reference = answer.override_agent_id
    ? (answer.override_agent_version ?? number.inbound_agent_version ?? 'latest')
    : (entry?.agent_version ?? number.inbound_agent_version ?? 'latest');
  let version: number;
  let agentName: string | undefined;
  let tag: { name?: string; variables?: Record<string, string> } = {};
  try {
    const resolved = (await resolveAgentVersion(workspaceId, agentId, String(reference))) as {
      version: number;
      tag?: string;
      variables?: Record<string, string>;
    };
    version = resolved.version;
    tag = { name: resolved.tag, variables: resolved.variables };
    agentName = (await getAgent(workspaceId, agentId, version)).agent_name ?? undefined;
    await assertRunnable(workspaceId, agentId, version);
  } catch (error) {
    if (error instanceof NotFound) return { accepted: false, reason: `agent ${agentId} is not in this workspace` };
    if (error instanceof Invalid) return { accepted: false, reason: error.message };
    throw error;
  }

  // 7. Pre-call workflow; precedence, later wins: the caller's contact (when contact memory is on) <
  // tag variables < SIP headers < the webhook's < the workflow's (spec: Variable precedence).
  const contact = await contactVariables(workspaceId, fromNumber);
  const heard = { ...contact, ...(tag.variables ?? {}), ...sipVariables(input.sipHeaders), ...(answer.dynamic_variables ?? {}) };
  const outputs = await preCallOutputs(workspaceId, agentId, heard, { call_id: callId, from_number: fromNumber, to_number: number.phone_number });
  const variables = { ...heard, ...outputs };
  // An invalid agent_override is dropped (and logged); the call goes on with the agent as it is.
  const agentOverride = await inboundAgentOverride(workspaceId, callId, answer.agent_override);
  const metadata = {
    ...(answer.metadata ?? {}),
    ...(input.sipHeaders ? { sip_headers: input.sipHeaders } : {}),
    ...(tag.name ? { environment_tag: tag.name } : {}),
  };
  const build = (burst: boolean, slot: boolean): CallItem =>
    newCallItem({
      call_id: callId,
      workspace_id: workspaceId,
      created_timestamp: Date.now(),
      call_type: 'phone_call',
      call_status: 'registered',
      direction: 'inbound',
      agent_id: agentId,
      agent_version: version,
      ...(agentName ? { agent_name: agentName } : {}),
      from_number: fromNumber,
      to_number: number.phone_number,
      metadata,
      retell_llm_dynamic_variables: variables,
      concurrency_burst: burst,
      ...(options.sipLeg ? { sip_leg: options.sipLeg } : {}),
      engine: {
        slot,
        media: mediaKind(),
        origin: 'inbound',
        ...(options.room ? { room: options.room } : {}),
        ...(options.sipIdentity ? { sip_identity: options.sipIdentity } : {}),
        ...(agentOverride ? { agent_override: agentOverride } : {}),
      },
    });

  // 8. Admission: a slot, or the queue's wait, then the fallback.
  const admitted = await waitForSlot(workspaceId, callId);
  if (!admitted) {
    if (number.fallback_number) return { accepted: false, reason: 'no concurrency slot: forwarded to fallback_number', fallback_number: number.fallback_number };
    const call = build(false, false);
    await putNewCall(call);
    const ended = await finishCall(call, { status: 'not_connected', reason: 'no_concurrency_fallback' });
    return { accepted: true, call: toCallView(ended ?? call) };
  }
  const call = build(admitted.burst, true);
  try {
    await putNewCall(call);
  } catch (error) {
    await releaseSlot(workspaceId, callId);
    throw error;
  }
  // The caller is already on the line: the agent answers now.
  await scheduleFirstStep(call, 'join', Date.now());
  return { accepted: true, call: toCallView(call) };
}
