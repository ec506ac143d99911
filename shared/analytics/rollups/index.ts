/**
 * The rollups' narrow entry: recording a conversation's figures (what the calls and chats
 * code paths call when a conversation ends and when its analysis lands) and reading cells
 * (summaries, queries, alerts). It reaches the table and the sketch library only.
 */
export { recordConversation, type AnalysisFacts, type RollupPhase } from './record.ts';
export { addFunctionCall, factCounted, readCells, readCounterCells, sumCounters, type CounterCells, type RollupCell } from './store.ts';
export {
  allCellPartitions,
  COLUMNS,
  COUNTER_PARTITIONS,
  COUNTERS,
  DIMENSIONS,
  emptyTotals,
  extreme,
  LEVEL_MS,
  LEVEL_RETENTION_MS,
  mergeTotals,
  quantile,
  viewsOf,
  type Column,
  type ConversationFacts,
  type Counter,
  type Dimension,
  type RollupLevel,
  type RollupTable,
  type RollupTotals,
  type RollupView,
} from './model.ts';
