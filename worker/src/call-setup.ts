import { getAgent } from '../../shared/agents/index.ts';
import { openConversation, type ConversationState } from '../../shared/conversation/index.ts';
import type { DispatchMetadata } from '../../shared/vendors/media/index.ts';
import { voiceVendorId } from '../../shared/voices/index.ts';
import { agentSettings, type AgentSettings } from './agent-settings.ts';
import { readSpeechVendorSettings, type SttVendor } from './config.ts';
import { createStt, createVoice } from './vendors.ts';

/** What a call's session is built from: the agent's settings, its conversation, its recogniser and voice. */
export interface PreparedCall {
  settings: AgentSettings;
  /** Agent fields the worker cannot use (left at their defaults; the job logs them). */
  ignored: string[];
  state: ConversationState;
  stt: ReturnType<typeof createStt>;
  tts: Awaited<ReturnType<typeof createVoice>>;
}

/**
 * A call's job before it joins the room (agent.ts, and the integration tests that run the
 * same steps without a room): the agent version with the call's override laid over it, the
 * conversation opened on Parley's engine, the recogniser, and the voice with its fallbacks
 * (the agent's voice, its own `fallback_voice_ids`, then the workspace's, each voice once).
 */
export async function prepareCall(metadata: DispatchMetadata, sttVendor: SttVendor): Promise<PreparedCall> {
  const version = await getAgent(metadata.workspace_id, metadata.agent_id, metadata.agent_version);
  const { settings, ignored } = agentSettings(version as Record<string, unknown>, metadata.agent_override?.agent);
  const [state, access] = await Promise.all([
    openConversation({
      workspaceId: metadata.workspace_id,
      agentId: metadata.agent_id,
      agentVersion: metadata.agent_version,
      callId: metadata.call_id,
      channel: 'voice',
      dynamicVariables: metadata.dynamic_variables,
      ...(metadata.from_number ? { fromNumber: metadata.from_number } : {}),
      ...(metadata.to_number ? { toNumber: metadata.to_number } : {}),
      ...(metadata.agent_override ? { overrides: metadata.agent_override } : {}),
      ...(metadata.reliability?.fallback_llm_model ? { fallbackLlmModel: metadata.reliability.fallback_llm_model } : {}),
      canTransfer: metadata.call_type === 'phone_call',
    }),
    readSpeechVendorSettings(),
  ]);
  const voiceIds = [...new Set([settings.voice_id, ...(settings.fallback_voice_ids ?? []), ...(metadata.reliability?.fallback_voice_ids ?? [])])];
  const tts = await createVoice(voiceIds, access, settings, (voiceId) => voiceVendorId(metadata.workspace_id, voiceId));
  return { settings, ignored, state, stt: createStt(sttVendor, access, settings), tts };
}
