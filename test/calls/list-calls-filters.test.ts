import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgent } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * list-calls filters (retell-sdk's FilterCriteria), in the SDK's shape and the plain form,
 * include_total and skip, over sandbox calls of every outcome.
 */

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const ws = await app.newWorkspace();
const client = retellClient(app.url, ws.api_key);
const callee = (lastFour: string) => `+1415555${lastFour}`;

const analysis = [
  { type: 'string', name: 'last_words', description: 'What the user said last' },
  { type: 'number', name: 'user_turns', description: 'How often the user spoke' },
];
const { agent: agentX } = await newAgent(ws.api, { agent: { post_call_analysis_data: analysis } });
const { agent: agentY } = await newAgent(ws.api);
const numberX = freshNumber();
const numberY = freshNumber();
for (const [number, agent] of [[numberX, agentX], [numberY, agentY]] as const) {
  const imported = await ws.api.post('/import-phone-number', {
    body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
  });
  expect(imported.status).toBe(201);
}

/** The calls by name once each has ended (or not connected) and, when it talked, been analysed. */
const calls: Record<'happy' | 'upset' | 'busy' | 'voicemail' | 'web', any> = {} as never;

const ids = (list: any[]) => list.map((call) => call.call_id).sort();
const idsOf = (...names: (keyof typeof calls)[]) => names.map((name) => calls[name].call_id).sort();
const list = async (body: Record<string, unknown>) => {
  const res = await ws.api.post('/v3/list-calls', { body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as any[];
};
const sdkList = async (body: Record<string, unknown>) => (await client.call.list(body as never)) as any;

beforeAll(async () => {
  const phone = (to: string, metadata: Record<string, unknown>, variables: Record<string, unknown> = {}, from = numberX) =>
    client.call.createPhoneCall({ from_number: from, to_number: to, metadata, retell_llm_dynamic_variables: variables as never }) as Promise<any>;
  calls.happy = await phone(callee('5555'), { sandbox_call_ms: 0, sandbox_user_says: ['Thank you, great service'], customer: 'acme', tier: 2, vip: true }, { city: 'Paris', visits: 3 });
  calls.upset = await phone(callee('5556'), { sandbox_call_ms: 0, sandbox_user_says: ['This is terrible, I am upset'], customer: 'globex', tier: 1 }, { city: 'Berlin' });
  calls.busy = await phone(callee('0001'), { customer: 'initech' });
  calls.voicemail = await phone(callee('0003'), { sandbox_call_ms: 0 }, {}, numberY);
  calls.web = await client.call.createWebCall({ agent_id: agentY.agent_id, metadata: { sandbox_call_ms: 0, sandbox_user_says: ['Hello'] } });
  for (const name of Object.keys(calls) as (keyof typeof calls)[]) {
    // Every ended call is analysed (a not-connected one is not).
    calls[name] = await eventually(
      () => client.call.retrieve(calls[name].call_id) as Promise<any>,
      (call) => call.call_status === 'not_connected' || (call.call_status === 'ended' && call.call_analysis !== undefined),
      30_000,
    );
  }
}, 60_000);

describe('list-calls filters', () => {
  it('the calls ended as the sandbox scripts them', () => {
    expect(calls.happy).toMatchObject({ call_status: 'ended', call_analysis: { user_sentiment: 'Positive', call_successful: true } });
    expect(calls.upset).toMatchObject({ call_status: 'ended', call_analysis: { user_sentiment: 'Negative', call_successful: false } });
    expect(calls.busy).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'dial_busy' });
    expect(calls.voicemail).toMatchObject({ call_status: 'ended', disconnection_reason: 'voicemail_reached' });
    expect(calls.web).toMatchObject({ call_type: 'web_call', call_status: 'ended' });
  });

  it('filters on the index attributes in retell-sdk’s shape', async () => {
    const cases: [Record<string, unknown>, (keyof typeof calls)[]][] = [
      [{ call_status: { op: 'in', type: 'enum', value: ['not_connected'] } }, ['busy']],
      [{ call_type: { op: 'in', type: 'enum', value: ['web_call'] } }, ['web']],
      [{ direction: { op: 'in', type: 'enum', value: ['outbound'] } }, ['happy', 'upset', 'busy', 'voicemail']],
      [{ disconnection_reason: { op: 'in', type: 'enum', value: ['dial_busy', 'voicemail_reached'] } }, ['busy', 'voicemail']],
      [{ user_sentiment: { op: 'in', type: 'enum', value: ['Positive'] } }, ['happy']],
      // The voicemail heard nobody speak: not successful either.
      [{ call_successful: { op: 'eq', type: 'boolean', value: false } }, ['upset', 'voicemail']],
      [{ in_voicemail: { op: 'eq', type: 'boolean', value: true } }, ['voicemail']],
      [{ from_number: { op: 'eq', type: 'string', value: numberY } }, ['voicemail']],
      [{ to_number: { op: 'sw', type: 'string', value: '+1415555000' } }, ['busy', 'voicemail']],
      [{ to_number: { op: 'ew', type: 'string', value: '5556' } }, ['upset']],
      [{ to_number: { op: 'co', type: 'string', value: '55555555' } }, ['happy']],
      [{ from_number: { op: 'ne', type: 'string', value: numberX } }, ['voicemail', 'web']],
      [{ call_id: { op: 'in', type: 'enum', value: [calls.happy.call_id, calls.web.call_id] } }, ['happy', 'web']],
      [{ agent: [{ agent_id: agentY.agent_id }] }, ['voicemail', 'web']],
      [{ agent: [{ agent_id: agentX.agent_id, version: [0] }, { agent_id: agentY.agent_id, version: [7] }] }, ['happy', 'upset', 'busy']],
      [{ duration_ms: { op: 'ge', type: 'number', value: 1 } }, ['happy', 'upset', 'voicemail', 'web']],
      [{ duration_ms: { op: 'bt', type: 'range', value: [0, 3_600_000] }, call_type: { op: 'in', type: 'enum', value: ['phone_call'] } }, ['happy', 'upset', 'busy', 'voicemail']],
      [{ start_timestamp: { op: 'gt', type: 'number', value: calls.happy.start_timestamp } }, ['upset', 'voicemail', 'web']],
      [{ end_timestamp: { op: 'lt', type: 'number', value: 0 } }, []],
      [{ combined_cost: { op: 'gt', type: 'number', value: 0 } }, ['happy', 'upset', 'voicemail', 'web']],
      // Calls in which the agent spoke have a measured latency.
      [{ e2e_latency_p50: { op: 'ge', type: 'number', value: 0 } }, ['happy', 'upset', 'voicemail', 'web']],
      [{ e2e_latency_p50: { op: 'gt', type: 'number', value: calls.happy.latency.e2e.p50 } }, (['upset', 'voicemail', 'web'] as const).filter((n) => calls[n].latency.e2e.p50 > calls.happy.latency.e2e.p50)],
      [{ data_storage_setting: { op: 'in', type: 'enum', value: ['everything'] } }, ['happy', 'upset', 'busy', 'voicemail', 'web']],
      [{ data_storage_setting: { op: 'in', type: 'enum', value: ['basic_attributes_only'] } }, []],
    ];
    for (const [filter_criteria, expected] of cases) {
      expect(ids((await sdkList({ filter_criteria, limit: 100 })).items), JSON.stringify(filter_criteria)).toEqual(idsOf(...expected));
      expect(ids(await list({ filter_criteria, limit: 100 })), JSON.stringify(filter_criteria)).toEqual(idsOf(...expected));
    }
  });

  it('takes the plain form: a value, an array of values, thresholds', async () => {
    expect(ids(await list({ filter_criteria: { call_status: 'not_connected' } }))).toEqual(idsOf('busy'));
    expect(ids(await list({ filter_criteria: { agent_id: agentY.agent_id, call_type: ['phone_call'] } }))).toEqual(idsOf('voicemail'));
    expect(ids(await list({ filter_criteria: { in_voicemail: true } }))).toEqual(idsOf('voicemail'));
    expect(ids(await list({ filter_criteria: { start_timestamp: { lower_threshold: calls.upset.start_timestamp, upper_threshold: calls.voicemail.start_timestamp } } }))).toEqual(
      idsOf('upset', 'voicemail'),
    );
    // A call that never connected lasted 0 ms.
    expect(ids(await list({ filter_criteria: { duration_ms: 0 } }))).toEqual(idsOf('busy'));
  });

  it('filters on metadata, dynamic variables and custom analysis data (full items)', async () => {
    const cases: [Record<string, unknown>, (keyof typeof calls)[]][] = [
      [{ metadata: [{ key: 'customer', op: 'eq', type: 'string', value: 'acme' }] }, ['happy']],
      [{ metadata: [{ key: 'customer', op: 'in', type: 'enum', value: ['acme', 'initech'] }] }, ['happy', 'busy']],
      [{ metadata: [{ key: 'tier', op: 'ge', type: 'number', value: 2 }] }, ['happy']],
      [{ metadata: [{ key: 'vip', op: 'eq', type: 'boolean', value: true }] }, ['happy']],
      [{ metadata: [{ key: 'customer', op: 'pr', type: 'present' }, { key: 'tier', op: 'np', type: 'present' }] }, ['busy']],
      [{ metadata: { customer: 'globex' } }, ['upset']],
      [{ metadata: { customer: ['acme', 'globex'], tier: 1 } }, ['upset']],
      [{ dynamic_variables: [{ key: 'city', op: 'sw', type: 'string', value: 'Ber' }] }, ['upset']],
      // Dynamic variables are strings; a number filter reads "3" as 3.
      [{ dynamic_variables: [{ key: 'visits', op: 'bt', type: 'range', value: [2, 4] }] }, ['happy']],
      [{ custom_analysis_data: [{ key: 'last_words', op: 'co', type: 'string', value: 'terrible' }] }, ['upset']],
      [{ custom_analysis_data: [{ key: 'user_turns', op: 'eq', type: 'number', value: 1 }] }, ['happy', 'upset']],
      [{ custom_attributes: [{ key: 'team', op: 'pr', type: 'present' }] }, []],
      [{ tool_calls: [{ name: 'book_appointment' }] }, []],
      [{ metadata: { customer: 'acme' }, user_sentiment: { op: 'in', type: 'enum', value: ['Negative'] } }, []],
    ];
    for (const [filter_criteria, expected] of cases) {
      expect(ids((await sdkList({ filter_criteria, limit: 100 })).items), JSON.stringify(filter_criteria)).toEqual(idsOf(...expected));
      expect(ids(await list({ filter_criteria })), JSON.stringify(filter_criteria)).toEqual(idsOf(...expected));
    }
  });

  it('filters by agent tag: the agent version the tag names', async () => {
    const tagged = await ws.api.post(`/agents/${agentY.agent_id}/tags`, { body: { name: 'prod', version: 0 } });
    expect(tagged.status).toBe(201);
    expect(ids(await list({ filter_criteria: { agent_tag: { op: 'in', type: 'enum', value: ['prod'] } } }))).toEqual(idsOf('voicemail', 'web'));
    expect(await list({ filter_criteria: { agent_tag: ['staging'] } })).toEqual([]);
  });

  it('pages through a filtered listing with full-item filters, once each', async () => {
    const filter_criteria = { metadata: [{ key: 'customer', op: 'pr', type: 'present' }] };
    for (const sort_order of ['descending', 'ascending'] as const) {
      const seen: string[] = [];
      let key: string | undefined;
      for (;;) {
        const page = await sdkList({ filter_criteria, limit: 1, sort_order, ...(key ? { pagination_key: key } : {}) });
        seen.push(...page.items.map((call: any) => call.call_id));
        if (!page.has_more) break;
        key = page.pagination_key;
      }
      const expected = [calls.happy.call_id, calls.upset.call_id, calls.busy.call_id];
      expect(seen).toEqual(sort_order === 'ascending' ? expected : [...expected].reverse());
    }
  });

  it('include_total counts every matching call, whatever the page; skip passes over calls', async () => {
    const all = await sdkList({ include_total: true, limit: 2 });
    expect(all.items).toHaveLength(2);
    expect(all).toMatchObject({ has_more: true, total: 5 });
    expect(await sdkList({ include_total: true, limit: 1, filter_criteria: { call_type: { op: 'in', type: 'enum', value: ['phone_call'] } } })).toMatchObject({ total: 4 });
    expect(await sdkList({ include_total: true, filter_criteria: { to_number: { op: 'ew', type: 'string', value: '0001' } } })).toMatchObject({ total: 1 });
    expect(await sdkList({ include_total: true, filter_criteria: { metadata: { customer: ['acme', 'globex'] } } })).toMatchObject({ total: 2 });
    expect(await sdkList({ include_total: true, filter_criteria: { agent_tag: ['nobody'] } })).toEqual({ items: [], has_more: false, total: 0 });
    expect(await sdkList({ limit: 1 })).not.toHaveProperty('total');

    const newestFirst = (await list({})).map((call) => call.call_id);
    expect(newestFirst).toHaveLength(5);
    expect((await list({ skip: 2, limit: 2 })).map((call) => call.call_id)).toEqual(newestFirst.slice(2, 4));
    const skipped = await sdkList({ skip: 3, limit: 5, include_total: true });
    expect(skipped.items.map((call: any) => call.call_id)).toEqual(newestFirst.slice(3));
    expect(skipped).toMatchObject({ has_more: false, total: 5 });
  });

  it('refuses unknown filters and malformed ones with a 400 naming the field', async () => {
    const bad = async (filter_criteria: unknown, message: string) => {
      const res = await ws.api.post('/v3/list-calls', { body: { filter_criteria } });
      expect(res.status, JSON.stringify(filter_criteria)).toBe(400);
      expect(res.body).toEqual({ status: 400, message });
    };
    await bad({ colour: 'blue' }, 'filter_criteria: Unrecognized keys colour');
    await bad({ call_status: 'ended', shoe_size: 42, agent_name: 'x' }, 'filter_criteria: Unrecognized keys shoe_size, agent_name');
    await bad({ duration_ms: { op: 'bt', type: 'range', value: [10, 5] } }, 'filter_criteria.duration_ms: Invalid value');
    await bad({ metadata: [{ op: 'eq', type: 'string', value: 'x' }] }, 'filter_criteria.metadata: Invalid value');
    await bad({ tool_calls: [{ name: 'x', colour: 'red' }] }, 'filter_criteria.tool_calls.0: Unrecognized keys colour');
    const sdk = await sdkFailure(client.call.list({ filter_criteria: { nonsense: true } as never }));
    expect(sdk).toEqual({ status: 400, body: { status: 400, message: 'filter_criteria: Unrecognized keys nonsense' } });
  });

  it('keeps pagination_key rules: unknown or another workspace’s call is 400', async () => {
    const other = await app.newWorkspace();
    const res = await other.api.post('/v2/list-calls', { body: { pagination_key: calls.happy.call_id, filter_criteria: { metadata: { customer: 'acme' } } } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message: 'Invalid pagination_key' });
    // Another workspace's filters never reach these calls.
    expect(await other.api.post('/v3/list-calls', { body: { filter_criteria: { metadata: { customer: 'acme' } } } })).toMatchObject({ status: 200, body: [] });
  });
});
