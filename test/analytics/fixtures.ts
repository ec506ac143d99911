import { recordConversation, type AnalysisFacts, type ConversationFacts } from '../../shared/analytics/rollups/index.ts';

/** The clock the analytics tests run at (fake Date), so buckets, zones and retention are fixed. */
export const NOW = Date.parse('2026-12-10T12:00:00.000Z');

interface Seeded {
  id: string;
  at: string;
  agent: string;
  duration: number;
  cost: number;
  latency: number;
  direction?: string;
  type?: string;
  reason?: string;
  analysis?: AnalysisFacts;
  table?: 'calls' | 'chats';
}

/**
 * Two agents' calls over two weeks with known figures, and one chat (docs/analytics.md's
 * examples). `c3` starts at 03:00 UTC on 1 December: 30 November in New York.
 */
const CONVERSATIONS: Seeded[] = [
  { id: 'a1', at: '2026-12-01T10:00:00Z', agent: 'agent_a', duration: 60_000, cost: 10, latency: 800, analysis: { successful: true, sentiment: 'Positive' } },
  { id: 'a2', at: '2026-12-01T15:30:00Z', agent: 'agent_a', duration: 120_000, cost: 20, latency: 1000, direction: 'outbound', reason: 'agent_hangup', analysis: { successful: false, sentiment: 'Negative' } },
  { id: 'a3', at: '2026-12-01T03:00:00Z', agent: 'agent_a', duration: 180_000, cost: 30, latency: 1200 },
  { id: 'b1', at: '2026-12-02T12:00:00Z', agent: 'agent_b', duration: 30_000, cost: 5, latency: 600, type: 'web_call', analysis: { successful: true, sentiment: 'Neutral' } },
  { id: 'b2', at: '2026-12-03T09:00:00Z', agent: 'agent_b', duration: 90_000, cost: 15, latency: 900, direction: 'outbound', reason: 'dial_no_answer', analysis: { successful: true, sentiment: 'Positive' } },
  { id: 'b3', at: '2026-11-24T12:00:00Z', agent: 'agent_b', duration: 60_000, cost: 10, latency: 700 },
  { id: 'h1', at: '2026-12-02T13:00:00Z', agent: 'chat_agent', duration: 300_000, cost: 2, latency: 0, table: 'chats', analysis: { successful: true, sentiment: 'Positive' } },
];

export async function seedConversations(workspaceId: string, prefix: string): Promise<void> {
  for (const seeded of CONVERSATIONS) {
    const table = seeded.table ?? 'calls';
    const facts: ConversationFacts = {
      table,
      workspace_id: workspaceId,
      id: `${prefix}_${seeded.id}`,
      start_timestamp: Date.parse(seeded.at),
      dimensions: table === 'calls'
        ? {
          agent_id: seeded.agent, call_type: seeded.type ?? 'phone_call', direction: seeded.type === 'web_call' ? undefined : (seeded.direction ?? 'inbound'),
          call_status: 'ended', disconnection_reason: seeded.reason ?? 'user_hangup',
        }
        : { agent_id: seeded.agent, chat_type: 'api_chat', chat_status: 'ended' },
      figures: table === 'calls' ? { duration_ms: seeded.duration, cost: seeded.cost, latency_ms: seeded.latency } : { duration_ms: seeded.duration, cost: seeded.cost },
    };
    await recordConversation(facts, 'ended', undefined, NOW);
    if (seeded.analysis) await recordConversation(facts, 'analyzed', seeded.analysis, NOW);
  }
}
