import { addAgentReferenceItems, removeAgentReferenceItems, type AgentReferrer } from '../../agents/bindings/index.ts';
import { assertRunnable, resolveAgentVersion } from '../../agents/bindings/index.ts';
import { encryptSecret, recordContext } from '../../platform/crypto/envelope.ts';
import { ApiError, badRequest, conflict, Invalid, invalidPaginationKey, NotFound, VendorFailed } from '../../platform/errors.ts';
import type { AvailableNumber, CreatePhoneNumberInput, ImportPhoneNumberInput, PhoneNumber, PhoneNumberBinding, UpdatePhoneNumberInput, VersionReference } from './schemas.ts';
import { assertNotMasked, unlessMasked } from '../../platform/text/masking.ts';
import { originationUri } from '../telephony/sip-origination.ts';
import { ConditionFailed, table, TransactionCancelled, type TransactOp } from '../../platform/store/table.ts';
import {
  listNumberItems,
  phoneNumberClaims,
  phoneNumbers,
  providerTrunks,
  type AgentEntry,
  type NumberItem,
  type ProviderTrunkItem,
} from '../store.ts';
import { mockTelephonyProvider, provisioningFailed, telephonyProvider, type HeldNumber, type TelephonyProvider, type Trunk } from '../../vendors/telephony/index.ts';
import { isTwilioTerminationHost, prettyNumber, sipUriHost } from '../validation.ts';
import { getHead } from '../../platform/store/versions.ts';
import { cpsLimitFor } from '../cps-limiter.ts';
import { inboundAddressesFor, parseInboundAddresses } from '../inbound-addresses.ts';

/*
 * Phone numbers. A number is its own ID and exists once across all workspaces: the
 * number's item (workspace partition) and a global claim item are written in one
 * transaction, each conditional on not existing. Every agent a number uses gets a
 * reference item in the same transaction (shared/agents/bindings/references.ts), so an agent in
 * use cannot be deleted; references follow the number's agents on update and go with it.
 */

type Direction = 'inbound' | 'outbound';
const DIRECTIONS: readonly Direction[] = ['inbound', 'outbound'];
type SmsDirection = 'inbound_sms' | 'outbound_sms';
const SMS_DIRECTIONS: readonly SmsDirection[] = ['inbound_sms', 'outbound_sms'];

export { parseInboundAddresses };

const onlyAgent = (entries?: AgentEntry[]) => (entries?.length === 1 ? entries[0]!.agent_id : null);

function toPhoneNumber(item: NumberItem): PhoneNumber {
  const imported = item.phone_number_type === 'custom';
  return {
    phone_number: item.phone_number,
    phone_number_pretty: prettyNumber(item.phone_number),
    phone_number_type: item.phone_number_type,
    provider: item.provider,
    number_provider: item.number_provider ?? null,
    nickname: item.nickname ?? null,
    inbound_agents: item.inbound_agents ?? null,
    outbound_agents: item.outbound_agents ?? null,
    inbound_sms_agents: item.inbound_sms_agents ?? null,
    outbound_sms_agents: item.outbound_sms_agents ?? null,
    inbound_agent_id: onlyAgent(item.inbound_agents),
    outbound_agent_id: onlyAgent(item.outbound_agents),
    inbound_agent_version: item.inbound_agent_version ?? null,
    outbound_agent_version: item.outbound_agent_version ?? null,
    inbound_webhook_url: item.inbound_webhook_url ?? null,
    allowed_inbound_country_list: item.allowed_inbound_country_list ?? null,
    allowed_outbound_country_list: item.allowed_outbound_country_list ?? null,
    allowed_inbound_addresses: item.allowed_inbound_addresses ?? null,
    effective_inbound_addresses: inboundAddressesFor(item),
    inbound_address_source: item.allowed_inbound_addresses?.length
      ? 'allowed_inbound_addresses'
      : item.provider === 'twilio'
        ? 'carrier_signalling'
        : 'termination_uri',
    cps_limit: cpsLimitFor(item),
    fallback_number: item.fallback_number ?? null,
    ...(item.area_code !== undefined ? { area_code: item.area_code } : {}),
    sip_outbound_trunk_config: imported
      ? { termination_uri: item.termination_uri ?? null, auth_username: item.auth_username ?? null, transport: item.transport ?? 'TCP' }
      : null,
    provisioning_status: item.provisioning_status,
    created_timestamp: item.created_timestamp,
    last_modification_timestamp: item.last_modification_timestamp,
  };
}

// ---------------------------------------------------------------------------------------
// Reading

export async function getPhoneNumber(workspaceId: string, phoneNumber: string): Promise<PhoneNumber> {
  return toPhoneNumber(await phoneNumbers.mustGet(workspaceId, phoneNumber));
}

export async function listPhoneNumbers(
  workspaceId: string,
  options: { limit: number; pagination_key?: string; sort_order: 'ascending' | 'descending' },
): Promise<{ has_more: boolean; items: PhoneNumber[]; pagination_key?: string }> {
  const items = (await listNumberItems(workspaceId)).sort(
    (a, b) => a.created_timestamp - b.created_timestamp || (a.phone_number < b.phone_number ? -1 : 1),
  );
  if (options.sort_order === 'descending') items.reverse();
  let start = 0;
  if (options.pagination_key !== undefined) {
    const index = items.findIndex((item) => item.phone_number === options.pagination_key);
    if (index === -1) throw invalidPaginationKey();
    start = index + 1;
  }
  const page = items.slice(start, start + options.limit);
  const hasMore = start + options.limit < items.length;
  const last = page.at(-1);
  return { has_more: hasMore, items: page.map(toPhoneNumber), ...(hasMore && last ? { pagination_key: last.phone_number } : {}) };
}

// ---------------------------------------------------------------------------------------
// Fields

type FieldInput = Omit<UpdatePhoneNumberInput, 'termination_uri' | 'auth_username' | 'auth_password' | 'transport' | 'provider'>;

const SIMPLE_FIELDS = [
  'nickname',
  'inbound_agent_version',
  'outbound_agent_version',
  'inbound_webhook_url',
  'allowed_inbound_country_list',
  'allowed_outbound_country_list',
  'allowed_inbound_addresses',
  'cps_limit',
  'fallback_number',
] as const satisfies readonly (keyof FieldInput & keyof NumberItem)[];

/** The fields a request sends, applied to a stored number (null removes); which directions changed. */
function applyFields(item: NumberItem, input: FieldInput): { next: NumberItem; touched: Set<Direction | SmsDirection> } {
  const next: Record<string, unknown> = { ...item };
  const touched = new Set<Direction | SmsDirection>();
  for (const direction of SMS_DIRECTIONS) {
    const entries = input[`${direction}_agents`];
    if (entries === undefined) continue;
    touched.add(direction);
    if (entries === null || entries.length === 0) delete next[`${direction}_agents`];
    else next[`${direction}_agents`] = entries;
  }
  for (const field of SIMPLE_FIELDS) {
    const value = input[field];
    if (value === undefined) continue;
    if (value === null) delete next[field];
    else next[field] = value;
  }
  for (const direction of DIRECTIONS) {
    const list = input[`${direction}_agents`];
    const single = input[`${direction}_agent_id`];
    if (list !== undefined && single !== undefined) {
      throw badRequest(`${direction}_agent_id: Send ${direction}_agents or ${direction}_agent_id, not both`);
    }
    const entries = single !== undefined ? (single === null ? null : [{ agent_id: single, weight: 1 }]) : list;
    if (entries !== undefined) {
      touched.add(direction);
      if (entries === null || entries.length === 0) delete next[`${direction}_agents`];
      else next[`${direction}_agents`] = entries;
    }
    if (input[`${direction}_agent_version`] !== undefined) touched.add(direction);
  }
  if (next.fallback_number !== undefined && next.fallback_number === item.phone_number) {
    throw badRequest('fallback_number: Must be another number than the number itself');
  }
  return { next: next as unknown as NumberItem, touched };
}

/**
 * Every agent the touched directions name must exist in the workspace (400 naming the
 * field), each version reference (the entry's pin, else the number's binding, else the
 * latest) must resolve to a version of it, and that version must be able to run (a draft
 * may run an incomplete conversation flow: 400 naming the entry and every problem).
 */
async function checkAgents(workspaceId: string, item: NumberItem, touched: Iterable<Direction | SmsDirection>): Promise<void> {
  const checks = [...touched].flatMap((direction) =>
    direction === 'inbound_sms' || direction === 'outbound_sms'
      ? (item[`${direction}_agents`] ?? []).map((entry, index) => checkSmsEntry(workspaceId, direction, entry, index))
      : (item[`${direction}_agents`] ?? []).map((entry, index) => checkEntry(workspaceId, item, direction, entry, index)),
  );
  // All at once; the first problem in field order is the one reported.
  const failed = (await Promise.allSettled(checks)).find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
}

async function checkEntry(workspaceId: string, item: NumberItem, direction: Direction, entry: AgentEntry, index: number): Promise<void> {
  const field = `${direction}_agents.${index}`;
  try {
    await getHead(workspaceId, 'agent', entry.agent_id);
  } catch (error) {
    if (error instanceof NotFound) throw badRequest(`${field}.agent_id: Agent ${entry.agent_id} not found`);
    throw error;
  }
  const reference = entry.agent_version ?? item[`${direction}_agent_version`];
  try {
    await assertRunnable(workspaceId, entry.agent_id, reference);
  } catch (error) {
    if (error instanceof NotFound) {
      const named = entry.agent_version !== undefined ? `${field}.agent_version` : `${direction}_agent_version`;
      throw badRequest(`${named}: ${error.message}`);
    }
    if (error instanceof Invalid) throw badRequest(`${field}: ${error.message}`);
    throw error;
  }
}

/**
 * An SMS agent entry: a chat agent of the workspace whose version (the entry's pin, else
 * the latest) can run. Chat agents take no reference items (not done yet: deleting a chat
 * agent a number names for SMS is not refused; an SMS to it then gets no answer).
 */
async function checkSmsEntry(workspaceId: string, direction: SmsDirection, entry: AgentEntry, index: number): Promise<void> {
  const field = `${direction}_agents.${index}`;
  try {
    await assertRunnable(workspaceId, entry.agent_id, entry.agent_version);
  } catch (error) {
    if (error instanceof NotFound) throw badRequest(`${entry.agent_version !== undefined ? `${field}.agent_version` : `${field}.agent_id`}: ${error.message}`);
    if (error instanceof Invalid) throw badRequest(`${field}: ${error.message}`);
    throw error;
  }
}

const agentsOf = (item: Pick<NumberItem, 'inbound_agents' | 'outbound_agents'>) =>
  new Set([...(item.inbound_agents ?? []), ...(item.outbound_agents ?? [])].map((entry) => entry.agent_id));

const referrer = (phoneNumber: string): AgentReferrer => ({ type: 'phone_number', id: phoneNumber });

function referenceChanges(workspaceId: string, before: Set<string>, after: Set<string>, phoneNumber: string): TransactOp[] {
  return [
    ...[...before].filter((id) => !after.has(id)).flatMap((id) => removeAgentReferenceItems(workspaceId, 'agent', id, referrer(phoneNumber))),
    ...[...after].filter((id) => !before.has(id)).flatMap((id) => addAgentReferenceItems(workspaceId, 'agent', id, referrer(phoneNumber))),
  ];
}

export const passwordContext = (workspaceId: string, phoneNumber: string) => recordContext(workspaceId, `phone_number#${phoneNumber}`);

function terminationProvider(terminationUri: string | undefined, requested?: 'twilio' | 'custom'): 'twilio' | 'custom' {
  if (requested === 'twilio') return 'twilio';
  const host = terminationUri ? sipUriHost(terminationUri) : undefined;
  return host && isTwilioTerminationHost(host) ? 'twilio' : 'custom';
}

// ---------------------------------------------------------------------------------------
// Writing

const alreadyExists = (phoneNumber: string) => conflict(`${phoneNumber} already exists`);

async function assertUnclaimed(phoneNumber: string): Promise<void> {
  if (await phoneNumberClaims.get(phoneNumber)) throw alreadyExists(phoneNumber);
}

async function transact(ops: TransactOp[], onCondition: (index: number) => ApiError): Promise<void> {
  try {
    await table.transact(ops);
  } catch (error) {
    if (error instanceof TransactionCancelled) {
      const failed = error.failedAt[0];
      if (failed !== undefined) throw onCondition(failed);
      throw conflict('The phone number was changed by another request; retry');
    }
    throw error;
  }
}

/** Writes a new number: its item and its global claim, both conditional, with its agent references. */
async function insertNumber(workspaceId: string, item: NumberItem): Promise<void> {
  await transact(
    [
      phoneNumbers.createOp(item, workspaceId, item.phone_number),
      phoneNumberClaims.createOp({ workspace_id: workspaceId, phone_number: item.phone_number }, item.phone_number),
      ...referenceChanges(workspaceId, new Set(), agentsOf(item), item.phone_number),
    ],
    (index) =>
      index <= 1 ? alreadyExists(item.phone_number) : conflict('An agent of this number was deleted meanwhile; retry'),
  );
}

function baseItem(workspaceId: string, phoneNumber: string, nowMs: number): NumberItem {
  return {
    ...phoneNumbers.key(workspaceId, phoneNumber),
    workspace_id: workspaceId,
    phone_number: phoneNumber,
    phone_number_type: 'custom',
    provider: 'custom',
    provisioning_status: 'provisioned',
    revision: 0,
    created_timestamp: nowMs,
    last_modification_timestamp: nowMs,
  };
}

export async function importPhoneNumber(workspaceId: string, input: ImportPhoneNumberInput, nowMs = Date.now()): Promise<PhoneNumber> {
  const { phone_number, termination_uri, sip_trunk_auth_username, sip_trunk_auth_password, transport, provider, ...fields } = input;
  assertNotMasked('sip_trunk_auth_password', sip_trunk_auth_password);
  const { next, touched } = applyFields(baseItem(workspaceId, phone_number, nowMs), fields);
  const item: NumberItem = {
    ...next,
    provider: terminationProvider(termination_uri, provider),
    termination_uri,
    transport: transport ?? 'TCP',
    ...(sip_trunk_auth_username !== undefined ? { auth_username: sip_trunk_auth_username } : {}),
  };
  await checkAgents(workspaceId, item, touched);
  await assertUnclaimed(phone_number);
  if (sip_trunk_auth_password !== undefined) {
    item.auth_password_encrypted = await encryptSecret(sip_trunk_auth_password, passwordContext(workspaceId, phone_number));
  }
  await insertNumber(workspaceId, item);
  return toPhoneNumber(item);
}

/** Telephony rule 7: one trunk per workspace and carrier, created on first need. */
async function ensureTrunk(workspaceId: string, provider: TelephonyProvider): Promise<Trunk> {
  const key = providerTrunks.key(workspaceId, provider.name);
  const existing = await table.get<ProviderTrunkItem>(key);
  if (existing) return existing;
  const trunk = await provider.createTrunk(workspaceId, originationUri());
  const item: ProviderTrunkItem = { ...key, ...trunk, provider: provider.name, created_timestamp: Date.now() };
  try {
    await table.put({ Item: item, ConditionExpression: 'attribute_not_exists(pk)' });
    return trunk;
  } catch (error) {
    // A concurrent purchase created the workspace's trunk first: use that one.
    if (!(error instanceof ConditionFailed)) throw error;
    return (await table.get<ProviderTrunkItem>(key))!;
  }
}

async function providerFor(item: Pick<NumberItem, 'carrier'>): Promise<TelephonyProvider> {
  const provider = await telephonyProvider();
  if (item.carrier && provider.name !== item.carrier) {
    if (item.carrier === 'mock') return mockTelephonyProvider();
    throw provisioningFailed('Twilio is not configured (TWILIO_ACCOUNT_SID is not set); the number cannot be reached at its carrier');
  }
  return provider;
}

/** Twilio numbers use the platform's Twilio account; Telnyx has no adapter yet, so the offline mock answers for it. */
async function purchaseProvider(numberProvider: 'twilio' | 'telnyx'): Promise<TelephonyProvider> {
  if (numberProvider === 'twilio') return telephonyProvider();
  return mockTelephonyProvider();
}

async function releaseQuietly(provider: TelephonyProvider, workspaceId: string, held: HeldNumber): Promise<void> {
  try {
    await provider.release(workspaceId, held);
  } catch {
    // Best effort: the provider operation log shows the failed release.
  }
}

export async function createPhoneNumber(workspaceId: string, input: CreatePhoneNumberInput, nowMs = Date.now()): Promise<PhoneNumber> {
  const { phone_number, area_code, country_code, toll_free, number_provider, ...fields } = input;
  const draft = baseItem(workspaceId, phone_number ?? '+10000000000', nowMs);
  const { next, touched } = applyFields(draft, fields);
  await checkAgents(workspaceId, next, touched);
  if (phone_number) await assertUnclaimed(phone_number);

  const provider = await purchaseProvider(number_provider);
  const trunk = await ensureTrunk(workspaceId, provider);
  const held = await provider.purchase(workspaceId, {
    phoneNumber: phone_number,
    country: country_code,
    areaCode: area_code,
    tollFree: toll_free ?? false,
  });
  const item: NumberItem = {
    ...next,
    ...phoneNumbers.key(workspaceId, held.phoneNumber),
    phone_number: held.phoneNumber,
    phone_number_type: number_provider === 'twilio' ? 'retell-twilio' : 'retell-telnyx',
    provider: number_provider,
    number_provider,
    carrier: provider.name,
    provider_sid: held.providerSid,
    ...(area_code !== undefined ? { area_code } : {}),
  };
  if (item.fallback_number === item.phone_number) {
    await releaseQuietly(provider, workspaceId, held);
    throw badRequest('fallback_number: Must be another number than the number itself');
  }
  try {
    await provider.attach(workspaceId, trunk, held);
    await insertNumber(workspaceId, item);
  } catch (error) {
    await releaseQuietly(provider, workspaceId, held);
    throw error;
  }
  return toPhoneNumber(item);
}

async function replaceNumber(workspaceId: string, before: NumberItem, after: NumberItem): Promise<void> {
  await transact(
    [
      {
        Put: {
          Item: after,
          ConditionExpression: 'attribute_exists(pk) AND revision = :revision',
          ExpressionAttributeValues: { ':revision': before.revision },
        },
      },
      ...referenceChanges(workspaceId, agentsOf(before), agentsOf(after), after.phone_number),
    ],
    (index) =>
      index === 0
        ? conflict('The phone number was changed by another request; retry')
        : conflict('An agent of this number was deleted meanwhile; retry'),
  );
}

export async function updatePhoneNumber(
  workspaceId: string,
  phoneNumber: string,
  input: UpdatePhoneNumberInput,
  nowMs = Date.now(),
): Promise<PhoneNumber> {
  const before = await phoneNumbers.mustGet(workspaceId, phoneNumber);
  const { termination_uri, auth_username, transport, provider, ...fields } = input;
  // Phone numbers never answer their password, but a mask copied from a SIP trunk is still no password.
  const auth_password = unlessMasked(input.auth_password);
  const { next, touched } = applyFields(before, fields);
  const imported = before.phone_number_type === 'custom';
  const trunkFields = { termination_uri, auth_username, auth_password, transport, provider };
  const sentTrunkField = Object.entries(trunkFields).find(([, value]) => value !== undefined);
  if (!imported && sentTrunkField) {
    throw badRequest(`${sentTrunkField[0]}: Only imported numbers have a SIP trunk of their own`);
  }
  if (termination_uri !== undefined) next.termination_uri = termination_uri;
  if (transport !== undefined) next.transport = transport ?? 'TCP';
  if (auth_username !== undefined) {
    if (auth_username === null) delete next.auth_username;
    else next.auth_username = auth_username;
  }
  if (imported && (termination_uri !== undefined || provider !== undefined)) {
    next.provider = terminationProvider(next.termination_uri, provider);
  }
  await checkAgents(workspaceId, next, touched);
  if (auth_password === null) delete next.auth_password_encrypted;
  else if (auth_password !== undefined) {
    next.auth_password_encrypted = await encryptSecret(auth_password, passwordContext(workspaceId, phoneNumber));
  }
  next.revision = before.revision + 1;
  next.last_modification_timestamp = Math.max(nowMs, before.last_modification_timestamp);
  await replaceNumber(workspaceId, before, next);
  return toPhoneNumber(next);
}

export async function deletePhoneNumber(workspaceId: string, phoneNumber: string): Promise<void> {
  const item = await phoneNumbers.mustGet(workspaceId, phoneNumber);
  if (item.provider_sid) {
    const provider = await providerFor(item);
    await provider.release(workspaceId, { phoneNumber, providerSid: item.provider_sid });
  }
  await transact(
    [
      {
        Delete: {
          Key: phoneNumbers.key(workspaceId, phoneNumber),
          ConditionExpression: 'revision = :revision',
          ExpressionAttributeValues: { ':revision': item.revision },
        },
      },
      {
        Delete: {
          Key: phoneNumberClaims.key(phoneNumber),
          ConditionExpression: 'workspace_id = :ws',
          ExpressionAttributeValues: { ':ws': workspaceId },
        },
      },
      ...referenceChanges(workspaceId, agentsOf(item), new Set(), phoneNumber),
    ],
    () => conflict('The phone number was changed by another request; retry'),
  );
}

/** Provisions the number at its carrier again: the workspace's trunk (created if missing) and the number attached to it. */
export async function provisionPhoneNumber(workspaceId: string, phoneNumber: string, nowMs = Date.now()): Promise<PhoneNumber> {
  const item = await phoneNumbers.mustGet(workspaceId, phoneNumber);
  let status: NumberItem['provisioning_status'] = 'provisioned';
  let failure: unknown;
  if (item.provider_sid) {
    try {
      const provider = await providerFor(item);
      const trunk = await ensureTrunk(workspaceId, provider);
      await provider.attach(workspaceId, trunk, { phoneNumber, providerSid: item.provider_sid });
    } catch (error) {
      status = 'failed';
      failure = error;
    }
  }
  const updated = await table.update<NumberItem>({
    Key: phoneNumbers.key(workspaceId, phoneNumber),
    UpdateExpression: 'SET provisioning_status = :status, last_modification_timestamp = :now ADD revision :one',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':status': status, ':now': Math.max(nowMs, item.last_modification_timestamp), ':one': 1 },
    ReturnValues: 'ALL_NEW',
  });
  if (failure !== undefined) {
    if (failure instanceof VendorFailed) throw failure;
    if (failure instanceof ApiError) throw provisioningFailed(`Provisioning failed: ${failure.message}`);
    throw failure;
  }
  return toPhoneNumber(updated!);
}

// ---------------------------------------------------------------------------------------
// Search

export async function searchPhoneNumbers(
  workspaceId: string,
  query: { country?: string; country_code?: string; area_code?: number; contains?: string; toll_free?: 'true' | 'false'; number_provider: 'twilio' | 'telnyx'; limit: number },
): Promise<AvailableNumber[]> {
  const country = query.country ?? query.country_code ?? 'US';
  const tollFree = query.toll_free === 'true';
  const provider = await purchaseProvider(query.number_provider);
  const found = await provider.search(workspaceId, {
    country,
    areaCode: query.area_code,
    contains: query.contains,
    tollFree,
    limit: query.limit,
  });
  return found.slice(0, query.limit).map((number) => {
    const areaCode = country === 'US' || country === 'CA' ? Number(number.phone_number.slice(2, 5)) : undefined;
    return {
      phone_number: number.phone_number,
      phone_number_pretty: prettyNumber(number.phone_number),
      country,
      ...(areaCode !== undefined ? { area_code: areaCode } : {}),
      ...(number.locality ? { locality: number.locality } : {}),
      ...(number.region ? { region: number.region } : {}),
      toll_free: tollFree,
      number_provider: query.number_provider,
    };
  });
}

// ---------------------------------------------------------------------------------------
// Version bindings

async function bindingOf(workspaceId: string, item: NumberItem): Promise<PhoneNumberBinding> {
  const resolve = async (direction: Direction) =>
    Promise.all(
      (item[`${direction}_agents`] ?? []).map(async (entry) => {
        const reference = entry.agent_version ?? item[`${direction}_agent_version`] ?? 'latest';
        let resolved: number | null = null;
        try {
          resolved = (await resolveAgentVersion(workspaceId, entry.agent_id, String(reference))).version;
        } catch (error) {
          if (!(error instanceof NotFound)) throw error;
        }
        return { agent_id: entry.agent_id, weight: entry.weight, agent_version: reference, resolved_version: resolved };
      }),
    );
  return {
    phone_number: item.phone_number,
    inbound_agent_version: item.inbound_agent_version ?? null,
    outbound_agent_version: item.outbound_agent_version ?? null,
    inbound_agents: await resolve('inbound'),
    outbound_agents: await resolve('outbound'),
  };
}

export async function getPhoneNumberBinding(workspaceId: string, phoneNumber: string): Promise<PhoneNumberBinding> {
  return bindingOf(workspaceId, await phoneNumbers.mustGet(workspaceId, phoneNumber));
}

export async function putPhoneNumberBinding(
  workspaceId: string,
  phoneNumber: string,
  input: { inbound_agent_version?: VersionReference | null; outbound_agent_version?: VersionReference | null },
): Promise<PhoneNumberBinding> {
  await updatePhoneNumber(workspaceId, phoneNumber, input);
  return getPhoneNumberBinding(workspaceId, phoneNumber);
}

// ---------------------------------------------------------------------------------------
// Connection test (telephony rule 8)

/** The SIP URI and transport an imported number's outbound calls go to; 400 for numbers without a trunk of their own. */
export async function terminationOf(workspaceId: string, phoneNumber: string): Promise<{ uri: string; transport: 'tcp' | 'udp' | 'tls' }> {
  const item = await phoneNumbers.mustGet(workspaceId, phoneNumber);
  if (!item.termination_uri) {
    throw badRequest(`Phone number ${phoneNumber} has no termination URI: only imported numbers have a SIP trunk to test`);
  }
  const uri = /^sips?:/i.test(item.termination_uri) ? item.termination_uri : `sip:${item.termination_uri}`;
  return { uri, transport: (item.transport ?? 'TCP').toLowerCase() as 'tcp' | 'udp' | 'tls' };
}
