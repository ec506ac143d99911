import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { openLiveConnection, syncLiveConnection } from '../../shared/calls/index.ts';
import { setLocalConnections } from '../../shared/platform/aws/ws-connections.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

/** What a slow connection was sent, in order: frame IDs, and 'close'. */
const sent = new Map<string, (number | 'close')[]>();
setLocalConnections({
  async post(connectionId, data) {
    // Each message takes a while to go out, so that concurrent pushes overlap.
    await sleep(25);
    sent.get(connectionId)!.push((JSON.parse(data) as { id: number }).id);
    return true;
  },
  async close(connectionId) {
    sent.get(connectionId)!.push('close');
  },
});

async function endedCall() {
  const ws = await app.newWorkspace();
  const { number } = await newAgentWithNumber(ws.api);
  const created = await ws.api.post('/v2/create-phone-call', {
    body: { from_number: number, to_number: '+14155555555', metadata: { sandbox_call_ms: 300, sandbox_user_says: ['Hello?'] } },
  });
  expect(created.status).toBe(201);
  const ended = await eventually(() => ws.api.get(`/v2/get-call/${created.body.call_id}`), (r) => r.body.call_status === 'ended', 60_000);
  return { workspaceId: ws.workspace_id, callId: created.body.call_id as string, last: 3 + ended.body.transcript_with_tool_calls.length };
}

describe('a monitor connection synced by several pushes at once', () => {
  it('gets every frame once, then one close after them, whichever push sends them', async () => {
    const { workspaceId, callId, last } = await endedCall();
    sent.set('conn_race', []);
    await openLiveConnection(workspaceId, callId, 'conn_race', 2);
    await Promise.all([syncLiveConnection('conn_race'), syncLiveConnection('conn_race'), syncLiveConnection('conn_race')]);
    // A push of the call's own (its analysis landing) may have moved the cursor first and be
    // sending still: whichever push it is, the connection ends with every frame once, then the close.
    await eventually(async () => sent.get('conn_race')!.at(-1), (lastSent) => lastSent === 'close');
    expect(sent.get('conn_race')).toEqual([...Array.from({ length: last - 2 }, (_, i) => i + 3), 'close']);
  });

  it('that resumed after the final frame is closed once, with nothing sent', async () => {
    const { workspaceId, callId, last } = await endedCall();
    sent.set('conn_end', []);
    await openLiveConnection(workspaceId, callId, 'conn_end', last);
    await Promise.all([syncLiveConnection('conn_end'), syncLiveConnection('conn_end')]);
    await eventually(async () => sent.get('conn_end')!.length, (count) => count > 0);
    expect(sent.get('conn_end')).toEqual(['close']);
  });
});
