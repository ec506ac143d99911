import type { Attachment, PendingAction, ToolCallRecord } from '../sessions/schemas.ts';
import { TOOLS } from '../tools/catalog.ts';
import type { ToolRunner } from '../tools/run.ts';
import { appendDiff } from './diff.ts';

/*
 * The assistant without a language model (no LLM_BASE_URL: the built-in mock path), as
 * deterministic rules over the user's message, tried in this order (docs/assistant.md,
 * "Offline rules"). Every action still goes through the tools, as the caller.
 *
 * 1. `help` (or `what can you do`): the tools, their scopes and which need confirmation.
 * 2. `create an agent named <X> with prompt <Y>`: proposes an LLM with prompt Y and a voice
 *    agent named X on it; both are created once the user confirms.
 * 3. `list my agents` (`list`/`show` with `agents`): lists them.
 * 4. `rename agent <X> to <Y>`: renames it at once (a draft edit needs no confirmation).
 * 5. `publish agent <X>`: proposes publishing it.
 * 6. `delete agent <X>`: proposes deleting it.
 * 7. `why did … fail` / `explain`: explains the attached QA results and test runs from their
 *    failing criteria and proposes the prompt change (appended instructions) as a unified
 *    diff, applied to the LLM they ran on once confirmed.
 * 8. `invite <email> [as <role>]`: invites them (the route admits admins only).
 * Otherwise: what it can do, and `help`.
 *
 * An agent <X> is named by its ID, or by its name (matched case-insensitively among the
 * workspace's agents), or left out when exactly one agent is attached.
 */

export interface OfflineTurnInput {
  content: string;
  attachments: readonly Attachment[];
  runner: ToolRunner;
  nowMs: number;
  newActionId: () => string;
}

export interface TurnResult {
  text: string;
  pending?: PendingAction;
}

const CONFIRM_HINT = 'Reply "yes" (or send confirm_action_id) to go ahead; anything else cancels it.';

const QUOTES = new Set(['"', "'", '“', '”', '‘', '’']);

/** The text without the quotes around it (and a closing full stop). */
function unquote(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && (QUOTES.has(text[start]!) || /\s/.test(text[start]!))) start++;
  while (end > start && (QUOTES.has(text[end - 1]!) || text[end - 1] === '.' || /\s/.test(text[end - 1]!))) end--;
  return text.slice(start, end);
}

/** The text after the first of `markers` found in `lower` (and its index in the original), or undefined. */
function after(content: string, markers: readonly string[]): { index: number; text: string } | undefined {
  const lower = content.toLowerCase();
  for (const marker of markers) {
    const index = lower.indexOf(marker);
    if (index >= 0) return { index, text: content.slice(index + marker.length) };
  }
  return undefined;
}

export function capabilitiesText(): string {
  const lines = TOOLS.map((tool) => `- ${tool.name}: ${tool.description} (scope ${tool.scope}${tool.confirm ? '; asks you to confirm first' : ''})`);
  return ['I act through the API as you, with your role and key scopes. What I can do:', ...lines].join('\n');
}

const proposal = (input: OfflineTurnInput, summary: string, steps: PendingAction['steps']): TurnResult => ({
  text: `I can do this: ${summary}. ${CONFIRM_HINT}`,
  pending: { action_id: input.newActionId(), summary, steps, created_timestamp: input.nowMs },
});

/** What a tool call came to, for the reply. */
export function outcomeText(record: ToolCallRecord): string {
  if (record.status === 'ok') return `${record.tool} succeeded`;
  const code = record.http_status ? ` (${record.http_status})` : '';
  return `The API refused ${record.tool}${code}: ${record.error}`;
}

type AgentRef = { agent_id: string; agent_name?: string } | { problem: string };

async function resolveAgent(name: string, input: OfflineTurnInput): Promise<AgentRef> {
  const id = /\bagent_[0-9a-f]{24}\b/.exec(name)?.[0];
  if (id) return { agent_id: id };
  const wanted = unquote(name).toLowerCase();
  if (wanted === '' || wanted === 'it' || wanted === 'this') {
    const attached = input.attachments.filter((attachment) => attachment.type === 'agent');
    if (attached.length === 1) return { agent_id: attached[0]!.id };
    return { problem: 'Name the agent (its name or ID), or attach exactly one agent to the session.' };
  }
  const listed = await input.runner.run('list_agents', {});
  if (listed.status !== 'ok') return { problem: outcomeText(listed) };
  const agents = (Array.isArray(listed.result) ? listed.result : []) as { agent_id: string; agent_name?: string | null }[];
  const matches = agents.filter((agent) => (agent.agent_name ?? '').trim().toLowerCase() === wanted);
  if (matches.length === 0) return { problem: `No agent is named "${unquote(name)}".` };
  if (matches.length > 1) return { problem: `Several agents are named "${unquote(name)}" (${matches.map((agent) => agent.agent_id).join(', ')}): name one by its ID.` };
  return { agent_id: matches[0]!.agent_id, agent_name: matches[0]!.agent_name ?? undefined };
}

const agentLabel = (agent: { agent_id: string; agent_name?: string }) => (agent.agent_name ? `"${agent.agent_name}" (${agent.agent_id})` : agent.agent_id);

export async function offlineTurn(input: OfflineTurnInput): Promise<TurnResult> {
  const content = input.content.trim();
  const lower = content.toLowerCase();

  if (/^(?:help|\?|what can you do)\b/.test(lower)) return { text: capabilitiesText() };

  const created = createAgentRequest(content);
  if (created) {
    const summary = `create an LLM with the prompt "${created.prompt.length > 80 ? `${created.prompt.slice(0, 80)}…` : created.prompt}" and a voice agent named "${created.name}" on it`;
    return proposal(input, summary, [
      { tool: 'create_llm', arguments: { general_prompt: created.prompt } },
      { tool: 'create_agent', arguments: { agent_name: created.name, response_engine: { type: 'retell-llm', llm_id: '{{steps.0.llm_id}}' } } },
    ]);
  }

  if (/\b(?:list|show)\b/.test(lower) && /\bagents\b/.test(lower)) {
    const listed = await input.runner.run('list_agents', {});
    if (listed.status !== 'ok') return { text: outcomeText(listed) };
    const agents = (Array.isArray(listed.result) ? listed.result : []) as { agent_id: string; agent_name?: string | null }[];
    if (agents.length === 0) return { text: 'The workspace has no voice agents yet. Say "create an agent named <name> with prompt <prompt>" to make one.' };
    return { text: [`The workspace has ${agents.length} voice agent${agents.length === 1 ? '' : 's'}:`, ...agents.map((agent) => `- ${agent.agent_name ?? '(unnamed)'} (${agent.agent_id})`)].join('\n') };
  }

  const rename = after(content, ['rename the agent ', 'rename agent ']);
  if (rename) {
    const cut = rename.text.toLowerCase().lastIndexOf(' to ');
    if (cut < 0) return { text: 'Say "rename agent <name or ID> to <new name>".' };
    const newName = unquote(rename.text.slice(cut + 4));
    const agent = await resolveAgent(rename.text.slice(0, cut), input);
    if ('problem' in agent) return { text: agent.problem };
    const updated = await input.runner.run('update_agent', { agent_id: agent.agent_id, agent_name: newName });
    return { text: updated.status === 'ok' ? `Renamed ${agentLabel(agent)} to "${newName}".` : outcomeText(updated) };
  }

  for (const [verb, tool] of [['publish', 'publish_agent'], ['delete', 'delete_agent']] as const) {
    const request = after(content, [`${verb} the agent `, `${verb} agent `]) ?? (new RegExp(`^${verb}\\b`).test(lower) && /\bagent\b/.test(lower) ? { index: 0, text: '' } : undefined);
    if (!request) continue;
    const agent = await resolveAgent(request.text, input);
    if ('problem' in agent) return { text: agent.problem };
    return proposal(input, `${verb} the agent ${agentLabel(agent)}`, [{ tool, arguments: { agent_id: agent.agent_id } }]);
  }

  if ((/\bwhy\b/.test(lower) && /\bfail/.test(lower)) || /\bexplain\b/.test(lower)) return explainFailures(input);

  const invite = inviteRequest(content);
  if (invite) {
    const invited = await input.runner.run('invite_member', { email: invite.email, role: invite.role });
    return { text: invited.status === 'ok' ? `Invited ${invite.email} as ${invite.role}; the invitation's token is not kept in this session.` : outcomeText(invited) };
  }

  return {
    text:
      'I build and fix agents through the API as you. Try "create an agent named Front Desk with prompt You answer calls for a dental clinic", ' +
      '"list my agents", "rename agent <name> to <new name>", "publish agent <name>", or attach a QA result or test run and ask "why did it fail?". Say "help" for everything I can do.',
  };
}

/** `invite <email> [as [a|an] <role>]` anywhere in the message. */
function inviteRequest(content: string): { email: string; role: string } | undefined {
  const words = content.split(/\s+/).map((word) => {
    let end = word.length;
    while (end > 0 && '.,!'.includes(word[end - 1]!)) end--;
    return word.slice(0, end);
  });
  const at = words.findIndex((word) => word.toLowerCase() === 'invite');
  const email = at >= 0 ? words[at + 1] : undefined;
  if (!email || !/^[^\s@]+@[^\s@]+$/.test(email)) return undefined;
  let next = at + 2;
  if (words[next]?.toLowerCase() !== 'as') return { email, role: 'member' };
  next++;
  if (['a', 'an'].includes(words[next]?.toLowerCase() ?? '')) next++;
  const role = words[next]?.toLowerCase();
  return { email, role: role === 'admin' || role === 'developer' ? role : 'member' };
}

function createAgentRequest(content: string): { name: string; prompt: string } | undefined {
  const named = after(content, ['agent named ', 'agent called ']);
  if (!named || !/\bcreate\b|\bmake\b|\bbuild\b/i.test(content.slice(0, named.index))) return undefined;
  const lower = named.text.toLowerCase();
  const marker = [' with the prompt', ' with prompt', ' and prompt'].map((text) => ({ text, index: lower.indexOf(text) })).find((found) => found.index >= 0);
  if (!marker) return undefined;
  const name = unquote(named.text.slice(0, marker.index));
  const prompt = named.text.slice(marker.index + marker.text.length).replace(/^\s*:?\s*/, '').trim().replace(/^["“]|["”]$/g, '').trim();
  return name && prompt ? { name, prompt } : undefined;
}

interface QaResultView {
  result_id: string;
  agent_id: string;
  status: string;
  failure_reason?: string;
  machine?: { criteria: { name: string; score: number | null; reason: string }[]; overall_score: number | null; passed: boolean | null; pass_threshold: number };
}

interface TestRunView {
  test_case_job_id: string;
  test_case_batch_job_id: string;
  status: string;
  test_case_definition_snapshot: { name: string; metrics: string[] };
  result_explanation?: string | null;
}

type Engine = { type?: string; llm_id?: string };

/** A failing criterion, the instruction appended to the prompt for it, and where its engine is found. */
interface Failing {
  key: string;
  instruction: string;
}

/** What explaining one attachment came to: lines for the reply, its failing criteria and how to find its engine. */
interface Explained {
  lines: string[];
  failing: Failing[];
  engine?: () => Promise<Engine | { problem: string }>;
}

const EXPLAINED_TYPES = new Set(['qa_result', 'test_run']);

/**
 * Rule 7: the attached QA results' criteria scored below the threshold and the attached test
 * runs' criteria not met, and an instruction for each appended to the prompt of the LLM the
 * first explained attachment ran on (a QA result's agent's, a test run's batch's).
 */
async function explainFailures(input: OfflineTurnInput): Promise<TurnResult> {
  const attached = input.attachments.filter((attachment) => EXPLAINED_TYPES.has(attachment.type));
  if (attached.length === 0) {
    return { text: 'Attach the QA results or test runs to explain (PUT /conductor/sessions/{id}/attachments with type qa_result or test_run), then ask again.' };
  }
  const lines: string[] = [];
  const failing: Failing[] = [];
  let engineOf: Explained['engine'];
  for (const attachment of attached) {
    const explained = attachment.type === 'qa_result' ? await explainQaResult(input, attachment.id) : await explainTestRun(input, attachment.id);
    lines.push(...explained.lines);
    for (const item of explained.failing) if (!failing.some((seen) => seen.key === item.key)) failing.push(item);
    engineOf ??= explained.engine;
  }
  if (failing.length === 0 || !engineOf) return { text: [...lines, 'No criterion failed: nothing to change in the prompt.'].join('\n') };
  const engine = await engineOf();
  if ('problem' in engine) return { text: [...lines, engine.problem].join('\n') };
  if (engine.type !== 'retell-llm' || !engine.llm_id) return { text: [...lines, "The response engine is not an LLM: change its flow's nodes instead."].join('\n') };
  const llm = await input.runner.run('get_llm', { llm_id: engine.llm_id });
  if (llm.status !== 'ok') return { text: [...lines, outcomeText(llm)].join('\n') };
  const prompt = String((llm.result as { general_prompt?: string | null }).general_prompt ?? '');
  const next = `${prompt}${prompt === '' || prompt.endsWith('\n') ? '' : '\n'}${failing.map((item) => item.instruction).join('\n')}`;
  const diff = appendDiff('general_prompt', prompt, next);
  const pending = proposal(input, `apply this change to the prompt of ${engine.llm_id}`, [{ tool: 'update_llm', arguments: { llm_id: engine.llm_id, general_prompt: next } }]);
  return { text: [...lines, '', 'Proposed prompt change:', '```diff', diff, '```', pending.text].join('\n'), pending: pending.pending };
}

const withoutFullStop = (text: string) => text.replace(/\.$/, '');

async function explainQaResult(input: OfflineTurnInput, resultId: string): Promise<Explained> {
  const fetched = await input.runner.run('get_qa_result', { result_id: resultId });
  if (fetched.status !== 'ok') return { lines: [outcomeText(fetched)], failing: [] };
  const result = fetched.result as QaResultView;
  const engine = async (): Promise<Engine | { problem: string }> => {
    const agent = await input.runner.run('get_agent', { agent_id: result.agent_id });
    if (agent.status !== 'ok') return { problem: outcomeText(agent) };
    return (agent.result as { response_engine?: Engine }).response_engine ?? {};
  };
  if (result.status !== 'scored' || !result.machine) return { lines: [`${result.result_id} was not scored: ${result.failure_reason ?? 'no scores'}.`], failing: [], engine };
  const { machine } = result;
  const below = machine.criteria.filter((criterion) => criterion.score !== null && criterion.score < machine.pass_threshold);
  return {
    lines: [
      `${result.result_id} scored ${machine.overall_score ?? 'n/a'} against a pass threshold of ${machine.pass_threshold} (${machine.passed ? 'passed' : 'failed'}).`,
      ...below.map((criterion) => `- ${criterion.name}: ${criterion.score}. ${criterion.reason}`),
    ],
    failing: below.map((criterion) => ({
      key: `qa:${criterion.name}`,
      instruction: `- Make sure the conversation meets "${criterion.name.replaceAll('_', ' ')}": last time, ${withoutFullStop(criterion.reason)}.`,
    })),
    engine,
  };
}

/**
 * A test run's verdict and the judge's explanation as GET /get-test-run answers them: a
 * failing run's explanation has one line per criterion not met, `Criterion <n> not met:
 * "<criterion>": <why>`, the criterion being the definition's n-th as run.
 */
async function explainTestRun(input: OfflineTurnInput, runId: string): Promise<Explained> {
  const fetched = await input.runner.run('get_test_run', { test_case_job_id: runId });
  if (fetched.status !== 'ok') return { lines: [outcomeText(fetched)], failing: [] };
  const run = fetched.result as TestRunView;
  const definition = run.test_case_definition_snapshot;
  const explanation = run.result_explanation ?? '';
  const head = `${run.test_case_job_id} (test case "${definition.name}")`;
  if (run.status === 'pending' || run.status === 'in_progress') return { lines: [`${head} has not finished yet: ask again once it has.`], failing: [] };
  if (run.status === 'error') return { lines: [`${head} could not run: ${explanation || 'no reason given'}.`], failing: [] };
  if (run.status !== 'fail') return { lines: [`${head} passed.`], failing: [] };
  const failing: Failing[] = [];
  const lines = [`${head} failed.`];
  for (const line of explanation.split('\n')) {
    const index = Number(/^Criterion (\d+) not met: /.exec(line)?.[1]);
    const criterion = definition.metrics[index - 1];
    const prefix = `Criterion ${index} not met: "${criterion}": `;
    if (criterion === undefined || !line.startsWith(prefix)) {
      if (line.trim() !== '') lines.push(`- ${line}`);
      continue;
    }
    const why = line.slice(prefix.length);
    lines.push(`- ${criterion}: ${why}`);
    failing.push({ key: `test:${criterion}`, instruction: `- Make sure of this: ${withoutFullStop(criterion)}. Last time: ${withoutFullStop(why)}.` });
  }
  const engine = async (): Promise<Engine | { problem: string }> => {
    const batch = await input.runner.run('get_batch_test', { test_case_batch_job_id: run.test_case_batch_job_id });
    if (batch.status !== 'ok') return { problem: outcomeText(batch) };
    return (batch.result as { response_engine?: Engine }).response_engine ?? {};
  };
  return { lines, failing, engine };
}
