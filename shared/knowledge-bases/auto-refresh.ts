import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { queueNamed } from '../platform/aws/queue.ts';
import { logger } from '../platform/logger.ts';
import { queueIngestion } from './ingest.ts';
import { startSyncsOf } from './syncs.ts';
import {
  AUTO_REFRESH_MS,
  claimRefresh,
  knowledgeBases,
  listSourceItems,
  nextGeneration,
  queryDueKnowledgeBases,
  recordSource,
  type KnowledgeBaseItem,
  type SourceItem,
} from './store.ts';

/*
 * enable_auto_refresh, on a schedule: once a day an EventBridge rule puts a `refresh-sweep`
 * message on the kb-jobs queue (locally, local/background.ts does). The sweep reads the
 * knowledge bases whose refresh is due from gsi1 (`KBREFRESH`, sorted by due time: a sparse
 * index of the knowledge bases with auto refresh on, never a scan), SWEEP_PAGE at a time,
 * and for each one claims it (moves its due time a day ahead, conditional on the entry it
 * read, so overlapping sweeps never refresh one twice), then re-crawls its URL sources and
 * starts a run of each synced source. A full page queues the next page, up to
 * MAX_SWEEP_PAGES a day; the rest wait for the next day's sweep (oldest due first).
 */

export const RefreshSweepMessage = lazySchema(() => z.object({ kind: z.literal('refresh-sweep'), page: z.number().int().min(0).optional() }));
export type RefreshSweepMessage = z.output<typeof RefreshSweepMessage>;

const SWEEP_PAGE = 50;
const MAX_SWEEP_PAGES = 40;
/** The sweep runs daily: a knowledge base due within the next hour is refreshed now rather than a day late. */
const SWEEP_GRACE_MS = 60 * 60_000;
/** A knowledge base still ingesting when its refresh is due is looked at again an hour later. */
const BUSY_RETRY_MS = 60 * 60_000;

/** Marks the URL sources for re-crawling and queues them; unchanged pages keep their chunks. */
export async function startUrlRefresh(kb: KnowledgeBaseItem, urls: SourceItem[], nowMs: number): Promise<KnowledgeBaseItem> {
  for (const source of urls) await recordSource(kb.workspace_id, kb.knowledge_base_id, source.source_id, { status: 'in_progress' }, nowMs);
  const generation = await nextGeneration(kb.workspace_id, kb.knowledge_base_id, 'refreshing_in_progress', nowMs);
  await queueIngestion(kb.workspace_id, kb.knowledge_base_id, generation);
  return { ...kb, generation, status: 'refreshing_in_progress', user_modified_timestamp: nowMs };
}

export interface SweepOutcome {
  /** Knowledge bases refreshed (URLs re-crawled or syncs started), `<ws>/<kb>`. */
  refreshed: string[];
  /** Due but still ingesting: looked at again in an hour. */
  deferred: string[];
}

/** One page of the daily sweep (the kb-jobs consumer). */
export async function runRefreshSweep(message: RefreshSweepMessage, nowMs: () => number = Date.now): Promise<SweepOutcome> {
  const now = nowMs();
  const page = message.page ?? 0;
  const due = await queryDueKnowledgeBases(now + SWEEP_GRACE_MS, SWEEP_PAGE);
  const outcome: SweepOutcome = { refreshed: [], deferred: [] };
  for (const entry of due) {
    const kb = await knowledgeBases.get(entry.workspaceId, entry.knowledgeBaseId);
    if (!kb) continue;
    const busy = kb.status === 'in_progress' || kb.status === 'refreshing_in_progress';
    if (!(await claimRefresh(entry.workspaceId, entry.knowledgeBaseId, entry.gsi1sk, now + (busy ? BUSY_RETRY_MS : AUTO_REFRESH_MS)))) continue;
    const name = `${entry.workspaceId}/${entry.knowledgeBaseId}`;
    if (busy) {
      outcome.deferred.push(name);
      continue;
    }
    const urls = (await listSourceItems(kb.workspace_id, kb.knowledge_base_id)).filter((source) => source.type === 'url');
    if (urls.length > 0) await startUrlRefresh(kb, urls, now);
    const syncsStarted = await startSyncsOf(kb.workspace_id, kb.knowledge_base_id, 'auto_refresh', now);
    if (urls.length > 0 || syncsStarted > 0) outcome.refreshed.push(name);
  }
  if (due.length === SWEEP_PAGE && page + 1 < MAX_SWEEP_PAGES) {
    const next: RefreshSweepMessage = { kind: 'refresh-sweep', page: page + 1 };
    await queueNamed('kb-jobs').send(next);
  }
  logger.info('kb-jobs: refresh sweep', { page, due: due.length, refreshed: outcome.refreshed.length, deferred: outcome.deferred.length });
  return outcome;
}
