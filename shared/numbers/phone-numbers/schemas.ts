import * as z from 'zod';
import { destinationUrl, epochMs, lazySchema } from '../../platform/http/schemas.ts';
import { idPattern } from '../../platform/ids.ts';
import { addressList, countryList, e164, sipUri } from '../validation.ts';
import { tagName } from '../../agents/bindings/index.ts';

/*
 * Phone numbers: the number (E.164) is its own ID. Field set: the compatible client's
 * (retell-sdk PhoneNumber*Params) plus the spec's named fields (allowed_inbound_addresses,
 * cps_limit, provider, number_provider, the version binding). Schemas are built on first use.
 */
export const NUMBER_PROVIDERS = ['twilio', 'telnyx'] as const;
const PROVIDERS = ['twilio', 'telnyx', 'custom'] as const;
const TRANSPORTS = ['TCP', 'TLS', 'UDP'] as const;
const MAX_AGENTS_PER_LIST = 20;

/** A version reference: a version number, `latest`, `latest_published` or an environment tag name. */
const versionReference = () =>
  z.union([
    z.number().int().min(0).max(999_999_999),
    z.literal('latest'),
    z.literal('latest_published'),
    z.string().regex(/^[0-9]{1,9}$/).transform(Number),
    tagName(),
  ]);
export type VersionReference = number | string;

const agentId = () => z.string().regex(idPattern('agent'), 'Must be an agent ID (agent_ followed by 24 hex characters)');

const weightedAgents = () =>
  z
    .array(
      z.object({
        agent_id: agentId(),
        weight: z.number().gt(0, 'Must be a positive number').max(1_000_000),
        agent_version: versionReference().optional(),
      }),
    )
    .max(MAX_AGENTS_PER_LIST);

const chatAgentId = () => z.string().regex(idPattern('chatAgent'), 'Must be a chat agent ID (chat_agent_ followed by 24 hex characters)');

/** SMS agents (retell-sdk inbound_sms_agents / outbound_sms_agents): chat agents, with weights. */
const weightedChatAgents = () =>
  z
    .array(
      z.object({
        agent_id: chatAgentId(),
        weight: z.number().gt(0, 'Must be a positive number').max(1_000_000),
        agent_version: versionReference().optional(),
      }),
    )
    .max(MAX_AGENTS_PER_LIST);

const transport = () =>
  z
    .string()
    .transform((value) => value.toUpperCase())
    .pipe(z.enum(TRANSPORTS, { error: 'Must be TCP, TLS or UDP' }));

/** Fields every number carries, shared by buy, import and update (all optional). */
const numberFields = () => ({
  nickname: z.string().max(200).nullable(),
  inbound_agents: weightedAgents().nullable(),
  outbound_agents: weightedAgents().nullable(),
  /** Chat agents answering the number's SMS (inbound) and starting its SMS chats (outbound); null clears. */
  inbound_sms_agents: weightedChatAgents().nullable(),
  outbound_sms_agents: weightedChatAgents().nullable(),
  /** The older single-agent spelling: the same as a one-entry list of weight 1 (null clears the list). */
  inbound_agent_id: agentId().nullable(),
  outbound_agent_id: agentId().nullable(),
  /** The number's version binding: the version its agents answer with unless an entry pins its own. */
  inbound_agent_version: versionReference().nullable(),
  outbound_agent_version: versionReference().nullable(),
  inbound_webhook_url: destinationUrl().nullable(),
  allowed_inbound_country_list: countryList().nullable(),
  allowed_outbound_country_list: countryList().nullable(),
  allowed_inbound_addresses: addressList().nullable(),
  cps_limit: z.number().int().min(1).max(1000).nullable(),
  fallback_number: e164().nullable(),
});

const optionalNumberFields = () => z.object(numberFields()).partial().shape;

export const ImportPhoneNumberBody = lazySchema(() =>
  z.object({
    ...optionalNumberFields(),
    phone_number: e164(),
    termination_uri: sipUri(),
    sip_trunk_auth_username: z.string().min(1).max(128).optional(),
    sip_trunk_auth_password: z.string().min(1).max(128).optional(),
    transport: transport().nullable().optional(),
    provider: z.enum(['twilio', 'custom']).optional(),
  }),
);
export type ImportPhoneNumberInput = z.infer<typeof ImportPhoneNumberBody>;

export const CreatePhoneNumberBody = lazySchema(() =>
  z.object({
    ...optionalNumberFields(),
    phone_number: e164().optional(),
    area_code: z.number().int().min(200).max(999).optional(),
    country_code: z.enum(['US', 'CA']).default('US'),
    toll_free: z.boolean().optional(),
    number_provider: z.enum(NUMBER_PROVIDERS).default('twilio'),
  }),
);
export type CreatePhoneNumberInput = z.infer<typeof CreatePhoneNumberBody>;

export const UpdatePhoneNumberBody = lazySchema(() =>
  z.object({
    ...optionalNumberFields(),
    termination_uri: sipUri().optional(),
    auth_username: z.string().min(1).max(128).nullable().optional(),
    auth_password: z.string().min(1).max(128).nullable().optional(),
    transport: transport().nullable().optional(),
    provider: z.enum(['twilio', 'custom']).optional(),
  }),
);
export type UpdatePhoneNumberInput = z.infer<typeof UpdatePhoneNumberBody>;

const agentEntry = () =>
  z.object({ agent_id: z.string(), weight: z.number(), agent_version: z.union([z.number(), z.string()]).optional() });

export const PhoneNumber = lazySchema(() =>
  z.looseObject({
    phone_number: z.string(),
    phone_number_pretty: z.string(),
    phone_number_type: z.enum(['retell-twilio', 'retell-telnyx', 'custom']),
    provider: z.enum(PROVIDERS),
    number_provider: z.enum(NUMBER_PROVIDERS).nullable(),
    nickname: z.string().nullable(),
    inbound_agents: z.array(agentEntry()).nullable(),
    outbound_agents: z.array(agentEntry()).nullable(),
    inbound_sms_agents: z.array(agentEntry()).nullable(),
    outbound_sms_agents: z.array(agentEntry()).nullable(),
    inbound_agent_id: z.string().nullable(),
    outbound_agent_id: z.string().nullable(),
    inbound_agent_version: z.union([z.number(), z.string()]).nullable(),
    outbound_agent_version: z.union([z.number(), z.string()]).nullable(),
    inbound_webhook_url: z.string().nullable(),
    allowed_inbound_country_list: z.array(z.string()).nullable(),
    allowed_outbound_country_list: z.array(z.string()).nullable(),
    allowed_inbound_addresses: z.array(z.string()).nullable(),
    /**
     * Where inbound INVITEs are accepted from (shared/numbers/inbound-admission.ts): allowed_inbound_addresses,
     * else Twilio's signalling blocks for Twilio numbers, else null: the addresses termination_uri
     * resolves to when the call arrives. An INVITE from elsewhere needs the trunk credentials.
     */
    effective_inbound_addresses: z.array(z.string()).nullable(),
    inbound_address_source: z
      .enum(['allowed_inbound_addresses', 'carrier_signalling', 'termination_uri'])
      .describe('Which rule effective_inbound_addresses comes from'),
    cps_limit: z.number().int(),
    fallback_number: z.string().nullable(),
    area_code: z.number().int().optional(),
    sip_outbound_trunk_config: z
      .object({ termination_uri: z.string().nullable(), auth_username: z.string().nullable(), transport: z.string().nullable() })
      .nullable(),
    provisioning_status: z.enum(['provisioned', 'failed']),
    created_timestamp: epochMs(),
    last_modification_timestamp: epochMs(),
  }),
);
export type PhoneNumber = z.infer<typeof PhoneNumber>;

export const AvailableNumber = lazySchema(() =>
  z.object({
    phone_number: z.string(),
    phone_number_pretty: z.string(),
    country: z.string(),
    area_code: z.number().int().optional(),
    locality: z.string().optional(),
    region: z.string().optional(),
    toll_free: z.boolean(),
    number_provider: z.enum(NUMBER_PROVIDERS),
  }),
);
export type AvailableNumber = z.infer<typeof AvailableNumber>;

const resolvedEntry = () =>
  z.object({
    agent_id: z.string(),
    weight: z.number(),
    agent_version: z.union([z.number(), z.string()]),
    resolved_version: z.number().int().nullable(),
  });

export const PhoneNumberBinding = lazySchema(() =>
  z.object({
    phone_number: z.string(),
    inbound_agent_version: z.union([z.number(), z.string()]).nullable(),
    outbound_agent_version: z.union([z.number(), z.string()]).nullable(),
    inbound_agents: z.array(resolvedEntry()),
    outbound_agents: z.array(resolvedEntry()),
  }),
);
export type PhoneNumberBinding = z.infer<typeof PhoneNumberBinding>;

export const PutBindingBody = lazySchema(() =>
  z.object({
    inbound_agent_version: versionReference().nullable().optional(),
    outbound_agent_version: versionReference().nullable().optional(),
  }),
);

export const numberParams = lazySchema(() => z.object({ phone_number: e164() }));
