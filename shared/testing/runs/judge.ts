import { completeWithFallback } from '../../conversation/index.ts';
import { defineOfflineShape } from '../../vendors/llm/index.ts';
import type { TestCaseDefinition } from '../definitions/index.ts';
import { quotedPhrases, type Simulation } from './simulate.ts';

/*
 * Judging a run: each success criterion (`metrics`, plain sentences) is met or not, with a
 * reason. The definition's model judges through the language-model adapter; without a
 * provider the offline model answers by the rules below (docs/testing.md, "Judging"), so a
 * suite gives the same verdicts in CI with no model account.
 */

const JUDGE_HINT = 'test_judgement';

/** What the judge reads: the criteria and the conversation's facts, as JSON in the user message. */
interface JudgeInput {
  criteria: string[];
  ended_by: Simulation['ended_by'];
  transcript: { role: string; content?: string; name?: string; arguments?: string }[];
}

interface CriterionVerdict {
  passed: boolean;
  explanation: string;
}

const NEGATION = /\b(never|not|no|without)\b|n't\b/i;
const ENDS_CALL = /\b(end|ends|ended|ending|hang|hangs|hung)\b[^.]*\b(call|conversation|up)\b/i;
/** A tool named in a criterion: in backticks, or a snake_case word. */
const TOOL_NAMES = /`([A-Za-z0-9_-]+)`|\b([a-z0-9]+(?:_[a-z0-9]+)+)\b/g;

/**
 * The offline rules, for one criterion, in this order: quoted phrases must appear in what
 * the agent said (none of them, when the criterion negates: never, not, no, without,
 * n't); else a named tool (in backticks or snake_case) must have been called (or not);
 * else a criterion about ending the call holds when the agent ended it; else the criterion
 * cannot be checked offline and counts as met, saying so.
 */
function offlineVerdict(criterion: string, input: Omit<JudgeInput, 'criteria'>): CriterionVerdict {
  const agentSaid = input.transcript
    .filter((entry) => entry.role === 'agent')
    .map((entry) => entry.content ?? '')
    .join('\n')
    .toLowerCase();
  const called = new Set(input.transcript.filter((entry) => entry.role === 'tool_call_invocation').map((entry) => entry.name));
  const phrases = quotedPhrases(criterion);
  const negated = NEGATION.test(criterion.replace(/"[^"]*"|“[^“”]*”|`[^`]*`/g, ' '));
  if (phrases.length) {
    const missing = phrases.filter((phrase) => !agentSaid.includes(phrase.toLowerCase()));
    const present = phrases.filter((phrase) => agentSaid.includes(phrase.toLowerCase()));
    if (negated) {
      return present.length
        ? { passed: false, explanation: `The agent said ${present.map((p) => `"${p}"`).join(', ')}` }
        : { passed: true, explanation: `The agent never said ${phrases.map((p) => `"${p}"`).join(', ')}` };
    }
    return missing.length
      ? { passed: false, explanation: `The agent never said ${missing.map((p) => `"${p}"`).join(', ')}` }
      : { passed: true, explanation: `The agent said ${phrases.map((p) => `"${p}"`).join(', ')}` };
  }
  const tools = [...criterion.matchAll(TOOL_NAMES)].map((match) => (match[1] ?? match[2])!);
  if (tools.length) {
    const uncalled = tools.filter((tool) => !called.has(tool));
    if (negated) {
      const calledOnes = tools.filter((tool) => called.has(tool));
      return calledOnes.length ? { passed: false, explanation: `The agent called ${calledOnes.join(', ')}` } : { passed: true, explanation: `The agent did not call ${tools.join(', ')}` };
    }
    return uncalled.length ? { passed: false, explanation: `The agent never called ${uncalled.join(', ')}` } : { passed: true, explanation: `The agent called ${tools.join(', ')}` };
  }
  if (ENDS_CALL.test(criterion)) {
    const endedByAgent = input.ended_by === 'agent';
    const passed = negated ? !endedByAgent : endedByAgent;
    return { passed, explanation: endedByAgent ? 'The agent ended the call' : `The agent did not end the call (it ended by ${input.ended_by.replace('_', ' ')})` };
  }
  return { passed: true, explanation: 'Not checkable offline (no quoted phrase, tool name or call ending): counted as met; a configured model judges it' };
}

defineOfflineShape(JUDGE_HINT, ({ request }) => {
  const input = JSON.parse(request.messages.at(-1)!.content) as JudgeInput;
  return { criteria: input.criteria.map((criterion) => offlineVerdict(criterion, input)) };
});

export interface Verdict {
  status: 'pass' | 'fail';
  explanation: string;
}

/** Judges the conversation against every criterion; the run fails on the first criterion not met, naming it. */
export async function judge(definition: TestCaseDefinition, simulation: Simulation, fallbackModel?: string): Promise<Verdict> {
  if (!definition.metrics.length) return { status: 'pass', explanation: 'No criteria: the conversation ran to its end' };
  const input: JudgeInput = {
    criteria: definition.metrics,
    ended_by: simulation.ended_by,
    transcript: simulation.messages.map((entry) => {
      if (entry.role === 'tool_call_invocation') return { role: entry.role, name: entry.name, arguments: entry.arguments };
      if (entry.role === 'agent' || entry.role === 'user' || entry.role === 'tool_call_result') return { role: entry.role, content: entry.content };
      return { role: entry.role };
    }),
  };
  const answer = await completeWithFallback(
    {
      model: definition.llm_model,
      messages: [
        {
          role: 'system',
          content:
            'You judge a test of an AI phone agent. The user message is JSON: the success criteria, how the call ended and its transcript ' +
            '(agent and user lines, tool calls and results). For each criterion, in order, decide whether the conversation meets it. Answer with a ' +
            'JSON object {"criteria": [{"passed": boolean, "explanation": one sentence citing the transcript}]}, one entry per criterion.',
        },
        { role: 'user', content: JSON.stringify(input) },
      ],
      maxTokens: 200 + 100 * definition.metrics.length,
      timeoutMs: 30_000,
      responseFormat: 'json',
      offlineHint: JUDGE_HINT,
    },
    fallbackModel,
  );
  const verdicts = (JSON.parse(answer.content) as { criteria?: unknown }).criteria;
  if (!Array.isArray(verdicts) || verdicts.length !== definition.metrics.length) {
    throw new Error(`The judging model answered ${Array.isArray(verdicts) ? verdicts.length : 'no'} verdicts for ${definition.metrics.length} criteria`);
  }
  const failed = definition.metrics.flatMap((criterion, index) => {
    const verdict = verdicts[index] as Partial<CriterionVerdict> | undefined;
    return verdict?.passed === true ? [] : [`Criterion ${index + 1} not met: "${criterion}": ${String(verdict?.explanation ?? 'no reason given')}`];
  });
  if (failed.length) return { status: 'fail', explanation: failed.join('\n') };
  return {
    status: 'pass',
    explanation: definition.metrics.map((criterion, index) => `Criterion ${index + 1} met: "${criterion}": ${String((verdicts[index] as CriterionVerdict).explanation)}`).join('\n'),
  };
}
