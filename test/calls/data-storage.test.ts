import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { mentions, tableMentions } from '../support/table-mentions.ts';
import { startBackgroundWork } from '../../local/background.ts';
import { localWebhookQueue } from '../../local/queues.ts';
import { runCallStep } from '../../shared/calls/engine/engine.ts';
import { finishRoomRecording } from '../../shared/calls/artifacts/recordings.ts';
import { newCallItem, putNewCall } from '../../shared/calls/store.ts';
import { objectStore } from '../../shared/platform/aws/object-store.ts';
import { setLocalQueue } from '../../shared/platform/aws/queue.ts';
import { config } from '../../shared/platform/config.ts';
import { db } from '../../shared/platform/store/db.ts';
import { objectKeys } from '../../shared/platform/store/keys.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgent } from '../support/factories.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

/*
 * A call's data storage setting governs what it keeps once it is over (docs/privacy.md, What
 * the data storage setting keeps): a sandbox call whose caller says an SSN, run end to end
 * by the background jobs, then get-call, the privacy view and the raw table (the call's
 * partition, and a scan of the whole table) after its analysis. `metadata` is the caller's
 * own storage, kept under every setting: the sandbox's script is in it, so the scans leave
 * the call item's `metadata` out. The offline model echoes the caller's line, so the agent's
 * turns and the analysis' summary carry the SSN too.
 */

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

/** A social security number with a valid area (shared/platform/text/pii.ts finds it). */
const SSN = '219-09-9999';
const SAYS = [`My SSN is ${SSN}.`, 'Thanks, that is all for now.', `Again, it is ${SSN}.`];

/** A call that said SAYS and ended; its analysis runs in the background. */
async function finishedCall(agentFields: Record<string, unknown>) {
  const ws = await app.newWorkspace();
  const hooks = await webhookReceiver();
  const { agent } = await newAgent(ws.api, {
    agent: {
      webhook_url: hooks.url,
      post_call_analysis_data: [{ type: 'string', name: 'what_they_said', description: 'The caller\'s last line' }, { type: 'number', name: 'turns', description: 'User turns' }],
      ...agentFields,
    },
  });
  const number = freshNumber();
  const imported = await ws.api.post('/import-phone-number', {
    body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
  });
  expect(imported.status).toBe(201);
  const created = await ws.api.post('/v2/create-phone-call', {
    body: {
      from_number: number,
      to_number: '+14155550123',
      retell_llm_dynamic_variables: { account_ssn: SSN, plan: 'gold' },
      metadata: { sandbox_call_ms: 1500, sandbox_user_says: SAYS },
    },
  });
  expect(created.status).toBe(201);
  const callId = created.body.call_id as string;
  // A supervisor's controls while it runs: their texts are stored as controls of their own.
  await eventually(async () => (await ws.api.get(`/v2/get-call/${callId}`)).body, (body) => body.call_status === 'ongoing');
  expect((await ws.api.post(`/v2/calls/${callId}/supervisor-say`, { body: { text: `Your reference is ${SSN}.` } })).status).toBe(200);
  expect((await ws.api.patch(`/v2/update-live-call/${callId}`, { body: { call_control: { additional_context: `The caller's SSN is ${SSN}.` } } })).status).toBe(200);
  return { ws, agent, callId, hooks };
}

/** A finished call once its call_analyzed went out. */
async function endedCall(agentFields: Record<string, unknown>) {
  const { ws, agent, callId, hooks } = await finishedCall(agentFields);
  // call_analyzed is sent once the analysis is stored, before the setting is applied.
  const analyzed = await eventually(
    async () => hooks.hits.find((hit) => hit.json.event === 'call_analyzed'),
    (hit) => hit !== undefined,
    30_000,
  );
  return { ws, agent, callId, hooks, analyzed: analyzed!.json.call! };
}

/** The call's partition as stored, each item without the call item's `metadata` (the caller's own storage). */
async function partition(callId: string): Promise<Record<string, unknown>[]> {
  const { Items } = await db.send(new QueryCommand({ TableName: config.TABLE_NAME, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': `CALL#${callId}` } }));
  return (Items ?? []).map((item) => {
    const { metadata: _metadata, ...rest } = item;
    return item.sk === 'CALL' ? rest : item;
  });
}


/** A call item without its `metadata` (the caller's own storage); other items whole. */
const withoutCallMetadata = (item: Record<string, unknown>) => {
  const { metadata: _metadata, ...rest } = item;
  return String(item.pk).startsWith('CALL#') && item.sk === 'CALL' ? rest : item;
};

describe('basic_attributes_only', () => {
  it('keeps no transcript, variables or summary once the call is analysed; the webhook had them; a redelivered step changes nothing', async () => {
    const { ws, callId, analyzed } = await endedCall({ data_storage_setting: 'basic_attributes_only' });
    // The customer asked for call_analyzed: it carries the call as it was analysed.
    expect(analyzed.transcript).toContain(`User: My SSN is ${SSN}.`);

    const call = await eventually(
      async () => (await ws.api.get(`/v2/get-call/${callId}`)).body,
      (body) => body.call_analysis !== undefined && body.transcript === undefined,
      20_000,
    );
    for (const field of ['transcript', 'transcript_object', 'transcript_with_tool_calls', 'retell_llm_dynamic_variables', 'collected_dynamic_variables', 'recording_url']) {
      expect(call, field).not.toHaveProperty(field);
    }
    expect(call).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
    expect(call.duration_ms).toBeGreaterThan(0);
    expect(call.call_cost.combined_cost).toBeGreaterThan(0);
    // The verdicts and the custom data stay (personal data redacted); the summary, which retells the call, goes.
    expect(call.call_analysis).toEqual({
      user_sentiment: expect.any(String),
      call_successful: expect.any(Boolean),
      in_voicemail: false,
      custom_analysis_data: { what_they_said: 'Again, it is [ssn].', turns: 3 },
    });
    const { metadata: _metadata, ...fields } = call;
    expect(JSON.stringify(fields)).not.toContain(SSN);

    // The raw table: the call's partition is its item alone, and nothing of the workspace holds the SSN.
    const stored = await partition(callId);
    expect(stored.map((item) => item.sk)).toEqual(['CALL']);
    expect(mentions(stored, SSN)).toEqual([]);
    expect(mentions(stored, 'that is all')).toEqual([]);
    expect(mentions(stored, 'You said')).toEqual([]);
    expect(await tableMentions(SSN, ws.workspace_id, withoutCallMetadata)).toEqual([]);

    const privacy = await ws.api.get(`/privacy/call/${callId}`);
    expect(privacy.status).toBe(200);
    expect(privacy.body).toMatchObject({ data_storage_setting: 'basic_attributes_only', recording: false, unscrubbed_copy: false });
    expect(privacy.body.personal_fields).toEqual(['call_analysis', 'from_number', 'metadata', 'to_number']);
    expect(privacy.body.stored_fields).not.toContain('transcript');

    // A redelivered analysis step (and the storage step) finds it applied and writes nothing.
    const before = await partition(callId);
    await runCallStep({ call_id: callId, workspace_id: ws.workspace_id, step: 'analyze', seq: 0 });
    await runCallStep({ call_id: callId, workspace_id: ws.workspace_id, step: 'data_storage', seq: 0 });
    expect(await partition(callId)).toEqual(before);

    // Nothing left to analyse again, and the setting cannot be loosened.
    expect((await ws.api.post(`/rerun-call-analysis/${callId}`)).body).toEqual({
      status: 400,
      message: `Call ${callId} keeps no transcript to analyse again: its data storage setting is basic_attributes_only`,
    });
    expect((await ws.api.patch(`/v2/update-call/${callId}`, { body: { data_storage_setting: 'everything' } })).body).toEqual({
      status: 400,
      message: 'data_storage_setting: Cannot change from basic_attributes_only to the less restrictive everything',
    });
  }, 60_000);
});

describe('everything_except_pii', () => {
  it('keeps the transcript with the personal data redacted, and no unscrubbed copy', async () => {
    const { ws, callId } = await endedCall({ data_storage_setting: 'everything_except_pii' });
    const call = await eventually(
      async () => (await ws.api.get(`/v2/get-call/${callId}`)).body,
      // The call item is written last, after its lines.
      (body) => typeof body.call_analysis?.call_summary === 'string' && body.call_analysis.call_summary.includes('[ssn]'),
      20_000,
    );
    // The supervisor's line is said next, so it may come before the caller's first.
    expect(call.transcript_object.find((line: { role: string }) => line.role === 'user')).toMatchObject({ content: 'My SSN is [ssn].' });
    expect(call.transcript_object.map((line: { content: string }) => line.content)).toContain('Your reference is [ssn].');
    expect(call.transcript).toContain('User: My SSN is [ssn].\n');
    expect(call.retell_llm_dynamic_variables).toEqual({ account_ssn: '[ssn]', plan: 'gold' });
    expect(call.call_analysis.call_summary).toContain('The user first said: "My SSN is [ssn]."');
    const { metadata: _metadata, ...rest } = call;
    expect(JSON.stringify(rest)).not.toContain(SSN);

    expect(await ws.api.get(`/v2/get-call-unscrubbed/${callId}`)).toMatchObject({
      status: 404,
      body: { status: 404, message: `No unscrubbed copy of call ${callId} is kept: its data storage setting is everything_except_pii` },
    });
    const stored = await partition(callId);
    expect(stored.filter((item) => String(item.sk).startsWith('UNSCRUBBED'))).toEqual([]);
    expect(stored.filter((item) => String(item.sk).startsWith('CONTROL#')).map((item: any) => item.entry.text)).toEqual([
      'Your reference is [ssn].',
      'The caller\'s SSN is [ssn].',
    ]);
    expect(stored.filter((item) => String(item.sk).startsWith('LINE#')).length).toBeGreaterThanOrEqual(4);
    expect(mentions(stored, SSN)).toEqual([]);
    expect(await tableMentions(SSN, ws.workspace_id, withoutCallMetadata)).toEqual([]);

    const before = await partition(callId);
    await runCallStep({ call_id: callId, workspace_id: ws.workspace_id, step: 'analyze', seq: 0 });
    expect(await partition(callId)).toEqual(before);
  }, 60_000);
});

describe('an analysis whose call_analyzed could not be queued', () => {
  it('queues the event on the step\'s retry, with the transcript, before the setting removes it', async () => {
    // The webhooks queue refuses the first call_analyzed, as SQS may; everything else goes through.
    let refused = 0;
    setLocalQueue('webhooks', {
      send: async (message, sendOptions) => {
        if ((message as { event?: string }).event === 'call_analyzed' && refused === 0) {
          refused += 1;
          throw new Error('SQS did not answer');
        }
        await localWebhookQueue().send(message, sendOptions);
      },
    });
    try {
      const { ws, callId, hooks } = await finishedCall({ data_storage_setting: 'basic_attributes_only' });
      // The background step stored the analysis, then failed to queue its event: the setting was not applied.
      const stored = await eventually(
        async () => (await partition(callId)).find((item) => item.sk === 'CALL') as Record<string, any>,
        (call) => call?.call_analysis !== undefined && refused === 1,
        30_000,
      );
      expect(stored.analyzed_event_pending).toBe(true);
      expect(hooks.hits.filter((hit) => hit.json.event === 'call_analyzed')).toEqual([]);
      expect((await ws.api.get(`/v2/get-call/${callId}`)).body.transcript).toContain(SSN);

      // SQS brings the step back: the event goes out with what the call said, then the setting applies.
      await runCallStep({ call_id: callId, workspace_id: ws.workspace_id, step: 'analyze', seq: 0 });
      const analyzed = await eventually(
        async () => hooks.hits.filter((hit) => hit.json.event === 'call_analyzed'),
        (hits) => hits.length > 0,
        10_000,
      );
      expect(analyzed).toHaveLength(1);
      expect(analyzed[0]!.json.call!.transcript).toContain(`My SSN is ${SSN}.`);
      const after = await partition(callId);
      expect(after.map((item) => item.sk)).toEqual(['CALL']);
      expect(after[0]?.analyzed_event_pending).toBeUndefined();
      expect(mentions(after, SSN)).toEqual([]);

      // Once more: nothing is pending, nothing is sent again.
      await runCallStep({ call_id: callId, workspace_id: ws.workspace_id, step: 'analyze', seq: 0 });
      expect(hooks.hits.filter((hit) => hit.json.event === 'call_analyzed')).toHaveLength(1);
    } finally {
      setLocalQueue('webhooks', localWebhookQueue());
    }
  }, 60_000);
});

describe('everything', () => {
  it('keeps the call as said; update-call to basic_attributes_only then applies that setting at once', async () => {
    const { ws, callId } = await endedCall({});
    const call = await eventually(
      async () => (await ws.api.get(`/v2/get-call/${callId}`)).body,
      (body) => body.call_analysis !== undefined,
      20_000,
    );
    expect(call.transcript_object.find((line: { role: string }) => line.role === 'user')).toMatchObject({ content: `My SSN is ${SSN}.` });
    expect(call.retell_llm_dynamic_variables).toEqual({ account_ssn: SSN, plan: 'gold' });
    // The step that applies the setting has run (its call_analyzed went out first): it kept everything.
    await runCallStep({ call_id: callId, workspace_id: ws.workspace_id, step: 'analyze', seq: 0 });
    expect(mentions(await partition(callId), SSN).length).toBeGreaterThanOrEqual(3);
    expect((await tableMentions(SSN, ws.workspace_id, withoutCallMetadata)).length).toBeGreaterThanOrEqual(3);

    const recordingKey = objectKeys.callArtifact(ws.workspace_id, callId, 'recording.wav');
    expect(await objectStore().get(recordingKey)).toBeDefined();

    const tightened = await ws.api.patch(`/v2/update-call/${callId}`, { body: { data_storage_setting: 'basic_attributes_only' } });
    expect(tightened.status).toBe(200);
    expect(tightened.body.data_storage_setting).toBe('basic_attributes_only');
    expect(tightened.body).not.toHaveProperty('transcript');
    expect((await ws.api.get(`/v2/get-call/${callId}`)).body).not.toHaveProperty('transcript_object');
    expect((await ws.api.get(`/get-call-recording-url/${callId}`)).body).toEqual({
      status: 404,
      message: `Call ${callId} keeps no recording: its data storage setting is basic_attributes_only`,
    });
    expect(await objectStore().get(recordingKey)).toBeUndefined();
    expect(mentions(await partition(callId), SSN)).toEqual([]);
    expect(await tableMentions(SSN, ws.workspace_id, withoutCallMetadata)).toEqual([]);
  }, 60_000);
});

describe('a media server\'s recording removed before its file landed', () => {
  it('is deleted when LiveKit says the file is written', async () => {
    const ws = await app.newWorkspace();
    const callId = `call_${Date.now().toString(16)}removed`;
    const key = objectKeys.callArtifact(ws.workspace_id, callId, 'recording.ogg');
    const egressId = `EG_${callId}`;
    await putNewCall(
      newCallItem({
        call_id: callId,
        workspace_id: ws.workspace_id,
        call_type: 'web_call',
        call_status: 'ended',
        agent_id: 'agent_x',
        agent_version: 0,
        created_timestamp: Date.now(),
        engine: { media: 'livekit' },
        data_storage_applied: 'basic_attributes_only',
        // The setting removed it while LiveKit's egress was still writing.
        recording: { key, content_type: 'audio/ogg', synthetic: false, duration_ms: 0, egress_id: egressId, removed: true },
      }),
    );
    await objectStore().put(key, Buffer.from('OggS'), 'audio/ogg');
    expect(await finishRoomRecording(callId, { egress_id: egressId, status: 'EGRESS_COMPLETE', duration_ms: 1000 })).toBe('removed: the recording was removed before it was written');
    expect(await objectStore().get(key)).toBeUndefined();
    expect((await ws.api.get(`/get-call-recording-url/${callId}`)).body).toEqual({
      status: 404,
      message: `Call ${callId} keeps no recording: its data storage setting is basic_attributes_only`,
    });
  });
});
