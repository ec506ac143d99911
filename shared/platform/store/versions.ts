import { badRequest, conflict, invalidPaginationKey, notFound, VersionNotFound } from '../errors.ts';
import { ConditionFailed, table, TransactionCancelled, type TransactOp } from './table.ts';
import { keys, type ItemKey, type VersionedKind } from './keys.ts';
import { queryAll } from './query.ts';

/**
 * Versioned resources (agents, LLMs, later flows and chat agents), as the compatible API
 * versions them: every version is a draft or published; drafts are edited in place,
 * publishing freezes a draft for good, and a new draft can be branched from any version.
 * The head item keeps the latest version's record so listings are one query.
 */
export interface VersionRecord {
  version: number;
  is_published: boolean;
  data: Record<string, unknown>;
  created_timestamp: number;
  last_modification_timestamp: number;
  base_version?: number;
  version_title?: string;
  version_description?: string;
  published_timestamp?: number;
}

interface VersionItem extends ItemKey, VersionRecord {
  kind: VersionedKind;
  id: string;
  workspace_id: string;
}

export interface HeadItem extends ItemKey {
  kind: VersionedKind;
  id: string;
  workspace_id: string;
  latest_version: number;
  created_timestamp: number;
  last_modification_timestamp: number;
  latest: VersionRecord;
}

/** One operation of a transaction (table.ts's TransactOp; the store adds the table). */
export type TransactItem = TransactOp;

export const KIND_LABEL: Record<VersionedKind, string> = {
  agent: 'Agent',
  llm: 'Retell LLM',
  conversation_flow: 'Conversation flow',
  chat_agent: 'Chat agent',
};

/** A record's data must fit a DynamoDB item twice (head and version) with room to spare. */
export const MAX_DATA_BYTES = 150_000;

export async function getHead(workspaceId: string, kind: VersionedKind, id: string): Promise<HeadItem> {
  const head = await table.get<HeadItem>(keys.resourceHead(workspaceId, kind, id));
  if (!head) throw notFound(`${KIND_LABEL[kind]} ${id} not found`);
  return head;
}

export async function getVersion(
  workspaceId: string,
  kind: VersionedKind,
  id: string,
  version: number,
): Promise<VersionRecord> {
  const item = await table.get<VersionItem>(keys.resourceVersion(workspaceId, kind, id, version));
  if (!item) {
    await getHead(workspaceId, kind, id);
    throw new VersionNotFound(`${KIND_LABEL[kind]} ${id} has no version ${version}`);
  }
  return recordOf(item);
}

/**
 * A reference to one version (spec, Versioning 4): a version number, `latest`,
 * `latest_published` or an environment tag name (a string of digits is a number).
 */
export type VersionReference = number | string;

/** An environment tag's version, for the kinds that have tags (voice agents); undefined when there is no such tag. */
export type TagLookup<T extends { version: number } = { version: number }> = (name: string) => Promise<T | undefined>;

export interface ResolvedVersion<T extends { version: number } = { version: number }> {
  record: VersionRecord;
  resolvedFrom: 'version' | 'latest' | 'latest_published' | 'tag';
  /** The tag, when a tag named the version. */
  tag?: T;
}

const VERSION_NUMBER = /^[0-9]{1,9}$/;

/**
 * The one resolver of version references: every read or edit that takes a version goes
 * through it. Absent means `latest`. `latest_published` is the highest published version.
 * A tag is looked up with `findTag` (kinds without tags pass none, and a tag name names
 * nothing). A resource that does not exist is its own 404; a reference that names no
 * version is a VersionNotFound naming the reference.
 */
export async function resolveVersion<T extends { version: number }>(
  workspaceId: string,
  kind: VersionedKind,
  id: string,
  reference: VersionReference | undefined,
  findTag?: TagLookup<T>,
): Promise<ResolvedVersion<T>> {
  const ref = typeof reference === 'string' && VERSION_NUMBER.test(reference) ? Number(reference) : reference;
  if (typeof ref === 'number') return { record: await getVersion(workspaceId, kind, id, ref), resolvedFrom: 'version' };
  const head = await getHead(workspaceId, kind, id);
  if (ref === undefined || ref === 'latest') return { record: head.latest, resolvedFrom: 'latest' };
  if (ref === 'latest_published') {
    // The latest version is the highest; when it is a draft, the highest published one is found among all.
    const published = head.latest.is_published ? head.latest : await latestPublished(workspaceId, kind, id);
    if (!published) throw new VersionNotFound(`${KIND_LABEL[kind]} ${id} has no published version ("latest_published")`);
    return { record: published, resolvedFrom: 'latest_published' };
  }
  const tag = findTag ? await findTag(ref) : undefined;
  if (!tag) throw new VersionNotFound(`${KIND_LABEL[kind]} ${id} has no version or tag "${ref.slice(0, 64)}"`);
  const record = tag.version === head.latest_version ? head.latest : await getVersion(workspaceId, kind, id, tag.version);
  return { record, resolvedFrom: 'tag', tag };
}

async function latestPublished(workspaceId: string, kind: VersionedKind, id: string): Promise<VersionRecord | undefined> {
  const items = await queryAll<VersionItem>(keys.resourceVersions(workspaceId, kind, id));
  const found = items.filter((item) => item.is_published).at(-1);
  return found && recordOf(found);
}

/** The version a reference names, or the latest one. */
export async function readRecord(
  workspaceId: string,
  kind: VersionedKind,
  id: string,
  reference?: VersionReference,
  findTag?: TagLookup,
): Promise<VersionRecord> {
  return (await resolveVersion(workspaceId, kind, id, reference, findTag)).record;
}

export async function listHeads(workspaceId: string, kind: VersionedKind): Promise<HeadItem[]> {
  return queryAll<HeadItem>(keys.resourceHeads(workspaceId, kind));
}

export interface ListOptions {
  limit: number;
  pagination_key?: string;
  sort_order: 'ascending' | 'descending';
}

/**
 * One page of resources of the given kinds in creation order (newest first by default),
 * optionally only those `keep` accepts; the pagination key is the last ID of the previous
 * page (an unknown key is a 400). Listings are configuration-sized, so sorting is in memory.
 */
export async function pageOfHeads(
  workspaceId: string,
  kinds: VersionedKind | readonly VersionedKind[],
  options: ListOptions,
  keep: (head: HeadItem) => boolean = () => true,
): Promise<{ page: HeadItem[]; hasMore: boolean }> {
  const all = await Promise.all((typeof kinds === 'string' ? [kinds] : kinds).map((kind) => listHeads(workspaceId, kind)));
  const heads = all
    .flat()
    .filter(keep)
    .sort((a, b) => a.created_timestamp - b.created_timestamp || (a.id < b.id ? -1 : 1));
  if (options.sort_order === 'descending') heads.reverse();
  let start = 0;
  if (options.pagination_key !== undefined) {
    const index = heads.findIndex((head) => head.id === options.pagination_key);
    if (index === -1) throw invalidPaginationKey();
    start = index + 1;
  }
  return { page: heads.slice(start, start + options.limit), hasMore: start + options.limit < heads.length };
}

/** The compatible client's page body: `{has_more, items, pagination_key?}`. */
export function pageBody<T>(
  { page, hasMore }: { page: HeadItem[]; hasMore: boolean },
  view: (head: HeadItem) => T,
): { has_more: boolean; items: T[]; pagination_key?: string } {
  const last = page.at(-1);
  return { has_more: hasMore, items: page.map(view), ...(hasMore && last ? { pagination_key: last.id } : {}) };
}

/** Every version, oldest first. */
export async function listVersions(workspaceId: string, kind: VersionedKind, id: string): Promise<VersionRecord[]> {
  await getHead(workspaceId, kind, id);
  return queryVersions(workspaceId, kind, id);
}

/** Every version, oldest first, of a resource known to exist (one query, no head read; none when it does not). */
export async function queryVersions(workspaceId: string, kind: VersionedKind, id: string): Promise<VersionRecord[]> {
  return (await queryAll<VersionItem>(keys.resourceVersions(workspaceId, kind, id))).map(recordOf);
}

/** The transaction items that create a resource with its first version (version 0, a draft). */
export function createItems(
  workspaceId: string,
  kind: VersionedKind,
  id: string,
  data: Record<string, unknown>,
  nowMs: number,
  metadata: Pick<VersionRecord, 'version_title' | 'version_description'> = {},
): { items: TransactItem[]; record: VersionRecord } {
  assertSize(kind, data);
  const record: VersionRecord = {
    version: 0,
    is_published: false,
    data,
    created_timestamp: nowMs,
    last_modification_timestamp: nowMs,
    ...metadata,
  };
  const head: HeadItem = {
    ...keys.resourceHead(workspaceId, kind, id),
    kind,
    id,
    workspace_id: workspaceId,
    latest_version: 0,
    created_timestamp: nowMs,
    last_modification_timestamp: nowMs,
    latest: record,
  };
  return {
    record,
    items: [
      { Put: { Item: head, ConditionExpression: 'attribute_not_exists(pk)' } },
      {
        Put: {
          Item: versionItem(workspaceId, kind, id, record),
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
  };
}

export interface Draft {
  head: HeadItem;
  record: VersionRecord;
  /** A new version branched from a published one, rather than an existing draft. */
  isNew: boolean;
}

/**
 * The draft an edit applies to: the version a reference names (which must be a draft), or
 * the latest version, or — when the latest is published — a new draft branched from it.
 */
export async function draftFor(
  workspaceId: string,
  kind: VersionedKind,
  id: string,
  reference: VersionReference | undefined,
  nowMs: number,
  findTag?: TagLookup,
): Promise<Draft> {
  if (reference !== undefined) {
    const { record } = await resolveVersion(workspaceId, kind, id, reference, findTag);
    if (record.is_published) throw publishedVersion(kind, id, record.version);
    // The head, read after the version, is what the write is conditional on.
    return { head: await getHead(workspaceId, kind, id), record, isNew: false };
  }
  const head = await getHead(workspaceId, kind, id);
  if (!head.latest.is_published) return { head, record: head.latest, isNew: false };
  return { head, record: branch(head, head.latest, nowMs), isNew: true };
}

/** A new draft at the end of the history, copied from `base`. */
export function branch(head: HeadItem, base: VersionRecord, nowMs: number): VersionRecord {
  return {
    version: head.latest_version + 1,
    is_published: false,
    data: structuredClone(base.data),
    created_timestamp: nowMs,
    last_modification_timestamp: nowMs,
    base_version: base.version,
  };
}

export const publishedVersion = (kind: VersionedKind, id: string, version: number) =>
  badRequest(
    `Version ${version} of ${KIND_LABEL[kind].toLowerCase()} ${id} is published and cannot be changed; create a new version from it`,
  );

/**
 * The items that write one version: a new one (must not exist) or a draft edited or
 * published in place (must still be a draft), and the head, conditional on the latest
 * version it read so concurrent writers cannot lose each other's versions.
 */
export function writeItems(
  workspaceId: string,
  kind: VersionedKind,
  id: string,
  head: HeadItem,
  record: VersionRecord,
  options: { isNew: boolean; nowMs: number },
): TransactItem[] {
  assertSize(kind, record.data);
  const written: VersionRecord = { ...record, last_modification_timestamp: options.nowMs };
  const becomesLatest = written.version >= head.latest_version;
  return [
    {
      Put: {
        Item: versionItem(workspaceId, kind, id, written),
        ConditionExpression: options.isNew ? 'attribute_not_exists(pk)' : 'is_published = :false',
        ExpressionAttributeValues: options.isNew ? undefined : { ':false': false },
      },
    },
    {
      Update: {
        Key: keys.resourceHead(workspaceId, kind, id),
        UpdateExpression: becomesLatest
          ? 'SET latest_version = :version, latest = :record, last_modification_timestamp = :now'
          : 'SET last_modification_timestamp = :now',
        ConditionExpression: 'latest_version = :expected',
        ExpressionAttributeValues: {
          ':expected': head.latest_version,
          ':now': options.nowMs,
          ...(becomesLatest ? { ':version': written.version, ':record': written } : {}),
        },
      },
    },
  ];
}

/** The items that change only a version's title or description (allowed on any version). */
export function describeItems(
  workspaceId: string,
  kind: VersionedKind,
  id: string,
  head: HeadItem,
  record: VersionRecord,
  nowMs: number,
): TransactItem[] {
  const written: VersionRecord = { ...record, last_modification_timestamp: nowMs };
  const isLatest = record.version === head.latest_version;
  return [
    {
      Put: {
        Item: versionItem(workspaceId, kind, id, written),
        ConditionExpression: 'attribute_exists(pk)',
      },
    },
    {
      Update: {
        Key: keys.resourceHead(workspaceId, kind, id),
        UpdateExpression: isLatest ? 'SET latest = :record, last_modification_timestamp = :now' : 'SET last_modification_timestamp = :now',
        ConditionExpression: 'latest_version = :expected',
        ExpressionAttributeValues: { ':expected': head.latest_version, ':now': nowMs, ...(isLatest ? { ':record': written } : {}) },
      },
    },
  ];
}

/** Deletes one draft version; the latest version stays (the head points at it). */
export function deleteVersionItems(
  workspaceId: string,
  kind: VersionedKind,
  id: string,
  head: HeadItem,
  version: number,
): TransactItem[] {
  return [
    {
      Delete: {
        Key: keys.resourceVersion(workspaceId, kind, id, version),
        ConditionExpression: 'attribute_exists(pk) AND is_published = :false',
        ExpressionAttributeValues: { ':false': false },
      },
    },
    {
      ConditionCheck: {
        Key: keys.resourceHead(workspaceId, kind, id),
        ConditionExpression: 'latest_version = :expected',
        ExpressionAttributeValues: { ':expected': head.latest_version },
      },
    },
  ];
}

/** Runs a transaction; losing a race to another writer is a 409 the client can retry. */
export async function commit(items: TransactItem[]): Promise<void> {
  try {
    await table.transact(items);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw conflict('The resource was changed by another request; retry');
    throw error;
  }
}

/**
 * Removes a resource: the head goes first (conditionally), so the resource is gone for
 * every reader at once; its versions and tags are then removed in batches. The head's
 * `reference_count` (see shared/agents/bindings/references.ts) must be zero: a resource something
 * still uses cannot be deleted, even by a delete racing the reference being added.
 */
export async function deleteResource(workspaceId: string, kind: VersionedKind, id: string): Promise<void> {
  try {
    await table.delete({
      Key: keys.resourceHead(workspaceId, kind, id),
      ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(reference_count) OR reference_count = :zero)',
      ExpressionAttributeValues: { ':zero': 0 },
    });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    await getHead(workspaceId, kind, id);
    throw conflict(`${KIND_LABEL[kind]} ${id} is in use; remove what uses it first`);
  }
  const children = await queryAll<ItemKey>(keys.resourceChildren(workspaceId, kind, id), 'pk, sk');
  await table.batchDelete(children.map((item) => ({ pk: item.pk, sk: item.sk })));
}

function versionItem(workspaceId: string, kind: VersionedKind, id: string, record: VersionRecord): VersionItem {
  return { ...keys.resourceVersion(workspaceId, kind, id, record.version), kind, id, workspace_id: workspaceId, ...record };
}

function recordOf(item: VersionItem): VersionRecord {
  const { pk: _pk, sk: _sk, kind: _kind, id: _id, workspace_id: _ws, ...record } = item;
  return record;
}

function assertSize(kind: VersionedKind, data: Record<string, unknown>): void {
  if (Buffer.byteLength(JSON.stringify(data), 'utf8') > MAX_DATA_BYTES) {
    throw badRequest(`${KIND_LABEL[kind]} configuration exceeds ${MAX_DATA_BYTES / 1000} KB`);
  }
}
