/**
 * The attributes gsi1 copies besides the table's and the index's keys: what the call and
 * chat lists filter and sort on (retell-sdk's list `filter_criteria`), plus the item's
 * `workspace_id` and `type`. A list queries the index, filters on these, then reads the
 * page's full items by key (BatchGetItem). Items must keep these at the top level (a
 * projection names top-level attributes only), so nested values such as
 * `call_analysis.user_sentiment` are written beside the object as well. Filters on
 * open-ended maps (metadata, dynamic variables, custom analysis data, tool calls) apply
 * to the full items. The projection cannot change once the index exists: docs/data-model.md.
 */
export const GSI1_LISTING_ATTRIBUTES = [
  'workspace_id',
  'type',
  'agent_id',
  'agent_version',
  'batch_call_id',
  'call_id',
  'chat_id',
  'call_status',
  'chat_status',
  'call_type',
  'direction',
  'from_number',
  'to_number',
  'start_timestamp',
  'end_timestamp',
  'duration_ms',
  'disconnection_reason',
  'user_sentiment',
  'call_successful',
  'chat_successful',
  'in_voicemail',
  'combined_cost',
  'e2e_latency_p50',
  'data_storage_setting',
] as const;

/**
 * The attributes gsi2 (conversations by party) copies besides the keys: what a contact's
 * conversation timeline answers (shared/contacts), so a page is one query with no read of
 * the full call items. `call_analysis` is a top-level map (summary, sentiment, success).
 */
const GSI2_PARTY_ATTRIBUTES = [
  'workspace_id',
  'type',
  'call_id',
  'chat_id',
  'direction',
  'call_status',
  'created_timestamp',
  'start_timestamp',
  'duration_ms',
  'disconnection_reason',
  'user_sentiment',
  'call_successful',
  'call_analysis',
] as const;

/** DynamoDB's limit on non-key attributes projected, summed over all of a table's indexes. */
export const MAX_PROJECTED_ATTRIBUTES = 100;

/**
 * The single table's layout: every key string and index is built here and nowhere else.
 * CDK creates the table from `tableDefinition`, DynamoDB Local gets the same one, and
 * docs/data-model.md lists the access pattern each builder serves. The workspace purge
 * reaches every item from its workspace: a new item key builder needs a purge source or
 * an entry in NOT_PURGED (shared/members/purge-sources.ts; test/members/purge-sources.test.ts).
 */
export const tableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
  timeToLiveAttribute: 'expires_at',
  globalSecondaryIndexes: [
    /** Overloaded listing index: `<owner>#<TYPE>[#shard]` → time-ordered sort key. */
    {
      indexName: 'gsi1',
      partitionKey: 'gsi1pk',
      sortKey: 'gsi1sk',
      projection: { type: 'INCLUDE', nonKeyAttributes: GSI1_LISTING_ATTRIBUTES },
    },
    /**
     * Conversations by party: `WS#<ws>#PARTY#<e164>` → `<12 hex of the start time>#<id>`, so a
     * contact's calls (and later chats and SMS) to or from its number list newest first.
     */
    {
      indexName: 'gsi2',
      partitionKey: 'gsi2pk',
      sortKey: 'gsi2sk',
      projection: { type: 'INCLUDE', nonKeyAttributes: GSI2_PARTY_ATTRIBUTES },
    },
  ],
} as const;

export interface ItemKey {
  pk: string;
  sk: string;
}

export interface PartitionQuery {
  pk: string;
  /** Restricts the query to sort keys that start with this prefix. */
  skPrefix?: string;
}

const workspacePartition = (workspaceId: string) => `WS#${workspaceId}`;

export type VersionedKind = 'agent' | 'llm' | 'conversation_flow' | 'chat_agent';
const RESOURCE_PREFIX: Record<VersionedKind, string> = {
  agent: 'AGENT',
  llm: 'LLM',
  conversation_flow: 'FLOW',
  chat_agent: 'CHATAGENT',
};

/** The alert due index's partitions: a rule's is picked by its ID, so rules spread evenly over them. */
export const ALERT_DUE_PARTITIONS = 4;

function alertDuePartitionOf(alertId: string): number {
  let hash = 0;
  for (let index = 0; index < alertId.length; index++) hash = (hash * 31 + alertId.charCodeAt(index)) >>> 0;
  return hash % ALERT_DUE_PARTITIONS;
}

export const keys = {
  /** The workspace record: name, webhook URL, limits, settings, current webhook key. */
  workspace: (workspaceId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: 'WORKSPACE' }),

  /** Registry of all workspaces (written once per workspace, read by the local first start). */
  workspaceRegistration: (workspaceId: string): ItemKey => ({ pk: 'WORKSPACES', sk: workspaceId }),
  workspaceRegistry: (): PartitionQuery => ({ pk: 'WORKSPACES' }),

  /**
   * A secret or public key's record, addressed by the SHA-256 of its value so the request
   * path finds it in one keyed write. It is also shard 0 of the key's rate window (its
   * counters and last use), so authentication and rate limiting are one UpdateItem.
   */
  credential: (secretSha256: string): ItemKey => ({ pk: `CREDENTIAL#${secretSha256}`, sk: 'CREDENTIAL' }),
  /**
   * Shard `shard` (1…N-1) of a key whose limit one item cannot count (shared/platform/auth/
   * key-shards.ts): a copy of the record, kept with it in every write of it, holding its
   * own share of the rate window. Its own partition, so the shards' writes never meet.
   */
  credentialShard: (secretSha256: string, shard: number): ItemKey => ({ pk: `CREDENTIAL#${secretSha256}#SHARD#${shard}`, sk: 'CREDENTIAL' }),

  /** Workspace-owned pointer from a key's ID to its credential (strongly consistent lookups). */
  apiKeyRef: (workspaceId: string, apiKeyId: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `APIKEY#${apiKeyId}`,
  }),
  apiKeyRefs: (workspaceId: string): PartitionQuery => ({ pk: workspacePartition(workspaceId), skPrefix: 'APIKEY#' }),

  publicKeyRef: (workspaceId: string, publicKeyId: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `PUBLICKEY#${publicKeyId}`,
  }),
  publicKeyRefs: (workspaceId: string): PartitionQuery => ({
    pk: workspacePartition(workspaceId),
    skPrefix: 'PUBLICKEY#',
  }),

  /** Per-source-IP rate window; expires by TTL when the address goes quiet. */
  ipRateWindow: (ip: string): ItemKey => ({ pk: `RATE#IP#${ip}`, sk: 'RATE' }),
  /**
   * Per-token rate window of the public routes (a share token's hash, a public chat's ID, a
   * web call's ID): `kind` says which, so two kinds never share a window. Expires by TTL.
   */
  tokenRateWindow: (kind: string, id: string): ItemKey => ({ pk: `RATE#TOKEN#${kind}#${id}`, sk: 'RATE' }),
  /**
   * The origin index of public keys: one item per (origin, key) while the key allows that
   * origin, so a CORS preflight (which carries no key) can ask whether any public key
   * allows its origin with one query. It decides CORS headers only, never admission.
   */
  publicOrigin: (origin: string, credentialId: string): ItemKey => ({ pk: `PUBLICORIGIN#${origin}`, sk: `KEY#${credentialId}` }),
  publicOrigins: (origin: string): PartitionQuery => ({ pk: `PUBLICORIGIN#${origin}`, skPrefix: 'KEY#' }),
  /**
   * A chat started through the public routes (widget, share link): its secret's hash and
   * what started it, addressed by the chat ID alone (public requests name no workspace).
   */
  publicChat: (chatId: string): ItemKey => ({ pk: `PUBLICCHAT#${chatId}`, sk: 'PUBLICCHAT' }),

  /** Audit entries sort by their time-ordered IDs within the workspace's audit partition. */
  auditEntry: (workspaceId: string, auditId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#AUDIT`,
    sk: auditId,
  }),
  auditLog: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#AUDIT` }),

  /**
   * A versioned resource (agent, LLM, …): its head in the workspace partition holds the
   * latest version's data for listings; every version has its own item in the resource's
   * partition, which also holds the resource's other children (environment tags).
   */
  resourceHead: (workspaceId: string, kind: VersionedKind, id: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `${RESOURCE_PREFIX[kind]}#${id}`,
  }),
  resourceHeads: (workspaceId: string, kind: VersionedKind): PartitionQuery => ({
    pk: workspacePartition(workspaceId),
    skPrefix: `${RESOURCE_PREFIX[kind]}#`,
  }),
  resourceVersion: (workspaceId: string, kind: VersionedKind, id: string, version: number): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#${RESOURCE_PREFIX[kind]}#${id}`,
    sk: `V#${String(version).padStart(9, '0')}`,
  }),
  resourceVersions: (workspaceId: string, kind: VersionedKind, id: string): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#${RESOURCE_PREFIX[kind]}#${id}`,
    skPrefix: 'V#',
  }),
  resourceChildren: (workspaceId: string, kind: VersionedKind, id: string): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#${RESOURCE_PREFIX[kind]}#${id}`,
  }),
  /** Something that uses an agent (a phone number, a batch call) and so keeps it from deletion. */
  agentReference: (workspaceId: string, kind: VersionedKind, agentId: string, referrer: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#${RESOURCE_PREFIX[kind]}#${agentId}`,
    sk: `REF#${referrer}`,
  }),
  agentReferences: (workspaceId: string, kind: VersionedKind, agentId: string): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#${RESOURCE_PREFIX[kind]}#${agentId}`,
    skPrefix: 'REF#',
  }),
  agentTag: (workspaceId: string, agentId: string, name: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#${RESOURCE_PREFIX.agent}#${agentId}`,
    sk: `TAG#${name}`,
  }),
  agentTags: (workspaceId: string, agentId: string): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#${RESOURCE_PREFIX.agent}#${agentId}`,
    skPrefix: 'TAG#',
  }),

  /**
   * A shared conversation flow component (not versioned) in the workspace's configuration
   * partition. `FLOWCOMPONENT#` never matches the flow heads' `FLOW#` prefix.
   */
  flowComponent: (workspaceId: string, componentId: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `FLOWCOMPONENT#${componentId}`,
  }),
  flowComponents: (workspaceId: string): PartitionQuery => ({
    pk: workspacePartition(workspaceId),
    skPrefix: 'FLOWCOMPONENT#',
  }),

  /**
   * A phone number's calls-per-second token bucket (shared/numbers/cps-limiter.ts): one item per
   * number across all workspaces (a number exists once), its own partition, so each
   * number's dials are independent of every other's. Tokens are `cpsTokenAttribute(i)`.
   */
  cpsBucket: (phoneNumber: string): ItemKey => ({ pk: `CPS#${phoneNumber}`, sk: 'CPS' }),

  /**
   * A workspace's slots for slow outbound test requests (shared/platform/egress/outbound-slots.ts):
   * one item per workspace, its own partition; slot i is `outboundSlotAttribute(i)`.
   */
  outboundSlots: (workspaceId: string): ItemKey => ({ pk: `OUTBOUND#${workspaceId}`, sk: 'SLOTS' }),

  /**
   * A workspace's concurrent-call counter (shared/calls/concurrency.ts): `in_use` and the
   * concurrency settings, in a partition of its own beside the workspace's slot records, so
   * the counter and the slots it counts are written in one transaction and a sweep lists
   * the slots with one query. Call traffic never touches the configuration partition.
   */
  concurrencyCounter: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#CONCURRENCY`, sk: 'COUNTER' }),
  /** The slot a call holds while it counts against the workspace's limit (one item per call). */
  concurrencySlot: (workspaceId: string, callId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#CONCURRENCY`,
    sk: `SLOT#${callId}`,
  }),
  /**
   * When the workspace's last on-demand slot sweep (a 429's) ran: `swept_at`, written
   * conditionally, so at most one runs per interval however many requests find it full.
   */
  concurrencySweepClaim: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#CONCURRENCY`, sk: 'SWEPT' }),
  concurrencySlots: (workspaceId: string): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#CONCURRENCY`,
    skPrefix: 'SLOT#',
  }),
  /**
   * gsi1 entry of a held slot, for the scheduled sweep (docs/calls.md, Concurrency): every
   * slot of every workspace, in `shard` (from the call ID) sorted by when the sweep should
   * next look at it, so a pass reads only the due ones (sparse: slot items only).
   */
  concurrencySweepDue: (shard: number, dueMs: number, workspaceId: string, callId: string): { gsi1pk: string; gsi1sk: string } => ({
    gsi1pk: `SLOTSWEEP#${shard}`,
    gsi1sk: `${String(Math.max(0, Math.floor(dueMs))).padStart(15, '0')}#${workspaceId}#${callId}`,
  }),
  /** The gsi1 sort key bound of the slots of `shard` due before `beforeMs`. */
  concurrencySweepDueBefore: (shard: number, beforeMs: number): { gsi1pk: string; gsi1skBefore: string } => ({
    gsi1pk: `SLOTSWEEP#${shard}`,
    gsi1skBefore: `${String(Math.max(0, Math.floor(beforeMs))).padStart(15, '0')}#`,
  }),

  /**
   * An idempotency claim (shared/calls/idempotency.ts): one item per workspace and key,
   * addressed by the SHA-256 of the caller's key (any printable characters, up to 200), each
   * its own partition so a busy workspace's claims spread; expires by TTL after its window.
   */
  idempotencyClaim: (workspaceId: string, keySha256: string): ItemKey => ({
    pk: `IDEMPOTENCY#${workspaceId}#${keySha256}`,
    sk: 'IDEMPOTENCY',
  }),

  /**
   * Local runtime only: a message of the in-process queue stand-in (local/queue-store.ts),
   * so stopping `npm start` loses no queued webhook or call step. One partition per queue
   * (its dead-letter queue is another); never written in AWS, where SQS holds messages.
   */
  localQueueMessage: (queue: string, messageId: string): ItemKey => ({ pk: `LOCALQUEUE#${queue}`, sk: `MSG#${messageId}` }),
  localQueueMessages: (queue: string): PartitionQuery => ({ pk: `LOCALQUEUE#${queue}`, skPrefix: 'MSG#' }),

  /** Exclusive lease for a scheduled job pass, so overlapping invocations never double-run it. */
  jobLease: (job: string): ItemKey => ({ pk: `LEASE#${job}`, sk: 'LEASE' }),
  /** Where a scheduled job's walk stopped (the last index entry or workspace it took), so the next pass goes on from there. */
  jobCursor: (job: string): ItemKey => ({ pk: `LEASE#${job}`, sk: 'CURSOR' }),

  /**
   * A call: its own partition (spread by the random ID, so a busy workspace's calls never
   * share one); `workspace_id` on the item scopes every read. The workspace's listing goes
   * through gsi1 with `callListing` (sharded) and the call ID as the sort key.
   */
  call: (callId: string): ItemKey => ({ pk: `CALL#${callId}`, sk: 'CALL' }),
  /**
   * A call's unscrubbed copy (remove-call-sensitive-data): the fields as they were before
   * scrubbing, sealed with envelope encryption; in the call's own partition, written once.
   */
  callUnscrubbed: (callId: string): ItemKey => ({ pk: `CALL#${callId}`, sk: 'UNSCRUBBED' }),
  /**
   * The original transcript lines of a scrubbed call (their sealed text split into parts):
   * the head names its parts' token, each part `UNSCRUBBED#LINES#<token>#<4-digit index>`.
   */
  callUnscrubbedLines: (callId: string): ItemKey => ({ pk: `CALL#${callId}`, sk: 'UNSCRUBBED#LINES' }),
  callUnscrubbedLinesPart: (callId: string, token: string, index: number): ItemKey => ({
    pk: `CALL#${callId}`,
    sk: `UNSCRUBBED#LINES#${token}#${String(index).padStart(4, '0')}`,
  }),
  /** The parts of one copy (`token`), or without it the head and every part (what deleting the call removes). */
  callUnscrubbedLinesParts: (callId: string, token?: string): PartitionQuery => ({
    pk: `CALL#${callId}`,
    skPrefix: token === undefined ? 'UNSCRUBBED#LINES' : `UNSCRUBBED#LINES#${token}#`,
  }),
  /**
   * One entry of a call's transcript (docs/data-model.md, A call's transcript lines), in the
   * call's partition: the sequence of the report that carried it (the engine's own writes:
   * the line's position), then its place in that report, zero-padded so lines sort in the
   * order they were said however they arrived; a redelivered report finds its keys taken.
   * `CONTROL#` sorts before `LINE#` and nothing else of the partition sorts between them, so
   * one Query from `CONTROL#` to `LINE$` (callEntries) reads a call's controls and lines.
   */
  callLine: (callId: string, ordinal: number, index: number): ItemKey => ({
    pk: `CALL#${callId}`,
    sk: `LINE#${String(ordinal).padStart(16, '0')}#${String(index).padStart(4, '0')}`,
  }),
  callLines: (callId: string): PartitionQuery => ({ pk: `CALL#${callId}`, skPrefix: 'LINE#' }),
  /**
   * A live control of a call (listen, take-over, supervisor-say, update-live-call: live/store.ts),
   * in the call's partition in the order written, each written once with the call's `control_count`.
   */
  callControl: (callId: string, index: number): ItemKey => ({ pk: `CALL#${callId}`, sk: `CONTROL#${String(index).padStart(6, '0')}` }),
  callControls: (callId: string): PartitionQuery => ({ pk: `CALL#${callId}`, skPrefix: 'CONTROL#' }),
  callEntries: (callId: string): { pk: string; skFrom: string; skTo: string } => ({ pk: `CALL#${callId}`, skFrom: 'CONTROL#', skTo: 'LINE$' }),
  /**
   * How many of a workspace's calls or chats (`kind`) listing shard `shard` holds, in
   * attribute `n`: ADDed in the transaction that creates an item or uncounts it on deletion
   * (shared/platform/store/listing-count.ts), so list-calls' and list-chats' unfiltered
   * `include_total` is one Query of `listingCounts` whatever the history's size.
   */
  listingCount: (workspaceId: string, kind: 'CALL' | 'CHAT', shard: number): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#COUNT`, sk: `${kind}#${shard}` }),
  listingCounts: (workspaceId: string, kind: 'CALL' | 'CHAT'): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#COUNT`, skPrefix: `${kind}#` }),
  /**
   * Present once the counters hold every listed item of the workspace: written when the
   * workspace is created (with them from its start), or by the listing backfill job once it
   * has counted what was stored before them. Until then a total is counted on the index.
   */
  listingCountsComplete: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#COUNT`, sk: 'COMPLETE' }),
  /** gsi1 partition of shard `shard` of a workspace's calls (docs/data-model.md, Hot partitions). */
  callListing: (workspaceId: string, shard: number): { gsi1pk: string } => ({ gsi1pk: `${workspacePartition(workspaceId)}#CALL#${shard}` }),
  /**
   * A chat (shared/chats): its own partition, as calls (`workspace_id` on the item scopes
   * every read), holding the chat item and its messages (`chatMessage`), so a chat with its
   * messages is one query. The workspace's listing: gsi1 `chatListing` (sharded), chat ID
   * as the sort key.
   */
  chat: (chatId: string): ItemKey => ({ pk: `CHAT#${chatId}`, sk: 'CHAT' }),
  /** gsi1 partition of shard `shard` of a workspace's chats. */
  chatListing: (workspaceId: string, shard: number): { gsi1pk: string } => ({ gsi1pk: `${workspacePartition(workspaceId)}#CHAT#${shard}` }),
  /** Message `seq` (1, 2, …: the chat's message counter) of a chat, in order by its zero-padded number. */
  chatMessage: (chatId: string, seq: number): ItemKey => ({ pk: `CHAT#${chatId}`, sk: `MSG#${String(seq).padStart(9, '0')}` }),
  chatMessages: (chatId: string): PartitionQuery => ({ pk: `CHAT#${chatId}`, skPrefix: 'MSG#' }),
  /**
   * The SMS thread between a workspace number and another party: which SMS chat an inbound
   * message continues (`chat_id`), moved to a new chat when one starts.
   */
  smsThread: (workspaceId: string, number: string, party: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#SMSTHREAD#${number}#${party}`,
    sk: 'SMSTHREAD',
  }),
  /** An inbound SMS the carrier delivered (its MessageSid), claimed once so a redelivery is answered once. */
  smsInbound: (workspaceId: string, provider: string, messageId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#SMSIN#${provider}#${messageId}`,
    sk: 'SMSIN',
  }),
  /**
   * An SMS Parley sent in an SMS chat, by the carrier's message ID: which chat message a
   * delivery report (StatusCallback) is about (`chat_id`, `seq`).
   */
  smsOutbound: (workspaceId: string, provider: string, messageId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#SMSOUT#${provider}#${messageId}`,
    sk: 'SMSOUT',
  }),
  /**
   * gsi2 entry of a conversation with the party `e164` (the other side of a call: to_number
   * outbound, from_number inbound): the workspace and number are the partition, the sort key
   * starts with 12 hex digits of the creation time so the timeline sorts newest first
   * whatever the conversation's kind.
   */
  partyConversation: (workspaceId: string, e164: string, createdMs: number, id: string): { gsi2pk: string; gsi2sk: string } => ({
    gsi2pk: `${workspacePartition(workspaceId)}#PARTY#${e164}`,
    gsi2sk: `${createdMs.toString(16).padStart(12, '0')}#${id}`,
  }),
  partyConversations: (workspaceId: string, e164: string): { gsi2pk: string } => ({ gsi2pk: `${workspacePartition(workspaceId)}#PARTY#${e164}` }),

  /**
   * A live viewer of a call (listen / take-over, shared/calls/live/control.ts): in the call's own
   * partition, so the viewers are one query and go with the call.
   */
  callViewer: (callId: string, participantId: string): ItemKey => ({ pk: `CALL#${callId}`, sk: `VIEWER#${participantId}` }),
  callViewers: (callId: string): PartitionQuery => ({ pk: `CALL#${callId}`, skPrefix: 'VIEWER#' }),
  /** A WebSocket monitor connection of a call (shared/calls/live/push.ts): in the call's partition, for the pushes. */
  liveConnection: (callId: string, connectionId: string): ItemKey => ({ pk: `CALL#${callId}`, sk: `WSCONN#${connectionId}` }),
  liveConnections: (callId: string): PartitionQuery => ({ pk: `CALL#${callId}`, skPrefix: 'WSCONN#' }),
  /** Which call a WebSocket connection watches (API Gateway's $disconnect names only the connection). */
  liveConnectionLookup: (connectionId: string): ItemKey => ({ pk: `WSCONN#${connectionId}`, sk: 'WSCONN' }),

  /** The media server's outbound SIP trunk for a number (created once, kept: shared/calls/engine/media.ts). */
  mediaTrunk: (phoneNumber: string): ItemKey => ({ pk: `MEDIATRUNK#${phoneNumber}`, sk: 'MEDIATRUNK' }),
  /**
   * A media-server room that is not named after its call (an inbound SIP call's room, made by
   * LiveKit's dispatch rule): which call it carries. Claimed once per room (shared/calls/store.ts).
   */
  mediaRoom: (room: string): ItemKey => ({ pk: `MEDIAROOM#${room}`, sk: 'MEDIAROOM' }),

  /**
   * A batch call's record, in its workspace's configuration partition (listed by prefix).
   * While the batch is `planned` or `ongoing` it is also in the due-batch index: gsi1 with
   * `batchDueIndex(shard)` and `batchDueSort(due, id)` (a sparse entry: removed when the batch
   * leaves those states), so a scheduler pass queries only the batches that are due.
   */
  batchCall: (workspaceId: string, batchCallId: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `BATCHCALL#${batchCallId}`,
  }),
  batchCalls: (workspaceId: string): PartitionQuery => ({ pk: workspacePartition(workspaceId), skPrefix: 'BATCHCALL#' }),
  /**
   * gsi1 partition of one shard of the due-batch index (docs/batch-calls.md): the schedulable
   * batches of the workspaces that hash to the shard, each shard passed on its own.
   */
  batchDueIndex: (shard: number): { gsi1pk: string } => ({ gsi1pk: `BATCHDUE#${shard}` }),
  /**
   * The due index as it was before it had shards: one gsi1 partition, read only to move
   * what a deploy found there into its shard (shared/batches/store.ts).
   */
  batchDueUnsharded: (): { gsi1pk: string } => ({ gsi1pk: 'BATCHDUE' }),
  /** gsi1 sort key of a schedulable batch: its due time (epoch ms, zero-padded) then its ID. */
  batchDueSort: (dueMs: number, batchCallId: string): string => `${String(Math.max(0, Math.floor(dueMs))).padStart(15, '0')}#${batchCallId}`,
  /**
   * A batch call's own partition: its counters, its tasks (`TASK#<6-digit index>`, in
   * order), a `PENDING#<index>` marker per task not yet claimed (so the next pending tasks
   * are one query in order) and a `CLAIM#<index>` marker per task claimed and not yet
   * resolved (so a crashed pass's claims are found without reading every task).
   */
  batchPartition: (workspaceId: string, batchCallId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#BATCH#${batchCallId}` }),
  batchCounters: (workspaceId: string, batchCallId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#BATCH#${batchCallId}`,
    sk: 'COUNTERS',
  }),
  batchTask: (workspaceId: string, batchCallId: string, index: number): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#BATCH#${batchCallId}`,
    sk: `TASK#${String(index).padStart(6, '0')}`,
  }),
  batchTasks: (workspaceId: string, batchCallId: string): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#BATCH#${batchCallId}`,
    skPrefix: 'TASK#',
  }),
  batchPendingTask: (workspaceId: string, batchCallId: string, index: number): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#BATCH#${batchCallId}`,
    sk: `PENDING#${String(index).padStart(6, '0')}`,
  }),
  batchPendingTasks: (workspaceId: string, batchCallId: string): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#BATCH#${batchCallId}`,
    skPrefix: 'PENDING#',
  }),
  batchTaskClaim: (workspaceId: string, batchCallId: string, index: number): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#BATCH#${batchCallId}`,
    sk: `CLAIM#${String(index).padStart(6, '0')}`,
  }),
  batchTaskClaims: (workspaceId: string, batchCallId: string): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#BATCH#${batchCallId}`,
    skPrefix: 'CLAIM#',
  }),

  /**
   * A webhook delivery attempt in shard `shard` of its workspace's delivery log (the shard
   * from the attempt ID, shared/webhooks/store.ts), sorted by the time-ordered attempt ID:
   * a busy workspace's log writes spread over the shards, and its listing merges them.
   */
  webhookDelivery: (workspaceId: string, shard: number, attemptId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#DELIVERY#${shard}`,
    sk: attemptId,
  }),
  webhookDeliveries: (workspaceId: string, shard: number): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#DELIVERY#${shard}`,
  }),
  /**
   * One group of a workspace's webhook delivery slots (shared/webhooks/delivery-slots.ts):
   * its in-flight cap is split over groups of slots, each group one item in its own
   * partition; slot i of a group is `outboundSlotAttribute(i)`, its holder `outboundSlotOwnerAttribute(i)`.
   */
  webhookDeliverySlots: (workspaceId: string, group: number): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#WEBHOOKSLOTS#${group}`,
    sk: 'SLOTS',
  }),
  /**
   * Until when a workspace's webhook receiver counts as slow (shared/webhooks/delivery-slots.ts):
   * while it does, the workspace's in-flight cap is the slow receivers' cap.
   */
  webhookSlowReceiver: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#WEBHOOKSLOW`, sk: 'SLOW' }),
  /**
   * The body of a webhook too large for a queue message (a long call's transcript), in
   * parts, in the delivery's own partition: every attempt reads it, the last deletes it.
   */
  webhookBodyPart: (deliveryId: string, index: number): ItemKey => ({ pk: `WEBHOOKBODY#${deliveryId}`, sk: `PART#${String(index).padStart(4, '0')}` }),
  webhookBodyParts: (deliveryId: string): PartitionQuery => ({ pk: `WEBHOOKBODY#${deliveryId}`, skPrefix: 'PART#' }),
  /**
   * The claim of one attempt of one webhook delivery (shared/webhooks/webhooks.ts): the
   * consumer that holds it, until when, and what its POST answered. Each delivery its own
   * partition; expires by TTL.
   */
  webhookAttemptClaim: (workspaceId: string, deliveryId: string, attempt: number): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#WEBHOOKCLAIM#${deliveryId}`,
    sk: `ATTEMPT#${attempt}`,
  }),

  /** A workspace's own voice (cloned, or added from a community library), in its configuration partition. */
  workspaceVoice: (workspaceId: string, voiceId: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `VOICE#${voiceId}`,
  }),
  workspaceVoices: (workspaceId: string): PartitionQuery => ({ pk: workspacePartition(workspaceId), skPrefix: 'VOICE#' }),

  /**
   * A knowledge base's record in its workspace's configuration partition. Repair reads it
   * to tell a live `knowledge_base_ids` reference from a dangling one, so the knowledge-base
   * feature must keep its record (or at least an item) at this key.
   */
  knowledgeBase: (workspaceId: string, knowledgeBaseId: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `KB#${knowledgeBaseId}`,
  }),
  workspaceKnowledgeBases: (workspaceId: string): PartitionQuery => ({ pk: workspacePartition(workspaceId), skPrefix: 'KB#' }),
  /** A source of a knowledge base, in the knowledge base's own partition (deleted with it). */
  knowledgeBaseSource: (workspaceId: string, knowledgeBaseId: string, sourceId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#KB#${knowledgeBaseId}`,
    sk: `SOURCE#${sourceId}`,
  }),
  knowledgeBaseSources: (workspaceId: string, knowledgeBaseId: string): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#KB#${knowledgeBaseId}`,
    skPrefix: 'SOURCE#',
  }),
  /** One knowledge-base retrieval of a call or chat (time-ordered IDs), under its workspace. */
  kbRetrieval: (workspaceId: string, callId: string, retrievalId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#KBRET#${callId}`,
    sk: `R#${retrievalId}`,
  }),
  kbRetrievals: (workspaceId: string, callId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#KBRET#${callId}`, skPrefix: 'R#' }),
  /**
   * A synced source of a knowledge base (an OAuth connection's folder, drive or page), in
   * the workspace's configuration partition: the sync routes name only the sync ID.
   */
  kbSync: (workspaceId: string, syncId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: `KBSYNC#${syncId}` }),
  workspaceKbSyncs: (workspaceId: string): PartitionQuery => ({ pk: workspacePartition(workspaceId), skPrefix: 'KBSYNC#' }),
  /** One run of a synced source (time-ordered IDs, newest last), in the sync's own partition. */
  kbSyncRun: (workspaceId: string, syncId: string, runId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#KBSYNC#${syncId}`,
    sk: `RUN#${runId}`,
  }),
  kbSyncRuns: (workspaceId: string, syncId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#KBSYNC#${syncId}`, skPrefix: 'RUN#' }),
  /** The vendor document IDs a run's listing pages found so far (what is not in it leaves the knowledge base when the run ends). */
  kbSyncRunSeen: (workspaceId: string, syncId: string, runId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#KBSYNC#${syncId}`,
    sk: `SEEN#${runId}`,
  }),
  /** A presigned upload (an asset, voice sample or knowledge-base file) waiting to be used (shared/platform/uploads.ts; its object is `objectKeys.upload`). */
  upload: (workspaceId: string, uploadId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: `UPLOAD#${uploadId}` }),
  /**
   * gsi1 entry of a knowledge base with `enable_auto_refresh`: one partition sorted by when
   * its next daily refresh is due, so the daily sweep reads only the due ones (sparse).
   */
  kbRefreshDue: (dueMs: number, workspaceId: string, knowledgeBaseId: string): { gsi1pk: string; gsi1sk: string } => ({
    gsi1pk: 'KBREFRESH',
    gsi1sk: `${String(Math.max(0, Math.floor(dueMs))).padStart(15, '0')}#${workspaceId}#${knowledgeBaseId}`,
  }),
  /** The gsi1 sort key bound of knowledge bases due before `beforeMs`. */
  kbRefreshDueBefore: (beforeMs: number): { gsi1pk: string; gsi1skBefore: string } => ({
    gsi1pk: 'KBREFRESH',
    gsi1skBefore: `${String(Math.max(0, Math.floor(beforeMs))).padStart(15, '0')}#`,
  }),

  /** A share link (Voice Orb) of an agent: configuration, in the workspace partition (found by ID). */
  shareLink: (workspaceId: string, shareLinkId: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `SHARELINK#${shareLinkId}`,
  }),
  shareLinks: (workspaceId: string): PartitionQuery => ({ pk: workspacePartition(workspaceId), skPrefix: 'SHARELINK#' }),
  /**
   * The public lookup of an enabled share link, addressed by the SHA-256 of its token (one
   * GetItem from the public page). Revoking deletes it, so the token stops resolving at once.
   */
  shareLinkToken: (tokenSha256: string): ItemKey => ({ pk: `SHARETOKEN#${tokenSha256}`, sk: 'SHARETOKEN' }),

  /** An agent's workflow for one stage (pre_call, post_call), among the agent's children: deleted with it. */
  agentWorkflow: (workspaceId: string, agentId: string, stage: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#${RESOURCE_PREFIX.agent}#${agentId}`,
    sk: `WORKFLOW#${stage}`,
  }),
  agentWorkflows: (workspaceId: string, agentId: string): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#${RESOURCE_PREFIX.agent}#${agentId}`,
    skPrefix: 'WORKFLOW#',
  }),
  /** Recorded workflow runs of an agent, sorted by their time-ordered IDs (expire by TTL). */
  workflowRun: (workspaceId: string, agentId: string, runId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#WFRUN#${agentId}`,
    sk: runId,
  }),
  workflowRuns: (workspaceId: string, agentId: string): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#WFRUN#${agentId}`,
  }),

  /** A phone number (its own ID, E.164) in its workspace's configuration partition. */
  phoneNumber: (workspaceId: string, phoneNumber: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `PHONE#${phoneNumber}`,
  }),
  phoneNumbers: (workspaceId: string): PartitionQuery => ({ pk: workspacePartition(workspaceId), skPrefix: 'PHONE#' }),
  /**
   * The global claim on a phone number: one item per number across all workspaces, written
   * in the same transaction as the number (conditional on not existing), so a number exists once.
   */
  phoneNumberClaim: (phoneNumber: string): ItemKey => ({ pk: `PHONECLAIM#${phoneNumber}`, sk: 'PHONECLAIM' }),
  /**
   * A SIP digest nonce handed out in a challenge to an inbound INVITE: single use (the
   * answer deletes it conditionally), expiring by TTL, bound to the called number.
   */
  sipDigestNonce: (nonce: string): ItemKey => ({ pk: `SIPNONCE#${nonce}`, sk: 'SIPNONCE' }),
  /** The workspace's trunk at a telephony provider (one per workspace and provider). */
  providerTrunk: (workspaceId: string, provider: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `TRUNK#${provider}`,
  }),
  /** The provider operation log: every request to a telephony provider, time-ordered IDs (expire by TTL). */
  providerOperation: (workspaceId: string, operationId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#PROVIDEROP`,
    sk: operationId,
  }),
  providerOperations: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#PROVIDEROP` }),

  /** The workspace's business verification (KYC): one item in its configuration partition. */
  kyc: (workspaceId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: 'KYC' }),

  /** A SIP trunk (configuration; its password sealed), in the workspace partition. */
  sipTrunk: (workspaceId: string, sipTrunkId: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `SIPTRUNK#${sipTrunkId}`,
  }),
  sipTrunks: (workspaceId: string): PartitionQuery => ({ pk: workspacePartition(workspaceId), skPrefix: 'SIPTRUNK#' }),

  /** A branded caller ID registration, in the workspace partition. */
  brandedCallerId: (workspaceId: string, brandedCallerId: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `BRANDEDCID#${brandedCallerId}`,
  }),
  brandedCallerIds: (workspaceId: string): PartitionQuery => ({
    pk: workspacePartition(workspaceId),
    skPrefix: 'BRANDEDCID#',
  }),
  /** Holds one branded caller ID per number and workspace (written in the same transaction). */
  brandedCallerIdNumber: (workspaceId: string, phoneNumber: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `BRANDEDCIDNUM#${phoneNumber}`,
  }),

  /**
   * A contact, in its workspace's contacts partition (apart from the configuration one: an
   * import writes thousands). Contact IDs are time-ordered, so the partition lists newest first.
   */
  contact: (workspaceId: string, contactId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#CONTACT`,
    sk: `CONTACT#${contactId}`,
  }),
  contacts: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#CONTACT`, skPrefix: 'CONTACT#' }),
  /** A contact's memory text (kept apart so listings stay small); deleted with the contact. */
  contactMemory: (workspaceId: string, contactId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#CONTACT`,
    sk: `MEMORY#${contactId}`,
  }),
  /**
   * The claim on a phone number within a workspace's contacts: one item per workspace and
   * number, its own partition, written in the contact's transaction (conditional on not
   * existing), so a number belongs to at most one contact of a workspace. Holds `contact_id`.
   */
  contactPhoneClaim: (workspaceId: string, e164: string): ItemKey => ({ pk: `CONTACTPHONE#${workspaceId}#${e164}`, sk: 'CONTACTPHONE' }),
  /** The custom field names a workspace's contacts use (a string set, grown with ADD). */
  contactFieldRegistry: (workspaceId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: 'CONTACTFIELDS' }),
  /** The workspace's CSV/CRM column → contact field mappings. */
  contactFieldMappings: (workspaceId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: 'CONTACTFIELDMAPPINGS' }),
  /** Whether contact memory and fields join new calls' dynamic variables. */
  contactMemorySettings: (workspaceId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: 'CONTACTMEMORYSETTINGS' }),
  /** The workspace's current or latest contact backfill job (one at a time). */
  contactBackfillJob: (workspaceId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: 'CONTACTBACKFILL' }),
  /**
   * A contact import job, in the workspace's imports partition (apart from the
   * configuration one: its chunks are large). Job IDs are time-ordered: the jobs list
   * newest first.
   */
  contactImportJob: (workspaceId: string, jobId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#CONTACTIMPORT`, sk: `JOB#${jobId}` }),
  contactImportJobs: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#CONTACTIMPORT`, skPrefix: 'JOB#' }),
  /** Chunk `index` of an import job's parsed rows (each item under 350 KB; deleted once applied, TTL otherwise). */
  contactImportChunk: (workspaceId: string, jobId: string, index: number): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#CONTACTIMPORT`,
    sk: `CHUNK#${jobId}#${String(index).padStart(6, '0')}`,
  }),
  /** An uploaded import file (retell-sdk's upload-contact-import-file): its description, TTL a day. */
  contactImportUpload: (workspaceId: string, uploadId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#CONTACTIMPORT`, sk: `UPLOAD#${uploadId}` }),
  /** Part `index` of an uploaded file's bytes (each under 350 KB), TTL a day. */
  contactImportUploadPart: (workspaceId: string, uploadId: string, index: number): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#CONTACTIMPORT`,
    sk: `UPLOADPART#${uploadId}#${String(index).padStart(6, '0')}`,
  }),

  /**
   * Testing (shared/testing): a test case definition, in the workspace's test cases
   * partition. IDs are time-ordered: the list is newest first.
   */
  testCase: (workspaceId: string, testCaseId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#TESTCASE`, sk: `CASE#${testCaseId}` }),
  testCases: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#TESTCASE`, skPrefix: 'CASE#' }),
  /** A batch test with its counts, in the workspace's batch tests partition (time-ordered IDs: newest first). */
  batchTest: (workspaceId: string, batchTestId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#TESTBATCH`, sk: `BATCH#${batchTestId}` }),
  batchTests: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#TESTBATCH`, skPrefix: 'BATCH#' }),
  /** A test run, in its batch's partition: a batch lists its runs with one Query. */
  testRun: (workspaceId: string, batchTestId: string, testRunId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#TESTBATCH#${batchTestId}`,
    sk: `RUN#${testRunId}`,
  }),
  testRuns: (workspaceId: string, batchTestId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#TESTBATCH#${batchTestId}`, skPrefix: 'RUN#' }),
  /** Whether publishing an agent version needs a passing batch test on its engine version. */
  testingSettings: (workspaceId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: 'TESTINGSETTINGS' }),
  /**
   * The workspace's test-run slots (shared/testing/runs/runner.ts): how many simulated
   * conversations it runs at once over all its batches, a semaphore of leased slots.
   */
  /**
   * One rollup cell (shared/analytics/rollups): a workspace's figures for one table (calls or
   * chats), one bucket level (minute, hour, day), one view (the dimensions it groups by), one
   * bucket and one value of the view, in one of its shards. A view's cells share a partition
   * and sort by bucket, so a time range of one view is one query whatever the shard count.
   */
  rollupCell: (workspaceId: string, partition: string, bucket: string, value: string, shard: number): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#ROLLUP#${partition}`,
    sk: `${bucket}#${value}#${shard}`,
  }),
  rollupCells: (workspaceId: string, partition: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#ROLLUP#${partition}` }),
  /**
   * That a conversation's phase (ended, analyzed) was added to the rollups: written in the
   * same transaction as the cells, on condition it is new, so a repeated step counts once.
   */
  rollupFact: (workspaceId: string, table: string, id: string, phase: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#ROLLUPFACT`,
    sk: `${table}#${id}#${phase}`,
  }),
  rollupFacts: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#ROLLUPFACT` }),
  /**
   * A conversation whose phase failed to reach the rollups, for the rollup backfill to add:
   * in the backfill job's lease partition, so its hourly run reads its cursor and every
   * pending repair in one Query.
   */
  rollupRepair: (workspaceId: string, table: string, id: string): ItemKey => ({ pk: 'LEASE#rollup-backfill', sk: `REPAIR#${workspaceId}#${table}#${id}` }),
  rollupBackfillPartition: (): PartitionQuery => ({ pk: 'LEASE#rollup-backfill' }),
  /**
   * Analytics dashboards (shared/analytics/dashboards): a saved dashboard, in the workspace's
   * dashboards partition (time-ordered IDs: the list is newest first), beside the counter
   * that holds the workspace to its most dashboards.
   */
  dashboard: (workspaceId: string, dashboardId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#DASHBOARD`, sk: `DASHBOARD#${dashboardId}` }),
  dashboards: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#DASHBOARD`, skPrefix: 'DASHBOARD#' }),
  dashboardCount: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#DASHBOARD`, sk: 'COUNT' }),
  /**
   * QA (shared/qa): a cohort, in the workspace's cohorts partition (time-ordered IDs: the
   * list is newest first), beside the counter that holds the workspace to its most cohorts.
   */
  qaCohort: (workspaceId: string, cohortId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#QACOHORT`, sk: `COHORT#${cohortId}` }),
  qaCohorts: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#QACOHORT`, skPrefix: 'COHORT#' }),
  qaCohortCount: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#QACOHORT`, sk: 'COUNT' }),
  /**
   * A cohort's own partition: one result per call and rubric version (its key is the claim
   * that scores the call once; call IDs sort by time, so a version's results list by time),
   * a slim copy of each scored result ordered by its overall score (worst first), each
   * version's per-day counters (max_per_day) and the cohort's runs.
   */
  qaResult: (workspaceId: string, cohortId: string, rubricVersion: number, callId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#QACOHORT#${cohortId}`,
    sk: `RESULT#V#${String(rubricVersion).padStart(9, '0')}#${callId}`,
  }),
  qaResults: (workspaceId: string, cohortId: string, rubricVersion: number): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#QACOHORT#${cohortId}`,
    skPrefix: `RESULT#V#${String(rubricVersion).padStart(9, '0')}#`,
  }),
  qaScore: (workspaceId: string, cohortId: string, rubricVersion: number, hundredths: number, callId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#QACOHORT#${cohortId}`,
    sk: `SCORE#V#${String(rubricVersion).padStart(9, '0')}#${String(hundredths).padStart(5, '0')}#${callId}`,
  }),
  qaScores: (workspaceId: string, cohortId: string, rubricVersion: number): PartitionQuery => ({
    pk: `${workspacePartition(workspaceId)}#QACOHORT#${cohortId}`,
    skPrefix: `SCORE#V#${String(rubricVersion).padStart(9, '0')}#`,
  }),
  qaDayCount: (workspaceId: string, cohortId: string, rubricVersion: number, day: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#QACOHORT#${cohortId}`,
    sk: `DAY#V#${String(rubricVersion).padStart(9, '0')}#${day}`,
  }),
  qaRun: (workspaceId: string, cohortId: string, runId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#QACOHORT#${cohortId}`, sk: `RUN#${runId}` }),
  qaCohortItems: (workspaceId: string, cohortId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#QACOHORT#${cohortId}` }),
  /** Which cohort, call and rubric version a QA result is: `GET /qa/results/{id}` names only the result. */
  qaResultRef: (workspaceId: string, resultId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#QARESULT`, sk: `RESULT#${resultId}` }),
  /**
   * A call's QA results, in the workspace's one partition of them (`CALL#<call>#<result id>`
   * → cohort and rubric version), written in the claim's transaction: deleting a call (its
   * delete, a privacy erase, retention) finds its results in every cohort and version here.
   */
  qaCallResult: (workspaceId: string, callId: string, resultId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#QACALL`, sk: `CALL#${callId}#${resultId}` }),
  qaCallResults: (workspaceId: string, callId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#QACALL`, skPrefix: `CALL#${callId}#` }),
  /** A workspace's leased QA scoring slots: at most a few calls scored at once. */
  qaSlots: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#QASLOTS`, sk: 'SLOTS' }),
  /**
   * Alert rules (shared/analytics/alerts): a rule, in the workspace's alerts partition
   * (time-ordered IDs), beside the counter that holds the workspace to its most rules.
   */
  alert: (workspaceId: string, alertId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#ALERT`, sk: `ALERT#${alertId}` }),
  alerts: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#ALERT`, skPrefix: 'ALERT#' }),
  alertCount: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#ALERT`, sk: 'COUNT' }),
  /**
   * An enabled rule's next evaluation in the due index the alert tick reads: one of a few
   * partitions (picked by the rule's ID), sorted by due time, so a tick reads what is due
   * with one Query a partition whatever the number of rules.
   */
  alertDue: (workspaceId: string, alertId: string, dueMs: number): ItemKey => ({
    pk: `ALERTDUE#${alertDuePartitionOf(alertId)}`,
    sk: `${String(dueMs).padStart(15, '0')}#${workspaceId}#${alertId}`,
  }),
  alertDuePartition: (partition: number): PartitionQuery => ({ pk: `ALERTDUE#${partition}` }),
  /** What a rule's change of state recorded, in the workspace's alert events partition (time-ordered IDs: newest first). */
  alertEvent: (workspaceId: string, alertEventId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#ALERTEVENT`, sk: `EVENT#${alertEventId}` }),
  alertEvents: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#ALERTEVENT`, skPrefix: 'EVENT#' }),
  /** A workspace's leased test-run slots: at most 6 simulated conversations at once. */
  testRunSlots: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#TESTRUNSLOTS`, sk: 'SLOTS' }),
  /** Which batch a test run belongs to: get-test-run names only the run. */
  testRunBatch: (workspaceId: string, testRunId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#TESTRUN`, sk: `RUN#${testRunId}` }),

  /**
   * Account data (shared/account-data): an export request, in the workspace's exports
   * partition (time-ordered IDs: the list is newest first).
   */
  exportJob: (workspaceId: string, exportId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#EXPORT`, sk: `EXPORT#${exportId}` }),
  exportJobs: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#EXPORT`, skPrefix: 'EXPORT#' }),
  /** An asset's record, in the workspace's assets partition. */
  asset: (workspaceId: string, assetId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#ASSET`, sk: `ASSET#${assetId}` }),
  assets: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#ASSET`, skPrefix: 'ASSET#' }),
  /** The public pointer of an asset (`GET /public/assets/{id}` has no workspace): each ID its own partition. */
  assetPublic: (assetId: string): ItemKey => ({ pk: `ASSETPUB#${assetId}`, sk: 'ASSETPUB' }),
  /** A privacy request (an erase of one number, a retention run), in the workspace's privacy partition. */
  privacyRequest: (workspaceId: string, requestId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#PRIVACY`, sk: `REQ#${requestId}` }),
  /** The daily retention sweep of one UTC day (every workspace's retention): its cursor, lease and counts. */
  retentionSweep: (day: string): ItemKey => ({ pk: `RETENTIONSWEEP#${day}`, sk: 'RETENTIONSWEEP' }),

  /**
   * Integrations (shared/integrations, docs/integrations.md), all in the workspace's
   * integrations partition `WS#<ws>#INTEGRATION`: a connection (OAuth tokens or pasted
   * credentials, sealed; its refresh lease and token version), an app, a CRM provider's
   * config, the workspace's CRM settings, sync jobs (time-ordered IDs, newest first) and
   * the per-object sync records that make a re-run idempotent.
   */
  integrationConnection: (workspaceId: string, connectionId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#INTEGRATION`,
    sk: `CONN#${connectionId}`,
  }),
  integrationApp: (workspaceId: string, appId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#INTEGRATION`, sk: `APP#${appId}` }),
  integrationApps: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#INTEGRATION`, skPrefix: 'APP#' }),
  crmProviderConfig: (workspaceId: string, provider: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#INTEGRATION`, sk: `CRMCONFIG#${provider}` }),
  crmProviderConfigs: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#INTEGRATION`, skPrefix: 'CRMCONFIG#' }),
  crmSettings: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#INTEGRATION`, sk: 'CRMSETTINGS' }),
  crmSyncJob: (workspaceId: string, jobId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#INTEGRATION`, sk: `CRMSYNC#${jobId}` }),
  crmSyncJobs: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#INTEGRATION`, skPrefix: 'CRMSYNC#' }),
  /** The one sync job of a workspace in flight (a conditional put: one at a time). */
  crmSyncLock: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#INTEGRATION`, sk: 'CRMSYNCLOCK' }),
  /** What one object (contact or call) last pushed to one provider looked like: a re-run skips it. */
  crmSyncedObject: (workspaceId: string, provider: string, objectId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#CRMSYNCED#${provider}`,
    sk: objectId,
  }),
  /**
   * An analysed call whose analysis data was written into its contact (the CRM config's
   * crm_analysis_data_mappings): claimed once per call, so a repeated push merges nothing twice.
   */
  crmCallAnalysisApplied: (workspaceId: string, callId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#CRMANALYSIS`, sk: callId }),
  /**
   * A pending OAuth authorization (its state's nonce): one item, its own partition,
   * consumed by a conditional delete (single use), expiring by TTL.
   */
  oauthState: (nonce: string): ItemKey => ({ pk: `OAUTHSTATE#${nonce}`, sk: 'OAUTHSTATE' }),
  /**
   * gsi1 entry of a connection whose token expires: one partition, sorted by expiry, so the
   * minute job reads the connections expiring within 10 minutes with one query (not a scan).
   */
  oauthExpiry: (expiresAtMs: number, workspaceId: string, connectionId: string): { gsi1pk: string; gsi1sk: string } => ({
    gsi1pk: 'OAUTHEXPIRY',
    gsi1sk: `${String(expiresAtMs).padStart(15, '0')}#${workspaceId}#${connectionId}`,
  }),
  /** The gsi1 sort key bound of connections expiring before `beforeMs`. */
  oauthExpiring: (beforeMs: number): { gsi1pk: string; gsi1skBefore: string } => ({
    gsi1pk: 'OAUTHEXPIRY',
    gsi1skBefore: `${String(beforeMs).padStart(15, '0')}#`,
  }),

  /**
   * gsi1 entry of a CRM provider config with a scheduled sync: one partition, sorted by the
   * next sync's time, so the minute job reads the due ones with one query (not a scan).
   */
  crmSyncDue: (nextSyncMs: number, workspaceId: string, provider: string): { gsi1pk: string; gsi1sk: string } => ({
    gsi1pk: 'CRMSYNCDUE',
    gsi1sk: `${String(nextSyncMs).padStart(15, '0')}#${workspaceId}#${provider}`,
  }),
  /** The gsi1 sort key bound of CRM syncs due before `beforeMs`. */
  crmSyncsDue: (beforeMs: number): { gsi1pk: string; gsi1skBefore: string } => ({
    gsi1pk: 'CRMSYNCDUE',
    gsi1skBefore: `${String(beforeMs).padStart(15, '0')}#`,
  }),

  /** A verified (caller ID) number, in the workspace partition. */
  verifiedNumber: (workspaceId: string, verifiedNumberId: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `VERIFIEDNUM#${verifiedNumberId}`,
  }),
  verifiedNumbers: (workspaceId: string): PartitionQuery => ({
    pk: workspacePartition(workspaceId),
    skPrefix: 'VERIFIEDNUM#',
  }),
  /** Holds one verified-number record per number and workspace. */
  verifiedNumberNumber: (workspaceId: string, phoneNumber: string): ItemKey => ({
    pk: workspacePartition(workspaceId),
    sk: `VERIFIEDNUMNUM#${phoneNumber}`,
  }),

  /**
   * Billing (shared/billing, docs/billing.md): a workspace's billing partition. The account
   * item holds the balance (µUSD), the month's charges, settings and open invoices; every
   * ledger write updates it in the same transaction as its entry.
   */
  billingAccount: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, sk: 'ACCOUNT' }),
  /** A ledger entry: 12 hex of its time, then its ID, so the ledger lists in time order and a month is one range. */
  ledgerEntry: (workspaceId: string, createdMs: number, entryId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#BILLING`,
    sk: `ENTRY#${createdMs.toString(16).padStart(12, '0')}#${entryId}`,
  }),
  ledgerEntries: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, skPrefix: 'ENTRY#' }),
  /** The sort key bound of a ledger range starting (or ending) at `ms`. */
  ledgerEntryBound: (ms: number): string => `ENTRY#${Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0')}`,
  /** The marker of a ledger entry's source (a call's charge, a checkout): written once, in the entry's transaction. */
  ledgerSource: (workspaceId: string, sourceKey: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#BILLING`,
    sk: `SOURCE#${sourceKey}`,
  }),
  /** Charges of one day (YYYY-MM-DD, UTC) by product, added in the charge's transaction. */
  billingUsageDay: (workspaceId: string, day: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, sk: `USAGE#${day}` }),
  billingUsageDays: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, skPrefix: 'USAGE#' }),
  billingUsageBound: (day: string): string => `USAGE#${day}`,
  /** QA minutes scored in a month (YYYY-MM) and how many of them were beyond the free allowance (shared/qa/usage). */
  qaUsageMonth: (workspaceId: string, month: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, sk: `QAUSAGE#${month}` }),
  /** A scored QA result's place in its month's QA minutes: counted once, however often its scoring is retried. */
  qaUsageCharge: (workspaceId: string, resultId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, sk: `QACHARGE#${resultId}` }),
  /** The assistant's credits used on one UTC day (YYYY-MM-DD) and how many of them were paid (shared/conductor/credits). */
  conductorCreditDay: (workspaceId: string, day: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, sk: `CONDUCTORDAY#${day}` }),
  /** The assistant's credits used in one month (YYYY-MM): what its monthly limit counts. */
  conductorCreditMonth: (workspaceId: string, month: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, sk: `CONDUCTORMONTH#${month}` }),
  /** An assistant message's charge, by its message ID: counted once, however often the charge is retried. */
  conductorCharge: (workspaceId: string, messageId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, sk: `CONDUCTORCHARGE#${messageId}` }),
  /** An entry of the assistant's ledger, by its time-ordered ID, so the ledger lists newest first. */
  conductorLedgerEntry: (workspaceId: string, entryId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, sk: `CONDUCTORENTRY#${entryId}` }),
  conductorLedgerEntries: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, skPrefix: 'CONDUCTORENTRY#' }),
  /** An invoice of the workspace (its ID derived from the workspace and period, so one per month). */
  invoice: (workspaceId: string, invoiceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, sk: `INVOICE#${invoiceId}` }),
  invoices: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#BILLING`, skPrefix: 'INVOICE#' }),
  /**
   * A checkout session of the built-in payments mock, by the SHA-256 of its page's token (the
   * page is public: the token in its URL is the only credential, never stored). TTL a day.
   */
  mockCheckout: (tokenHash: string): ItemKey => ({ pk: `MOCKCHECKOUT#${tokenHash}`, sk: 'MOCKCHECKOUT' }),
  /** A Stripe event processed (by its event ID, across workspaces): a replay finds it and changes nothing. */
  stripeEvent: (eventId: string): ItemKey => ({ pk: `STRIPEEVENT#${eventId}`, sk: 'STRIPEEVENT' }),
  /** A payment that credited a workspace (by its PaymentIntent ID): refunds and disputes of it find their workspace here. */
  stripePayment: (paymentIntentId: string): ItemKey => ({ pk: `STRIPEPAYMENT#${paymentIntentId}`, sk: 'STRIPEPAYMENT' }),
  // ── Members, sessions and enterprise sign-in (shared/members; the gate reads the first two) ──
  /** A member of a workspace: email, role, active. The gate reads it on every session request. */
  member: (workspaceId: string, memberId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: `MEMBER#${memberId}` }),
  members: (workspaceId: string): PartitionQuery => ({ pk: workspacePartition(workspaceId), skPrefix: 'MEMBER#' }),
  /** Holds one member per email and workspace (the email lower-cased). */
  memberEmail: (workspaceId: string, email: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: `MEMBEREMAIL#${email}` }),
  /** The workspace's member counters (`admin_count`, `member_count`) and owner: the last-admin guard's condition. */
  memberRoster: (workspaceId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: 'MEMBERROSTER' }),
  /** A signed-in session (its refresh token's hash), read with the member by the gate. */
  memberSession: (workspaceId: string, sessionId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#SESSION`, sk: `SESSION#${sessionId}` }),
  memberSessions: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#SESSION`, skPrefix: 'SESSION#' }),
  /** An invite (its token's hash), in the workspace partition. */
  invite: (workspaceId: string, inviteId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: `INVITE#${inviteId}` }),
  invites: (workspaceId: string): PartitionQuery => ({ pk: workspacePartition(workspaceId), skPrefix: 'INVITE#' }),
  /** The platform's session signing key, sealed (one item for all workspaces). */
  sessionSigningKey: (): ItemKey => ({ pk: 'SESSIONKEY', sk: 'SESSIONKEY' }),
  /** SSO (OIDC), SAML and SCIM settings of a workspace. */
  ssoConfig: (workspaceId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: 'SSOCONFIG' }),
  samlConfig: (workspaceId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: 'SAMLCONFIG' }),
  scimConfig: (workspaceId: string): ItemKey => ({ pk: workspacePartition(workspaceId), sk: 'SCIMCONFIG' }),
  /** A SCIM bearer token's record, addressed by its hash (the SCIM routes' one lookup). */
  scimToken: (tokenSha256: string): ItemKey => ({ pk: `SCIMTOKEN#${tokenSha256}`, sk: 'SCIMTOKEN' }),
  /** A pending OIDC sign-in (state, PKCE verifier, nonce): single use, 10 minutes. */
  ssoState: (stateSha256: string): ItemKey => ({ pk: `SSOSTATE#${stateSha256}`, sk: 'SSOSTATE' }),
  /** A SAML assertion ID already used (replay guard), until the assertion expires. */
  samlAssertion: (workspaceId: string, assertionId: string): ItemKey => ({ pk: `SAMLASSERTION#${workspaceId}#${assertionId}`, sk: 'SAMLASSERTION' }),
  /**
   * An SP-initiated SAML sign-in's AuthnRequest ID (its hash): the ACS takes it once, so the
   * response's `InResponseTo` names a request we sent and is never accepted twice. 10 minutes.
   */
  samlRequest: (workspaceId: string, requestIdSha256: string): ItemKey => ({ pk: `SAMLREQUEST#${workspaceId}#${requestIdSha256}`, sk: 'SAMLREQUEST' }),
  /**
   * An IdP-initiated SAML sign-in waiting for the user's Continue (its verified email), by
   * its confirmation token's hash: taken once by the confirm route. 10 minutes.
   */
  samlConfirmation: (workspaceId: string, tokenSha256: string): ItemKey => ({ pk: `SAMLCONFIRM#${workspaceId}#${tokenSha256}`, sk: 'SAMLCONFIRM' }),
  /**
   * A deleted workspace's purge (shared/members/purge.ts): its phase, step number and the
   * items phase's cursor. Outside the workspace's partitions (the purge deletes those)
   * though its key names the workspace; kept 90 days after the purge ends as its record.
   */
  workspacePurge: (workspaceId: string): ItemKey => ({ pk: `PURGE#${workspaceId}`, sk: 'PURGE' }),
  /**
   * The assistant (shared/conductor, docs/assistant.md): a workspace's sessions in one
   * partition (time-ordered IDs: the list is newest first) beside the walkthrough's progress
   * marker (what the assistant did that leaves no item of its own: a playground turn); each
   * session's messages in a partition of their own (time-ordered IDs: oldest first), emptied
   * when the session is deleted.
   */
  conductorSession: (workspaceId: string, sessionId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#CONDUCTOR`, sk: `SESSION#${sessionId}` }),
  conductorSessions: (workspaceId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#CONDUCTOR`, skPrefix: 'SESSION#' }),
  conductorProgress: (workspaceId: string): ItemKey => ({ pk: `${workspacePartition(workspaceId)}#CONDUCTOR`, sk: 'PROGRESS' }),
  conductorMessage: (workspaceId: string, sessionId: string, messageId: string): ItemKey => ({
    pk: `${workspacePartition(workspaceId)}#CONDUCTOR#${sessionId}`,
    sk: `MESSAGE#${messageId}`,
  }),
  conductorMessages: (workspaceId: string, sessionId: string): PartitionQuery => ({ pk: `${workspacePartition(workspaceId)}#CONDUCTOR#${sessionId}`, skPrefix: 'MESSAGE#' }),
} as const;

/** Rate-window counter attribute for one epoch minute (see shared/platform/auth/rate-window.ts). */
export const rateWindowAttribute = (epochMinute: number) => `rl_${epochMinute}`;
export const RATE_WINDOW_ATTRIBUTE = /^rl_(\d+)$/;

/** Calls-per-second token i of a number's bucket: the epoch ms from which it may be taken again. */
export const cpsTokenAttribute = (index: number) => `t${index}`;

/** Outbound test slot i of a workspace: the epoch ms its lease ends; `outboundSlotOwnerAttribute(i)` names the holder. */
export const outboundSlotAttribute = (index: number) => `s${index}`;
export const outboundSlotOwnerAttribute = (index: number) => `o${index}`;

/**
 * Object keys in the recordings bucket (shared/platform/aws/object-store.ts), built here like
 * the table's keys: `recordings/<ws>/<call_id>/<name>`, so a workspace's objects share a
 * prefix and a call's artifacts sit together.
 */
export const objectKeys = {
  callArtifact: (workspaceId: string, callId: string, name: 'recording.wav' | 'recording.unscrubbed.wav' | 'recording.ogg'): string =>
    `recordings/${workspaceId}/${callId}/${name}`,
  /** An export's file: `exports/<ws>/<export_id>.<csv|jsonl>` (expires by its retention tag). */
  exportFile: (workspaceId: string, exportId: string, format: 'csv' | 'jsonl'): string => `exports/${workspaceId}/${exportId}.${format}`,
  /** An uploaded asset's bytes: `assets/<ws>/<asset_id>`. */
  asset: (workspaceId: string, assetId: string): string => `assets/${workspaceId}/${assetId}`,
  /** A presigned upload's bytes (an asset, voice sample or knowledge-base file past the request limit) until it is used: `uploads/<ws>/<upload_id>`. */
  upload: (workspaceId: string, uploadId: string): string => `uploads/${workspaceId}/${uploadId}`,
  /** Every prefix holding a workspace's objects in the recordings bucket (recordings, exports, assets, presigned uploads): the purge empties them. */
  workspaceRecordingsBucketPrefixes: (workspaceId: string): string[] => [`recordings/${workspaceId}/`, `exports/${workspaceId}/`, `assets/${workspaceId}/`, `uploads/${workspaceId}/`],
  /** The prefix of a workspace's objects in the knowledge-base bucket. */
  workspaceKnowledgeBasePrefix: (workspaceId: string): string => `knowledge-bases/${workspaceId}/`,
  /** A knowledge base's index (`index-<token>.json`), in the knowledge-base bucket. */
  knowledgeBaseIndex: (workspaceId: string, knowledgeBaseId: string, token: string): string => `knowledge-bases/${workspaceId}/${knowledgeBaseId}/index-${token}.json`,
  /** Everything of one knowledge base shares this prefix (its delete removes what is under it). */
  knowledgeBasePrefix: (workspaceId: string, knowledgeBaseId: string): string => `knowledge-bases/${workspaceId}/${knowledgeBaseId}/`,
  /** A source's original (`original`), its extracted text (`content.txt`) and its chunks (`chunks.json`). */
  knowledgeBaseSource: (workspaceId: string, knowledgeBaseId: string, sourceId: string, name: 'original' | 'content.txt' | 'chunks.json'): string =>
    `knowledge-bases/${workspaceId}/${knowledgeBaseId}/sources/${sourceId}/${name}`,
};
