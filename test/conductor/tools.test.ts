import { describe, expect, it } from 'vitest';
import { ATTACHMENT_READS, invokedRouteGroups, TOOLS, WALKTHROUGH_READS } from '../../shared/conductor/tools/catalog.ts';
import { appendDiff } from '../../shared/conductor/model/diff.ts';
import type { RouteDefinition } from '../../shared/platform/http/route.ts';
import { routeTable } from '../../shared/route-table.ts';
import { startTestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';

/*
 * The assistant's tools are routes of the API: each names its route and repeats its method,
 * path, function and scope (the conductor's bundle does not carry the route table), held
 * here to the table. Capabilities list them; the walkthrough reports the workspace's progress.
 */
const app = await startTestApp();

describe('the tool catalog', () => {
  it('names routes of the route table with their method, path, function and scope', () => {
    const table = routeTable as Record<string, RouteDefinition>;
    for (const read of [...TOOLS, ...Object.values(ATTACHMENT_READS), ...Object.values(WALKTHROUGH_READS)]) {
      const route = table[read.route];
      expect(route, read.route).toBeDefined();
      expect({ method: read.method, path: read.path, domain: read.domain, scope: read.scope }, read.route).toEqual({
        method: route!.method,
        path: route!.path,
        domain: route!.domain,
        scope: route!.access,
      });
    }
    expect(new Set(TOOLS.map((tool) => tool.name)).size).toBe(TOOLS.length);
    // What publishes, deletes, spends (the spend-checked routes) or places calls asks first.
    for (const tool of TOOLS) {
      const route = table[tool.route]!;
      const mustConfirm = route.method === 'DELETE' || /publish/.test(route.path) || route.spendChecked === true;
      expect(tool.confirm, tool.name).toBe(mustConfirm);
    }
    expect(invokedRouteGroups()).toEqual(['agents', 'billing', 'calls', 'chat-agents', 'chats', 'flows', 'knowledge-bases', 'members', 'qa']);
  });

  it('proposes prompt changes as unified diffs', () => {
    // A last line without a newline is its own line to a patch tool: extended, it is removed and added back with one.
    const noNewline = '\\ No newline at end of file';
    expect(appendDiff('general_prompt', 'a\nb\nc\nd\ne', 'a\nb\nc\nd\ne\n- Be brief.')).toBe(
      ['--- a/general_prompt', '+++ b/general_prompt', '@@ -2,4 +2,5 @@', ' b', ' c', ' d', '-e', noNewline, '+e', '+- Be brief.', noNewline].join('\n'),
    );
    expect(appendDiff('general_prompt', 'a\nb\n', 'a\nb\n- Be brief.')).toBe(
      ['--- a/general_prompt', '+++ b/general_prompt', '@@ -1,2 +1,3 @@', ' a', ' b', '+- Be brief.', noNewline].join('\n'),
    );
    expect(appendDiff('general_prompt', '', '- Be brief.')).toBe(['--- a/general_prompt', '+++ b/general_prompt', '@@ -0,0 +1,1 @@', '+- Be brief.', noNewline].join('\n'));
  });
});

describe('GET /conductor/capabilities and /conductor/walkthrough', () => {
  it('lists the tools with their scopes and confirmation flags', async () => {
    const res = await app.api.get('/conductor/capabilities');
    expect(res.status).toBe(200);
    expect(res.body.tools).toHaveLength(TOOLS.length);
    expect(res.body.tools).toContainEqual({
      name: 'create_agent',
      description: 'Create a voice agent on a response engine (an LLM or a conversation flow)',
      route: 'POST /create-agent',
      scope: 'agents',
      needs_confirmation: false,
    });
    expect(res.body.tools).toContainEqual(expect.objectContaining({ name: 'delete_agent', route: 'DELETE /delete-agent/{agent_id}', scope: 'agents', needs_confirmation: true }));
    expect(res.body.tools).toContainEqual(expect.objectContaining({ name: 'invite_member', scope: 'admin', needs_confirmation: false }));
  });

  it("reports the first agent's steps as the workspace takes them", async () => {
    const ws = await app.newWorkspace();
    const steps = async () => ((await ws.api.get('/conductor/walkthrough')).body as { steps: { step: string; done: boolean }[]; completed: number }).steps.map((step) => [step.step, step.done]);
    expect(await steps()).toEqual([
      ['create_llm', false],
      ['create_agent', false],
      ['playground_turn', false],
      ['test_case', false],
      ['sandbox_web_call', false],
    ]);
    const { llm } = await newAgent(ws.api);
    const testCase = await ws.api.post('/create-test-case-definition', {
      body: { name: 'Greets', user_prompt: 'Say "Hi"', metrics: ['The agent says "Hi"'], response_engine: { type: 'retell-llm', llm_id: llm.llm_id } },
    });
    expect(testCase.status).toBe(201);
    const { markPlaygroundTurn } = await import('../../shared/conductor/sessions/store.ts');
    await markPlaygroundTurn(ws.workspace_id, Date.now());
    const res = await ws.api.get('/conductor/walkthrough');
    expect(res.body).toMatchObject({ completed: 4, total: 5 });
    expect(await steps()).toEqual([
      ['create_llm', true],
      ['create_agent', true],
      ['playground_turn', true],
      ['test_case', true],
      ['sandbox_web_call', false],
    ]);
  });
});
