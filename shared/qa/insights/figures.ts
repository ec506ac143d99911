import { timeOfOrderedId, timeOrderedIdFloor } from '../../platform/ids.ts';
import type { InsightResult } from '../results/store.ts';

/*
 * The figures insights compute from results (docs/qa.md, "Overview", "Metrics"): exact
 * over the results read, from the machine's scores. A result's time is its call's start
 * (else its call's creation, read from the time-ordered call ID).
 */

const DAY_MS = 24 * 60 * 60 * 1000;
/** A call starts this long after its ID was made at most, as far as a range's key bounds go (a web call joined late). */
const START_AFTER_CREATE_MS = DAY_MS;

const round2 = (value: number) => Math.round(value * 100) / 100;
const round4 = (value: number) => Math.round(value * 10_000) / 10_000;

const resultTime = (result: InsightResult): number => result.call.start_timestamp ?? timeOfOrderedId('call', result.call_id);

/** The call-ID bounds of the results whose calls started within [start, end]. */
export function callIdBounds(start: number, end: number): { fromCallId: string; toCallId: string } {
  return { fromCallId: timeOrderedIdFloor('call', Math.max(0, start - START_AFTER_CREATE_MS)), toCallId: timeOrderedIdFloor('call', end + 1) };
}

export const inRange = (result: InsightResult, start: number, end: number) => {
  const at = resultTime(result);
  return at >= start && at <= end;
};

/** A scored result with an overall score (a result where nothing could be assessed has none). */
const overallOf = (result: InsightResult): number | null => (result.status === 'scored' ? (result.machine?.overall_score ?? null) : null);

export interface Figures {
  results_count: number;
  scored_count: number;
  failed_count: number;
  pass_rate: number | null;
  average_score: number | null;
}

export function figuresOf(results: readonly InsightResult[]): Figures {
  let scored = 0;
  let failed = 0;
  let withScore = 0;
  let passed = 0;
  let sum = 0;
  for (const result of results) {
    if (result.status === 'failed') failed++;
    if (result.status !== 'scored') continue;
    scored++;
    const overall = overallOf(result);
    if (overall === null) continue;
    withScore++;
    sum += overall;
    if (result.machine?.passed) passed++;
  }
  return {
    results_count: results.length,
    scored_count: scored,
    failed_count: failed,
    pass_rate: withScore ? round4(passed / withScore) : null,
    average_score: withScore ? round2(sum / withScore) : null,
  };
}

/** Ten buckets of 10 points; 100 falls in the last. */
export function distributionOf(results: readonly InsightResult[]) {
  const counts = Array.from({ length: 10 }, () => 0);
  for (const result of results) {
    const overall = overallOf(result);
    if (overall !== null) counts[Math.min(9, Math.floor(overall / 10))]!++;
  }
  return counts.map((count, index) => ({ min_score: index * 10, max_score: index === 9 ? 100 : index * 10 + 10, count }));
}

/** Each criterion's mean over the results that assessed it, in the rubric's order. */
export function criteriaOf(results: readonly InsightResult[], names: readonly string[]) {
  const sums = new Map(names.map((name) => [name, { sum: 0, count: 0 }]));
  for (const result of results) {
    if (result.status !== 'scored') continue;
    for (const criterion of result.machine?.criteria ?? []) {
      const entry = sums.get(criterion.name);
      if (entry && criterion.score !== null) {
        entry.sum += criterion.score;
        entry.count++;
      }
    }
  }
  return [...sums].map(([name, { sum, count }]) => ({ name, average_score: count ? round2(sum / count) : null, assessed_count: count }));
}

/** `YYYY-MM-DD` of a time in a time zone. */
function dayIn(timeZone: string): (atMs: number) => string {
  const format = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
  return (atMs) => {
    const parts = Object.fromEntries(format.formatToParts(atMs).map((part) => [part.type, part.value]));
    return `${parts.year}-${parts.month}-${parts.day}`;
  };
}

/** Per day of the calls' start in the time zone, oldest first: the scored results, their mean score and pass rate. */
export function trendsOf(results: readonly InsightResult[], timeZone: string) {
  const day = dayIn(timeZone);
  const byDay = new Map<string, InsightResult[]>();
  for (const result of results) {
    if (result.status !== 'scored') continue;
    const date = day(resultTime(result));
    const items = byDay.get(date);
    if (items) items.push(result);
    else byDay.set(date, [result]);
  }
  return [...byDay]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([date, items]) => {
      const { pass_rate, average_score } = figuresOf(items);
      return { date, count: items.length, average_score, pass_rate };
    });
}

/** The lowest overall scores, lowest first (ties: the older call first). */
export function worstOf(results: readonly InsightResult[], count: number) {
  return results
    .flatMap((result) => {
      const overall = overallOf(result);
      return overall === null ? [] : [{ result_id: result.result_id, call_id: result.call_id, overall_score: overall, passed: result.machine?.passed ?? null }];
    })
    .sort((a, b) => a.overall_score - b.overall_score || (a.call_id < b.call_id ? -1 : 1))
    .slice(0, count);
}
