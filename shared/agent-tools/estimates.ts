import { getAgent } from '../agents/index.ts';
import { NotFound } from '../platform/errors.ts';
import { DEFAULT_LLM_MODEL, type LlmModel, type S2S_MODELS } from '../agents/index.ts';
import { RETELL_LLM_ENGINE, type Agent, type VersionReference } from '../agents/index.ts';
import { readRecord } from '../platform/store/versions.ts';
import { catalogueVoice, DEFAULT_VOICE_ID, PREMIUM_VOICE_MODEL, VOICE_ID_PREFIX } from '../voices/index.ts';
import type { VoiceProvider } from '../vendors/voice/voice-vendor.ts';

/*
 * `GET /agent-estimates/{agent_id}`: what a minute of conversation with an agent version
 * costs and how long the agent takes to start answering, from the table below and the
 * version's configuration only (no history, no clock), so the same version always gets
 * the same estimate. Telephony is billed per number and carrier and is not included.
 *
 * The table is Parley's list price per minute in USD and a typical latency per component,
 * measured as time to first token / first audio. Changing a number is a code change: bump
 * PRICE_TABLE_VERSION with it so estimates can be told apart.
 */
const PRICE_TABLE_VERSION = '2025-06';

/** Orchestration, speech-to-text and turn-taking: every minute pays this. */
const PLATFORM = { cost_per_minute: 0.055, network_latency_ms: 80 } as const;

/** Text models: price per minute of conversation and time to first token. */
const LLM_TABLE: Record<LlmModel, { cost_per_minute: number; latency_ms: number }> = {
  'gpt-4.1': { cost_per_minute: 0.045, latency_ms: 500 },
  'gpt-4.1-mini': { cost_per_minute: 0.016, latency_ms: 400 },
  'gpt-4.1-nano': { cost_per_minute: 0.004, latency_ms: 300 },
  'gpt-5': { cost_per_minute: 0.04, latency_ms: 900 },
  'gpt-5-mini': { cost_per_minute: 0.012, latency_ms: 700 },
  'gpt-5-nano': { cost_per_minute: 0.003, latency_ms: 500 },
  'gemini-3.0-flash': { cost_per_minute: 0.006, latency_ms: 450 },
  'gemini-3.1-flash-lite': { cost_per_minute: 0.003, latency_ms: 350 },
  'gemini-3.5-flash': { cost_per_minute: 0.008, latency_ms: 450 },
  'gemini-3.5-flash-lite': { cost_per_minute: 0.004, latency_ms: 350 },
  'gemini-3.6-flash': { cost_per_minute: 0.009, latency_ms: 450 },
  'claude-4.5-sonnet': { cost_per_minute: 0.08, latency_ms: 800 },
  'claude-4.6-sonnet': { cost_per_minute: 0.08, latency_ms: 800 },
  'claude-4.5-haiku': { cost_per_minute: 0.025, latency_ms: 500 },
};

/** Speech-to-speech models replace both the text model and the voice. */
const S2S_TABLE: Record<(typeof S2S_MODELS)[number], { cost_per_minute: number; latency_ms: number }> = {
  'gpt-realtime': { cost_per_minute: 0.3, latency_ms: 600 },
  'gpt-realtime-mini': { cost_per_minute: 0.1, latency_ms: 500 },
};

/** A custom LLM runs on the customer's server: no model charge, its latency assumed. */
const CUSTOM_LLM = { cost_per_minute: 0, latency_ms: 500 } as const;

/**
 * Voices by provider: the premium tier (the provider's PREMIUM_VOICE_MODEL, also what an
 * agent without `voice_model` gets) and any other, faster and cheaper, model.
 */
const VOICE_TABLE: Record<VoiceProvider, Record<'premium' | 'standard', { cost_per_minute: number; latency_ms: number }>> = {
  elevenlabs: { premium: { cost_per_minute: 0.07, latency_ms: 350 }, standard: { cost_per_minute: 0.05, latency_ms: 150 } },
  cartesia: { premium: { cost_per_minute: 0.07, latency_ms: 200 }, standard: { cost_per_minute: 0.05, latency_ms: 120 } },
  openai: { premium: { cost_per_minute: 0.08, latency_ms: 450 }, standard: { cost_per_minute: 0.06, latency_ms: 300 } },
  minimax: { premium: { cost_per_minute: 0.07, latency_ms: 300 }, standard: { cost_per_minute: 0.05, latency_ms: 200 } },
  fish_audio: { premium: { cost_per_minute: 0.07, latency_ms: 300 }, standard: { cost_per_minute: 0.05, latency_ms: 200 } },
  inworld: { premium: { cost_per_minute: 0.07, latency_ms: 300 }, standard: { cost_per_minute: 0.05, latency_ms: 200 } },
  platform: { premium: { cost_per_minute: 0.055, latency_ms: 250 }, standard: { cost_per_minute: 0.055, latency_ms: 250 } },
};

/** Speech-to-text: time until the final transcript of a turn, by stt_mode. */
const STT_LATENCY_MS = { fast: 200, accurate: 450, custom: 300 } as const;

/** Features with their own price or delay. */
const FEATURE_TABLE = {
  knowledge_base: { cost_per_minute: 0.005, latency_ms: 120 },
  background_speech_cancellation: { cost_per_minute: 0.005, latency_ms: 20 },
  noise_cancellation: { cost_per_minute: 0, latency_ms: 10 },
  backchannel: { cost_per_minute: 0, latency_ms: 0 },
} as const;

/** Waiting for the caller to finish: 300 ms at responsiveness 1, up to 1,000 ms at 0. */
const turnDetectionMs = (responsiveness: number) => Math.round(300 + (1 - responsiveness) * 700);

const PROVIDER_BY_PREFIX = new Map(
  (Object.entries(VOICE_ID_PREFIX) as [VoiceProvider, string][]).map(([provider, prefix]) => [prefix, provider]),
);

/** A voice's provider: the catalogue's, else the ID's prefix (workspace voices are `<prefix>-custom_voice_…`). */
function voiceProvider(voiceId: string): VoiceProvider {
  const builtIn = catalogueVoice(voiceId);
  if (builtIn) return builtIn.provider;
  const prefix = voiceId.slice(0, voiceId.indexOf('-'));
  return PROVIDER_BY_PREFIX.get(prefix) ?? catalogueVoice(DEFAULT_VOICE_ID)!.provider;
}

interface EngineFacts {
  label: string;
  model?: LlmModel;
  s2sModel?: (typeof S2S_MODELS)[number];
  custom?: boolean;
  knowledgeBases: number;
}

/** What the estimate needs from the engine version the agent version runs. */
async function engineFacts(workspaceId: string, agent: Agent): Promise<EngineFacts> {
  const engine = agent.response_engine;
  if (!engine || engine.type === 'custom-llm') return { label: 'custom LLM', custom: true, knowledgeBases: 0 };
  const kind = engine.type === RETELL_LLM_ENGINE ? 'llm' : 'conversation_flow';
  const id = engine.type === RETELL_LLM_ENGINE ? engine.llm_id : engine.conversation_flow_id;
  let data: Record<string, unknown> = {};
  try {
    data = (await readRecord(workspaceId, kind, id, engine.version ?? undefined)).data;
  } catch (error) {
    // An engine removed with force_delete: estimate with the defaults.
    if (!(error instanceof NotFound)) throw error;
  }
  const modelChoice = data.model_choice as { model?: LlmModel } | undefined;
  const model = (data.model as LlmModel | null | undefined) ?? modelChoice?.model ?? DEFAULT_LLM_MODEL;
  const s2sModel = (data.s2s_model as EngineFacts['s2sModel'] | null | undefined) ?? undefined;
  const knowledgeBases = Array.isArray(data.knowledge_base_ids) ? data.knowledge_base_ids.length : 0;
  return { label: id, model: LLM_TABLE[model] ? model : DEFAULT_LLM_MODEL, s2sModel, knowledgeBases };
}

const money = (value: number) => Math.round(value * 10_000) / 10_000;

export async function estimateAgent(workspaceId: string, agentId: string, version?: VersionReference) {
  const agent = await getAgent(workspaceId, agentId, version);
  const engine = await engineFacts(workspaceId, agent);
  const cost: { component: string; description: string; cost_per_minute: number }[] = [];
  const latency: { component: string; description: string; latency_ms: number }[] = [];

  cost.push({ component: 'platform', description: 'Orchestration, speech-to-text and turn-taking', cost_per_minute: PLATFORM.cost_per_minute });
  const responsiveness = agent.responsiveness ?? 1;
  latency.push({
    component: 'turn_detection',
    description: `Waiting for the end of the caller’s turn (responsiveness ${responsiveness})`,
    latency_ms: turnDetectionMs(responsiveness),
  });
  const sttMode = agent.stt_mode ?? 'fast';
  latency.push({ component: 'speech_to_text', description: `Final transcript (stt_mode ${sttMode})`, latency_ms: STT_LATENCY_MS[sttMode] });

  if (engine.knowledgeBases > 0) {
    cost.push({
      component: 'knowledge_base',
      description: `Retrieval from ${engine.knowledgeBases} knowledge base${engine.knowledgeBases === 1 ? '' : 's'}`,
      cost_per_minute: FEATURE_TABLE.knowledge_base.cost_per_minute,
    });
    latency.push({ component: 'knowledge_base', description: 'Retrieval before each answer', latency_ms: FEATURE_TABLE.knowledge_base.latency_ms });
  }

  if (engine.s2sModel) {
    const s2s = S2S_TABLE[engine.s2sModel];
    cost.push({ component: 'speech_to_speech', description: `Realtime model ${engine.s2sModel} (replaces the text model and the voice)`, cost_per_minute: s2s.cost_per_minute });
    latency.push({ component: 'speech_to_speech', description: `First audio from ${engine.s2sModel}`, latency_ms: s2s.latency_ms });
  } else {
    if (engine.custom) {
      cost.push({ component: 'llm', description: 'Custom LLM on your server (no model charge)', cost_per_minute: CUSTOM_LLM.cost_per_minute });
      latency.push({ component: 'llm', description: 'Custom LLM first response (assumed)', latency_ms: CUSTOM_LLM.latency_ms });
    } else {
      const llm = LLM_TABLE[engine.model!];
      cost.push({ component: 'llm', description: `Model ${engine.model}`, cost_per_minute: llm.cost_per_minute });
      latency.push({ component: 'llm', description: `First token from ${engine.model}`, latency_ms: llm.latency_ms });
    }
    const voiceId = agent.voice_id ?? DEFAULT_VOICE_ID;
    const provider = voiceProvider(voiceId);
    const premiumModel = PREMIUM_VOICE_MODEL[provider];
    const tier = !agent.voice_model || premiumModel === null || agent.voice_model === premiumModel ? 'premium' : 'standard';
    const voice = VOICE_TABLE[provider][tier];
    const modelName = agent.voice_model ?? premiumModel;
    const label = `Voice ${voiceId} (${provider}${modelName ? `, ${modelName}` : ''}, ${tier} tier)`;
    cost.push({ component: 'voice', description: label, cost_per_minute: voice.cost_per_minute });
    latency.push({ component: 'text_to_speech', description: `First audio from ${label}`, latency_ms: voice.latency_ms });
  }

  const denoising = agent.denoising_mode ?? 'noise-cancellation';
  if (denoising !== 'no-denoise') {
    const feature = denoising === 'noise-cancellation' ? FEATURE_TABLE.noise_cancellation : FEATURE_TABLE.background_speech_cancellation;
    const description = denoising === 'noise-cancellation' ? 'Noise cancellation' : 'Noise and background speech cancellation';
    cost.push({ component: 'denoising', description, cost_per_minute: feature.cost_per_minute });
    latency.push({ component: 'denoising', description, latency_ms: feature.latency_ms });
  }
  if (agent.enable_backchannel) {
    cost.push({ component: 'backchannel', description: 'Backchannel ("mm-hmm") while the caller speaks (included)', cost_per_minute: FEATURE_TABLE.backchannel.cost_per_minute });
  }
  latency.push({ component: 'network', description: 'Media and network transit', latency_ms: PLATFORM.network_latency_ms });

  return {
    agent_id: agentId,
    version: agent.version,
    currency: 'USD' as const,
    cost_per_minute: money(cost.reduce((sum, item) => sum + item.cost_per_minute, 0)),
    cost_breakdown: cost,
    expected_latency_ms: latency.reduce((sum, item) => sum + item.latency_ms, 0),
    latency_breakdown: latency,
    price_table_version: PRICE_TABLE_VERSION,
  };
}
