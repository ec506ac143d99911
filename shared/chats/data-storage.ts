import { getChatAgent } from '../agents/lookups/index.ts';
import { restrictRetrievals } from '../knowledge-bases/records/index.ts';
import { conflict, NotFound } from '../platform/errors.ts';
import { piiCategoriesOf, redactPiiDeep, type PiiCategory } from '../platform/text/pii.ts';
import type { DATA_STORAGE_SETTINGS } from './schemas.ts';
import { chatMessages, deleteChatMessages, getChatItem, rewriteMessages, writeEndedChat, type ChatItem } from './store.ts';

/*
 * What a chat keeps once it is over, by its data storage setting (the chat's own, else its
 * chat agent version's; docs/privacy.md, What the data storage setting keeps), as a call
 * does (shared/calls/artifacts/data-storage.ts). While the chat is ongoing its messages are stored as
 * said (each completion is answered from them); once it has ended and its analysis has run
 * (`chat_ended` and `chat_analyzed` go out with the messages), or it failed (`error`):
 *
 * - `everything`: nothing changes.
 * - `everything_except_pii`: the personal data the chat agent's `pii_config.categories`
 *   name (all four detected categories when none) is replaced by `[<category>]` in the
 *   messages (text, tool call arguments and results), both dynamic-variable maps, the
 *   collected variables and the analysis, and in the retrievals' queries; no copy is kept.
 * - `basic_attributes_only`: the messages are deleted, the variables emptied, the
 *   analysis keeps its verdicts and custom data (personal data redacted) but not its
 *   summary, and the retrievals keep no words.
 *
 * Idempotent as the call's: deletions find nothing the second time, scrubbed text has
 * nothing left to find, and the chat's last write records the setting applied
 * (`data_storage_applied`, conditional on the analysis count read; a new analysis removes it).
 */

type DataStorageSetting = (typeof DATA_STORAGE_SETTINGS)[number];

export interface ChatStorageSettings {
  dataStorage: DataStorageSetting;
  piiCategories?: string[];
}

/** The chat's setting: its own (update-chat), else its chat agent version's; a deleted agent leaves `everything`. */
export async function chatStorageSettings(chat: Pick<ChatItem, 'workspace_id' | 'agent_id' | 'agent_version' | 'data_storage_setting'>): Promise<ChatStorageSettings> {
  const agent = (await getChatAgent(chat.workspace_id, chat.agent_id, chat.agent_version).catch((error: unknown) => {
    if (error instanceof NotFound) return undefined;
    throw error;
  })) as { data_storage_setting?: DataStorageSetting | null; pii_config?: { categories?: unknown } | null } | undefined;
  const categories = agent?.pii_config?.categories;
  return {
    dataStorage: chat.data_storage_setting ?? agent?.data_storage_setting ?? 'everything',
    ...(Array.isArray(categories) ? { piiCategories: categories.filter((c): c is string => typeof c === 'string') } : {}),
  };
}

/** Applies the setting to an ended (or failed) chat; answers the chat as stored after (unchanged when nothing was due). */
export async function applyChatDataStorage(chat: ChatItem): Promise<ChatItem> {
  let current = chat;
  for (let attempt = 0; ; attempt++) {
    if (current.chat_status === 'ongoing') return current;
    const settings = await chatStorageSettings(current);
    const setting = settings.dataStorage;
    if (setting === 'everything' || current.data_storage_applied === setting || current.data_storage_applied === 'basic_attributes_only') return current;
    const categories = piiCategoriesOf(settings.piiCategories);
    const done = setting === 'basic_attributes_only' ? await keepBasicAttributes(current, categories) : await keepWithoutPii(current, categories);
    if (done) return done;
    // The chat changed under the last write (an analysis landed): read it again.
    if (attempt >= 2) throw conflict(`Chat ${chat.chat_id} kept changing while its data storage setting was applied; retry`);
    current = await getChatItem(chat.workspace_id, chat.chat_id);
  }
}

async function keepBasicAttributes(chat: ChatItem, categories: readonly PiiCategory[]): Promise<ChatItem | undefined> {
  await Promise.all([deleteChatMessages(chat.chat_id), restrictRetrievals(chat.workspace_id, chat.chat_id, { setting: 'basic_attributes_only' })]);
  const { chat_summary: _summary, ...verdicts } = (chat.chat_analysis ?? {}) as Record<string, unknown>;
  const llmFallback = chat.conversation.llm_fallback;
  return writeEndedChat(
    chat,
    {
      data_storage_applied: 'basic_attributes_only',
      retell_llm_dynamic_variables: {},
      // The conversation's state without its variables (what a turn ran on): only whether a fallback model answered.
      conversation: llmFallback ? { llm_fallback: llmFallback } : {},
      ...(chat.chat_analysis ? { chat_analysis: redactPiiDeep(verdicts, categories) } : {}),
    },
    ['override_dynamic_variables'],
  );
}

/** Message fields that carry what was said or passed to and from tools. */
const SAID = ['content', 'arguments'] as const;

async function keepWithoutPii(chat: ChatItem, categories: readonly PiiCategory[]): Promise<ChatItem | undefined> {
  const messages = await chatMessages(chat.chat_id);
  const changed = messages.flatMap((message) => {
    const fields: Record<string, unknown> = {};
    for (const field of SAID) {
      const value = (message as Record<string, unknown>)[field];
      if (value === undefined) continue;
      const scrubbed = redactPiiDeep(value, categories);
      if (JSON.stringify(scrubbed) !== JSON.stringify(value)) fields[field] = scrubbed;
    }
    return Object.keys(fields).length ? [{ seq: message.seq, fields }] : [];
  });
  await Promise.all([
    rewriteMessages(chat.chat_id, changed),
    restrictRetrievals(chat.workspace_id, chat.chat_id, { setting: 'everything_except_pii', piiCategories: categories }),
  ]);
  const scrub = <T>(value: T): T => redactPiiDeep(value, categories) as T;
  return writeEndedChat(
    chat,
    {
      data_storage_applied: 'everything_except_pii',
      retell_llm_dynamic_variables: scrub(chat.retell_llm_dynamic_variables),
      conversation: scrub(chat.conversation),
      ...(chat.override_dynamic_variables ? { override_dynamic_variables: scrub(chat.override_dynamic_variables) } : {}),
      ...(chat.chat_analysis ? { chat_analysis: scrub(chat.chat_analysis) } : {}),
    },
    [],
  );
}
