import { getWorkspaceItem } from '../../account/index.ts';
import { getAgent } from '../../agents/lookups/index.ts';
import { NotFound } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { countMetric } from '../../platform/observability/metrics.ts';
import { enqueueWebhook, fillUrlPlaceholders } from '../../webhooks/index.ts';
import { withAgentOverride } from '../agent-override.ts';
import { notifyCallLifecycle } from '../call-listeners.ts';
import type { CallItem } from '../store.ts';
import { withTranscript } from '../transcript.ts';
import { toCallView } from '../view.ts';

/*
 * Call events to webhooks (spec: Outgoing webhooks). Routing: the agent version's
 * webhook_url, with `{{placeholders}}` filled from the call's dynamic variables, collected
 * variables, call_id and agent_id (unknown ones removed), else the workspace's URL. The
 * agent's `webhook_events` filters its events (an empty list: none; absent: the defaults);
 * the per-attempt timeout is the agent's, else the workspace's at delivery.
 */

export type CallEvent =
  | 'call_started'
  | 'call_ended'
  | 'call_analyzed'
  | 'transcript_updated'
  | 'transfer_started'
  | 'transfer_bridged'
  | 'transfer_cancelled'
  | 'transfer_ended';

const DEFAULT_EVENTS: readonly CallEvent[] = ['call_started', 'call_ended', 'call_analyzed'];

interface Route {
  url: string;
  timeoutMs?: number;
}

async function routeFor(call: CallItem, event: CallEvent): Promise<Route | undefined> {
  let agent: Awaited<ReturnType<typeof getAgent>> | undefined;
  try {
    // The call's agent_override (webhook_url, webhook_events, webhook_timeout_ms, …) lies over the version.
    agent = withAgentOverride(await getAgent(call.workspace_id, call.agent_id, call.agent_version), call.engine?.agent_override);
  } catch (error) {
    // The agent (or that version) was deleted after the call started: the workspace URL still hears of it.
    if (!(error instanceof NotFound)) throw error;
  }
  const events = (agent?.webhook_events as CallEvent[] | null | undefined) ?? DEFAULT_EVENTS;
  if (agent?.webhook_url) {
    if (!events.includes(event)) return undefined;
    const transfer = event.startsWith('transfer_');
    const url = transfer
      ? agent.webhook_url
      : fillUrlPlaceholders(agent.webhook_url, {
          ...(call.retell_llm_dynamic_variables ?? {}),
          ...(call.collected_dynamic_variables ?? {}),
          call_id: call.call_id,
          agent_id: call.agent_id,
        });
    return { url, timeoutMs: agent.webhook_timeout_ms ?? undefined };
  }
  // No agent URL: the workspace's, for the default events (an agent's event list still filters).
  if (agent && agent.webhook_events && !events.includes(event)) return undefined;
  if (!agent?.webhook_events && !DEFAULT_EVENTS.includes(event) && event !== 'transcript_updated') return undefined;
  if (!agent?.webhook_events && event === 'transcript_updated') return undefined;
  const workspace = await getWorkspaceItem(call.workspace_id);
  return workspace.webhook_url ? { url: workspace.webhook_url } : undefined;
}

/** Queues `{event, call}` for the call's destination; answers whether anything was queued. */
export async function sendCallEvent(call: CallItem, event: CallEvent): Promise<boolean> {
  // Sent once per transition (the transitions are conditional writes), so each is counted once.
  if (event === 'call_started') countMetric('CallStarted', { call_type: call.call_type });
  if (event === 'call_ended') {
    countMetric('CallEnded', { call_status: call.call_status, disconnection_reason: call.disconnection_reason ?? 'none' });
  }
  await notifyCallLifecycle(call, event);
  const route = await routeFor(call, event);
  if (!route) return false;
  // The payload is the whole call: its transcript is read from its lines only for an event that goes somewhere.
  await enqueueWebhook({
    workspaceId: call.workspace_id,
    url: route.url,
    event,
    payload: { call: toCallView(await withTranscript(call)) },
    timeoutMs: route.timeoutMs,
  });
  logger.debug('call event queued', { call_id: call.call_id, event });
  return true;
}
