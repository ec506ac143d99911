/**
 * The rollups' recording of calls, for the functions that move calls: it reaches the calls
 * domain's narrow entry and the rollups only (docs/performance.md, "Narrow entries").
 */
export { callAnalysisFacts, callFacts, ENDED_CALL_STATUSES, registerRollupRecording } from './calls.ts';
