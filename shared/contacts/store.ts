import { keys } from '../platform/store/keys.ts';
import { notFound } from '../platform/errors.ts';
import { defineEntity, table, type TransactOp } from '../platform/store/table.ts';
import type { CustomFieldValue } from './schemas.ts';

/*
 * The contacts domain's items (docs/data-model.md, docs/contacts.md):
 * - the contact, `WS#<ws>#CONTACT` / `CONTACT#<id>` (time-ordered IDs: the partition lists
 *   newest first), with `revision` for conditional rewrites;
 * - its memory, `MEMORY#<id>` in the same partition (deleted with it);
 * - the claim on its number, `CONTACTPHONE#<ws>#<e164>` (holds `contact_id`), written in the
 *   same transaction as the contact, so a number belongs to one contact per workspace;
 * - per workspace, in its configuration partition: the custom field registry (a string set),
 *   the field mappings, the memory settings and the backfill job.
 * Conversations are the calls' (and later chats') gsi2 entries, read here by party.
 */

export interface ContactItem {
  pk: string;
  sk: string;
  type: 'contact';
  contact_id: string;
  workspace_id: string;
  phone_number: string;
  first_name?: string;
  last_name?: string;
  email?: string;
  tags: string[];
  do_not_call: boolean;
  external_id?: string;
  custom_fields: Record<string, CustomFieldValue>;
  created_timestamp: number;
  user_modified_timestamp: number;
  revision: number;
}

export interface MemoryItem {
  pk: string;
  sk: string;
  contact_id: string;
  memory: string;
  user_modified_timestamp: number;
  revision: number;
}

export const getContactItem = (workspaceId: string, contactId: string) => table.get<ContactItem>(keys.contact(workspaceId, contactId));

export const getPhoneClaim = (workspaceId: string, e164: string) =>
  table.get<{ contact_id: string }>(keys.contactPhoneClaim(workspaceId, e164));

const claimPut = (workspaceId: string, e164: string, contactId: string): TransactOp => ({
  Put: {
    Item: { ...keys.contactPhoneClaim(workspaceId, e164), contact_id: contactId, workspace_id: workspaceId, phone_number: e164 },
    ConditionExpression: 'attribute_not_exists(pk)',
  },
});

/** ADD of the custom field names to the registry (only names not known yet: it is one item a workspace). */
const registryAdd = (workspaceId: string, names: readonly string[]): TransactOp[] =>
  names.length === 0
    ? []
    : [
        {
          Update: {
            Key: keys.contactFieldRegistry(workspaceId),
            UpdateExpression: 'ADD #names :names',
            ExpressionAttributeNames: { '#names': 'names' },
            ExpressionAttributeValues: { ':names': new Set(names) },
          },
        },
      ];

/**
 * A new contact with its claim (and new field names): operation 0 is the contact, 1 the
 * claim. A TransactionCancelled failing at 1 means the number is taken.
 */
export async function putNewContact(item: ContactItem, newFieldNames: readonly string[]): Promise<void> {
  await table.transact([
    { Put: { Item: item, ConditionExpression: 'attribute_not_exists(pk)' } },
    claimPut(item.workspace_id, item.phone_number, item.contact_id),
    ...registryAdd(item.workspace_id, newFieldNames),
  ]);
}

/**
 * New contacts with their claims in one transaction (imports): operations 2i and 2i+1 are
 * contact i and its claim, then the registry's new names. One number already taken cancels
 * it all (the caller writes those contacts one by one instead). At most 49 contacts.
 */
export async function putNewContacts(items: readonly ContactItem[], newFieldNames: readonly string[]): Promise<void> {
  const first = items[0];
  if (!first) return;
  await table.transact([
    ...items.flatMap((item): TransactOp[] => [
      { Put: { Item: item, ConditionExpression: 'attribute_not_exists(pk)' } },
      claimPut(item.workspace_id, item.phone_number, item.contact_id),
    ]),
    ...registryAdd(first.workspace_id, newFieldNames),
  ]);
}

/** Which of `e164s` have a contact's claim in the workspace (BatchGetItem, 100 at a time). */
export async function claimedNumbers(workspaceId: string, e164s: readonly string[]): Promise<Set<string>> {
  const claims = await table.batchGet<{ phone_number: string }>(e164s.map((e164) => keys.contactPhoneClaim(workspaceId, e164)));
  return new Set(claims.map((claim) => claim.phone_number));
}

/**
 * Rewrites a contact read at `previous.revision`. When the number changes, the old claim is
 * deleted (it must still be this contact's) and the new one put, in the same transaction:
 * operation 0 is the contact, 1 the old claim, 2 the new claim.
 */
export async function replaceContact(previous: ContactItem, next: ContactItem, newFieldNames: readonly string[]): Promise<void> {
  const moves = previous.phone_number !== next.phone_number;
  await table.transact([
    {
      Put: {
        Item: next,
        ConditionExpression: 'attribute_exists(pk) AND revision = :revision',
        ExpressionAttributeValues: { ':revision': previous.revision },
      },
    },
    ...(moves
      ? [
          {
            Delete: {
              Key: keys.contactPhoneClaim(previous.workspace_id, previous.phone_number),
              ConditionExpression: 'contact_id = :id',
              ExpressionAttributeValues: { ':id': previous.contact_id },
            },
          },
          claimPut(next.workspace_id, next.phone_number, next.contact_id),
        ]
      : []),
    ...registryAdd(next.workspace_id, newFieldNames),
  ]);
}

/** Deletes the contact, its claim and its memory together (operation 0 is the contact). */
export async function deleteContactItems(item: ContactItem): Promise<void> {
  await table.transact([
    {
      Delete: {
        Key: keys.contact(item.workspace_id, item.contact_id),
        ConditionExpression: 'revision = :revision',
        ExpressionAttributeValues: { ':revision': item.revision },
      },
    },
    {
      Delete: {
        Key: keys.contactPhoneClaim(item.workspace_id, item.phone_number),
        ConditionExpression: 'contact_id = :id',
        ExpressionAttributeValues: { ':id': item.contact_id },
      },
    },
    { Delete: { Key: keys.contactMemory(item.workspace_id, item.contact_id) } },
  ]);
}

/** One page of the workspace's contacts, newest first unless ascending, after a contact ID. */
export async function queryContacts(input: {
  workspaceId: string;
  ascending: boolean;
  afterContactId?: string;
  limit: number;
}): Promise<{ items: ContactItem[]; more: boolean }> {
  const partition = keys.contacts(input.workspaceId);
  const page = await table.queryPage<ContactItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
    ScanIndexForward: input.ascending,
    Limit: input.limit,
    ExclusiveStartKey: input.afterContactId ? keys.contact(input.workspaceId, input.afterContactId) : undefined,
  });
  return { items: page.items, more: page.lastKey !== undefined };
}

export async function customFieldNames(workspaceId: string): Promise<string[]> {
  const item = await table.get<{ names?: Set<string> }>(keys.contactFieldRegistry(workspaceId));
  return [...(item?.names ?? [])].sort();
}

// ---------------------------------------------------------------------------------------
// Per-workspace settings items

export interface MappingsItem {
  mappings: { external_field_name: string; field_name: string }[];
  user_modified_timestamp: number;
}

export const getMappings = (workspaceId: string) => table.get<MappingsItem>(keys.contactFieldMappings(workspaceId));
export const putMappings = (workspaceId: string, item: MappingsItem) =>
  table.put({ Item: { ...keys.contactFieldMappings(workspaceId), ...item } });

export interface MemorySettingsItem {
  enabled: boolean;
  include_contact_fields: boolean;
  include_memory: boolean;
  user_modified_timestamp: number;
}

export const getMemorySettings = (workspaceId: string, consistent = true) =>
  table.get<MemorySettingsItem>(keys.contactMemorySettings(workspaceId), { consistent });
export const putMemorySettings = (workspaceId: string, item: MemorySettingsItem) =>
  table.put({ Item: { ...keys.contactMemorySettings(workspaceId), ...item } });

// ---------------------------------------------------------------------------------------
// Memory

export const getMemoryItem = (workspaceId: string, contactId: string) => table.get<MemoryItem>(keys.contactMemory(workspaceId, contactId));

/**
 * Writes the memory while the contact exists (a ConditionCheck on it: operation 0), and only
 * over the revision read (operation 1), so two appends never lose one another.
 */
export async function putMemory(workspaceId: string, item: Omit<MemoryItem, 'pk' | 'sk'>, previousRevision: number | undefined): Promise<void> {
  await table.transact([
    { ConditionCheck: { Key: keys.contact(workspaceId, item.contact_id), ConditionExpression: 'attribute_exists(pk)' } },
    {
      Put: {
        Item: { ...keys.contactMemory(workspaceId, item.contact_id), ...item },
        ConditionExpression: previousRevision === undefined ? 'attribute_not_exists(pk)' : 'revision = :revision',
        ExpressionAttributeValues: previousRevision === undefined ? undefined : { ':revision': previousRevision },
      },
    },
  ]);
}

// ---------------------------------------------------------------------------------------
// Conversations (gsi2, written by the calls domain on each call's item)

export interface PartyEntry {
  gsi2sk: string;
  type?: string;
  call_id?: string;
  chat_id?: string;
  direction?: 'inbound' | 'outbound';
  call_status?: string;
  created_timestamp?: number;
  start_timestamp?: number;
  duration_ms?: number;
  disconnection_reason?: string;
  user_sentiment?: string;
  call_successful?: boolean;
  call_analysis?: { call_summary?: string; user_sentiment?: string; call_successful?: boolean };
  workspace_id?: string;
}

/** A page of the conversations with one party, newest first, strictly before `before`. */
export async function queryPartyConversations(input: {
  workspaceId: string;
  e164: string;
  before?: string;
  limit: number;
}): Promise<{ items: PartyEntry[]; more: boolean }> {
  const values: Record<string, unknown> = { ':pk': keys.partyConversations(input.workspaceId, input.e164).gsi2pk };
  let condition = 'gsi2pk = :pk';
  if (input.before) {
    values[':before'] = input.before;
    condition += ' AND gsi2sk < :before';
  }
  const page = await table.queryPage<PartyEntry>({
    IndexName: 'gsi2',
    KeyConditionExpression: condition,
    ExpressionAttributeValues: values,
    ScanIndexForward: false,
    Limit: input.limit + 1,
  });
  return { items: page.items.slice(0, input.limit), more: page.items.length > input.limit };
}

// ---------------------------------------------------------------------------------------
// The backfill job (one per workspace at a time)

export interface BackfillJobItem {
  job_id: string;
  status: 'queued' | 'running' | 'idle';
  triggered_by: 'manual';
  backfill_attributes: string[];
  call_filter?: unknown;
  succeeded: number;
  skipped: number;
  failed: number;
  start_timestamp: number;
  end_timestamp?: number;
  /** Moved by every step; a job whose heartbeat is older than the lease may be started again. */
  heartbeat_timestamp: number;
}

const backfillJobs = defineEntity<BackfillJobItem & { pk: string; sk: string }, [workspaceId: string]>({
  key: keys.contactBackfillJob,
  notFound: () => notFound('No contact backfill job'),
});

export const getBackfillJob = (workspaceId: string): Promise<BackfillJobItem | undefined> => backfillJobs.get(workspaceId);

/**
 * Starts a job unless one is queued or running with a recent heartbeat: the write is
 * conditional, so two concurrent starts queue one job. Answers false when one is active.
 */
export async function startBackfillJob(workspaceId: string, item: BackfillJobItem, staleBeforeMs: number): Promise<boolean> {
  return backfillJobs.putIf(item, [workspaceId], {
    expression: 'attribute_not_exists(pk) OR #status = :idle OR heartbeat_timestamp < :stale',
    names: { '#status': 'status' },
    values: { ':idle': 'idle', ':stale': staleBeforeMs },
  });
}

/** Records a step's counts on the job it belongs to (conditional on its ID: a stale message changes nothing). */
export async function recordBackfillStep(
  workspaceId: string,
  jobId: string,
  change: { succeeded: number; skipped: number; failed: number; done: boolean; nowMs: number },
): Promise<boolean> {
  const updated = await backfillJobs.update([workspaceId], {
    UpdateExpression: `SET #status = :status, heartbeat_timestamp = :now${change.done ? ', end_timestamp = :now' : ''} ADD succeeded :s, skipped :k, failed :f`,
    ConditionExpression: 'job_id = :job AND #status <> :idle',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: {
      ':status': change.done ? 'idle' : 'running',
      ':now': change.nowMs,
      ':s': change.succeeded,
      ':k': change.skipped,
      ':f': change.failed,
      ':job': jobId,
      ':idle': 'idle',
    },
  });
  return updated !== undefined;
}
