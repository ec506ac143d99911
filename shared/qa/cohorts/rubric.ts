import { DEFAULT_LATENCY_BOUND_MS, type Criterion, type RubricInput } from './schemas.ts';

/**
 * The rubric a cohort gets when it names none (docs/qa.md, "The default rubric"): the five
 * built-in rules, weighted toward what a caller feels most (was the problem solved, was
 * what the agent said true), and a pass at 70.
 */
export const DEFAULT_RUBRIC: RubricInput = {
  criteria: [
    { name: 'resolution', type: 'resolution', weight: 30, description: "The caller's problem was solved: the call did what it was for" },
    { name: 'hallucination', type: 'hallucination', weight: 25, description: "The agent stated nothing absent from its prompt, its knowledge bases or the caller's own words" },
    { name: 'tone', type: 'tone', weight: 20, description: 'The agent stayed courteous and acknowledged an upset caller' },
    { name: 'instruction_following', type: 'instruction_following', weight: 15, description: "The agent kept its prompt's explicit always and never rules" },
    { name: 'latency', type: 'latency', weight: 10, description: `The agent's median response time was at most ${DEFAULT_LATENCY_BOUND_MS} ms`, latency_bound_ms: DEFAULT_LATENCY_BOUND_MS },
  ],
  pass_threshold: 70,
};

/** Whether two rubrics score alike (criteria in order, weights, types, bounds, threshold): a change is a new version. */
export function sameRubric(a: RubricInput, b: RubricInput): boolean {
  const shape = (rubric: RubricInput) =>
    JSON.stringify({
      pass_threshold: rubric.pass_threshold,
      criteria: rubric.criteria.map((item: Criterion) => [item.name, item.description, item.weight, item.type, item.latency_bound_ms ?? null]),
    });
  return shape(a) === shape(b);
}
