import { verify as retellVerify } from 'retell-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { readCells } from '../../shared/analytics/rollups/index.ts';
import { findCallItem } from '../../shared/calls/store.ts';
import { useLanguageModel } from '../../shared/vendors/llm/index.ts';
import { sandboxMedia } from '../../shared/vendors/media/index.ts';
import { startTestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { before, DESK, getCall, hitOf, outboundNumberFor, SANDBOX_TRANSFER_EVENTS } from '../support/transfers.ts';
import { RecordingModel } from '../support/recording-model.ts';
import { eventually, webhookReceiver, type ReceivedWebhook } from '../support/webhook-receiver.ts';

/** The workspace's calls' failed transfers in the rollups (the day cell of `startMs`). */
async function transfersFailed(workspaceId: string, startMs: number): Promise<number> {
  const day = Math.floor(startMs / 86_400_000) * 86_400_000;
  const cells = await readCells({ workspaceId, table: 'calls', level: 'day', view: [], start: day, end: day + 86_400_000 });
  return cells.reduce((sum, cell) => sum + cell.totals.counters.transfer_failed, 0);
}

/*
 * Transfers in the sandbox (docs/calls.md, Transfers): the agent's transfer_call tool (the
 * offline model calls it when the callee's line says "human"), the destination's last four
 * digits deciding like dials do, every transfer_* event once, signed, and the call's final
 * fields. Events that leave the engine back to back may reach the receiver in either order
 * (deliveries run in parallel), so each event's payload is checked for the call as it was
 * when the event was sent, and arrival order only where a queue step separates them.
 */

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const ALL_EVENTS = SANDBOX_TRANSFER_EVENTS;

const transferTool = (kind: 'cold_transfer' | 'warm_transfer', number: string) => ({
  type: 'transfer_call',
  name: 'transfer_to_desk',
  description: 'Transfer the caller to the front desk.',
  transfer_destination: { type: 'predefined', number },
  transfer_option: { type: kind },
});

async function transferSetup(kind: 'cold_transfer' | 'warm_transfer', destination: string) {
  const ws = await app.newWorkspace();
  const hooks = await webhookReceiver();
  const { agent } = await newAgent(ws.api, {
    agent: { webhook_url: hooks.url, webhook_events: ALL_EVENTS },
    llm: { general_tools: [transferTool(kind, destination)] },
  });
  const number = await outboundNumberFor(ws.api, agent.agent_id);
  return { ws, hooks, agent, number, client: retellClient(app.url, ws.api_key) };
}


async function verifySignatures(hits: ReceivedWebhook[], apiKey: string) {
  for (const hit of hits) expect(await retellVerify(hit.body, apiKey, hit.headers['x-retell-signature'] as string)).toBe(true);
}

describe('a cold transfer in the sandbox', () => {
  it('bridges: transfer_started, transfer_bridged, call_ended (call_transfer), transfer_ended, each once and signed', async () => {
    const { ws, hooks, number, client } = await transferSetup('cold_transfer', DESK);
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155555555',
      metadata: { sandbox_call_ms: 60_000, sandbox_user_says: ['Can I speak to a human, please?', 'Never mind.'] },
    });
    const final = await eventually(() => getCall(client, created.call_id), (call) => call.transfer_end_timestamp !== undefined && call.call_analysis !== undefined);
    expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'call_transfer', transfer_destination: DESK });
    expect(final.transfer_end_timestamp).toBeGreaterThanOrEqual(final.end_timestamp);
    // The agent's part: its opening, the callee's request, the tool call; the second line was never said.
    expect(final.transcript_object.map((entry: any) => entry.role)).toEqual(['agent', 'user']);
    const invocation = final.transcript_with_tool_calls.find((entry: any) => entry.role === 'tool_call_invocation');
    expect(invocation.name).toBe('transfer_to_desk');
    expect(final).not.toHaveProperty('transfer_state');

    const events = await eventually(async () => hooks.events(created.call_id), (list) => list.length >= 6);
    expect([...events].sort()).toEqual(['call_analyzed', 'call_ended', 'call_started', 'transfer_bridged', 'transfer_ended', 'transfer_started']);
    before(events, 'call_started', 'transfer_started');
    before(events, 'transfer_started', 'transfer_bridged');
    before(events, 'call_ended', 'call_analyzed');
    // Each payload is the call as it was when its event was sent: that is the order they were sent in.
    expect(hitOf(hooks.hits, created.call_id, 'transfer_started').json.call).toMatchObject({ call_status: 'ongoing', transfer_destination: DESK });
    expect(hitOf(hooks.hits, created.call_id, 'transfer_bridged').json.call).toMatchObject({ call_status: 'ongoing', transfer_destination: DESK });
    const ended = hitOf(hooks.hits, created.call_id, 'call_ended').json.call!;
    expect(ended).toMatchObject({ call_status: 'ended', disconnection_reason: 'call_transfer' });
    expect(ended.transfer_end_timestamp).toBeUndefined();
    const transferEnded = hitOf(hooks.hits, created.call_id, 'transfer_ended').json.call!;
    expect(transferEnded.transfer_end_timestamp).toBe(final.transfer_end_timestamp);
    await verifySignatures(hooks.hits, ws.api_key);

    // The media layer REFERred the callee to the desk.
    const refers = sandboxMedia().operations.filter((op) => op.op === 'cold_transfer' && op.request.call_id === created.call_id);
    expect(refers).toEqual([
      { op: 'cold_transfer', request: { call_id: created.call_id, participant_identity: 'callee', to: DESK }, outcome: { bridged: true, participant_identity: 'callee' } },
    ]);
    // Its slot went back once: a new call of the workspace is admitted and the counter reads zero after all.
    expect(((await ws.api.get('/get-concurrency')).body as any).current_concurrency).toBe(0);
  });

  it('is cancelled when the destination does not answer (0002): transfer_cancelled, and the call goes on with the agent', async () => {
    const { ws, hooks, number, client } = await transferSetup('cold_transfer', '+14155550002');
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155555555',
      metadata: { sandbox_call_ms: 4000, sandbox_user_says: ['Can I speak to a human, please?', 'Okay, what are your hours?'] },
    });
    const final = await eventually(() => getCall(client, created.call_id), (call) => call.call_analysis !== undefined);
    expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
    expect(final).not.toHaveProperty('transfer_destination');
    expect(final).not.toHaveProperty('transfer_end_timestamp');
    // The callee's second line came after the failed transfer, and the agent answered it.
    expect(final.transcript_object.map((entry: any) => entry.role)).toEqual(['agent', 'user', 'user', 'agent']);
    expect(final.transcript_object[2].content).toBe('Okay, what are your hours?');

    const events = await eventually(async () => hooks.events(created.call_id), (list) => list.length >= 5);
    expect(events.slice(0, 3)).toEqual(['call_started', 'transfer_started', 'transfer_cancelled']);
    expect([...events.slice(3)].sort()).toEqual(['call_analyzed', 'call_ended']);
    expect(hitOf(hooks.hits, created.call_id, 'transfer_cancelled').json.call).toMatchObject({ call_status: 'ongoing' });
    await verifySignatures(hooks.hits, ws.api_key);
    // The item keeps the failed transfer (never answered), and the rollups count it.
    expect((await findCallItem(created.call_id))!.transfers_failed).toBe(1);
    expect(await transfersFailed(ws.workspace_id, final.start_timestamp)).toBe(1);
  });
});

describe('a cancelled transfer, and the agent', () => {
  it('is told in its conversation: its next turn sees a note after the tool result, the transcript does not', async () => {
    const { number, client } = await transferSetup('cold_transfer', '+14155550001');
    const model = new RecordingModel();
    useLanguageModel(model);
    try {
      const created: any = await client.call.createPhoneCall({
        from_number: number,
        to_number: '+14155555555',
        metadata: { sandbox_call_ms: 3000, sandbox_user_says: ['Can I speak to a human, please?', 'Okay, what are your hours?'] },
      });
      const final = await eventually(() => getCall(client, created.call_id), (call) => call.call_status === 'ended');
      expect(final.disconnection_reason).toBe('user_hangup');
      const note = 'The transfer to +14155550001 did not go through (the line was busy): the caller is still on the line with you. Tell them, and carry on helping them.';
      // The turn answering the callee's next line: the note comes right after the transfer tool's result.
      const next = model.requests.find((request) => request.messages.at(-1)?.content === 'Okay, what are your hours?');
      expect(next).toBeDefined();
      const roles = next!.messages.map((message) => message.role);
      expect(roles).toEqual(['system', 'assistant', 'user', 'assistant', 'tool', 'system', 'user']);
      expect(next!.messages[4]!.content).toBe('Transferring the call to +14155550001.');
      expect(next!.messages[5]).toEqual({ role: 'system', content: note });
      // The turn before the cancellation did not see it, and the transcript never holds it.
      const asked = model.requests.find((request) => request.messages.at(-1)?.content === 'Can I speak to a human, please?');
      expect(asked!.messages.filter((message) => message.content === note)).toEqual([]);
      expect(JSON.stringify(final.transcript_with_tool_calls)).not.toContain('did not go through');
      expect(final.transcript_object.map((entry: any) => entry.role)).toEqual(['agent', 'user', 'user', 'agent']);
    } finally {
      useLanguageModel(undefined);
    }
  });
});

describe('a warm transfer in the sandbox', () => {
  it('bridges: the destination is dialled into the call, the call ends transfer_bridged, transfer_ended after the leg', async () => {
    const { ws, hooks, number, client } = await transferSetup('warm_transfer', DESK);
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155555555',
      metadata: { sandbox_call_ms: 60_000, sandbox_user_says: ['Please transfer me to the desk.'] },
    });
    const final = await eventually(() => getCall(client, created.call_id), (call) => call.transfer_end_timestamp !== undefined && call.call_analysis !== undefined);
    expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'transfer_bridged', transfer_destination: DESK });
    // The sandbox's bridged leg lasts SANDBOX_TRANSFER_LEG_MS (2 s) after the agent left.
    expect(final.transfer_end_timestamp - final.end_timestamp).toBeGreaterThanOrEqual(2000);

    const events = await eventually(async () => hooks.events(created.call_id), (list) => list.length >= 6);
    expect([...events].sort()).toEqual(['call_analyzed', 'call_ended', 'call_started', 'transfer_bridged', 'transfer_ended', 'transfer_started']);
    before(events, 'call_started', 'transfer_started');
    before(events, 'transfer_started', 'transfer_bridged');
    before(events, 'call_ended', 'transfer_ended');
    expect(hitOf(hooks.hits, created.call_id, 'transfer_bridged').json.call).toMatchObject({ call_status: 'ongoing' });
    expect(hitOf(hooks.hits, created.call_id, 'call_ended').json.call).toMatchObject({ call_status: 'ended', disconnection_reason: 'transfer_bridged' });
    expect(hitOf(hooks.hits, created.call_id, 'transfer_ended').json.call!.transfer_end_timestamp).toBe(final.transfer_end_timestamp);
    await verifySignatures(hooks.hits, ws.api_key);

    const ops = sandboxMedia().operations.filter((op) => ('request' in op && op.request.call_id === created.call_id) || ('room' in op && op.room === created.call_id));
    const dial = ops.find((op) => op.op === 'warm_transfer');
    expect(dial).toMatchObject({
      op: 'warm_transfer',
      request: { call_id: created.call_id, from_number: number, to_number: DESK },
      outcome: { connected: true, participant_identity: `transfer-${DESK}` },
    });
    // The room stays up for the bridged parties: it ends once, with the transferred leg.
    expect(ops.filter((op) => op.op === 'end_call')).toHaveLength(1);
    expect(ops.at(-1)?.op).toBe('end_call');
  });

  it('is cancelled when the destination is busy (0001): the call goes on with the agent', async () => {
    const { ws, hooks, number, client } = await transferSetup('warm_transfer', '+14155550001');
    // (sandbox_transfer_ring_ms is checked like the other sandbox keys, before anything is created)
    const bad = await ws.api.post('/v2/create-phone-call', {
      body: { from_number: number, to_number: '+14155555555', metadata: { sandbox_transfer_ring_ms: 'soon' } },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('metadata.sandbox_transfer_ring_ms: Must be a whole number from 0 to 3600000');
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155555555',
      metadata: { sandbox_call_ms: 4000, sandbox_user_says: ['Please transfer me to the desk.', 'Fine, I will stay with you.'] },
    });
    const final = await eventually(() => getCall(client, created.call_id), (call) => call.call_analysis !== undefined);
    expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
    expect(final).not.toHaveProperty('transfer_destination');
    expect(final.transcript_object.at(-2)).toMatchObject({ role: 'user', content: 'Fine, I will stay with you.' });
    const events = await eventually(async () => hooks.events(created.call_id), (list) => list.length >= 5);
    expect(events.slice(0, 3)).toEqual(['call_started', 'transfer_started', 'transfer_cancelled']);
    expect([...events.slice(3)].sort()).toEqual(['call_analyzed', 'call_ended']);
    const dial = sandboxMedia().operations.find((op) => op.op === 'warm_transfer' && op.request.call_id === created.call_id);
    expect(dial).toMatchObject({ outcome: { connected: false, disconnection_reason: 'dial_busy' } });
  });

  it('a callee who hangs up while the destination rings cancels the transfer with the call (transfer_cancelled)', async () => {
    const { ws, hooks, number, client } = await transferSetup('warm_transfer', DESK);
    // The hang-up is due at 0 ms: it comes as soon as the callee's line has been said, while the destination rings (a minute).
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155555555',
      metadata: { sandbox_call_ms: 0, sandbox_transfer_ring_ms: 60_000, sandbox_user_says: ['Please transfer me to the desk.'] },
    });
    const final = await eventually(() => getCall(client, created.call_id), (call) => call.call_analysis !== undefined);
    expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'transfer_cancelled' });
    expect(final).not.toHaveProperty('transfer_destination');
    const events = await eventually(async () => hooks.events(created.call_id), (list) => list.length >= 5);
    expect(events.slice(0, 2)).toEqual(['call_started', 'transfer_started']);
    expect([...events.slice(2)].sort()).toEqual(['call_analyzed', 'call_ended', 'transfer_cancelled']);
    expect(hitOf(hooks.hits, created.call_id, 'transfer_cancelled').json.call).toMatchObject({ call_status: 'ended', disconnection_reason: 'transfer_cancelled' });
    // Cancelled in the end's own write: counted on the item and in the rollups as well.
    expect((await findCallItem(created.call_id))!.transfers_failed).toBe(1);
    expect(await transfersFailed(ws.workspace_id, final.start_timestamp)).toBe(1);
  });

  it('stop-call while the destination rings cancels the transfer (manual_stopped), once', async () => {
    const { hooks, number, client } = await transferSetup('cold_transfer', DESK);
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155555555',
      metadata: { sandbox_call_ms: 60_000, sandbox_transfer_ring_ms: 60_000, sandbox_user_says: ['Please transfer me to the desk.'] },
    });
    await eventually(async () => hooks.events(created.call_id), (list) => list.includes('transfer_started'));
    await client.call.stop(created.call_id);
    const final = await getCall(client, created.call_id);
    expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'manual_stopped' });
    expect(final).not.toHaveProperty('transfer_destination');
    const events = await eventually(async () => hooks.events(created.call_id), (list) => list.length >= 5);
    expect([...events.slice(2)].sort()).toEqual(['call_analyzed', 'call_ended', 'transfer_cancelled']);
  });
});

describe('a web call cannot transfer', () => {
  it('tells the agent (the tool answers an error) and goes on, with no transfer event', async () => {
    const { ws, hooks, agent, client } = await transferSetup('cold_transfer', DESK);
    const web: any = await client.call.createWebCall({
      agent_id: agent.agent_id,
      metadata: { sandbox_call_ms: 3000, sandbox_user_says: ['Can I speak to a human, please?', 'Alright, thanks.'] },
    });
    const final = await eventually(() => getCall(client, web.call_id), (call) => call.call_analysis !== undefined);
    expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
    expect(final).not.toHaveProperty('transfer_destination');
    const result = final.transcript_with_tool_calls.find((entry: any) => entry.role === 'tool_call_result');
    expect(result).toMatchObject({ content: 'Error: this call cannot be transferred (only phone calls can be transferred)', successful: false });
    // The model heard the refusal and answered; the callee's next line was still said.
    expect(final.transcript_object.map((entry: any) => entry.content)).toContain('Alright, thanks.');
    const events = await eventually(async () => hooks.events(web.call_id), (list) => list.length >= 3);
    expect([...events].sort()).toEqual(['call_analyzed', 'call_ended', 'call_started']);
    await verifySignatures(hooks.hits, ws.api_key);
  });
});
