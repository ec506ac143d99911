import { checkSpend } from '../billing/index.ts';
import { auditPut, getWorkspaceItem, reliabilityUpdate } from '../account/index.ts';
import { LLM_MODELS } from '../agents/index.ts';
import { callStorageFacts } from '../calls/erasure/index.ts';
import { getConcurrency } from '../calls/records/index.ts';
import { getKyc } from '../numbers/index.ts';
import type { Principal } from '../platform/auth/gate.ts';
import { config } from '../platform/config.ts';
import { badRequest, Invalid } from '../platform/errors.ts';
import { assertVoiceUsable } from '../voices/index.ts';
import { DEFAULT_LLM_TOKEN_LIMIT, type PutReliabilityInput, type ReliabilitySettings } from './schemas.ts';
import { transact } from './store.ts';

/*
 * Reliability settings, account status, egress and the privacy view of one call
 * (docs/account-data.md).
 */

const DAY_MS = 86_400_000;

export async function getReliability(workspaceId: string): Promise<ReliabilitySettings> {
  const item = (await getWorkspaceItem(workspaceId)) as { llm_token_limit?: number; fallback_llm_model?: string; fallback_voice_ids?: string[] };
  return {
    llm_token_limit: item.llm_token_limit ?? DEFAULT_LLM_TOKEN_LIMIT,
    fallback_llm_model: item.fallback_llm_model ?? null,
    fallback_voice_ids: item.fallback_voice_ids ?? [],
  };
}

/**
 * PUT /workspace/reliability: admin only (spec Limits: the route's scope and role, which
 * the gate checks for keys and sessions alike); each field given is checked (the
 * model from the model table, each voice usable by the workspace) and written with its
 * audit entry in one transaction. `llm_token_limit` is what the chat and playground code
 * paths read from the workspace item.
 */
export async function putReliability(principal: Principal, input: PutReliabilityInput): Promise<ReliabilitySettings> {
  const workspaceId = principal.workspaceId;
  if (input.fallback_llm_model != null && !(LLM_MODELS as readonly string[]).includes(input.fallback_llm_model)) {
    throw badRequest(`fallback_llm_model: Unknown model ${input.fallback_llm_model}`);
  }
  for (const [index, voiceId] of (input.fallback_voice_ids ?? []).entries()) {
    await assertVoiceUsable(workspaceId, voiceId).catch((error: unknown) => {
      // Only "unknown voice" names the field; a store that did not answer stays a 503.
      throw error instanceof Invalid ? badRequest(`fallback_voice_ids.${index}: Unknown voice ${voiceId}`) : error;
    });
  }
  const changes = Object.entries(input)
    .filter(([, value]) => value !== undefined)
    .map(([name]) => name);
  if (changes.length) {
    await transact([
      reliabilityUpdate(workspaceId, input),
      auditPut(workspaceId, principal, { action: 'workspace.reliability.update', target: { type: 'workspace', id: workspaceId }, changes }, Date.now()),
    ]);
  }
  return getReliability(workspaceId);
}

export async function accountStatus(principal: Principal) {
  const workspaceId = principal.workspaceId;
  const [workspace, kyc, concurrency] = await Promise.all([getWorkspaceItem(workspaceId), getKyc(workspaceId), getConcurrency(workspaceId)]);
  // What billing's spend check would say of an outbound call now (the strictest action).
  const spend = await checkSpend(workspaceId, 'phone_call', { verificationStatus: async () => kyc.status });
  const suspended = typeof (workspace as { suspended_timestamp?: unknown }).suspended_timestamp === 'number';
  const reasons = [...(suspended ? ['The workspace is suspended'] : []), ...(spend.allowed ? [] : [spend.message ?? 'The workspace cannot spend'])];
  return {
    workspace_id: workspaceId,
    status: suspended ? ('suspended' as const) : ('active' as const),
    can_work: reasons.length === 0,
    reasons,
    verification: { status: kyc.status },
    spend: spend.allowed ? { state: 'ok' as const, codes: [] } : { state: 'blocked' as const, codes: [spend.error_code!] },
    concurrency: { limit: concurrency.concurrency_limit, in_use: concurrency.current_concurrency },
    rate_limits: {
      per_key_per_minute: principal.credential?.rate_limit_per_minute ?? config.RATE_LIMIT_PER_KEY,
      per_ip_per_minute: config.RATE_LIMIT_PER_IP,
    },
  };
}

/**
 * The addresses the functions that call out leave from (EGRESS_IP_ADDRESSES: with the CDK
 * setting `fixedEgress`, the stack's Elastic IPs): single hosts as plain addresses, blocks as CIDR.
 */
export function workspaceEgress() {
  const addresses = config.EGRESS_IP_ADDRESSES.map((block) => block.replace(/\/(32|128)$/, ''));
  return { fixed: addresses.length > 0, addresses };
}

/** Fields of a call that can identify the caller. */
const PERSONAL_FIELDS = new Set([
  'from_number', 'to_number', 'transcript', 'transcript_object', 'transcript_with_tool_calls', 'recording_url',
  'retell_llm_dynamic_variables', 'collected_dynamic_variables', 'metadata', 'call_analysis', 'public_log_url', 'custom_attributes',
]);

export async function privacyCallView(workspaceId: string, callId: string) {
  const facts = await callStorageFacts(workspaceId, callId);
  const stored = Object.entries(facts.call)
    .filter(([, value]) => value !== undefined && value !== null && !(typeof value === 'string' && value === ''))
    .map(([name]) => name)
    .sort();
  const days = facts.data_storage_retention_days;
  return {
    call_id: callId,
    data_storage_setting: facts.data_storage_setting,
    data_storage_retention_days: days,
    retention_timestamp: days ? facts.created_timestamp + days * DAY_MS : null,
    stored_fields: stored,
    personal_fields: stored.filter((name) => PERSONAL_FIELDS.has(name)),
    recording: facts.recording,
    scrubbed: facts.scrubbed,
    unscrubbed_copy: facts.unscrubbed_copy,
  };
}
