import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';
import { readProgress } from '../sessions/store.ts';
import { WALKTHROUGH_READS } from '../tools/catalog.ts';
import { dispatch, type Caller } from '../tools/dispatch.ts';

/*
 * The steps of a first agent (docs/assistant.md, "Walkthrough"), each done or not from the
 * workspace's own data: one-item reads as the caller (the newest LLM, agent, chat, web
 * call, and the newest LLM's test cases) and the assistant's progress marker (a playground
 * turn stores nothing of its own). A read the caller may not make counts as not done.
 */

export const Walkthrough = lazySchema(() =>
  z.object({
    steps: z.array(
      z.object({
        step: z.enum(['create_llm', 'create_agent', 'playground_turn', 'test_case', 'sandbox_web_call']),
        title: z.string(),
        description: z.string(),
        done: z.boolean(),
      }),
    ),
    completed: z.number().int(),
    total: z.number().int(),
  }),
);
type Walkthrough = z.infer<typeof Walkthrough>;

const itemsOf = (body: unknown): Record<string, unknown>[] =>
  (Array.isArray(body) ? body : Array.isArray((body as { items?: unknown } | undefined)?.items) ? (body as { items: unknown[] }).items : []) as Record<string, unknown>[];

export async function walkthrough(caller: Caller): Promise<Walkthrough> {
  const read = async (name: keyof typeof WALKTHROUGH_READS, input: { query?: Record<string, string>; body?: unknown }) => {
    const answer = await dispatch(caller, undefined, WALKTHROUGH_READS[name], { params: {}, ...input });
    return answer.status < 300 ? itemsOf(answer.body) : [];
  };
  const [llms, agents, chats, calls, progress] = await Promise.all([
    read('llms', { query: { limit: '1' } }),
    read('agents', { query: { limit: '1' } }),
    read('chats', { query: { limit: '1' } }),
    read('calls', { body: { limit: 1, filter_criteria: { call_type: ['web_call'] } } }),
    readProgress(caller.principal.workspaceId),
  ]);
  const newestLlm = typeof llms[0]?.llm_id === 'string' ? (llms[0].llm_id as string) : undefined;
  const testCases = newestLlm ? await read('testCases', { query: { type: 'retell-llm', llm_id: newestLlm, limit: '1' } }) : [];
  const steps: Walkthrough['steps'] = [
    { step: 'create_llm', title: 'Create an LLM', description: 'POST /create-retell-llm with the prompt your agent follows', done: llms.length > 0 },
    { step: 'create_agent', title: 'Create an agent', description: 'POST /create-agent on that LLM (response_engine retell-llm)', done: agents.length > 0 },
    { step: 'playground_turn', title: 'Try it in the playground', description: 'POST /agent-playground-completion/{agent_id}, or a chat (POST /create-chat)', done: progress.playground_turn_timestamp !== undefined || chats.length > 0 },
    { step: 'test_case', title: 'Write a test case', description: 'POST /create-test-case-definition: a simulated caller and what success is', done: testCases.length > 0 },
    { step: 'sandbox_web_call', title: 'Make a sandbox web call', description: 'POST /v3/create-web-call and talk to it in the browser', done: calls.length > 0 },
  ];
  const completed = steps.filter((step) => step.done).length;
  return { steps, completed, total: steps.length };
}
