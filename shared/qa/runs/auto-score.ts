import { onCallLifecycle, type CallLifecycleEvent } from '../../calls/records/index.ts';
import { inSample, matchesSelection } from '../cohorts/selection.ts';
import { autoScoringCohorts } from '../cohorts/store.ts';
import { queueQaMessage } from './message.ts';

/*
 * Auto-scoring (docs/qa.md, "Auto-scoring"): when a call's analysis lands
 * (`call_analyzed`), each of the workspace's cohorts with auto_score whose selection and
 * sample hold the call gets a `qa-score` message; the scoring itself runs from the queue
 * (runner.ts), so the analysis step never waits on a judging model. Calls may not import
 * QA, so this is a call lifecycle listener the call-steps function (where analyses run)
 * registers at load. A repeated `call_analyzed` (a rerun analysis) queues again, and the
 * result's claim scores the call once per rubric version.
 */

async function queueAutoScores(event: CallLifecycleEvent): Promise<void> {
  if (event.event !== 'call_analyzed') return;
  const cohorts = await autoScoringCohorts(event.workspace_id);
  const call = event.call as Parameters<typeof matchesSelection>[1];
  await Promise.all(
    cohorts
      .filter((cohort) => matchesSelection(cohort.selection, call) && inSample(event.call_id, cohort.selection.sample_rate))
      .map((cohort) => queueQaMessage({ kind: 'qa-score', workspace_id: event.workspace_id, cohort_id: cohort.cohort_id, call_id: event.call_id })),
  );
}

/** Registers auto-scoring with the calls engine (functions/call-steps.ts, at load). */
export function registerQaAutoScoring(): void {
  onCallLifecycle(queueAutoScores);
}
