import { taggedAgentVersions } from '../agents/lookups/index.ts';
import { invalidPaginationKey, NotFound } from '../platform/errors.ts';
import type { CallFilter, KeyedFilter, ListCallsInput } from './schemas.ts';
import { withTranscripts } from './transcript.ts';
import {
  countListing,
  firstEntries,
  ListingExpression,
  mergedEntries,
  readListedItems,
  shardReadSizes,
  type EntryTest,
  type ListingCondition,
  type ListingFilter,
} from '../platform/store/sharded-listing.ts';
import { callListingPartitions, countCallsIfComplete, getCallItem, type CallItem, type CallListingEntry } from './store.ts';

/*
 * `POST /v3/list-calls`: a query of the listing index (gsi1), never a scan. A workspace's
 * calls are spread over CALL_LISTING_SHARDS index partitions; each is read from the page's
 * starting point (the pagination key, a call ID, which sorts by time) with a
 * FilterExpression on the projected attributes, the shards are merged by call ID, and the
 * page's full items are read by key (BatchGetItem).
 *
 * Filters (retell-sdk's FilterCriteria) apply where their attribute is:
 * - in the FilterExpression, on the attributes gsi1 projects (status, type, direction,
 *   numbers, agent and version, batch, times, duration, cost, latency, analysis flags,
 *   data storage setting): DynamoDB drops what does not match before it answers;
 * - on the index entry after the read, for what an expression cannot say (`ew`, ends with);
 * - on the full item after the BatchGetItem, for open-ended maps (metadata, dynamic
 *   variables, custom analysis data, custom attributes) and tool calls, which no index
 *   projects (tool calls are transcript lines: a Query of each candidate's lines). Then the
 *   listing keeps reading in index order until the page is full.
 */

type Condition = ListingCondition;

/** What a filter becomes: an index expression, tests on index entries and on full items. */
interface ListingPlan {
  index?: ListingFilter;
  entryTests: EntryTest[];
  itemTests: ((item: CallItem) => boolean)[];
  /** The item tests read the transcript (tool calls): candidates' lines are read with them. */
  needsTranscript?: boolean;
  /** A filter no call can match (an agent tag no agent has): nothing is read. */
  empty: boolean;
}

/**
 * `include_total` without a filter is the workspace's call counter (exact, one Query). With
 * filters it counts on the index (Select: COUNT), newest first, examining at most
 * TOTAL_EXAMINE_CAP entries: a total at the cap means "at least", and a selective filter
 * counts among the newest TOTAL_EXAMINE_CAP calls. Each request costs a bounded read
 * whatever the workspace's history.
 */
const TOTAL_EXAMINE_CAP = 10_000;
/** With filters on full items (or `ew`), the most candidate calls read to count them. */
const TOTAL_ITEM_CAP = 1_000;

const INDEX_FIELDS = [
  'agent_id', 'batch_call_id', 'call_id', 'call_status', 'call_successful', 'call_type', 'combined_cost',
  'data_storage_setting', 'direction', 'disconnection_reason', 'duration_ms', 'e2e_latency_p50', 'end_timestamp',
  'from_number', 'in_voicemail', 'start_timestamp', 'to_number', 'user_sentiment',
] as const;

/** A field's value in any accepted shape (plain arrays, thresholds, retell-sdk's objects) as conditions. */
function conditionsOf(value: unknown): Condition[] {
  if (Array.isArray(value)) return [{ op: 'in', value }];
  const filter = value as { op?: string; value?: unknown; lower_threshold?: number; upper_threshold?: number };
  if (filter.op === undefined) {
    return [
      ...(filter.lower_threshold !== undefined ? [{ op: 'ge' as const, value: filter.lower_threshold }] : []),
      ...(filter.upper_threshold !== undefined ? [{ op: 'le' as const, value: filter.upper_threshold }] : []),
    ];
  }
  return [filter as Condition];
}

/** Whether a value satisfies a condition, as the index expression would decide it. */
function matches(actual: unknown, condition: Condition): boolean {
  const present = actual !== undefined && actual !== null;
  switch (condition.op) {
    case 'pr':
      return present;
    case 'np':
      return !present;
    case 'in':
      return present && condition.value.some((v) => sameValue(actual, v));
    case 'eq':
      return present && sameValue(actual, condition.value);
    case 'ne':
      return !present || !sameValue(actual, condition.value);
    case 'sw':
    case 'ew':
    case 'co': {
      const text = asText(actual);
      if (text === undefined) return false;
      return condition.op === 'sw' ? text.startsWith(condition.value) : condition.op === 'ew' ? text.endsWith(condition.value) : text.includes(condition.value);
    }
    default: {
      const number = asNumber(actual);
      if (number === undefined) return false;
      switch (condition.op) {
        case 'gt':
          return number > condition.value;
        case 'ge':
          return number >= condition.value;
        case 'lt':
          return number < condition.value;
        case 'le':
          return number <= condition.value;
        default:
          return number >= condition.value[0] && number <= condition.value[1];
      }
    }
  }
}

/**
 * Values of open-ended maps are compared loosely by the filter's type: dynamic variables
 * are strings ("42", "true"), so a number or boolean filter reads them as one.
 */
function sameValue(actual: unknown, wanted: string | number | boolean): boolean {
  if (typeof wanted === 'number') return asNumber(actual) === wanted;
  if (typeof wanted === 'boolean') return actual === wanted || actual === String(wanted);
  return asText(actual) === wanted;
}

function asText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

function asNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return undefined;
}

const record = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/** The maps the keyed filters look into. */
const KEYED_SOURCES: Record<'metadata' | 'dynamic_variables' | 'custom_analysis_data' | 'custom_attributes', (item: CallItem) => Record<string, unknown>> = {
  metadata: (item) => record(item.metadata),
  // Variables given at creation, then those the call collected (which win on a shared name).
  dynamic_variables: (item) => ({ ...record(item.retell_llm_dynamic_variables), ...record(item.collected_dynamic_variables) }),
  custom_analysis_data: (item) => record(record(item.call_analysis).custom_analysis_data),
  custom_attributes: (item) => record((item as { custom_attributes?: unknown }).custom_attributes),
};

function keyedTest(source: (item: CallItem) => Record<string, unknown>, filters: KeyedFilter[]) {
  return (item: CallItem) => {
    const map = source(item);
    return filters.every((filter) => matches(Object.hasOwn(map, filter.key) ? map[filter.key] : undefined, filter as Condition));
  };
}

type ToolCallFilter = NonNullable<CallFilter['tool_calls']>[number];

/** Each tool-call filter must be met by one tool call of the call (invocation plus its result). */
function toolCallsTest(filters: ToolCallFilter[]) {
  return (item: CallItem) => {
    const entries = (item.transcript_with_tool_calls ?? []) as Record<string, unknown>[];
    const results = new Map(entries.filter((e) => e.role === 'tool_call_result').map((e) => [e.tool_call_id, e]));
    const calls = entries
      .filter((e) => e.role === 'tool_call_invocation')
      .map((invocation) => {
        const result = results.get(invocation.tool_call_id);
        return {
          name: invocation.name,
          type: invocation.type,
          success: result ? result.successful !== false : undefined,
          latency_ms: result?.latency_ms ?? invocation.latency_ms,
        };
      });
    return filters.every((filter) =>
      calls.some(
        (call) =>
          (filter.name === undefined || call.name === filter.name) &&
          (filter.type === undefined || call.type === filter.type) &&
          (filter.success === undefined || call.success === (typeof filter.success === 'boolean' ? filter.success : filter.success.value)) &&
          (filter.latency_ms === undefined || conditionsOf(filter.latency_ms).every((c) => matches(call.latency_ms, c))),
      ),
    );
  };
}

/** Turns filter_criteria into the index expression and the tests the index cannot do. */
async function planListing(workspaceId: string, criteria: CallFilter | undefined): Promise<ListingPlan> {
  const plan: ListingPlan = { entryTests: [], itemTests: [], empty: false };
  if (!criteria) return plan;
  const expression = new ListingExpression();
  const onIndex = (attribute: string, conditions: Condition[], absentMeans?: string) => {
    for (const condition of conditions) {
      const syntax = expression.condition(attribute, condition, absentMeans);
      if (syntax) expression.parts.push(syntax);
      else plan.entryTests.push((entry) => matches(entry[attribute], condition));
    }
  };
  for (const field of INDEX_FIELDS) {
    const value = criteria[field];
    if (value === undefined) continue;
    // Calls are stored without data_storage_setting until one is set: they keep everything.
    onIndex(field, conditionsOf(value), field === 'data_storage_setting' ? 'everything' : undefined);
  }
  const agents: { agent_id: string; version?: number[] }[][] = [];
  if (criteria.agent) agents.push(criteria.agent);
  if (criteria.agent_tag) {
    const names = conditionsOf(criteria.agent_tag).flatMap((c) => (c.op === 'in' ? c.value.map(String) : []));
    const tagged = await taggedAgentVersions(workspaceId, names);
    if (tagged.length === 0) return { ...plan, empty: true };
    agents.push(tagged.map(({ agent_id, version }) => ({ agent_id, version: [version] })));
  }
  for (const anyOf of agents) {
    // DynamoDB refuses redundant parentheses: only alternatives of several get them.
    const several = anyOf.length > 1;
    const alternatives = anyOf.map(({ agent_id, version }) => {
      const id = `${expression.name('agent_id')} = ${expression.value(agent_id)}`;
      if (!version?.length) return id;
      const both = `${id} AND ${expression.name('agent_version')} IN (${version.map((v) => expression.value(v)).join(', ')})`;
      return several ? `(${both})` : both;
    });
    expression.parts.push(several ? `(${alternatives.join(' OR ')})` : alternatives[0]!);
  }
  for (const [field, source] of Object.entries(KEYED_SOURCES) as [keyof typeof KEYED_SOURCES, (item: CallItem) => Record<string, unknown>][]) {
    const filters = criteria[field];
    if (filters) plan.itemTests.push(keyedTest(source, filters));
  }
  if (criteria.tool_calls) {
    plan.itemTests.push(toolCallsTest(criteria.tool_calls));
    plan.needsTranscript = true;
  }
  plan.index = expression.build();
  return plan;
}

/** The calls the entries point at, in index order (with their transcripts when item tests read them). */
async function readItems(entries: CallListingEntry[], options: { transcripts?: boolean } = {}): Promise<CallItem[]> {
  const ordered = await readListedItems<CallItem>(entries);
  return options.transcripts ? withTranscripts(ordered) : ordered;
}

export async function listCallItems(
  workspaceId: string,
  input: Pick<ListCallsInput, 'limit' | 'sort_order' | 'pagination_key' | 'filter_criteria'> & Partial<Pick<ListCallsInput, 'skip' | 'include_total'>>,
): Promise<{ items: CallItem[]; hasMore: boolean; total?: number }> {
  if (input.pagination_key) {
    try {
      await getCallItem(workspaceId, input.pagination_key);
    } catch (error) {
      if (error instanceof NotFound) throw invalidPaginationKey();
      throw error;
    }
  }
  const plan = await planListing(workspaceId, input.filter_criteria);
  if (plan.empty) return { items: [], hasMore: false, ...(input.include_total ? { total: 0 } : {}) };
  const ascending = input.sort_order === 'ascending';
  const skip = input.skip ?? 0;
  const [page, total] = await Promise.all([
    readPage(workspaceId, plan, ascending, input.pagination_key, skip, input.limit),
    input.include_total ? countMatching(workspaceId, plan) : undefined,
  ]);
  return { ...page, ...(total !== undefined ? { total } : {}) };
}

function merged(
  workspaceId: string,
  plan: ListingPlan,
  ascending: boolean,
  after: string | undefined,
  reads: { firstPage: number; laterPage: number; examineCap?: number },
) {
  return mergedEntries<CallListingEntry>({
    gsi1pks: callListingPartitions(workspaceId),
    ascending,
    after,
    filter: plan.index,
    entryTests: plan.entryTests,
    idOf: (entry) => entry.call_id,
    ...reads,
  });
}

/** The page: `limit` matching calls after `skip` more, from the starting point, in order. */
async function readPage(
  workspaceId: string,
  plan: ListingPlan,
  ascending: boolean,
  after: string | undefined,
  skip: number,
  limit: number,
): Promise<{ items: CallItem[]; hasMore: boolean }> {
  // One more than the page tells whether there is a next page.
  const want = skip + limit + 1;
  const fullItemFilters = plan.itemTests.length > 0;
  const filtered = plan.index !== undefined || plan.entryTests.length > 0 || fullItemFilters;
  // Each shard holds about a quarter of the page: its first read asks for a little more
  // than that, and a shard that runs out reads on. A filtered read asks for more, since
  // DynamoDB's Limit counts the entries it examined, not those that matched.
  const entries = merged(workspaceId, plan, ascending, after, shardReadSizes(want, callListingPartitions(workspaceId).length, filtered));
  if (!fullItemFilters) {
    const page = await firstEntries(entries, want);
    // The calls `skip` passes over are never read.
    return { items: await readItems(page.slice(skip, skip + limit)), hasMore: page.length > skip + limit };
  }
  // Filters on full items: read candidates in index order, a chunk at a time (at least one BatchGetItem's 100), until enough match.
  const matched: CallItem[] = [];
  const test = (item: CallItem) => plan.itemTests.every((t) => t(item));
  let chunk: CallListingEntry[] = [];
  for await (const entry of entries) {
    chunk.push(entry);
    if (chunk.length >= Math.min(1000, Math.max(100, 2 * (want - matched.length)))) {
      matched.push(...(await readItems(chunk, { transcripts: plan.needsTranscript })).filter(test));
      chunk = [];
      if (matched.length >= want) break;
    }
  }
  if (chunk.length && matched.length < want) matched.push(...(await readItems(chunk, { transcripts: plan.needsTranscript })).filter(test));
  return { items: matched.slice(skip, skip + limit), hasMore: matched.length > skip + limit };
}

/**
 * `include_total`, whatever the page: with no filter, the workspace's counter. Index
 * filters: matching calls counted on the index with Select: COUNT, the shards in parallel,
 * TOTAL_EXAMINE_CAP entries examined at most. Tests the index cannot run (full-item filters,
 * `ew`) need the entries or the items: then at most TOTAL_ITEM_CAP candidates among the
 * newest TOTAL_EXAMINE_CAP entries are read and counted.
 */
async function countMatching(workspaceId: string, plan: ListingPlan): Promise<number> {
  if (plan.itemTests.length === 0 && plan.entryTests.length === 0) {
    // A workspace whose counters are not backfilled yet is counted on the index ("at least" past the cap).
    if (plan.index === undefined) return (await countCallsIfComplete(workspaceId)) ?? countListing({ gsi1pks: callListingPartitions(workspaceId), cap: TOTAL_EXAMINE_CAP, examineCap: TOTAL_EXAMINE_CAP });
    return countListing({ gsi1pks: callListingPartitions(workspaceId), filter: plan.index, cap: TOTAL_EXAMINE_CAP, examineCap: TOTAL_EXAMINE_CAP });
  }
  const candidates = await firstEntries(
    merged(workspaceId, plan, false, undefined, { firstPage: 1000, laterPage: 1000, examineCap: TOTAL_EXAMINE_CAP }),
    TOTAL_ITEM_CAP,
  );
  if (plan.itemTests.length === 0) return candidates.length;
  return (await readItems(candidates, { transcripts: plan.needsTranscript })).filter((item) => plan.itemTests.every((t) => t(item))).length;
}
