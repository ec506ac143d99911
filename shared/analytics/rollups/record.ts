import {
  ANALYSIS_DIMENSIONS,
  bucketKey,
  cellPartition,
  ROLLUP_LEVELS,
  shardOf,
  viewsOf,
  type ConversationFacts,
  type Counter,
  type Dimension,
} from './model.ts';
import { logger } from '../../platform/logger.ts';
import { applyCellDeltas, cellValue, requestRollupRepair, type CellDelta } from './store.ts';

/** What the analysis said: the counters it adds, and the analysis dimensions' values. */
export interface AnalysisFacts {
  successful?: boolean | null;
  /** Positive, Negative, Neutral or Unknown (Retell's spelling). */
  sentiment?: string | null;
}

export type RollupPhase = 'ended' | 'analyzed';

function dimensionValue(facts: ConversationFacts, analysis: AnalysisFacts | undefined, dimension: Dimension): string {
  if (dimension === 'user_sentiment') return analysis?.sentiment ?? 'Unknown';
  if (dimension === 'call_successful' || dimension === 'chat_successful') {
    return analysis?.successful === undefined || analysis.successful === null ? 'unknown' : String(analysis.successful);
  }
  const value = facts.dimensions[dimension];
  return value === undefined || value === null || value === '' ? 'none' : String(value);
}

function analysisCounters(analysis: AnalysisFacts): Partial<Record<Counter, number>> {
  const sentiment = (analysis.sentiment ?? 'Unknown').toLowerCase();
  const counter = (['positive', 'negative', 'neutral'].includes(sentiment) ? `sentiment_${sentiment}` : 'sentiment_unknown') as Counter;
  return {
    analyzed: 1,
    [counter]: 1,
    ...(analysis.successful === true ? { successful: 1 } : analysis.successful === false ? { unsuccessful: 1 } : {}),
  };
}

/**
 * The cells one phase writes. `ended` adds the conversation (count, figures, end counters)
 * to every view that does not group by an analysis dimension. `analyzed` adds the
 * analysis' counters to those views, and the whole conversation, analysis counters
 * included, to the views that do (their value is known only now).
 */
function phaseDeltas(facts: ConversationFacts, phase: RollupPhase, analysis?: AnalysisFacts): CellDelta[] {
  const shard = shardOf(facts.id);
  const figures = Object.fromEntries(Object.entries(facts.figures).filter(([, value]) => typeof value === 'number' && Number.isFinite(value))) as CellDelta['columns'];
  const endCounters = facts.counters ?? {};
  const fromAnalysis = phase === 'analyzed' ? analysisCounters(analysis ?? {}) : {};
  const deltas: CellDelta[] = [];
  for (const level of ROLLUP_LEVELS) {
    const bucket = bucketKey(level, facts.start_timestamp);
    for (const view of viewsOf(facts.table, level)) {
      const byAnalysis = view.some((dimension) => ANALYSIS_DIMENSIONS.has(dimension));
      const base = { partition: cellPartition(facts.table, level, view), bucket, value: cellValue(view.map((dimension) => dimensionValue(facts, analysis, dimension))), shard, level };
      if (phase === 'ended') {
        if (byAnalysis) continue;
        deltas.push({ ...base, count: 1, columns: figures, counters: endCounters });
      } else if (byAnalysis) {
        deltas.push({ ...base, count: 1, columns: figures, counters: { ...endCounters, ...fromAnalysis } });
      } else {
        deltas.push({ ...base, count: 0, columns: {}, counters: fromAnalysis });
      }
    }
  }
  return deltas;
}

/**
 * Adds a conversation's phase to the rollups exactly once: answers false when that phase
 * was already counted. Called when a call or chat ends and when its analysis lands, and by
 * the backfill for what existed before.
 */
export async function recordConversation(facts: ConversationFacts, phase: RollupPhase, analysis?: AnalysisFacts, now = Date.now()): Promise<boolean> {
  try {
    return await applyCellDeltas(facts.workspace_id, { table: facts.table, id: facts.id, phase, timestamp: now }, phaseDeltas(facts, phase, analysis));
  } catch (error) {
    // Nothing of the phase was written (one transaction): the backfill is asked to count it.
    await requestRollupRepair(facts.workspace_id, facts.table, facts.id, now).catch((repairError: unknown) =>
      logger.error('asking the rollup backfill for a repair failed', { id: facts.id, error: repairError instanceof Error ? repairError.message : String(repairError) }),
    );
    throw error;
  }
}
