import { getCohortItem } from '../cohorts/store.ts';
import { reviewedResults, type ResultItem } from '../results/store.ts';
import type { CalibrateInput, Calibration } from './schemas.ts';

/*
 * Calibration (docs/qa.md, "Calibration"): how the machine's scores compare with
 * reviewers' on a cohort's reviewed results of one rubric version, per criterion and
 * overall, and the rubric changes that would bring them closer. Nothing is stored: the
 * same reviews always answer the same figures.
 */

/** Pairs needed before a criterion or the threshold gets a suggestion: fewer say too little. */
const MIN_PAIRS = 3;

const round = (value: number, places: number) => Math.round(value * 10 ** places) / 10 ** places;
const mean = (values: readonly number[]) => (values.length ? round(values.reduce((sum, value) => sum + value, 0) / values.length, 2) : null);
const rate = (hits: number, of: number) => (of ? round(hits / of, 4) : null);

type Suggestion = Calibration['suggestions'][number];

/** The integer threshold whose machine pass/fail agrees most with reviewers'; ties: nearest the current one, then the lower. */
function bestThreshold(pairs: readonly { machine: number; passed: boolean }[], current: number): { threshold: number; agreed: number } {
  let best = { threshold: current, agreed: -1, distance: Infinity };
  for (let threshold = 0; threshold <= 100; threshold++) {
    const agreed = pairs.filter((pair) => pair.machine >= threshold === pair.passed).length;
    const distance = Math.abs(threshold - current);
    if (agreed > best.agreed || (agreed === best.agreed && distance < best.distance)) best = { threshold, agreed, distance };
  }
  return best;
}

export async function calibrateCohort(workspaceId: string, cohortId: string, body: CalibrateInput): Promise<Calibration> {
  const cohort = await getCohortItem(workspaceId, cohortId);
  const version = body.rubric_version ?? cohort.rubric.version;
  const { tolerance } = body;
  const reviewed: ResultItem[] = (await reviewedResults(workspaceId, cohortId, version)).filter((item) => item.machine && item.review);
  // The version's criteria: the cohort's rubric when it is the current one, else as its results were scored.
  const rubricCriteria =
    version === cohort.rubric.version
      ? cohort.rubric.criteria.map((criterion) => ({ name: criterion.name, weight: criterion.weight }))
      : (reviewed[0]?.machine?.criteria ?? []).map((criterion) => ({ name: criterion.name, weight: criterion.weight }));
  const threshold = version === cohort.rubric.version ? cohort.rubric.pass_threshold : (reviewed[0]?.machine?.pass_threshold ?? cohort.rubric.pass_threshold);

  const suggestions: Suggestion[] = [];
  const criteria = rubricCriteria.map(({ name, weight }) => {
    const pairs = reviewed.flatMap((item) => {
      const human = item.review!.criteria.find((criterion) => criterion.name === name);
      const machine = item.machine!.criteria.find((criterion) => criterion.name === name);
      return human?.source === 'reviewer' && human.score !== null && machine && machine.score !== null ? [{ machine: machine.score, human: human.score }] : [];
    });
    const difference = mean(pairs.map((pair) => pair.machine - pair.human));
    const agreement = rate(pairs.filter((pair) => Math.abs(pair.machine - pair.human) <= tolerance).length, pairs.length);
    if (pairs.length >= MIN_PAIRS && difference !== null && agreement !== null) {
      if (difference > tolerance) {
        suggestions.push({
          kind: 'machine_scores_higher',
          criterion: name,
          message: `The machine scores ${name} ${difference} points above reviewers on average: clarify its description with what falls short of it, or lower its weight`,
          suggested_weight: round(weight / 2, 2),
        });
      } else if (difference < -tolerance) {
        suggestions.push({
          kind: 'machine_scores_lower',
          criterion: name,
          message: `The machine scores ${name} ${-difference} points below reviewers on average: clarify its description with what meets it`,
        });
      } else if (agreement < 0.5) {
        suggestions.push({
          kind: 'inconsistent',
          criterion: name,
          message: `The machine and reviewers are more than ${tolerance} points apart on ${name} in most calls, neither way consistently: make its description concrete (quote what the agent should say or avoid)`,
        });
      }
    }
    return {
      name,
      weight,
      count: pairs.length,
      mean_machine_score: mean(pairs.map((pair) => pair.machine)),
      mean_human_score: mean(pairs.map((pair) => pair.human)),
      mean_difference: difference,
      mean_absolute_difference: mean(pairs.map((pair) => Math.abs(pair.machine - pair.human))),
      agreement_rate: agreement,
      pass_agreement_rate: rate(pairs.filter((pair) => pair.machine >= threshold === pair.human >= threshold).length, pairs.length),
    };
  });

  const overallPairs = reviewed.flatMap((item) => {
    const machine = item.machine!.overall_score;
    const review = item.review!;
    return machine !== null && review.overall_score !== null && review.passed !== null ? [{ machine, human: review.overall_score, passed: review.passed }] : [];
  });
  const currentAgreed = overallPairs.filter((pair) => pair.machine >= threshold === pair.passed).length;
  const best = bestThreshold(overallPairs, threshold);
  const suggestedThreshold = overallPairs.length >= MIN_PAIRS && best.agreed > currentAgreed ? best.threshold : threshold;
  if (suggestedThreshold !== threshold) {
    suggestions.push({
      kind: 'pass_threshold',
      message: `A pass threshold of ${suggestedThreshold} makes the machine's pass or fail agree with reviewers' on ${best.agreed} of ${overallPairs.length} calls (${currentAgreed} at ${threshold})`,
      suggested_pass_threshold: suggestedThreshold,
    });
  }
  return {
    cohort_id: cohortId,
    rubric_version: version,
    tolerance,
    reviewed_count: reviewed.length,
    ...(reviewed.length ? {} : { message: `No reviewed results under rubric version ${version}: review results with PATCH /qa/results/{result_id} first` }),
    overall: {
      count: overallPairs.length,
      mean_machine_score: mean(overallPairs.map((pair) => pair.machine)),
      mean_human_score: mean(overallPairs.map((pair) => pair.human)),
      mean_absolute_difference: mean(overallPairs.map((pair) => Math.abs(pair.machine - pair.human))),
      pass_threshold: threshold,
      pass_agreement_rate: rate(currentAgreed, overallPairs.length),
      suggested_pass_threshold: suggestedThreshold,
    },
    criteria,
    suggestions,
  };
}
