import * as z from 'zod';
import { pronunciationEntries } from './pronunciation.ts';

/*
 * The agent fields the worker acts on (retell-sdk's agent type; Parley validates them when
 * an agent is saved or a call's agent_override is given), with the compatible API's
 * defaults for what a version leaves out, and how each maps onto the voice pipeline.
 */

const number = (min: number, max: number) => z.number().min(min).max(max);

const settingsSchema = () =>
  z.object({
    voice_id: z.string().min(1).default('11labs-Chloe'),
    voice_model: z.string().nullish(),
    voice_speed: number(0.5, 2).default(1),
    voice_temperature: number(0, 2).default(1),
    volume: number(0, 2).default(1),
    fallback_voice_ids: z.array(z.string().min(1)).nullish(),
    ambient_sound: z.enum(['coffee-shop', 'convention-hall', 'summer-outdoor', 'mountain-outdoor', 'static-noise', 'call-center']).nullish(),
    ambient_sound_volume: number(0, 2).default(1),
    enable_backchannel: z.boolean().default(false),
    backchannel_frequency: number(0, 1).default(0.8),
    backchannel_words: z.array(z.string().trim().min(1)).nullish(),
    language: z.union([z.string(), z.array(z.string())]).default('en-US'),
    responsiveness: number(0, 1).default(1),
    enable_dynamic_responsiveness: z.boolean().default(false),
    interruption_sensitivity: number(0, 1).default(1),
    begin_message_delay_ms: z.number().int().min(0).default(0),
    end_call_after_silence_ms: z.number().int().min(1).default(600_000),
    max_call_duration_ms: z.number().int().min(1).default(3_600_000),
    reminder_trigger_ms: z.number().int().min(0).default(10_000),
    reminder_max_count: z.number().int().min(0).default(1),
    boosted_keywords: z.array(z.string()).nullish(),
    // An entry the voices cannot use is left out, the others kept.
    pronunciation_dictionary: z.array(z.unknown()).nullish().transform(pronunciationEntries),
    stt_mode: z.enum(['fast', 'accurate', 'custom']).default('fast'),
    vocab_specialization: z.enum(['general', 'medical']).default('general'),
    allow_user_dtmf: z.boolean().default(true),
    user_dtmf_options: z
      .object({
        digit_limit: z.number().int().min(1).max(50).nullish(),
        termination_key: z.string().regex(/^[0-9#*]$/).nullish(),
        timeout_ms: z.number().int().min(1000).max(15_000).optional(),
      })
      .nullish(),
    voicemail_option: z
      .object({
        action: z.discriminatedUnion('type', [
          z.object({ type: z.literal('static_text'), text: z.string() }),
          z.object({ type: z.literal('prompt'), text: z.string() }),
          z.object({ type: z.literal('hangup') }),
          z.object({ type: z.literal('bridge_transfer') }),
        ]),
      })
      .nullish(),
    ivr_option: z.object({ action: z.object({ type: z.literal('hangup') }) }).nullish(),
  });

export type AgentSettings = z.infer<ReturnType<typeof settingsSchema>>;

/**
 * The agent version's fields with the call's `agent_override.agent` laid over them. A field
 * the worker cannot use (out of range, wrong type) falls back to its default, logged by the
 * caller, rather than failing the call.
 */
export function agentSettings(version: Record<string, unknown>, override?: Record<string, unknown>): { settings: AgentSettings; ignored: string[] } {
  const merged = { ...version, ...(override ?? {}) };
  const schema = settingsSchema();
  const ignored: string[] = [];
  const picked: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(schema.shape)) {
    const value = merged[name];
    if (value === undefined) continue;
    if ((field as z.ZodType).safeParse(value).success) picked[name] = value;
    else ignored.push(name);
  }
  return { settings: schema.parse(picked), ignored };
}

/** How long the caller must be silent before their turn ends (ms): responsiveness 1 answers fastest. */
export function endOfTurnDelayMs(settings: Pick<AgentSettings, 'responsiveness'>): number {
  return Math.round(250 + (1 - settings.responsiveness) * 1250);
}

/**
 * How the caller may interrupt the agent: sensitivity 0 never (the agent always finishes),
 * else speech of at least this many ms over the agent's (1: 300 ms; the default 0.9: 420 ms).
 */
export function interruption(settings: Pick<AgentSettings, 'interruption_sensitivity'>): { enabled: false } | { enabled: true; minDurationMs: number } {
  if (settings.interruption_sensitivity === 0) return { enabled: false };
  return { enabled: true, minDurationMs: Math.round(300 + (1 - settings.interruption_sensitivity) * 1200) };
}

/** The agent's language as one recognition language: a list or `multi` asks the recogniser to detect it. */
export function recognitionLanguage(settings: Pick<AgentSettings, 'language'>): string {
  return Array.isArray(settings.language) || settings.language === 'multi' ? 'multi' : settings.language;
}

/** How long the caller's digits are gathered after the last one before they make a turn (ms; retell-sdk UserDtmfOptions.timeout_ms). */
export const DEFAULT_DTMF_TIMEOUT_MS = 2500;
