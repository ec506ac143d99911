import * as z from 'zod';
import { defineRoutes } from '../platform/http/route.ts';
import { epochMs, httpUrl, queryInt } from '../platform/http/schemas.ts';
import { idPattern } from '../platform/ids.ts';
import { addressList, countryList, e164, isoCountry, sipUri } from './validation.ts';
import { tagName } from '../agents/index.ts';
import { SipConnectionResult } from './connection-test-routes.ts';

/*
 * Phone numbers: the number (E.164) is its own ID. Field set: the compatible client's
 * (retell-sdk PhoneNumber*Params) plus the spec's named fields (allowed_inbound_addresses,
 * cps_limit, provider, number_provider, the version binding). Schemas are built on first use.
 */
export const NUMBER_PROVIDERS = ['twilio', 'telnyx'] as const;
export const PROVIDERS = ['twilio', 'telnyx', 'custom'] as const;
export const TRANSPORTS = ['TCP', 'TLS', 'UDP'] as const;
export const MAX_AGENTS_PER_LIST = 20;

/** A version reference: a version number, `latest`, `latest_published` or an environment tag name. */
export const versionReference = () =>
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
  /** The older single-agent spelling: the same as a one-entry list of weight 1 (null clears the list). */
  inbound_agent_id: agentId().nullable(),
  outbound_agent_id: agentId().nullable(),
  /** The number's version binding: the version its agents answer with unless an entry pins its own. */
  inbound_agent_version: versionReference().nullable(),
  outbound_agent_version: versionReference().nullable(),
  inbound_webhook_url: httpUrl().nullable(),
  allowed_inbound_country_list: countryList().nullable(),
  allowed_outbound_country_list: countryList().nullable(),
  allowed_inbound_addresses: addressList().nullable(),
  cps_limit: z.number().int().min(1).max(1000).nullable(),
  fallback_number: e164().nullable(),
});

const optionalNumberFields = () => z.object(numberFields()).partial().shape;

export const ImportPhoneNumberBody = z.lazy(() =>
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

export const CreatePhoneNumberBody = z.lazy(() =>
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

export const UpdatePhoneNumberBody = z.lazy(() =>
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

export const PhoneNumber = z.lazy(() =>
  z.looseObject({
    phone_number: z.string(),
    phone_number_pretty: z.string(),
    phone_number_type: z.enum(['retell-twilio', 'retell-telnyx', 'custom']),
    provider: z.enum(PROVIDERS),
    number_provider: z.enum(NUMBER_PROVIDERS).nullable(),
    nickname: z.string().nullable(),
    inbound_agents: z.array(agentEntry()).nullable(),
    outbound_agents: z.array(agentEntry()).nullable(),
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

export const AvailableNumber = z.lazy(() =>
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

export const PhoneNumberBinding = z.lazy(() =>
  z.object({
    phone_number: z.string(),
    inbound_agent_version: z.union([z.number(), z.string()]).nullable(),
    outbound_agent_version: z.union([z.number(), z.string()]).nullable(),
    inbound_agents: z.array(resolvedEntry()),
    outbound_agents: z.array(resolvedEntry()),
  }),
);
export type PhoneNumberBinding = z.infer<typeof PhoneNumberBinding>;

export const PutBindingBody = z.lazy(() =>
  z.object({
    inbound_agent_version: versionReference().nullable().optional(),
    outbound_agent_version: versionReference().nullable().optional(),
  }),
);

const numberParams = z.lazy(() => z.object({ phone_number: e164() }));

export const phoneNumberRoutes = defineRoutes({ domain: 'numbers', access: 'numbers' }, {
  createPhoneNumber: {
    method: 'POST', path: '/create-phone-number', status: 201,
    throttle: 'vendor',
    summary: 'Buy a number from the platform carrier account (Twilio; offline mock without credentials) and bind agents',
    body: CreatePhoneNumberBody, response: PhoneNumber,
  },
  importPhoneNumber: {
    method: 'POST', path: '/import-phone-number', status: 201,
    summary: 'Import a number from your own SIP trunk (termination URI, credentials, transport) and bind agents',
    body: ImportPhoneNumberBody, response: PhoneNumber,
  },
  getPhoneNumber: {
    method: 'GET', path: '/get-phone-number/{phone_number}', status: 200,
    summary: 'Get a phone number', params: numberParams, response: PhoneNumber,
  },
  listPhoneNumbers: {
    method: 'GET', path: '/v2/list-phone-numbers', aliases: [{ method: 'GET', path: '/list-phone-numbers' }],
    status: 200,
    summary: 'List phone numbers a page at a time (the compatible client’s page), newest first',
    query: z.lazy(() =>
      z.object({
        limit: queryInt({ min: 1, max: 1000, default: 1000 }),
        pagination_key: e164().optional(),
        sort_order: z.enum(['ascending', 'descending']).default('descending'),
      }),
    ),
    response: z.lazy(() => z.object({ has_more: z.boolean(), items: z.array(PhoneNumber), pagination_key: z.string().optional() })),
  },
  updatePhoneNumber: {
    method: 'PATCH', path: '/update-phone-number/{phone_number}', status: 200,
    summary: 'Update a phone number (null removes a field or restores its default)',
    params: numberParams, body: UpdatePhoneNumberBody, response: PhoneNumber,
  },
  deletePhoneNumber: {
    method: 'DELETE', path: '/delete-phone-number/{phone_number}', status: 204,
    summary: 'Delete a phone number (a bought number is released at the carrier)', params: numberParams,
  },
  searchPhoneNumbers: {
    method: 'GET', path: '/search-phone-numbers', status: 200,
    throttle: 'vendor',
    summary: 'Search numbers available to buy (country, area code, digits it contains)',
    query: z.lazy(() =>
      z.object({
        country: isoCountry().optional(),
        country_code: isoCountry().optional(),
        area_code: z.string().regex(/^[2-9][0-9]{2}$/, 'Must be a 3-digit area code').transform(Number).optional(),
        contains: z.string().regex(/^[0-9*]{1,10}$/, 'Must be 1 to 10 digits (* matches any digit)').optional(),
        toll_free: z.enum(['true', 'false']).optional(),
        number_provider: z.enum(NUMBER_PROVIDERS).default('twilio'),
        limit: queryInt({ min: 1, max: 50, default: 20 }),
      }),
    ),
    response: z.lazy(() => z.array(AvailableNumber)),
  },
  provisionPhoneNumber: {
    method: 'POST', path: '/provision-phone-number/{phone_number}', status: 200,
    throttle: 'vendor',
    summary: 'Provision a number at its carrier again (trunk, credentials, number attached); 502 provisioning_failed when the carrier fails',
    params: numberParams, response: PhoneNumber,
  },
  testPhoneNumberConnection: {
    method: 'POST', path: '/test-phone-number-connection/{phone_number}', status: 200,
    throttle: 'outbound',
    summary: 'Send SIP OPTIONS to an imported number’s termination URI (over its transport) and report whether and how it answered',
    params: numberParams,
    body: z.lazy(() => z.object({ timeout_ms: z.number().int().min(500).max(10_000).default(5000) })),
    response: SipConnectionResult,
  },
  getPhoneNumberBindings: {
    method: 'GET', path: '/phone-number-bindings/{phone_number}', status: 200,
    summary: 'The version binding of a number and the version each of its agents resolves to now',
    params: numberParams, response: PhoneNumberBinding,
  },
  putPhoneNumberBindings: {
    method: 'PUT', path: '/phone-number-bindings/{phone_number}', status: 200,
    summary: 'Set the version binding (a version number, latest, latest_published or a tag name; null restores latest)',
    params: numberParams, body: PutBindingBody, response: PhoneNumberBinding,
  },
});
