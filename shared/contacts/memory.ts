import { setTimeout as sleep } from 'node:timers/promises';
import { badRequest, conflict } from '../platform/errors.ts';
import { canonicalE164 } from '../platform/telephony/phone.ts';
import { TransactionCancelled } from '../platform/store/table.ts';
import type * as Llm from '../vendors/llm/index.ts';
import { contactNotFound } from './contacts.ts';
import { MAX_MEMORY_CHARS, type Memory, type MemorySettings, type MemorySettingsInput } from './schemas.ts';
import { getContactItem, getMemoryItem, getMemorySettings, putMemory, putMemorySettings, type ContactItem } from './store.ts';
import { loadOnce } from '../platform/lazy.ts';

/*
 * Contact memory (docs/contacts.md): a text per contact that the agent may read on the next
 * call. `save-call` appends a summary of a finished call, written by the language model
 * (the offline model without LLM_BASE_URL). With the workspace's memory settings enabled,
 * the memory and the contact's fields join the dynamic variables of every new call with
 * the contact's number (contactVariables), below the call's own variables.
 */

/**
 * The LLM vendor, loaded by the first summary: the calls and chats functions reach this
 * module for contactVariables on every new call, and write a summary only on save-call
 * (docs/performance.md, "Sizes: cold and lazy").
 */
const loadLlm = loadOnce((): Promise<typeof Llm> => import('../vendors/llm/index.ts'));

const MAX_ATTEMPTS = 10;
/** The model that writes call summaries (mapped by LLM_MODEL_MAP like every other id). */
const MEMORY_MODEL = 'gpt-4.1-mini';
const SUMMARY_TIMEOUT_MS = 20_000;
const MAX_TRANSCRIPT_CHARS = 20_000;

async function mustGetContact(workspaceId: string, contactId: string): Promise<ContactItem> {
  const item = await getContactItem(workspaceId, contactId);
  if (!item) throw contactNotFound(contactId);
  return item;
}

export async function getMemory(workspaceId: string, contactId: string): Promise<Memory> {
  await mustGetContact(workspaceId, contactId);
  const item = await getMemoryItem(workspaceId, contactId);
  return { contact_id: contactId, memory: item?.memory ?? '', user_modified_timestamp: item?.user_modified_timestamp ?? null };
}

/**
 * Rewrites the memory with `change(current)`, conditional on the revision read and on the
 * contact still existing (a deleted contact's memory is never written back): retried on a race.
 */
async function changeMemory(workspaceId: string, contactId: string, change: (current: string) => string): Promise<Memory> {
  for (let attempt = 0; ; attempt++) {
    await mustGetContact(workspaceId, contactId);
    const current = await getMemoryItem(workspaceId, contactId);
    const memory = change(current?.memory ?? '');
    const nowMs = Math.max(Date.now(), current?.user_modified_timestamp ?? 0);
    try {
      await putMemory(workspaceId, { contact_id: contactId, memory, user_modified_timestamp: nowMs, revision: (current?.revision ?? 0) + 1 }, current?.revision);
      return { contact_id: contactId, memory, user_modified_timestamp: nowMs };
    } catch (error) {
      if (!(error instanceof TransactionCancelled)) throw error;
      if (error.failedAt.includes(0)) throw contactNotFound(contactId);
      if (attempt + 1 >= MAX_ATTEMPTS) throw conflict(`The memory of contact ${contactId} is being changed by another request; try again`);
      await sleep(5 + Math.floor(Math.random() * 20 * (attempt + 1)));
    }
  }
}

export const putContactMemory = (workspaceId: string, contactId: string, memory: string) => changeMemory(workspaceId, contactId, () => memory);

/** Appends an entry, dropping the oldest entries (whole lines) when the memory would pass its cap. */
function appendEntry(memory: string, entry: string): string {
  const lines = memory ? memory.split('\n') : [];
  lines.push(entry.slice(0, MAX_MEMORY_CHARS));
  while (lines.join('\n').length > MAX_MEMORY_CHARS && lines.length > 1) lines.shift();
  return lines.join('\n');
}

/** What save-call needs of a call (the calls domain's view of it, handed in by the function). */
export interface CallForMemory {
  call_id: string;
  call_type?: string;
  direction?: string | null;
  from_number?: string | null;
  to_number?: string | null;
  call_status?: string;
  start_timestamp?: number | null;
  transcript?: string;
  call_analysis?: { call_summary?: string } & Record<string, unknown>;
}

/** The call's other party, as the conversation index files it. */
export function callParty(call: Pick<CallForMemory, 'call_type' | 'direction' | 'from_number' | 'to_number'>): string | undefined {
  if (call.call_type !== undefined && call.call_type !== 'phone_call') return undefined;
  const number = call.direction === 'inbound' ? call.from_number : call.direction === 'outbound' ? call.to_number : undefined;
  return number && canonicalE164(number) ? number : undefined;
}

const entryMarker = (callId: string) => `(call ${callId})`;

/**
 * Appends a summary of `call` to the contact's memory. The call must be this workspace's
 * (the caller read it so) and its other party the contact's number. Saving the same call
 * twice changes nothing the second time.
 */
export async function saveCallToMemory(workspaceId: string, contactId: string, call: CallForMemory): Promise<Memory> {
  const contact = await mustGetContact(workspaceId, contactId);
  const party = callParty(call);
  if (party !== contact.phone_number) {
    throw badRequest(`call_id: Call ${call.call_id} is not with this contact's number ${contact.phone_number}`);
  }
  if (call.call_status === 'registered' || call.call_status === 'ongoing') {
    throw badRequest(`call_id: Call ${call.call_id} has not ended yet`);
  }
  const existing = await getMemoryItem(workspaceId, contactId);
  if (existing?.memory.includes(entryMarker(call.call_id))) {
    return { contact_id: contactId, memory: existing.memory, user_modified_timestamp: existing.user_modified_timestamp };
  }
  const summary = await summarize(call);
  const day = new Date(call.start_timestamp ?? Date.now()).toISOString().slice(0, 10);
  const entry = `${day} ${entryMarker(call.call_id)}: ${summary}`;
  return changeMemory(workspaceId, contactId, (current) => (current.includes(entryMarker(call.call_id)) ? current : appendEntry(current, entry)));
}

async function summarize(call: CallForMemory): Promise<string> {
  const transcript = (call.transcript ?? '').slice(-MAX_TRANSCRIPT_CHARS);
  const analysisSummary = typeof call.call_analysis?.call_summary === 'string' ? call.call_analysis.call_summary : '';
  const { languageModel } = await loadLlm();
  const answer = await languageModel().complete({
    model: MEMORY_MODEL,
    temperature: 0,
    maxTokens: 200,
    timeoutMs: SUMMARY_TIMEOUT_MS,
    messages: [
      {
        role: 'system',
        content:
          'You keep notes about a returning customer for an AI phone agent. In one or two short sentences, write what the agent should remember from this call (requests, facts the customer gave, promises made). Plain text, no preamble.',
      },
      {
        role: 'user',
        content: [analysisSummary ? `Summary: ${analysisSummary}` : '', `Transcript:\n${transcript || '(nobody spoke)'}`].filter(Boolean).join('\n'),
      },
    ],
  });
  return answer.content.replace(/\s+/g, ' ').trim().slice(0, 1000) || '(no summary)';
}

// ---------------------------------------------------------------------------------------
// Settings and the variables of new calls

export async function getContactMemorySettings(workspaceId: string): Promise<MemorySettings> {
  const item = await getMemorySettings(workspaceId);
  return {
    enabled: item?.enabled ?? false,
    include_contact_fields: item?.include_contact_fields ?? true,
    include_memory: item?.include_memory ?? true,
    user_modified_timestamp: item?.user_modified_timestamp ?? null,
  };
}

export async function putContactMemorySettings(workspaceId: string, input: MemorySettingsInput): Promise<MemorySettings> {
  const item = {
    enabled: input.enabled,
    include_contact_fields: input.include_contact_fields ?? true,
    include_memory: input.include_memory ?? true,
    user_modified_timestamp: Date.now(),
  };
  await putMemorySettings(workspaceId, item);
  return item;
}
