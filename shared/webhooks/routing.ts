import { getWorkspaceItem } from '../account/index.ts';
import { enqueueWebhook } from './webhooks.ts';

/*
 * Where an agent's event goes (spec: Outgoing webhooks, Routing), for the events that follow
 * the plain rule: the agent's webhook_url (placeholders filled) when it has one and its
 * webhook_events include the event (absent: the defaults), else the workspace's URL for
 * the same events. Calls (shared/calls/engine/call-webhooks.ts) add their own twists
 * (transcript_updated, transfer events); chats use this as it is. Delivery is the one path
 * every webhook takes: queued, signed, retried and logged (webhooks.ts).
 */

/** `{{name}}` with a linear pattern (no nested braces), as the agents' templates are read. */
const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;

/** Fills `{{name}}` from `values` (URL-encoded); a placeholder with no value is removed. */
export function fillUrlPlaceholders(url: string, values: Record<string, unknown>): string {
  return url.replace(PLACEHOLDER, (_match, rawName: string) => {
    const value = values[rawName.trim()];
    return value === undefined || value === null ? '' : encodeURIComponent(typeof value === 'string' ? value : JSON.stringify(value));
  });
}

export interface AgentEventInput {
  workspaceId: string;
  event: string;
  /** The body beside `event`, e.g. `{chat: …}`. */
  payload: Record<string, unknown>;
  /** The agent version's webhook settings (undefined when the agent is gone: the workspace URL still hears of it). */
  agent?: { webhook_url?: string | null; webhook_events?: readonly string[] | null; webhook_timeout_ms?: number | null };
  /** The events an agent without `webhook_events` sends. */
  defaultEvents: readonly string[];
  /** Values for the agent URL's placeholders. */
  placeholders?: Record<string, unknown>;
}

/** Queues the event for its destination; answers whether anything was queued (no URL, or an event the agent turned off: nothing). */
export async function sendAgentEvent(input: AgentEventInput): Promise<boolean> {
  const events = input.agent?.webhook_events ?? input.defaultEvents;
  if (!events.includes(input.event)) return false;
  let url: string | undefined;
  let timeoutMs: number | undefined;
  if (input.agent?.webhook_url) {
    url = fillUrlPlaceholders(input.agent.webhook_url, input.placeholders ?? {});
    timeoutMs = input.agent.webhook_timeout_ms ?? undefined;
  } else {
    url = (await getWorkspaceItem(input.workspaceId)).webhook_url ?? undefined;
  }
  if (!url) return false;
  await enqueueWebhook({ workspaceId: input.workspaceId, url, event: input.event, payload: input.payload, timeoutMs });
  return true;
}
