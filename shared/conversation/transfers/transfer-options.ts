import { validSipHeaders } from '../../platform/telephony/sip-headers.ts';
import { fillTemplate } from '../variables.ts';
import type { AgenticTransferConfig, HandoffOption, TransferOptions } from '../types.ts';

/*
 * A transfer option's fields as the call engine acts on them. Their own module, apart from
 * ../engines/model-turn.ts: the engine reads them on a LiveKit transfer event without
 * loading the conversation runtime (../index.ts).
 */

/**
 * The fields of a transfer option the engine acts on (retell-sdk TransferOption*), with the
 * tool's (or node's) `custom_sip_headers`, placeholders filled; undefined when none is set.
 * A header a filled-in placeholder made invalid (a line break, too long) is left out.
 */
export function transferOptions(option: Record<string, unknown>, variables: Record<string, string>, sipHeaders?: unknown): TransferOptions | undefined {
  const out: TransferOptions = {};
  if (option.type === 'agentic_warm_transfer') out.agentic = agenticConfig(option.agentic_transfer_config);
  if (option.type === 'cold_transfer' && (option.cold_transfer_mode === 'sip_refer' || option.cold_transfer_mode === 'sip_invite')) {
    out.cold_transfer_mode = option.cold_transfer_mode;
  }
  if (sipHeaders && typeof sipHeaders === 'object' && !Array.isArray(sipHeaders)) {
    const filled = Object.fromEntries(
      Object.entries(sipHeaders as Record<string, unknown>).flatMap(([name, value]) => (typeof value === 'string' ? [[name, fillTemplate(value, variables)]] : [])),
    );
    const headers = validSipHeaders(filled);
    if (Object.keys(headers).length) out.sip_headers = headers;
  }
  if (typeof option.on_hold_music === 'string') out.on_hold_music = option.on_hold_music;
  if (typeof option.custom_on_hold_music_asset_id === 'string') out.custom_on_hold_music_asset_id = option.custom_on_hold_music_asset_id;
  if (typeof option.enable_bridge_audio_cue === 'boolean') out.enable_bridge_audio_cue = option.enable_bridge_audio_cue;
  if (typeof option.show_transferee_as_caller === 'boolean') out.show_transferee_as_caller = option.show_transferee_as_caller;
  if (typeof option.transfer_ring_duration_ms === 'number' && option.transfer_ring_duration_ms >= 0) out.ring_ms = Math.round(option.transfer_ring_duration_ms);
  const handoff = handoffOption(option.public_handoff_option, variables);
  if (handoff) out.public_handoff = handoff;
  return Object.keys(out).length ? out : undefined;
}

/** Default wait for a transfer agent's decision (retell-sdk: 30 s). */
const DEFAULT_TRANSFER_TIMEOUT_MS = 30_000;

function agenticConfig(raw: unknown): AgenticTransferConfig {
  const config = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const agent = config.transfer_agent as { agent_id?: unknown; agent_version?: unknown } | undefined;
  const timeout = config.transfer_timeout_ms;
  return {
    ...(agent && typeof agent.agent_id === 'string' && (typeof agent.agent_version === 'string' || typeof agent.agent_version === 'number')
      ? { transfer_agent: { agent_id: agent.agent_id, agent_version: String(agent.agent_version) } }
      : {}),
    action_on_timeout: config.action_on_timeout === 'bridge_transfer' ? 'bridge_transfer' : 'cancel_transfer',
    transfer_timeout_ms: typeof timeout === 'number' && timeout > 0 ? Math.min(Math.round(timeout), 600_000) : DEFAULT_TRANSFER_TIMEOUT_MS,
  };
}

function handoffOption(raw: unknown, variables: Record<string, string>): HandoffOption | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const option = raw as Record<string, unknown>;
  if (typeof option.message === 'string' && option.message.trim() && option.type !== 'prompt') {
    return { type: 'static_message', message: fillTemplate(option.message, variables).trim() };
  }
  if (typeof option.prompt === 'string' && option.prompt.trim()) return { type: 'prompt', prompt: fillTemplate(option.prompt, variables).trim() };
  return undefined;
}
