import * as z from 'zod';
import { destinationUrl, idOf, importedFrom } from '../../platform/http/schemas.ts';
import { wire } from '../../platform/naming.ts';

/*
 * Schema pieces voice agents and chat agents share: the response engine they run and the
 * configuration fields both carry, written once so the two never drift. Factories only, so
 * nothing is built at module load, and no route table here, so each domain's bundle keeps
 * only its own routes.
 */
export const LANGUAGES = [
  'en-US', 'en-IN', 'en-GB', 'en-AU', 'en-NZ', 'de-DE', 'es-ES', 'es-419', 'hi-IN', 'fr-FR', 'fr-CA', 'ja-JP', 'pt-PT',
  'pt-BR', 'zh-CN', 'ru-RU', 'it-IT', 'ko-KR', 'nl-NL', 'nl-BE', 'pl-PL', 'tr-TR', 'vi-VN', 'ro-RO', 'bg-BG', 'ca-ES',
  'th-TH', 'da-DK', 'fi-FI', 'el-GR', 'hu-HU', 'id-ID', 'no-NO', 'sk-SK', 'sv-SE', 'lt-LT', 'lv-LV', 'cs-CZ', 'ms-MY',
  'af-ZA', 'ar-SA', 'az-AZ', 'bs-BA', 'cy-GB', 'fa-IR', 'fil-PH', 'gl-ES', 'he-IL', 'hr-HR', 'hy-AM', 'is-IS', 'kk-KZ',
  'kn-IN', 'mk-MK', 'mr-IN', 'ne-NP', 'sl-SI', 'sr-RS', 'sw-KE', 'ta-IN', 'ur-IN', 'yue-CN', 'uk-UA',
] as const;

export const RETELL_LLM_ENGINE = `${wire.compat}-llm` as const;

function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

const engineVersion = () => z.number().int().min(0).nullable().optional();

export const responseEngine = () =>
  z.discriminatedUnion('type', [
    z.object({ type: z.literal(RETELL_LLM_ENGINE), llm_id: idOf('llm', 'a Retell LLM ID'), version: engineVersion() }),
    z.object({
      type: z.literal('conversation-flow'),
      conversation_flow_id: idOf('conversationFlow', 'a conversation flow ID'),
      version: engineVersion(),
    }),
    z.object({
      type: z.literal('custom-llm'),
      llm_websocket_url: destinationUrl('websocket'),
    }),
  ]);
export type ResponseEngine = z.infer<ReturnType<typeof responseEngine>>;

/** A nested configuration object: kept as the client sends it. */
export const config = () => z.looseObject({});

/** A webhook event list over the given names; repeats are dropped, order kept. */
export const webhookEvents = <const T extends readonly [string, ...string[]]>(events: T) =>
  z
    .array(z.enum(events))
    .max(events.length * 2)
    .transform((list) => [...new Set(list)])
    .nullable();

/** Fields an agent version carries whether it answers calls or chats. */
export const sharedAgentFields = () => ({
  response_engine: responseEngine(),
  agent_name: z.string().max(200).nullable(),
  language: z.union([z.enum(LANGUAGES), z.literal('multi'), z.array(z.enum(LANGUAGES)).min(1).max(10)]),
  timezone: z.string().max(64).refine(isTimeZone, 'Must be an IANA time zone such as Australia/Sydney').nullable(),
  webhook_url: destinationUrl('templated').nullable(),
  data_storage_setting: z.enum(['everything', 'everything_except_pii', 'basic_attributes_only']),
  data_storage_retention_days: z.number().int().min(1).max(3650).nullable(),
  opt_in_signed_url: z.boolean(),
  signed_url_expiration_ms: z.number().int().min(1000).nullable(),
  pii_config: config(),
  guardrail_config: config(),
  version_title: z.string().max(200).nullable(),
  imported_from: importedFrom(),
});

/** Body of publishing a voice or chat agent version: which draft, and how to describe it. */
export const publishVersionBody = () =>
  z.object({
    version: z.number().int().min(0).optional(),
    version_title: z.string().max(200).optional(),
    version_description: z.string().max(2000).optional(),
  });
