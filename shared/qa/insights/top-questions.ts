import { getCall } from '../../calls/records/index.ts';
import { NotFound } from '../../platform/errors.ts';
import { redactPiiDeep } from '../../platform/text/pii.ts';
import { embedder } from '../../vendors/llm/index.ts';
import { getCohortItem } from '../cohorts/store.ts';
import { recentResults } from '../results/store.ts';
import { callIdBounds, inRange } from './figures.ts';
import type { QaTopQuestions, TopQuestionsInput } from './schemas.ts';

/*
 * What callers ask most (docs/qa.md, "Top questions"): the questions in the caller's lines
 * of a cohort's scored calls, embedded with the embedder knowledge-base retrieval uses and
 * clustered greedily by cosine similarity.
 *
 * - A question is a sentence of a caller line that ends with "?" or starts with a question
 *   word (QUESTION_WORDS). Sentences end at ".", "!" or "?".
 * - Only calls whose result says the transcript was kept are read, as the call keeps it
 *   now: a call kept except PII is read with every kind of personal data redacted; a call
 *   kept with basic attributes only, deleted or erased gives nothing.
 * - Clustering: questions in call order; each joins the cluster whose centroid (the
 *   normalised mean of its members) is nearest, when the cosine similarity is at least the
 *   threshold, else starts a cluster. The offline embedder hashes words and letter
 *   trigrams, so it is fed the question without function words ("where can I park my
 *   car?" → "park car") and its threshold is lower than a model embedder's.
 * - A cluster's label is its member nearest the centroid; its examples up to 3 distinct
 *   quotes, from different calls first.
 */

const MAX_CALLS = 200;
const MAX_QUESTIONS = 2_000;
const MAX_QUOTE_CHARS = 300;
const EXAMPLES = 3;
const DEFAULT_CLUSTERS = 10;
const CALLS_AT_ONCE = 8;
/** The cosine similarity a question must reach to join a cluster: a model embedder's, the offline hashing one's. */
const MODEL_THRESHOLD = 0.6;
const OFFLINE_THRESHOLD = 0.3;

const QUESTION_WORDS = new Set(
  'what where when why who whom whose which how can could would will shall should may might do does did is are was were am have has had'.split(' '),
);
/** Dropped before the offline embedder: words that say how something is asked, not what. */
const FUNCTION_WORDS = new Set([
  ...QUESTION_WORDS,
  ...'a an the i me my we our us you your he she it its they them their there here this that these those to of in on at for from with by about near any some hi hello hey please ok okay so and or but if then just also get be been being'.split(' '),
]);

const wordsOf = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];

/** The questions in one caller line (see above). */
function questionsIn(line: string): string[] {
  return line
    .split(/(?<=[.!?])\s+/)
    .map((sentence) => sentence.trim())
    .filter((sentence) => sentence.endsWith('?') || QUESTION_WORDS.has(wordsOf(sentence)[0] ?? ''))
    .map((sentence) => sentence.slice(0, MAX_QUOTE_CHARS));
}

interface Question {
  text: string;
  callId: string;
}

async function callQuestions(workspaceId: string, callId: string, setting: string): Promise<Question[] | undefined> {
  let call: { transcript_object?: unknown };
  try {
    call = (await getCall(workspaceId, callId)) as typeof call;
  } catch (error) {
    if (error instanceof NotFound) return undefined;
    throw error;
  }
  if (!Array.isArray(call.transcript_object)) return undefined;
  let lines = (call.transcript_object as { role?: unknown; content?: unknown }[]).flatMap((entry) =>
    entry.role === 'user' && typeof entry.content === 'string' ? [entry.content] : [],
  );
  if (setting === 'everything_except_pii') lines = redactPiiDeep(lines) as string[];
  return lines.flatMap((line) => questionsIn(line).map((text) => ({ text, callId })));
}

const dot = (a: Float32Array, b: Float32Array) => {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
};

function normalised(vector: Float32Array): Float32Array {
  const norm = Math.sqrt(dot(vector, vector));
  return norm > 0 ? vector.map((value) => value / norm) : vector;
}

interface Cluster {
  sum: Float32Array;
  centroid: Float32Array;
  members: number[];
}

/** Greedy clustering by cosine similarity to each cluster's centroid (see above). */
function cluster(vectors: readonly Float32Array[], threshold: number): Cluster[] {
  const clusters: Cluster[] = [];
  vectors.forEach((vector, index) => {
    let best: Cluster | undefined;
    let bestSimilarity = threshold;
    for (const candidate of clusters) {
      const similarity = dot(vector, candidate.centroid);
      if (similarity >= bestSimilarity) {
        best = candidate;
        bestSimilarity = similarity;
      }
    }
    if (!best) {
      clusters.push({ sum: Float32Array.from(vector), centroid: normalised(Float32Array.from(vector)), members: [index] });
      return;
    }
    best.members.push(index);
    for (let i = 0; i < vector.length; i++) best.sum[i]! += vector[i]!;
    best.centroid = normalised(Float32Array.from(best.sum));
  });
  return clusters;
}

function examplesOf(members: readonly number[], questions: readonly Question[]) {
  const picked: Question[] = [];
  const seen = new Set<string>();
  // Different calls first, then other quotes of the same calls.
  for (const pass of [true, false]) {
    for (const index of members) {
      const question = questions[index]!;
      if (picked.length >= EXAMPLES || seen.has(question.text)) continue;
      if (pass && picked.some((example) => example.callId === question.callId)) continue;
      picked.push(question);
      seen.add(question.text);
    }
  }
  return picked.map((question) => ({ quote: question.text, call_id: question.callId }));
}

export async function topQuestions(workspaceId: string, cohortId: string, query: TopQuestionsInput, nowMs = Date.now()): Promise<QaTopQuestions> {
  const cohort = await getCohortItem(workspaceId, cohortId);
  const version = query.rubric_version ?? cohort.rubric.version;
  const start = query.start_timestamp ?? 0;
  const end = query.end_timestamp ?? nowMs;
  const read = await recentResults(workspaceId, cohortId, version, { ...callIdBounds(start, end), cap: MAX_CALLS });
  const scored = read.items.filter((result) => result.status === 'scored' && inRange(result, start, end)).reverse();
  const kept = scored.filter((result) => result.transcript_available && result.call.data_storage_setting !== 'basic_attributes_only');
  const perCall: (Question[] | undefined)[] = [];
  for (let i = 0; i < kept.length; i += CALLS_AT_ONCE) {
    perCall.push(...(await Promise.all(kept.slice(i, i + CALLS_AT_ONCE).map((result) => callQuestions(workspaceId, result.call_id, result.call.data_storage_setting)))));
  }
  const all = perCall.flatMap((questions) => questions ?? []);
  const questions = all.slice(0, MAX_QUESTIONS);
  const embed = await embedder();
  const offline = embed.id.startsWith('offline-');
  const texts = questions.map((question) => (offline ? wordsOf(question.text).filter((word) => !FUNCTION_WORDS.has(word)).join(' ') || question.text : question.text));
  const vectors = texts.length ? (await embed.embed(texts)).map((vector) => normalised(Float32Array.from(vector))) : [];
  const clusters = cluster(vectors, offline ? OFFLINE_THRESHOLD : MODEL_THRESHOLD)
    .map((group, order) => ({ group, order }))
    .sort((a, b) => b.group.members.length - a.group.members.length || a.order - b.order)
    .slice(0, query.limit ?? DEFAULT_CLUSTERS)
    .map(({ group }) => {
      const label = group.members.reduce((best, index) => (dot(vectors[index]!, group.centroid) > dot(vectors[best]!, group.centroid) ? index : best), group.members[0]!);
      return { label: questions[label]!.text, count: group.members.length, examples: examplesOf(group.members, questions) };
    });
  return {
    cohort_id: cohortId,
    rubric_version: version,
    time_range: { start_timestamp: start, end_timestamp: end },
    calls_read: perCall.filter((questions) => questions !== undefined).length,
    calls_without_transcript: scored.length - perCall.filter((questions) => questions !== undefined).length,
    questions_count: questions.length,
    truncated: read.truncated || all.length > questions.length,
    embedder: embed.id,
    clusters,
  };
}
