import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newAgent, newChatAgent } from '../support/factories.ts';

/*
 * Retention reads index entries only, oldest first, and stops at the cutoff (nothing younger
 * than a day can be due): a workspace's newest calls are never read, however many there are.
 */

const app = await startTestApp();
const { applyRetention } = await import('../../shared/account-data/index.ts');
const { callRetentionPage } = await import('../../shared/calls/records/index.ts');
const { countCalls, newCallItem, putNewCall } = await import('../../shared/calls/store.ts');
const { newTimeOrderedId } = await import('../../shared/platform/ids.ts');
const { countChats, newChatItem, putNewChat } = await import('../../shared/chats/store.ts');

const DAY = 86_400_000;
const NOW = Date.UTC(2030, 0, 31);

async function seed(workspaceId: string, agentId: string, createdAt: number[]) {
  await Promise.all(
    createdAt.map((at) =>
      putNewCall(
        newCallItem({
          call_id: newTimeOrderedId('call', at),
          workspace_id: workspaceId,
          created_timestamp: at,
          call_type: 'web_call',
          call_status: 'ended',
          agent_id: agentId,
          agent_version: 0,
          engine: { media: 'sandbox', origin: 'create-web-call' },
        }),
      ),
    ),
  );
}

describe('retention up to the cutoff', () => {
  it('examines only calls older than the shortest retention and deletes the due ones, a bounded page at a time', async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api, { agent: { data_storage_retention_days: 3 } });
    // 5 calls 10 days old and one exactly 3 days old (due), 4 calls 2 days old (kept: 3 days), 30 of the last day (never read).
    await seed(ws.workspace_id, agent.agent_id, [
      ...Array.from({ length: 5 }, (_, i) => NOW - 10 * DAY + i),
      NOW - 3 * DAY,
      ...Array.from({ length: 4 }, (_, i) => NOW - 2 * DAY + i),
      ...Array.from({ length: 30 }, (_, i) => NOW - DAY / 2 + i),
    ]);
    const report = await applyRetention(ws.workspace_id, NOW);
    expect(report).toEqual({ calls_deleted: 6, chats_deleted: 0, calls_examined: 10, chats_examined: 0 });
    expect(await countCalls(ws.workspace_id)).toBe(34);

    // Pages carry the cursor and end at the cutoff.
    const first = await callRetentionPage(ws.workspace_id, { limit: 3, createdBeforeMs: NOW - DAY });
    expect(first.calls).toHaveLength(3);
    expect(first.next).toBe(first.calls[2]!.call_id);
    const second = await callRetentionPage(ws.workspace_id, { after: first.next, limit: 3, createdBeforeMs: NOW - DAY });
    expect(second.calls).toHaveLength(1);
    expect(second.next).toBeUndefined();
    expect([...first.calls, ...second.calls].every((call) => call.created_timestamp < NOW - DAY)).toBe(true);
    // A cursor at or past the cutoff reads nothing.
    expect(await callRetentionPage(ws.workspace_id, { after: newTimeOrderedId('call', NOW), limit: 3, createdBeforeMs: NOW - DAY })).toEqual({ calls: [] });
  });

  it('walks chats the same way, judging each on its start', async () => {
    const ws = await app.newWorkspace();
    const { chatAgent } = await newChatAgent(ws.api, { chatAgent: { data_storage_retention_days: 2 } });
    const chatAt = (at: number) =>
      putNewChat(
        newChatItem({
          chat_id: newTimeOrderedId('chat', at),
          workspace_id: ws.workspace_id,
          chat_type: 'api_chat',
          chat_status: 'ended',
          agent_id: chatAgent.agent_id,
          agent_version: 0,
          retell_llm_dynamic_variables: {},
          created_timestamp: at,
          start_timestamp: at,
          message_count: 0,
          conversation: {},
        }),
        [],
      );
    await Promise.all([NOW - 5 * DAY, NOW - 4 * DAY, NOW - 1.5 * DAY, NOW - 1000, NOW - 10].map(chatAt));
    expect(await applyRetention(ws.workspace_id, NOW)).toEqual({ calls_deleted: 0, chats_deleted: 2, calls_examined: 0, chats_examined: 3 });
    expect(await countChats(ws.workspace_id)).toBe(3);
  });
});
