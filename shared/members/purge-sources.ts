import { allCellPartitions } from '../analytics/rollups/index.ts';
import { batchDialKey, callListingPartitions } from '../calls/records/index.ts';
import { chatListingPartitions } from '../chats/records/index.ts';
import { CRM_PROVIDERS } from '../integrations/app-refs/index.ts';
import type { CredentialItem } from '../platform/auth/credentials.ts';
import { extraShardKeys } from '../platform/auth/key-shards.ts';
import { sha256 } from '../platform/crypto/hash.ts';
import { keys, type ItemKey, type VersionedKind } from '../platform/store/keys.ts';
import { table } from '../platform/store/table.ts';
import { deliveryLogPartitions, deliverySlotPartitions } from '../webhooks/index.ts';

/*
 * Where the purge finds a deleted workspace's items (shared/members/purge.ts, items phase):
 * every item the workspace owns is reached from the workspace ID, never by a scan, so a
 * purge reads what the workspace holds and not the table. A source is one family of keys
 * (shared/platform/store/keys.ts): the partitions it walks (a table partition, or a
 * listing index partition), what each item walked names besides itself (a credential from
 * its pointer, a number's global claim, a contact's phone claim) and the partitions it
 * heads (an agent's versions, a batch's tasks, a call's partition), emptied before the
 * walk goes on.
 *
 * Order matters: a source whose items head other partitions keeps them (a later source,
 * at the latest the workspace partition's, deletes them), so a step redone after a crash
 * finds the same heads again; a call's and a chat's own item, which its listing entry is,
 * is deleted last of its partition (the partition is emptied newest key first, and `CALL`
 * and `CHAT` sort before its lines and messages). The workspace partition goes last.
 *
 * test/members/purge-sources.test.ts fails when keys.ts has an item key builder that no
 * source covers and NOT_PURGED does not name, so a new item type cannot be forgotten.
 */

/** An item's key, with the attributes a source reads. */
type FoundItem = ItemKey & Record<string, unknown>;

/** A partition a source walks: the table's, optionally one sort-key prefix of it, or gsi1's. */
interface PurgePlace {
  pk: string;
  skPrefix?: string;
  index?: 'gsi1';
}

export type KeyBuilder = keyof typeof keys;

export interface PurgeSource {
  name: string;
  /** The key builders whose items this source deletes. */
  covers: readonly KeyBuilder[];
  /** The partitions walked, in order. */
  places(workspaceId: string): PurgePlace[];
  /** Attributes read of each item walked, besides its keys (a dotted path reads a map's field). */
  read?: readonly string[];
  /** Whether the items walked stay (they head partitions, or are a listing index's entries): a later source deletes them. */
  keep?: boolean;
  /** Other items the walked ones name, deleted before them. */
  related?(items: FoundItem[], workspaceId: string): ItemKey[] | Promise<ItemKey[]>;
  /**
   * Partitions a walked item heads, each emptied (newest key first) before the walk goes on.
   * The page's first partitions of every item go before their second ones, and so on: a call's
   * own partition, which its listing entry is, goes after its retrievals'.
   */
  children?(item: FoundItem, workspaceId: string): string[];
  /** Attributes read of each child item. */
  childRead?: readonly string[];
  /** Other items the child items name, deleted before them. */
  childRelated?(items: FoundItem[], workspaceId: string): ItemKey[];
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
/** The ID a head's sort key carries after its prefix (`AGENT#<id>` → `<id>`). */
const idAfter = (sk: string, prefix: string) => (sk.startsWith(prefix) ? sk.slice(prefix.length) : undefined);

const workspacePartition = (workspaceId: string) => keys.workspace(workspaceId).pk;
const VERSIONED: readonly VersionedKind[] = ['agent', 'llm', 'conversation_flow', 'chat_agent'];
/** Kinds whose heads may own workflow runs (`WS#<ws>#WFRUN#<agent_id>`). */
const WITH_WORKFLOW_RUNS: readonly VersionedKind[] = ['agent', 'chat_agent'];

export const PURGE_SOURCES: readonly PurgeSource[] = [
  {
    name: 'credentials',
    covers: ['credential', 'credentialShard', 'publicOrigin'],
    // Normally gone already: deleting the workspace deletes its keys at once. A delete that
    // stopped half way leaves pointers, and through them the records, shards and origin entries.
    places: (ws) => [keys.apiKeyRefs(ws), keys.publicKeyRefs(ws)].map(({ pk, skPrefix }) => ({ pk, skPrefix })),
    read: ['credential_hash'],
    keep: true,
    async related(items) {
      const hashes = items.flatMap((item) => text(item.credential_hash) ?? []);
      const records = await table.batchGet<CredentialItem>(hashes.map((hash) => keys.credential(hash)));
      return records.flatMap((record) => {
        const hash = record.pk.slice(keys.credential('').pk.length);
        return [
          ...extraShardKeys(hash, record.rate_shards ?? 1),
          ...(record.allowed_origins ?? []).map((origin) => keys.publicOrigin(origin, record.credential_id)),
          keys.credential(hash),
        ];
      });
    },
  },
  {
    name: 'versioned resources',
    covers: ['resourceVersion', 'agentReference', 'agentTag', 'agentWorkflow', 'workflowRun'],
    places: (ws) => VERSIONED.map((kind) => ({ pk: workspacePartition(ws), skPrefix: keys.resourceHeads(ws, kind).skPrefix })),
    keep: true,
    children(item, ws) {
      for (const kind of VERSIONED) {
        const id = idAfter(item.sk, keys.resourceHeads(ws, kind).skPrefix!);
        if (id === undefined) continue;
        return [keys.resourceChildren(ws, kind, id).pk, ...(WITH_WORKFLOW_RUNS.includes(kind) ? [keys.workflowRuns(ws, id).pk] : [])];
      }
      return [];
    },
  },
  {
    name: 'knowledge bases and their syncs',
    covers: ['knowledgeBaseSource', 'kbSyncRun', 'kbSyncRunSeen'],
    places: (ws) => [keys.workspaceKnowledgeBases(ws), keys.workspaceKbSyncs(ws)].map(({ pk, skPrefix }) => ({ pk, skPrefix })),
    keep: true,
    children(item, ws) {
      const kb = idAfter(item.sk, keys.workspaceKnowledgeBases(ws).skPrefix!);
      if (kb !== undefined) return [keys.knowledgeBaseSources(ws, kb).pk];
      const sync = idAfter(item.sk, keys.workspaceKbSyncs(ws).skPrefix!);
      return sync !== undefined ? [keys.kbSyncRuns(ws, sync).pk] : [];
    },
  },
  {
    name: 'batch calls',
    covers: ['batchCounters', 'batchTask', 'batchPendingTask', 'batchTaskClaim'],
    places: (ws) => [{ pk: keys.batchCalls(ws).pk, skPrefix: keys.batchCalls(ws).skPrefix }],
    keep: true,
    children(item, ws) {
      const batch = idAfter(item.sk, keys.batchCalls(ws).skPrefix!);
      return batch !== undefined ? [keys.batchPartition(ws, batch).pk] : [];
    },
    // Each task's dial claimed its idempotency key (an hour's claim holding the dial's answer).
    childRelated: (items, ws) =>
      items.flatMap((item) => {
        const batch = idAfter(item.pk, keys.batchPartition(ws, '').pk);
        const index = idAfter(item.sk, keys.batchTasks(ws, '').skPrefix!);
        return batch && index !== undefined ? [keys.idempotencyClaim(ws, sha256(batchDialKey(batch, Number(index))))] : [];
      }),
  },
  {
    name: 'share links',
    covers: ['shareLinkToken'],
    places: (ws) => [{ pk: keys.shareLinks(ws).pk, skPrefix: keys.shareLinks(ws).skPrefix }],
    read: ['token'],
    keep: true,
    related: (items) => items.flatMap((item) => (text(item.token) ? [keys.shareLinkToken(sha256(item.token as string))] : [])),
  },
  {
    name: 'alert rules',
    covers: ['alertDue'],
    // An enabled rule's entry in the platform's due index, named by the rule (its ID and next evaluation).
    places: (ws) => [{ pk: keys.alerts(ws).pk, skPrefix: keys.alerts(ws).skPrefix }],
    read: ['alert_id', 'next_evaluation_timestamp'],
    keep: true,
    related: (items, ws) =>
      items.flatMap((item) => (text(item.alert_id) && typeof item.next_evaluation_timestamp === 'number' ? [keys.alertDue(ws, item.alert_id as string, item.next_evaluation_timestamp)] : [])),
  },
  {
    name: 'phone numbers',
    covers: ['phoneNumberClaim'],
    // Normally released already (the numbers phase); a claim is deleted only while it is still this workspace's.
    places: (ws) => [{ pk: keys.phoneNumbers(ws).pk, skPrefix: keys.phoneNumbers(ws).skPrefix }],
    read: ['phone_number'],
    keep: true,
    async related(items, ws) {
      const claims = await table.batchGet<ItemKey & { workspace_id?: string }>(items.flatMap((item) => (text(item.phone_number) ? [keys.phoneNumberClaim(item.phone_number as string)] : [])));
      return claims.filter((claim) => claim.workspace_id === ws).map(({ pk, sk }) => ({ pk, sk }));
    },
  },
  {
    name: 'SCIM token',
    covers: ['scimToken'],
    places: (ws) => [{ pk: keys.scimConfig(ws).pk, skPrefix: keys.scimConfig(ws).sk }],
    read: ['token_hash'],
    keep: true,
    related: (items) => items.flatMap((item) => (text(item.token_hash) ? [keys.scimToken(item.token_hash as string)] : [])),
  },
  {
    name: 'calls',
    covers: ['call', 'callUnscrubbed', 'callUnscrubbedLines', 'callUnscrubbedLinesPart', 'callLine', 'callControl', 'callViewer', 'liveConnection', 'liveConnectionLookup', 'mediaRoom', 'kbRetrieval'],
    places: (ws) => callListingPartitions(ws).map((pk) => ({ pk, index: 'gsi1' as const })),
    read: ['call_id'],
    keep: true,
    children: (item, ws) => (text(item.call_id) ? [keys.kbRetrievals(ws, item.call_id as string).pk, item.pk] : [item.pk]),
    childRead: ['room'],
    childRelated: (items) =>
      items.flatMap((item) => {
        const connection = idAfter(item.sk, keys.liveConnections('').skPrefix!);
        if (connection !== undefined) return [keys.liveConnectionLookup(connection)];
        return item.sk === keys.call('').sk && text(item.room) ? [keys.mediaRoom(item.room as string)] : [];
      }),
  },
  {
    name: 'chats',
    covers: ['chat', 'chatMessage', 'publicChat', 'smsThread', 'smsOutbound'],
    places: (ws) => chatListingPartitions(ws).map((pk) => ({ pk, index: 'gsi1' as const })),
    read: ['chat_id', 'from_number', 'to_number'],
    keep: true,
    related: (items, ws) =>
      items.flatMap((item) => {
        const chatId = text(item.chat_id);
        const from = text(item.from_number);
        const to = text(item.to_number);
        // An SMS chat's thread is keyed by the workspace's number then the party, whichever way the chat went.
        const threads = from && to ? [keys.smsThread(ws, from, to), keys.smsThread(ws, to, from)] : [];
        return [...(chatId ? [keys.publicChat(chatId)] : []), ...threads];
      }),
    children: (item, ws) => (text(item.chat_id) ? [keys.kbRetrievals(ws, item.chat_id as string).pk, item.pk] : [item.pk]),
    childRead: ['provider', 'provider_message_id'],
    childRelated: (items, ws) =>
      items.flatMap((item) => (text(item.provider) && text(item.provider_message_id) ? [keys.smsOutbound(ws, item.provider as string, item.provider_message_id as string)] : [])),
  },
  {
    name: 'webhook deliveries',
    covers: ['webhookAttemptClaim', 'webhookBodyPart'],
    // The log itself goes with the workspace's partitions below.
    places: (ws) => deliveryLogPartitions(ws).map((pk) => ({ pk })),
    read: ['webhook_delivery_id'],
    keep: true,
    children(item, ws) {
      const delivery = text(item.webhook_delivery_id);
      return delivery ? [keys.webhookAttemptClaim(ws, delivery, 0).pk, keys.webhookBodyParts(delivery).pk] : [];
    },
  },
  {
    name: 'contacts',
    covers: ['contact', 'contactMemory', 'contactPhoneClaim'],
    places: (ws) => [{ pk: keys.contacts(ws).pk }],
    read: ['phone_number'],
    related: (items, ws) => items.flatMap((item) => (item.sk.startsWith(keys.contacts(ws).skPrefix!) && text(item.phone_number) ? [keys.contactPhoneClaim(ws, item.phone_number as string)] : [])),
  },
  {
    name: 'assets',
    covers: ['asset', 'assetPublic'],
    places: (ws) => [{ pk: keys.assets(ws).pk }],
    read: ['asset_id'],
    related: (items) => items.flatMap((item) => (text(item.asset_id) ? [keys.assetPublic(item.asset_id as string)] : [])),
  },
  {
    name: 'provider operation log',
    covers: ['providerOperation', 'smsInbound'],
    places: (ws) => [{ pk: keys.providerOperations(ws).pk }],
    read: ['provider', 'operation', 'request.message_sid', 'request.from', 'request.to'],
    // A message the carrier delivered (its inbound claim), one sent or a delivery report of
    // one (its outbound link), and an SMS's thread: also the threads of chats deleted since.
    related: (items, ws) =>
      items.flatMap((item) => {
        const provider = text(item.provider);
        const request = (item.request ?? {}) as { message_sid?: unknown; from?: unknown; to?: unknown };
        const sid = text(request.message_sid);
        const [from, to] = [text(request.from), text(request.to)];
        const sms = typeof item.operation === 'string' && item.operation.endsWith('_sms');
        return [
          ...(provider && sid ? [keys.smsInbound(ws, provider, sid), keys.smsOutbound(ws, provider, sid)] : []),
          ...(sms && from && to ? [keys.smsThread(ws, from, to), keys.smsThread(ws, to, from)] : []),
        ];
      }),
  },
  {
    name: 'billing',
    covers: ['billingAccount', 'ledgerEntry', 'ledgerSource', 'billingUsageDay', 'invoice', 'stripePayment', 'qaUsageMonth', 'qaUsageCharge', 'conductorCreditDay', 'conductorCreditMonth', 'conductorCharge', 'conductorLedgerEntry'],
    places: (ws) => [{ pk: keys.billingAccount(ws).pk }],
    read: ['payment_intent'],
    related: (items) => items.flatMap((item) => (text(item.payment_intent) ? [keys.stripePayment(item.payment_intent as string)] : [])),
  },
  {
    name: 'CRM sync records',
    covers: ['crmSyncedObject'],
    // By every CRM provider, not the configs left: a config's delete keeps what it synced.
    places: (ws) => CRM_PROVIDERS.map((provider) => ({ pk: keys.crmSyncedObject(ws, provider, '').pk })),
  },
  {
    name: 'batch tests',
    covers: ['testRun'],
    places: (ws) => [{ pk: keys.batchTests(ws).pk, skPrefix: keys.batchTests(ws).skPrefix }],
    // The batches themselves go with the workspace's other partitions below.
    keep: true,
    children(item, ws) {
      const batch = idAfter(item.sk, keys.batchTests(ws).skPrefix!);
      return batch !== undefined ? [keys.testRuns(ws, batch).pk] : [];
    },
  },
  {
    name: 'QA cohorts',
    covers: ['qaResult', 'qaScore', 'qaDayCount', 'qaRun'],
    places: (ws) => [{ pk: keys.qaCohorts(ws).pk, skPrefix: keys.qaCohorts(ws).skPrefix }],
    // The cohorts themselves go with the workspace's other partitions below.
    keep: true,
    children(item, ws) {
      const cohort = idAfter(item.sk, keys.qaCohorts(ws).skPrefix!);
      return cohort !== undefined ? [keys.qaCohortItems(ws, cohort).pk] : [];
    },
  },
  {
    name: 'assistant sessions',
    covers: ['conductorMessage'],
    places: (ws) => [{ pk: keys.conductorSessions(ws).pk, skPrefix: keys.conductorSessions(ws).skPrefix }],
    // The sessions themselves go with the workspace's other partitions below.
    keep: true,
    children(item, ws) {
      const session = idAfter(item.sk, keys.conductorSessions(ws).skPrefix!);
      return session !== undefined ? [keys.conductorMessages(ws, session).pk] : [];
    },
  },
  {
    name: "the workspace's other partitions",
    covers: [
      'auditEntry',
      'concurrencyCounter',
      'concurrencySlot',
      'concurrencySweepClaim',
      'listingCount',
      'listingCountsComplete',
      'memberSession',
      'exportJob',
      'privacyRequest',
      'integrationConnection',
      'integrationApp',
      'crmProviderConfig',
      'crmSettings',
      'crmSyncJob',
      'crmSyncLock',
      'crmCallAnalysisApplied',
      'contactImportJob',
      'contactImportChunk',
      'contactImportUpload',
      'contactImportUploadPart',
      'webhookDelivery',
      'webhookDeliverySlots',
      'webhookSlowReceiver',
      'outboundSlots',
      'testCase',
      'batchTest',
      'testRunBatch',
      'testRunSlots',
      'rollupCell',
      'rollupFact',
      'dashboard',
      'dashboardCount',
      'qaCohort',
      'qaCohortCount',
      'qaResultRef',
      'qaSlots',
      'conductorSession',
      'conductorProgress',
      'alert',
      'alertCount',
      'alertEvent',
      'qaCallResult',
      'workspaceRegistration',
    ],
    places: (ws) => [
      ...[
        keys.auditLog(ws).pk,
        keys.concurrencyCounter(ws).pk,
        keys.listingCountsComplete(ws).pk,
        keys.memberSessions(ws).pk,
        keys.exportJobs(ws).pk,
        keys.privacyRequest(ws, '').pk,
        keys.crmSettings(ws).pk,
        keys.crmCallAnalysisApplied(ws, '').pk,
        keys.contactImportJobs(ws).pk,
        ...deliveryLogPartitions(ws),
        ...deliverySlotPartitions(ws),
        keys.webhookSlowReceiver(ws).pk,
        keys.outboundSlots(ws).pk,
        keys.testCases(ws).pk,
        keys.batchTests(ws).pk,
        keys.testRunBatch(ws, '').pk,
        keys.testRunSlots(ws).pk,
        keys.rollupFacts(ws).pk,
        ...allCellPartitions().map((partition) => keys.rollupCells(ws, partition).pk),
        keys.dashboards(ws).pk,
        keys.qaCohorts(ws).pk,
        keys.qaResultRef(ws, '').pk,
        keys.qaSlots(ws).pk,
        keys.conductorSessions(ws).pk,
        keys.alerts(ws).pk,
        keys.alertEvents(ws).pk,
        keys.qaCallResults(ws, '').pk,
      ].map((pk) => ({ pk })),
      { pk: keys.workspaceRegistry().pk, skPrefix: keys.workspaceRegistration(ws).sk },
    ],
  },
  {
    name: 'the workspace partition',
    covers: [
      'workspace',
      'apiKeyRef',
      'publicKeyRef',
      'resourceHead',
      'flowComponent',
      'batchCall',
      'workspaceVoice',
      'knowledgeBase',
      'kbSync',
      'upload',
      'shareLink',
      'phoneNumber',
      'providerTrunk',
      'kyc',
      'sipTrunk',
      'brandedCallerId',
      'brandedCallerIdNumber',
      'verifiedNumber',
      'verifiedNumberNumber',
      'contactFieldRegistry',
      'contactFieldMappings',
      'contactMemorySettings',
      'contactBackfillJob',
      'testingSettings',
      'member',
      'memberEmail',
      'memberRoster',
      'invite',
      'ssoConfig',
      'samlConfig',
      'scimConfig',
    ],
    // Last: it holds the heads the sources above walk.
    places: (ws) => [{ pk: workspacePartition(ws) }],
  },
];

/**
 * Item key builders no source covers, and why. Either not the workspace's (the number's,
 * the platform's, a counter with no data), or unreachable from the workspace and gone by
 * TTL soon after (keyed by a hash or nonce only the request that made it knew).
 */
export const NOT_PURGED: Readonly<Partial<Record<KeyBuilder, string>>> = {
  ipRateWindow: "a source address's request counter: no workspace data, expires 3 minutes after the address goes quiet",
  tokenRateWindow: "a public token's request counter: no workspace data, expires 3 minutes after the token goes quiet",
  cpsBucket: "the number's calls-per-second tokens (one item per number whoever holds it): times only, taken up by the number's next holder",
  mediaTrunk: "the number's trunk at the media server (one per number whoever holds it): its trunk ID only",
  localQueueMessage: 'the local runtime\'s queue stand-in (never written in AWS): a message is deleted once consumed',
  jobLease: "a scheduled job's lease: the platform's",
  jobCursor: "a scheduled job's cursor: the platform's",
  rollupRepair: "a conversation the rollup backfill is to count again: the call or chat ID only, deleted once the backfill has looked (a purged workspace's conversation is gone, so nothing is counted)",
  retentionSweep: "a day's retention sweep over every workspace: the platform's",
  sessionSigningKey: "the platform's session signing key",
  sipDigestNonce: 'an inbound SIP challenge: the called number only, single use, expires after 5 minutes',
  stripeEvent: "a Stripe event's ID, across workspaces, so a replay changes nothing: no workspace data",
  workspacePurge: "the purge's own record, kept 90 days after it ends",
  idempotencyClaim:
    "a create request's claim, keyed by the hash of the caller's key nothing else records: expires by TTL when its window (an hour) ends (a batch task's dial claim, whose key is the task's, is deleted with the task)",
  ssoState: 'a pending OIDC sign-in, keyed by its state\'s hash: single use, expires after 10 minutes',
  oauthState: "a pending OAuth authorization, keyed by its nonce: single use, expires by TTL",
  samlRequest: 'a pending SAML sign-in, keyed by its request ID\'s hash: single use, expires after 10 minutes',
  samlConfirmation: 'a SAML sign-in waiting for Continue, keyed by its token\'s hash: single use, expires after 10 minutes',
  samlAssertion: "a used SAML assertion's ID (replay guard): expires with the assertion",
  mockCheckout: 'a checkout page of the built-in payments mock, keyed by its token\'s hash: expires after a day',
};

/**
 * Where the items phase is: the source, its place, the walk's position, and the partitions a
 * page's items head still being emptied (`ends`: where each wave of them ends; `key`: the
 * position in `pks[at]`).
 */
export interface PurgeCursor {
  source: number;
  place: number;
  key?: Record<string, unknown>;
  children?: { pks: string[]; ends: number[]; at: number; key?: Record<string, unknown> };
}

export interface PurgeItemsLimits {
  /** Items per page read (DynamoDB also stops a page at 1 MB). */
  pageSize: number;
  /** Items per page of a source whose items head partitions: the partitions a page names are saved in the cursor. */
  headsPerPage: number;
  /** Pages of the sources' own partitions read per step. */
  pages: number;
  /** Rounds of headed partitions emptied per step (`parallel` at a time, one page each). */
  rounds: number;
  /** No page is started after this time (epoch ms). */
  until: number;
  /** Headed partitions emptied at once (most are a call's or a chat's: one page each). */
  parallel: number;
}

const keyOf = ({ pk, sk }: ItemKey): ItemKey => ({ pk, sk });

/** A projection of the keys and `read`, each name through a placeholder (some are reserved words). */
function projection(read: readonly string[] = [], index?: 'gsi1') {
  const names: Record<string, string> = {};
  const paths = ['pk', 'sk', ...(index ? ['gsi1pk', 'gsi1sk'] : []), ...read].map((path) =>
    path
      .split('.')
      .map((part) => {
        const placeholder = `#${part.replace(/[^A-Za-z0-9_]/g, '_')}`;
        names[placeholder] = part;
        return placeholder;
      })
      .join('.'),
  );
  return { ProjectionExpression: paths.join(', '), ExpressionAttributeNames: names };
}

async function readPage(place: PurgePlace, startKey: Record<string, unknown> | undefined, limit: number, read: readonly string[] | undefined, newestFirst = false) {
  const { ProjectionExpression, ExpressionAttributeNames } = projection(read, place.index);
  const keyName = place.index ? 'gsi1pk' : 'pk';
  return table.queryPage<FoundItem>({
    ...(place.index ? { IndexName: place.index } : {}),
    KeyConditionExpression: place.skPrefix !== undefined ? '#p = :pk AND begins_with(#s, :prefix)' : '#p = :pk',
    ExpressionAttributeNames: { ...ExpressionAttributeNames, '#p': keyName, ...(place.skPrefix !== undefined ? { '#s': 'sk' } : {}) },
    ExpressionAttributeValues: { ':pk': place.pk, ...(place.skPrefix !== undefined ? { ':prefix': place.skPrefix } : {}) },
    ProjectionExpression,
    Limit: limit,
    ...(newestFirst ? { ScanIndexForward: false } : {}),
    ...(startKey ? { ExclusiveStartKey: startKey } : {}),
  });
}

/**
 * One bounded step of the items phase from `cursor` (absent: the start): at most
 * `limits.pages` pages and `limits.rounds` rounds of headed partitions, none started after
 * `limits.until`, each page's deletions done before the next. Answers where the
 * next step goes on (absent once every source is done), and what it read and deleted.
 */
export async function purgeItemsStep(
  workspaceId: string,
  cursor: PurgeCursor | undefined,
  limits: PurgeItemsLimits,
  sources: readonly PurgeSource[] = PURGE_SOURCES,
): Promise<{ cursor?: PurgeCursor; read: number; deleted: number }> {
  let at: PurgeCursor = cursor ?? { source: 0, place: 0 };
  let read = 0;
  let deleted = 0;
  const remove = async (itemKeys: readonly ItemKey[]) => {
    // One BatchWriteItem may not name a key twice (two log entries can name one message).
    const unique = [...new Map(itemKeys.map((key) => [`${key.pk}\n${key.sk}`, keyOf(key)])).values()];
    await table.batchDelete(unique);
    deleted += unique.length;
  };
  let page = 0;
  let round = 0;
  while (Date.now() < limits.until) {
    const source = sources[at.source];
    if (!source) return { read, deleted };
    if (at.children) {
      if (round >= limits.rounds) break;
      // The next partitions of the current wave side by side, one page each; the first that
      // has more holds the cursor (those after it that finished are read again, empty).
      const { pks, ends, at: first, key } = at.children;
      const end = Math.min(first + limits.parallel, ends.find((waveEnd) => waveEnd > first) ?? pks.length);
      const pages = await Promise.all(
        pks.slice(first, end).map(async (pk, offset) => {
          const found = await readPage({ pk }, offset === 0 ? key : undefined, limits.pageSize, source.childRead, true);
          await remove(source.childRelated?.(found.items, workspaceId) ?? []);
          await remove(found.items.map(keyOf));
          return found;
        }),
      );
      round++;
      for (const found of pages) read += found.items.length;
      const unfinished = pages.findIndex((found) => found.lastKey);
      if (unfinished >= 0) at = { ...at, children: { pks, ends, at: first + unfinished, key: pages[unfinished]!.lastKey } };
      else if (end < pks.length) at = { ...at, children: { pks, ends, at: end } };
      else {
        const { children: _done, ...rest } = at;
        at = rest;
      }
      continue;
    }
    const place = source.places(workspaceId)[at.place];
    if (!place) {
      at = { source: at.source + 1, place: 0 };
      continue;
    }
    if (page >= limits.pages) break;
    const found = await readPage(place, at.key, source.children ? Math.min(limits.headsPerPage, limits.pageSize) : limits.pageSize, source.read);
    page++;
    read += found.items.length;
    await remove((await source.related?.(found.items, workspaceId)) ?? []);
    if (!source.keep) await remove(found.items.map(keyOf));
    const headed = found.items.map((item) => source.children?.(item, workspaceId) ?? []);
    const waves: string[][] = [];
    for (const partitions of headed) partitions.forEach((pk, wave) => (waves[wave] ??= []).push(pk));
    const pks: string[] = [];
    const ends: number[] = [];
    for (const wave of waves) {
      pks.push(...new Set(wave));
      ends.push(pks.length);
    }
    at = found.lastKey ? { source: at.source, place: at.place, key: found.lastKey } : { source: at.source, place: at.place + 1 };
    if (pks.length) at.children = { pks, ends, at: 0 };
  }
  // Past the last place of the last source: done now, not one empty step later.
  while (!at.children && sources[at.source] && !sources[at.source]!.places(workspaceId)[at.place]) at = { source: at.source + 1, place: 0 };
  return { ...(sources[at.source] ? { cursor: at } : {}), read, deleted };
}
