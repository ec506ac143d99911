import { setTimeout as sleep } from 'node:timers/promises';
import { badRequest, Conflict, conflict, invalidPaginationKey, NotFound, notFound } from '../platform/errors.ts';
import { parseOrThrow } from '../platform/http/validation.ts';
import { idPattern, newTimeOrderedId } from '../platform/ids.ts';
import { keys } from '../platform/store/keys.ts';
import { TransactionCancelled } from '../platform/store/table.ts';
import {
  BUILT_IN_FIELDS,
  CreateContactBody,
  type Contact,
  type ContactFilterCriteria,
  type ConversationItem,
  type CreateContactInput,
  type CustomFieldValue,
  type FieldMappingsInput,
  type ListContactsInput,
  type UpdateContactInput,
} from './schemas.ts';
import {
  customFieldNames,
  deleteContactItems,
  getContactItem,
  getMappings,
  putMappings,
  putNewContact,
  putNewContacts,
  queryContacts,
  queryPartyConversations,
  replaceContact,
  type ContactItem,
  type PartyEntry,
} from './store.ts';
import { contactByPhone } from './lookups/index.ts';

/*
 * Contacts (docs/contacts.md): one contact per phone number and workspace, held by a claim
 * item written in the contact's own transaction. Concurrent writers of one number race on
 * that claim: DynamoDB cancels the losers (a failed condition, or a transaction conflict
 * that is retried until it becomes one), so exactly one create succeeds and the rest are
 * 409 `A contact with <phone_number> already exists`.
 */

/** Transactions that lose a race (TransactionConflict) or a revision are tried again, this many times in all. */
const MAX_ATTEMPTS = 10;

const contactExists = (e164: string) => conflict(`A contact with ${e164} already exists`);
export const contactNotFound = (contactId: string) => notFound(`Contact ${contactId} not found`);

const backoff = (attempt: number) => sleep(5 + Math.floor(Math.random() * 20 * (attempt + 1)));

function toContact(item: ContactItem): Contact {
  return {
    contact_id: item.contact_id,
    org_id: item.workspace_id,
    phone_number: item.phone_number,
    ...(item.first_name !== undefined ? { first_name: item.first_name } : {}),
    ...(item.last_name !== undefined ? { last_name: item.last_name } : {}),
    ...(item.email !== undefined ? { email: item.email } : {}),
    tags: item.tags,
    do_not_call: item.do_not_call,
    ...(item.external_id !== undefined ? { external_id: item.external_id } : {}),
    custom_fields: item.custom_fields,
    created_timestamp: item.created_timestamp,
    user_modified_timestamp: item.user_modified_timestamp,
  };
}

/** Custom fields after a write: a null value clears the field. */
function mergedCustomFields(
  current: Record<string, CustomFieldValue>,
  change: Record<string, CustomFieldValue | null> | undefined,
): Record<string, CustomFieldValue> {
  const next = { ...current };
  for (const [name, value] of Object.entries(change ?? {})) {
    if (value === null) delete next[name];
    else next[name] = value;
  }
  return next;
}

/** Names the registry does not hold yet (the registry is one item: only new names write it). */
async function newFieldNames(workspaceId: string, fields: Record<string, unknown>): Promise<string[]> {
  const names = Object.keys(fields);
  if (names.length === 0) return [];
  const known = new Set(await customFieldNames(workspaceId));
  return names.filter((name) => !known.has(name));
}

const mustGetContact = async (workspaceId: string, contactId: string): Promise<ContactItem> => {
  const item = await getContactItem(workspaceId, contactId);
  if (!item) throw contactNotFound(contactId);
  return item;
};

// ---------------------------------------------------------------------------------------
// Create, read, update, delete

/** A new contact's item, not written yet (createContactItem writes one; imports write many at once). */
function newContactItem(workspaceId: string, input: CreateContactInput, nowMs = Date.now()): ContactItem {
  const customFields = mergedCustomFields({}, input.custom_fields);
  const contactId = newTimeOrderedId('contact', nowMs);
  const item: ContactItem = {
    pk: '',
    sk: '',
    type: 'contact',
    contact_id: contactId,
    workspace_id: workspaceId,
    phone_number: input.phone_number,
    ...(input.first_name !== undefined ? { first_name: input.first_name } : {}),
    ...(input.last_name !== undefined ? { last_name: input.last_name } : {}),
    ...(input.email !== undefined ? { email: input.email } : {}),
    tags: input.tags ?? [],
    do_not_call: input.do_not_call ?? false,
    ...(input.external_id !== undefined ? { external_id: input.external_id } : {}),
    custom_fields: customFields,
    created_timestamp: nowMs,
    user_modified_timestamp: nowMs,
    revision: 1,
  };
  return Object.assign(item, keys.contact(workspaceId, contactId));
}

async function createContactItem(workspaceId: string, input: CreateContactInput, nowMs = Date.now()): Promise<ContactItem> {
  const item = newContactItem(workspaceId, input, nowMs);
  for (let attempt = 0; ; attempt++) {
    try {
      await putNewContact(item, await newFieldNames(workspaceId, item.custom_fields));
      return item;
    } catch (error) {
      if (!(error instanceof TransactionCancelled)) throw error;
      if (error.failedAt.includes(1)) throw contactExists(input.phone_number);
      // A race with another writer of the claim (or of the field registry): try again, and
      // the claim's condition decides. Still racing after every attempt: the number is being
      // written by someone else right now.
      if (attempt + 1 >= MAX_ATTEMPTS) throw contactExists(input.phone_number);
      await backoff(attempt);
    }
  }
}

/**
 * Creates new contacts in one transaction, each with its claim (imports, for numbers that
 * had no contact a moment ago). Answers false, writing nothing, when the transaction was
 * cancelled (a number taken meanwhile, or a race): the caller then writes them one by one.
 */
export async function createContactsTogether(workspaceId: string, inputs: readonly CreateContactInput[], nowMs = Date.now()): Promise<boolean> {
  const items = inputs.map((input) => newContactItem(workspaceId, input, nowMs));
  const names = new Set(items.flatMap((item) => Object.keys(item.custom_fields)));
  try {
    await putNewContacts(items, await newFieldNames(workspaceId, Object.fromEntries([...names].map((name) => [name, true]))));
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled) return false;
    throw error;
  }
}

export async function createContact(workspaceId: string, input: CreateContactInput): Promise<Contact> {
  return toContact(await createContactItem(workspaceId, input));
}

export async function getContact(workspaceId: string, contactId: string): Promise<Contact> {
  return toContact(await mustGetContact(workspaceId, contactId));
}

export async function getContactByPhone(workspaceId: string, phoneNumber: string): Promise<Contact> {
  const item = await contactByPhone(workspaceId, phoneNumber);
  if (!item) throw notFound(`No contact with phone number ${phoneNumber}`);
  return toContact(item);
}

/** Applies `input` to a contact (read, rewrite conditional on its revision; retried on a race). */
async function updateContactItem(
  workspaceId: string,
  contactId: string,
  input: UpdateContactInput,
  options: { mergeTags?: boolean } = {},
): Promise<ContactItem> {
  for (let attempt = 0; ; attempt++) {
    const previous = await mustGetContact(workspaceId, contactId);
    const next: ContactItem = {
      ...previous,
      revision: previous.revision + 1,
      user_modified_timestamp: Math.max(Date.now(), previous.user_modified_timestamp),
      custom_fields: mergedCustomFields(previous.custom_fields, input.custom_fields),
    };
    for (const field of ['phone_number', 'first_name', 'last_name', 'email', 'do_not_call', 'external_id'] as const) {
      if (input[field] !== undefined) (next as unknown as Record<string, unknown>)[field] = input[field];
    }
    if (input.tags !== undefined) next.tags = options.mergeTags ? [...new Set([...previous.tags, ...input.tags])] : input.tags;
    try {
      await replaceContact(previous, next, await newFieldNames(workspaceId, input.custom_fields ?? {}));
      return next;
    } catch (error) {
      if (!(error instanceof TransactionCancelled)) throw error;
      if (previous.phone_number !== next.phone_number && error.failedAt.includes(2)) throw contactExists(next.phone_number);
      if (attempt + 1 >= MAX_ATTEMPTS) {
        throw conflict(`Contact ${contactId} is being changed by another request; try again`);
      }
      await backoff(attempt);
    }
  }
}

export async function updateContact(workspaceId: string, contactId: string, input: UpdateContactInput): Promise<Contact> {
  return toContact(await updateContactItem(workspaceId, contactId, input));
}

/** Deletes a contact, its claim (the number is free again) and its memory, in one transaction. */
export async function deleteContact(workspaceId: string, contactId: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const item = await mustGetContact(workspaceId, contactId);
    try {
      await deleteContactItems(item);
      return;
    } catch (error) {
      if (!(error instanceof TransactionCancelled) || attempt + 1 >= MAX_ATTEMPTS) throw error;
      await backoff(attempt);
    }
  }
}

/**
 * Creates the contact of `fields.phone_number`, or updates the one that has it (the fields
 * given overwrite; with `mergeTags`, tags are added to the existing ones): for imports and
 * the backfill. Each write is one transaction with the number's claim, so a row is applied
 * whole or not at all, and two importers of one number never make two contacts.
 * `fields` is validated as create-contact's body (a bad row throws a 400 naming the field).
 */
export async function upsertContactByNumber(
  workspaceId: string,
  fields: CreateContactInput | Record<string, unknown>,
  options: { mergeTags?: boolean } = {},
): Promise<{ contact: Contact; created: boolean }> {
  const input = parseOrThrow(CreateContactBody, fields, 'contact');
  for (let attempt = 0; ; attempt++) {
    const existing = await contactByPhone(workspaceId, input.phone_number);
    try {
      if (existing) {
        const { phone_number: _same, ...change } = input;
        return { contact: toContact(await updateContactItem(workspaceId, existing.contact_id, change, options)), created: false };
      }
      return { contact: toContact(await createContactItem(workspaceId, input)), created: true };
    } catch (error) {
      // Created (or deleted) by someone else in between: look again.
      const raced = error instanceof Conflict || error instanceof NotFound;
      if (!raced || attempt + 1 >= MAX_ATTEMPTS) throw error;
    }
  }
}

// ---------------------------------------------------------------------------------------
// Lists

/** GET /list-contacts: the spec's array, newest first. */
export async function listContacts(workspaceId: string, limit: number): Promise<Contact[]> {
  const { items } = await queryContacts({ workspaceId, ascending: false, limit });
  return items.map(toContact);
}

const encodeKey = (contactId: string) => Buffer.from(contactId, 'utf8').toString('base64url');
function decodeKey(key: string): string {
  const contactId = /^[A-Za-z0-9_-]+$/.test(key) ? Buffer.from(key, 'base64url').toString('utf8') : '';
  if (!idPattern('contact').test(contactId)) throw invalidPaginationKey();
  return contactId;
}

const PAGE_READ = 200;

/**
 * retell-sdk's POST /list-contacts: filters and the search applied to the workspace's
 * contacts in creation order (newest first for `desc`; no contact has a conversation
 * timestamp yet, so every contact sorts as 0 and ties keep creation order). The
 * pagination key is the last contact answered (base64url).
 */
export async function listContactsPage(workspaceId: string, input: ListContactsInput) {
  const ascending = input.sort_order === 'asc';
  let after = input.pagination_key ? decodeKey(input.pagination_key) : undefined;
  let toSkip = input.skip ?? 0;
  const matched: ContactItem[] = [];
  for (;;) {
    const page = await queryContacts({ workspaceId, ascending, afterContactId: after, limit: PAGE_READ });
    for (const item of page.items) {
      if (!matches(item, input.filter_criteria, input.search_query)) continue;
      if (toSkip > 0) {
        toSkip--;
        continue;
      }
      matched.push(item);
    }
    if (!page.more || page.items.length === 0 || matched.length > input.limit) break;
    after = page.items.at(-1)!.contact_id;
  }
  const items = matched.slice(0, input.limit).map(toContact);
  const hasMore = matched.length > input.limit;
  return { items, has_more: hasMore, ...(hasMore ? { pagination_key: encodeKey(items.at(-1)!.contact_id) } : {}) };
}

type StringFilter = { op: 'eq' | 'ne' | 'sw' | 'ew' | 'co'; value: string };

function stringMatches(actual: unknown, filter: StringFilter): boolean {
  const text = actual === undefined || actual === null ? undefined : String(actual);
  switch (filter.op) {
    case 'eq':
      return text === filter.value;
    case 'ne':
      return text !== filter.value;
    case 'sw':
      return text !== undefined && text.startsWith(filter.value);
    case 'ew':
      return text !== undefined && text.endsWith(filter.value);
    case 'co':
      return text !== undefined && text.includes(filter.value);
  }
}

function numberMatches(actual: unknown, filter: { op: string; value: number | number[] }): boolean {
  if (typeof actual !== 'number') return filter.op === 'ne';
  const value = filter.value;
  if (Array.isArray(value)) return actual >= value[0]! && actual <= value[1]!;
  switch (filter.op) {
    case 'eq':
      return actual === value;
    case 'ne':
      return actual !== value;
    case 'gt':
      return actual > value;
    case 'ge':
      return actual >= value;
    case 'lt':
      return actual < value;
    default:
      return actual <= value;
  }
}

type AnyFilter = { type: string; op: string; value?: unknown };

function filterMatches(actual: unknown, filter: AnyFilter): boolean {
  switch (filter.type) {
    case 'string':
      return stringMatches(actual, filter as StringFilter);
    case 'number':
    case 'range':
      return numberMatches(actual, filter as { op: string; value: number | number[] });
    case 'boolean':
      return actual === filter.value;
    case 'enum': {
      const wanted = filter.value as string[];
      return Array.isArray(actual) ? actual.some((entry) => wanted.includes(String(entry))) : actual !== undefined && wanted.includes(String(actual));
    }
    default: // present
      return filter.op === 'pr' ? actual !== undefined && actual !== null && actual !== '' : actual === undefined || actual === null || actual === '';
  }
}

function matches(item: ContactItem, criteria: ContactFilterCriteria | undefined, search: string | undefined): boolean {
  if (criteria) {
    if (criteria.contact_id && !filterMatches(item.contact_id, criteria.contact_id)) return false;
    if (criteria.phone_number && !filterMatches(item.phone_number, criteria.phone_number)) return false;
    if (criteria.do_not_call && !filterMatches(item.do_not_call, criteria.do_not_call)) return false;
    if (criteria.external_id && !filterMatches(item.external_id, criteria.external_id)) return false;
    // Not tracked yet (docs/contacts.md): every contact's last conversation reads as 0.
    if (criteria.last_conversation_timestamp && !filterMatches(0, criteria.last_conversation_timestamp)) return false;
    if (criteria.tags && !filterMatches(item.tags, criteria.tags)) return false;
    for (const filter of criteria.custom_fields ?? []) {
      if (!filterMatches(item.custom_fields[filter.key], filter)) return false;
    }
  }
  if (search) {
    const needle = search.toLowerCase();
    const haystack = [item.phone_number, item.first_name, item.last_name, item.email, item.external_id, ...Object.values(item.custom_fields)];
    if (!haystack.some((value) => value !== undefined && String(value).toLowerCase().includes(needle))) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// Conversations

const PARTY_SORT_KEY = /^[0-9a-f]{12}#[a-z_]{1,40}[0-9a-f]{24}$/;

function toConversation(entry: PartyEntry): ConversationItem {
  const analysis = entry.call_analysis ?? {};
  const sentiment = entry.user_sentiment ?? analysis.user_sentiment;
  const successful = entry.call_successful ?? analysis.call_successful;
  return {
    type: entry.type === 'chat' ? 'chat' : 'call',
    ...(entry.call_id ? { call_id: entry.call_id } : {}),
    ...(entry.chat_id ? { chat_id: entry.chat_id } : {}),
    ...(entry.direction ? { direction: entry.direction } : {}),
    ...(entry.call_status ? { call_status: entry.call_status } : {}),
    start_timestamp: entry.start_timestamp ?? entry.created_timestamp,
    ...(entry.duration_ms !== undefined ? { duration_ms: entry.duration_ms } : {}),
    ...(entry.disconnection_reason ? { disconnection_reason: entry.disconnection_reason } : {}),
    ...(sentiment ? { sentiment } : {}),
    ...(successful !== undefined ? { successful } : {}),
    ...(analysis.call_summary ? { summary: analysis.call_summary } : {}),
  };
}

/**
 * The conversations with the contact's number (calls now; chats and SMS as they land),
 * newest first: one query of gsi2 by (workspace, number). `before` (or retell-sdk's
 * `pagination_key`) is the previous page's `next_before`.
 */
export async function listContactConversations(
  workspaceId: string,
  contactId: string,
  input: { limit: number; before?: string; pagination_key?: string },
) {
  const contact = await mustGetContact(workspaceId, contactId);
  const before = input.before ?? input.pagination_key;
  if (before !== undefined && !PARTY_SORT_KEY.test(before)) {
    throw input.before !== undefined ? badRequest('before: Must be the next_before of a previous page') : invalidPaginationKey();
  }
  const page = await queryPartyConversations({ workspaceId, e164: contact.phone_number, before, limit: input.limit });
  const nextBefore = page.more && page.items.length ? page.items.at(-1)!.gsi2sk : null;
  return {
    items: page.items.map(toConversation),
    has_more: page.more,
    next_before: nextBefore,
    ...(nextBefore ? { pagination_key: nextBefore } : {}),
  };
}

// ---------------------------------------------------------------------------------------
// Fields and mappings

export async function listContactFields(workspaceId: string) {
  return {
    built_in_fields: BUILT_IN_FIELDS.filter((field) => field !== 'memory'),
    custom_fields: await customFieldNames(workspaceId),
  };
}

export async function getFieldMappings(workspaceId: string) {
  const item = await getMappings(workspaceId);
  return { mappings: item?.mappings ?? [], user_modified_timestamp: item?.user_modified_timestamp ?? null };
}

export async function putFieldMappings(workspaceId: string, input: FieldMappingsInput) {
  const item = { mappings: input.mappings, user_modified_timestamp: Date.now() };
  await putMappings(workspaceId, item);
  return item;
}

