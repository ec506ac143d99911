import * as z from 'zod';
import { workspaceReliability } from '../../account/index.ts';
import { DEFAULT_LLM_MODEL, getAgent, getFlow, getLlm } from '../../agents/index.ts';
import type { CallItem } from '../../calls/records/index.ts';
import { completeWithFallback } from '../../conversation/index.ts';
import { getKbRetrievals } from '../../knowledge-bases/index.ts';
import { NotFound } from '../../platform/errors.ts';
import { piiCategoriesOf, redactPiiDeep } from '../../platform/text/pii.ts';
import { defineOfflineShape } from '../../vendors/llm/index.ts';
import { DEFAULT_LATENCY_BOUND_MS, type Rubric } from '../cohorts/schemas.ts';
import type { CriterionScore, QaResult } from '../results/schemas.ts';
import { latencyScore, offlineScores, overallScore, type Line, type ScoringInput } from './rules.ts';

/*
 * Scoring one call against a rubric (docs/qa.md, "Scoring"). The judging model is the
 * agent version's analysis model (post_call_analysis_model, else the default model) with
 * the workspace's reliability fallback, through the language-model adapter, as test runs
 * are judged; without a provider the offline model answers by the rules (rules.ts). The
 * answer must match a strict schema (zod): a malformed one is asked again once, then the
 * result is failed with the reason. Latency is measured, never judged.
 *
 * What the call kept decides what is read: under basic_attributes_only no transcript is
 * read, even one not yet removed, and the result says it was scored on what remains (the
 * analysis' verdicts, the latency); under everything_except_pii the transcript is read
 * with the personal data the agent's pii_config names redacted, as the call keeps it.
 */

const SCORE_HINT = 'qa_score';
const SCORE_TIMEOUT_MS = 30_000;
/** The most knowledge-base excerpts, and their characters, the judge reads. */
const MAX_EXCERPTS = 20;
const MAX_EXCERPT_CHARS = 2_000;

defineOfflineShape(SCORE_HINT, ({ request }) => offlineScores(JSON.parse(request.messages.at(-1)!.content) as ScoringInput));

/** A call as a scorer reads it: the call object (list-calls' and get-call's), with its transcript when it has one. */
export type ScoredCall = Pick<CallItem, 'call_id' | 'agent_id' | 'agent_version' | 'start_timestamp' | 'duration_ms' | 'call_analysis' | 'data_storage_setting'> & {
  transcript_object?: unknown;
  latency?: unknown;
  retell_llm_dynamic_variables?: unknown;
};

type Machine = NonNullable<QaResult['machine']>;

export type Scored =
  | { status: 'scored'; machine: Machine; transcript_available: boolean; note?: string; call: QaResult['call'] }
  | { status: 'failed'; failure_reason: string; transcript_available: boolean; call: QaResult['call'] };

const answerSchema = (names: readonly string[]) =>
  z
    .object({
      criteria: z.array(
        z.object({
          name: z.string(),
          score: z.number().min(0).max(100).nullable(),
          reason: z.string().trim().min(1).max(2_000),
        }),
      ),
    })
    .refine((answer) => answer.criteria.length === names.length && answer.criteria.every((item, index) => item.name === names[index]), {
      message: `Must answer exactly the criteria ${names.join(', ')}, in order`,
    });

interface AgentFacts {
  prompt: string;
  model: string;
  dataStorage: 'everything' | 'everything_except_pii' | 'basic_attributes_only';
  piiCategories?: readonly string[];
}

/** The agent version's instructions, analysis model and storage settings (a deleted agent: none, the call's own setting). */
async function agentFacts(workspaceId: string, call: ScoredCall): Promise<AgentFacts> {
  let agent: Record<string, unknown>;
  try {
    agent = (await getAgent(workspaceId, call.agent_id, call.agent_version)) as unknown as Record<string, unknown>;
  } catch (error) {
    if (!(error instanceof NotFound)) throw error;
    return { prompt: '', model: DEFAULT_LLM_MODEL, dataStorage: call.data_storage_setting ?? 'everything' };
  }
  const engine = agent.response_engine as { type?: string; llm_id?: string; conversation_flow_id?: string; version?: number | null } | undefined;
  const prompts: string[] = [];
  try {
    if (engine?.type === 'retell-llm' && engine.llm_id) {
      const llm = (await getLlm(workspaceId, engine.llm_id, engine.version ?? undefined)) as unknown as { general_prompt?: string | null; states?: { state_prompt?: string }[] | null };
      prompts.push(llm.general_prompt ?? '', ...(llm.states ?? []).map((state) => state.state_prompt ?? ''));
    } else if (engine?.type === 'conversation-flow' && engine.conversation_flow_id) {
      const flow = (await getFlow(workspaceId, engine.conversation_flow_id, engine.version ?? undefined)) as unknown as { global_prompt?: string | null; nodes?: { instruction?: { text?: string } }[] };
      prompts.push(flow.global_prompt ?? '', ...(flow.nodes ?? []).map((node) => node.instruction?.text ?? ''));
    }
  } catch (error) {
    if (!(error instanceof NotFound)) throw error;
  }
  const chosen = agent.post_call_analysis_model;
  const pii = agent.pii_config as { categories?: string[] } | undefined;
  return {
    prompt: prompts.filter(Boolean).join('\n'),
    model: typeof chosen === 'string' ? chosen : DEFAULT_LLM_MODEL,
    dataStorage: call.data_storage_setting ?? (agent.data_storage_setting as AgentFacts['dataStorage'] | undefined) ?? 'everything',
    ...(pii?.categories ? { piiCategories: pii.categories } : {}),
  };
}

/** The knowledge-base excerpts the call retrieved (none recorded: none). */
async function retrievedKnowledge(workspaceId: string, callId: string): Promise<string[]> {
  try {
    const { retrievals } = await getKbRetrievals(workspaceId, callId);
    return retrievals
      .flatMap((retrieval) => retrieval.chunks.map((chunk) => chunk.content))
      .filter((content): content is string => typeof content === 'string' && content !== '')
      .slice(0, MAX_EXCERPTS)
      .map((content) => content.slice(0, MAX_EXCERPT_CHARS));
  } catch (error) {
    if (error instanceof NotFound) return [];
    throw error;
  }
}

function transcriptLines(call: ScoredCall): Line[] {
  const entries = Array.isArray(call.transcript_object) ? (call.transcript_object as { role?: unknown; content?: unknown }[]) : [];
  return entries.flatMap((entry): Line[] =>
    (entry.role === 'agent' || entry.role === 'user') && typeof entry.content === 'string' && entry.content.trim() !== '' ? [{ role: entry.role, content: entry.content }] : [],
  );
}

/** The call's figures a result keeps beside its scores. */
function callFacts(call: ScoredCall, dataStorage: string): QaResult['call'] {
  const analysis = (call.call_analysis ?? {}) as { user_sentiment?: unknown; call_successful?: unknown };
  const p50 = (call.latency as { e2e?: { p50?: unknown } } | undefined)?.e2e?.p50;
  return {
    ...(typeof call.start_timestamp === 'number' ? { start_timestamp: call.start_timestamp } : {}),
    ...(typeof call.duration_ms === 'number' ? { duration_ms: call.duration_ms } : {}),
    ...(typeof p50 === 'number' ? { latency_p50_ms: p50 } : {}),
    ...(typeof analysis.user_sentiment === 'string' ? { user_sentiment: analysis.user_sentiment } : {}),
    ...(typeof analysis.call_successful === 'boolean' ? { call_successful: analysis.call_successful } : {}),
    data_storage_setting: dataStorage,
  };
}

/** Scores one call against the rubric; a model that answers badly twice fails the result, saying why. */
export async function scoreCall(workspaceId: string, call: ScoredCall, rubric: Rubric): Promise<Scored> {
  const facts = await agentFacts(workspaceId, call);
  const kept = callFacts(call, facts.dataStorage);
  const basic = facts.dataStorage === 'basic_attributes_only';
  let lines: Line[] | null = basic ? null : transcriptLines(call);
  if (lines && facts.dataStorage === 'everything_except_pii') lines = redactPiiDeep(lines, piiCategoriesOf(facts.piiCategories)) as Line[];
  const analysis = (call.call_analysis ?? {}) as ScoringInput['analysis'];
  const variables = basic ? [] : Object.values((call.retell_llm_dynamic_variables ?? {}) as Record<string, unknown>).map(String);
  const judged = rubric.criteria.filter((criterion) => criterion.type !== 'latency');
  const input: ScoringInput = {
    criteria: judged.map(({ name, type, description }) => ({ name, type, description })),
    transcript: lines,
    analysis: {
      ...(typeof analysis.call_successful === 'boolean' ? { call_successful: analysis.call_successful } : {}),
      ...(typeof analysis.user_sentiment === 'string' ? { user_sentiment: analysis.user_sentiment } : {}),
      ...(!basic && typeof analysis.call_summary === 'string' ? { call_summary: analysis.call_summary } : {}),
    },
    agent: { prompt: facts.prompt, knowledge: basic ? [] : await retrievedKnowledge(workspaceId, call.call_id), variables },
  };
  const transcriptAvailable = lines !== null;
  let answers: Map<string, { score: number | null; reason: string }> = new Map();
  let scorer: Machine['scorer'] = 'rules';
  let model: string | undefined;
  if (judged.length) {
    const judgedBy = await judge(workspaceId, input, facts.model);
    if ('failure' in judgedBy) return { status: 'failed', failure_reason: judgedBy.failure, transcript_available: transcriptAvailable, call: kept };
    answers = new Map(judgedBy.criteria.map((item) => [item.name, item]));
    scorer = judgedBy.provider === 'offline' ? 'rules' : 'model';
    if (scorer === 'model') model = judgedBy.model;
  }
  const criteria: CriterionScore[] = rubric.criteria.map((criterion) => {
    const answer = criterion.type === 'latency' ? latencyScore(kept.latency_p50_ms, criterion.latency_bound_ms ?? DEFAULT_LATENCY_BOUND_MS) : answers.get(criterion.name)!;
    return { name: criterion.name, type: criterion.type, weight: criterion.weight, score: answer.score, reason: answer.reason };
  });
  const overall = overallScore(criteria);
  return {
    status: 'scored',
    machine: {
      scorer,
      ...(model ? { model } : {}),
      criteria,
      overall_score: overall,
      passed: overall === null ? null : overall >= rubric.pass_threshold,
      pass_threshold: rubric.pass_threshold,
    },
    transcript_available: transcriptAvailable,
    ...(basic ? { note: 'The call keeps basic attributes only (data storage setting): scored on its analysis and latency; criteria that need the transcript were not assessed' } : {}),
    call: kept,
  };
}

/** One judging request; a malformed answer is asked again once. */
async function judge(
  workspaceId: string,
  input: ScoringInput,
  model: string,
): Promise<{ criteria: { name: string; score: number | null; reason: string }[]; provider: string; model: string } | { failure: string }> {
  const reliability = await workspaceReliability(workspaceId);
  const schema = answerSchema(input.criteria.map((criterion) => criterion.name));
  let problem = '';
  for (let attempt = 0; attempt < 2; attempt++) {
    let answer;
    try {
      answer = await completeWithFallback(
        {
          model,
          temperature: 0,
          responseFormat: 'json',
          offlineHint: SCORE_HINT,
          timeoutMs: SCORE_TIMEOUT_MS,
          maxTokens: 300 + 200 * input.criteria.length,
          messages: [
            {
              role: 'system',
              content:
                'You score a finished phone call between an AI agent and a caller for quality assurance. The user message is JSON: the criteria ' +
                '(name, type, description), the transcript (null when the call kept none), the post-call analysis, and the agent\'s prompt, the ' +
                'knowledge-base excerpts it retrieved and its dynamic variables. For each criterion, in order, give a score from 0 (fails it) to 100 ' +
                '(fully meets it), or null when nothing kept lets you judge it, and a one-sentence reason that quotes the transcript. Answer with one ' +
                'JSON object {"criteria": [{"name": the criterion\'s name, "score": number or null, "reason": string}]}.' +
                (problem ? ` Your previous answer was refused: ${problem}` : ''),
            },
            { role: 'user', content: JSON.stringify(input) },
          ],
        },
        reliability.fallbackLlmModel,
      );
    } catch (error) {
      return { failure: `The judging model could not be reached: ${error instanceof Error ? error.message : String(error)}` };
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(answer.content);
    } catch {
      problem = 'it was not JSON';
      continue;
    }
    const checked = schema.safeParse(parsed);
    if (checked.success) return { criteria: checked.data.criteria, provider: answer.provider, model: answer.model };
    problem = checked.error.issues.map((issue) => `${issue.path.join('.') || 'answer'}: ${issue.message}`).join('; ');
  }
  return { failure: `The judging model answered twice without the expected JSON (${problem})` };
}
