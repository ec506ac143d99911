import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { applyRetention } from '../../shared/account-data/index.ts';
import { JOBS } from '../../shared/jobs.ts';
import { config } from '../../shared/platform/config.ts';
import { db } from '../../shared/platform/store/db.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgentWithNumber } from '../support/factories.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Idempotency records of deleted calls (docs/privacy.md): create-phone-call's claim stores
 * its answer (the call, with both numbers) for the key's hour. An erase of the number, and
 * retention, cut that answer to the call's ID, type, status and agent: a full table scan finds
 * the number nowhere, and a retry with the same key still dials nobody.
 */
const app = await startTestApp();
const background = startBackgroundWork(JOBS.filter((job) => job.name === 'export-jobs'));
afterAll(() => background.stop());

async function itemsMentioning(text: string): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db.send(new ScanCommand({ TableName: config.TABLE_NAME, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) if (JSON.stringify(item).includes(text)) found.push(item);
    start = page.LastEvaluatedKey;
  } while (start);
  return found;
}

async function setup(agentFields: Record<string, unknown> = {}) {
  const ws = await app.newWorkspace();
  const { agent, number: from } = await newAgentWithNumber(ws.api, { agent: agentFields });
  return { ws, agent, from };
}

const callCount = async (ws: { api: any }) => ((await ws.api.post('/v3/list-calls', { body: { limit: 1000 } })).body as unknown[]).length;

describe('idempotency records of erased calls', () => {
  it('an erase leaves the claim answering repeats with the call\'s ID only, and the number nowhere in the table', async () => {
    const { ws, agent, from } = await setup();
    const person = freshNumber();
    const body = { from_number: from, to_number: person, idempotency_key: 'order-42-reminder', metadata: { about: person } };
    const first = await ws.api.post('/v2/create-phone-call', { body });
    expect(first.status).toBe(201);
    const claims = (await itemsMentioning(person)).filter((item) => String(item.pk).startsWith('IDEMPOTENCY#'));
    expect(claims).toHaveLength(1);

    const erase = await ws.api.post('/privacy/delete-phone-number', { body: { phone_number: person } });
    const done = await eventually(async () => (await ws.api.get(`/privacy/requests/${erase.body.request_id}`)).body, (r) => r.status !== 'pending' && r.status !== 'running', 30_000);
    expect(done).toMatchObject({ status: 'complete', report: { calls_deleted: 1 } });
    expect(await itemsMentioning(person)).toEqual([]);

    // The same request again within the hour: the stored answer, cut down; no second dial.
    const repeat = await ws.api.post('/v2/create-phone-call', { body });
    expect(repeat.status).toBe(201);
    expect(repeat.body).toEqual({
      call_id: first.body.call_id,
      call_type: 'phone_call',
      call_status: 'registered',
      agent_id: agent.agent_id,
      agent_version: first.body.agent_version,
      ...(first.body.agent_name !== undefined ? { agent_name: first.body.agent_name } : {}),
      direction: 'outbound',
    });
    expect(await callCount(ws)).toBe(0);
    // Another body under the key is still refused.
    const other = await ws.api.post('/v2/create-phone-call', { body: { ...body, to_number: freshNumber() } });
    expect(other.status).toBe(422);
  }, 60_000);

  it('retention cuts the claim of the calls it deletes; a claim of a call kept is left whole', async () => {
    const { ws, from } = await setup({ data_storage_retention_days: 1 });
    const person = freshNumber();
    const kept = freshNumber();
    const old = await ws.api.post('/v2/create-phone-call', { body: { from_number: from, to_number: person, idempotency_key: 'old' } });
    expect(old.status).toBe(201);
    const createdAt = (await ws.api.get(`/privacy/call/${old.body.call_id}`)).body.retention_timestamp - 86_400_000;
    // A workspace with no retention keeps its call and claim.
    const other = await setup();
    const keptCall = await other.ws.api.post('/v2/create-phone-call', { body: { from_number: other.from, to_number: kept, idempotency_key: 'old' } });
    expect(keptCall.status).toBe(201);

    const report = await applyRetention(ws.workspace_id, createdAt + 86_400_000);
    expect(report).toMatchObject({ calls_deleted: 1 });
    expect(await itemsMentioning(person)).toEqual([]);
    expect((await itemsMentioning(kept)).some((item) => String(item.pk).startsWith('IDEMPOTENCY#'))).toBe(true);
    const repeat = await other.ws.api.post('/v2/create-phone-call', { body: { from_number: other.from, to_number: kept, idempotency_key: 'old' } });
    expect(repeat.body).toEqual(keptCall.body);
  }, 60_000);
});
