import { randomInt, randomUUID } from 'node:crypto';
import { assertCanSpend, recordSmsCharge } from '../../billing/index.ts';
import { doNotCallNumbers } from '../../contacts/lookups/index.ts';
import { numberHolder, workspaceNumber, type NumberItem } from '../../numbers/index.ts';
import { config } from '../../platform/config.ts';
import { badRequest, forbidden, Invalid, notFound, NotFound } from '../../platform/errors.ts';
import { newTimeOrderedId } from '../../platform/ids.ts';
import { logger } from '../../platform/logger.ts';
import { canonicalE164 } from '../../platform/telephony/phone.ts';
import { trimTrailing } from '../../platform/text/text.ts';
import { MAX_SMS_BODY, messagingProvider, SmsSendFailed, recordCarrierReport, twilioWebhookToken, verifyTwilioSignature } from '../../vendors/messaging/index.ts';
import { applyChatStorage, completeChat, endChat, settleChatCost, startChat } from '../chats.ts';
import { getChat, listChats } from '../stored-chats.ts';
import { SMS_STATUSES, type ChatView, type ListChatsInput } from '../schemas.ts';
import type { CreateSmsChatInput, SendSmsInput } from './schemas.ts';
import { SMS_STATUS_PATH, SMS_WEBHOOK_PATH } from './routes.ts';
import {
  claimInboundSms,
  finishInboundSms,
  getSmsThread,
  linkOutboundSms,
  pointSmsThread,
  releaseInboundSms,
  releaseSmsThread,
  reportOutboundSms,
} from './store.ts';
import { recordChatRollup } from '../rollups.ts';
import { chatNotFound, getChatItem, markChatError, newestMessages, setMessageSmsStatus, type ChatItem, type MessageItem } from '../store.ts';
import { toMessage } from '../view.ts';

/*
 * SMS chats (docs/chats.md, SMS). An SMS chat is a chat (shared/chats/chats.ts:
 * the same runtime, serialised completions, analysis and events) between a workspace number
 * and another party, whose agent messages are sent through the messaging adapter
 * (shared/vendors/messaging: Twilio Messaging, or the offline mock) and whose user messages
 * arrive by SMS: Twilio's inbound webhook, or `simulate-inbound`. An inbound message
 * continues the number's ongoing chat with that party (the SMS thread), or starts one with
 * the number's inbound SMS agent.
 */

/** The spec's E.164 message (`to_number <number> is not a valid E.164 number`). */
function e164Field(field: string, value: string): string {
  const number = canonicalE164(value);
  if (!number) throw badRequest(`${field} ${value} is not a valid E.164 number`);
  return number;
}

/** One agent of a weighted list, by weight. */
function pickAgent(entries: readonly { agent_id: string; weight: number; agent_version?: number | string }[]) {
  const total = entries.reduce((sum, entry) => sum + entry.weight, 0);
  let point = (randomInt(0, 1_000_000) / 1_000_000) * total;
  for (const entry of entries) {
    point -= entry.weight;
    if (point < 0) return entry;
  }
  return entries.at(-1)!;
}

/** The workspace number (the sender of the agent's messages) and the other party of an SMS chat. */
function endsOf(chat: Pick<ChatItem, 'direction' | 'from_number' | 'to_number'>): { number: string; party: string } {
  return chat.direction === 'inbound'
    ? { number: chat.to_number!, party: chat.from_number! }
    : { number: chat.from_number!, party: chat.to_number! };
}

/**
 * A delivery status's place in Twilio's order (accepted → queued → sending → sent → a final
 * one): a message's status only moves to a higher rank. Statuses of inbound messages
 * (`receiving`, `received`) and unknown ones have none and are only logged.
 */
const SMS_STATUS_RANK: Record<string, number> = {
  accepted: 0,
  scheduled: 0,
  queued: 1,
  sending: 2,
  sent: 3,
  delivered: 4,
  undelivered: 4,
  failed: 4,
  canceled: 4,
  read: 5,
};
const isSmsStatus = (status: string): status is (typeof SMS_STATUSES)[number] => (SMS_STATUSES as readonly string[]).includes(status);

/**
 * Sends the agent's messages (their text) from the number to the party, in order, and
 * records each on its chat message (carrier, message ID, status; linked for the delivery
 * reports). When the chat has ended (the agent's last turn ended it), its cost is settled
 * again with these SMS, then its data storage setting is applied (chats.ts leaves that to
 * this, so the messages are there until their SMS are sent and counted), also when a send failed.
 */
async function sendAgentMessages(
  workspaceId: string,
  chat: { chatId: string; ended: boolean },
  number: string,
  party: string,
  messages: readonly MessageItem[],
) {
  try {
    await sendEach(workspaceId, chat, number, party, messages);
  } finally {
    if (chat.ended) await applyStorageOf(workspaceId, chat.chatId);
  }
}

/** applyChatStorage on the chat as stored now (a chat deleted meanwhile has nothing to apply it to); never throws. */
async function applyStorageOf(workspaceId: string, chatId: string): Promise<void> {
  const chat = await getChatItem(workspaceId, chatId).catch((error: unknown) => {
    logger.warn('the chat could not be read to apply its data storage setting', { chat_id: chatId, error });
    return undefined;
  });
  if (chat) await applyChatStorage(chat);
}

async function sendEach(
  workspaceId: string,
  chat: { chatId: string; ended: boolean },
  number: string,
  party: string,
  messages: readonly MessageItem[],
) {
  const { chatId } = chat;
  const texts = messages.filter((m) => m.role === 'agent' && m.content.trim());
  if (!texts.length) return;
  const provider = await messagingProvider();
  for (const message of texts) {
    const text = (message as { content: string }).content;
    const sms = { from: number, to: party, body: text.slice(0, MAX_SMS_BODY), context: { chat_id: chatId }, ...statusCallback() };
    const sent = await provider.send(workspaceId, sms).catch(async (error: unknown) => {
      // Once more when the carrier surely did not take it (it failed or was unreachable; not
      // after a timeout, nor when it refused the message itself).
      if (!(error instanceof SmsSendFailed && error.retryable)) throw error;
      logger.warn('SMS reply failed; retrying once', { chat_id: chatId, error: error.message });
      await sleep(SEND_RETRY_DELAY_MS);
      return provider.send(workspaceId, sms);
    });
    await chargeSms(workspaceId, message.message_id ?? `${chatId}:${randomUUID()}`, chatId);
    await recordSent(workspaceId, chatId, message.seq, sent).catch((error: unknown) =>
      logger.error('SMS status not recorded on its message', { chat_id: chatId, error }),
    );
  }
  if (chat.ended) {
    await settleChatCost(await getChatItem(workspaceId, chatId)).catch((error: unknown) => logger.error('chat cost not settled', { chat_id: chatId, error }));
  }
}

/** The sent SMS on its chat message: linked by the carrier's ID first, then the later of the send's status and any report that came first. */
async function recordSent(workspaceId: string, chatId: string, seq: number, sent: { provider: string; provider_message_id: string; status: string }) {
  const link = await linkOutboundSms(workspaceId, sent.provider, sent.provider_message_id, chatId, seq);
  const own = isSmsStatus(sent.status) ? sent.status : 'queued';
  const reported = link.sms_status && isSmsStatus(link.sms_status) && (link.sms_status_rank ?? -1) > SMS_STATUS_RANK[own]! ? link : undefined;
  await setMessageSmsStatus(chatId, seq, {
    provider: sent.provider,
    provider_message_id: sent.provider_message_id,
    sms_status: reported?.sms_status ?? own,
    rank: reported?.sms_status_rank ?? SMS_STATUS_RANK[own]!,
    ...(reported?.sms_error_code ? { sms_error_code: reported.sms_error_code } : {}),
  });
}

const SEND_RETRY_DELAY_MS = 500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Do-not-call (docs/contacts.md): a contact of the workspace flagged do_not_call is not texted either. */
async function assertMayText(workspaceId: string, to: string): Promise<void> {
  if ((await doNotCallNumbers(workspaceId, [to])).has(to)) {
    throw badRequest(`to_number ${to} belongs to a contact flagged do-not-call: no SMS is sent to it`);
  }
}

/** Each SMS the carrier took is charged once (billing's source key is the message); a failed charge is logged, the SMS is sent. */
async function chargeSms(workspaceId: string, messageId: string, chatId?: string): Promise<void> {
  await recordSmsCharge({ workspaceId, messageId, ...(chatId ? { chatId } : {}) }).catch((error: unknown) =>
    logger.error('SMS charge failed', { workspace_id: workspaceId, message_id: messageId, error }),
  );
}

/** Twilio reports deliveries to the public API: only when it has a public URL (PUBLIC_BASE_URL). */
function statusCallback(): { statusCallback?: string } {
  return config.PUBLIC_BASE_URL ? { statusCallback: `${trimTrailing(config.PUBLIC_BASE_URL, '/')}${SMS_STATUS_PATH}` } : {};
}

/** An SMS chat of this workspace (another workspace's chat, or an API chat, is as absent as an unknown one). */
async function smsChatItem(workspaceId: string, chatId: string): Promise<ChatItem> {
  const chat = await getChatItem(workspaceId, chatId);
  if (chat.chat_type !== 'sms_chat') throw chatNotFound();
  return chat;
}

/**
 * create-sms-chat: from a workspace number to a recipient with the number's outbound SMS
 * agent (by weight) or `override_agent_id`. The chat and its opening are stored, the SMS
 * thread moves to it, then the opening is sent; a carrier refusing it marks the chat
 * `error` and answers the carrier's error.
 */
export async function createSmsChat(workspaceId: string, input: CreateSmsChatInput): Promise<ChatView> {
  const from = e164Field('from_number', input.from_number);
  const to = e164Field('to_number', input.to_number);
  if (from === to) throw badRequest('to_number: Must be another number than from_number');
  const number = await workspaceNumber(workspaceId, from);
  if (!number) throw notFound(`Phone number ${from} not found`);
  await assertMayText(workspaceId, to);
  let agent: { agent_id: string; agent_version?: string };
  if (input.override_agent_id !== undefined) {
    if (!input.override_agent_id.startsWith('chat_agent_')) {
      throw badRequest(`override_agent_id: ${input.override_agent_id} is not a chat agent (SMS chats run chat agents, chat_agent_…)`);
    }
    agent = { agent_id: input.override_agent_id, agent_version: input.override_agent_version };
  } else {
    if (!number.outbound_sms_agents?.length) {
      throw badRequest(`Phone number ${from} has no outbound SMS agent: set its outbound_sms_agents or send override_agent_id`);
    }
    const entry = pickAgent(number.outbound_sms_agents);
    agent = {
      agent_id: entry.agent_id,
      agent_version: input.override_agent_version ?? (entry.agent_version !== undefined ? String(entry.agent_version) : undefined),
    };
  }
  const chatId = newTimeOrderedId('chat', Date.now());
  const { chat, agentItems } = await startChat(
    workspaceId,
    {
      agent_id: agent.agent_id,
      ...(agent.agent_version !== undefined ? { agent_version: agent.agent_version } : {}),
      ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
      ...(input.retell_llm_dynamic_variables ? { retell_llm_dynamic_variables: input.retell_llm_dynamic_variables } : {}),
    },
    { chatType: 'sms_chat', fromNumber: from, toNumber: to, direction: 'outbound', party: to, chatId },
  );
  await pointSmsThread(workspaceId, from, to, chatId, { force: true });
  try {
    await sendAgentMessages(workspaceId, { chatId, ended: chat.chat_status !== 'ongoing' }, from, to, agentItems);
  } catch (error) {
    // The opening never went out: the chat has failed, and keeps what its setting keeps.
    if (await markChatError(chatId)) {
      // It ended (no chat_ended is sent for a chat that never opened): the rollups count it.
      await recordChatRollup(await getChatItem(workspaceId, chatId), 'ended');
      await applyStorageOf(workspaceId, chatId);
    }
    throw error;
  }
  return chat;
}

export async function getSmsChat(workspaceId: string, chatId: string): Promise<ChatView> {
  await smsChatItem(workspaceId, chatId);
  return getChat(workspaceId, chatId);
}

export async function endSmsChat(workspaceId: string, chatId: string): Promise<ChatView> {
  await smsChatItem(workspaceId, chatId);
  return endChat(workspaceId, chatId);
}

export async function listSmsChats(workspaceId: string, input: ListChatsInput, numbers: { from_number?: string; to_number?: string } = {}): Promise<ChatView[]> {
  const exact = {
    ...(numbers.from_number !== undefined ? { from_number: e164Field('from_number', numbers.from_number) } : {}),
    ...(numbers.to_number !== undefined ? { to_number: e164Field('to_number', numbers.to_number) } : {}),
  };
  return (await listChats(workspaceId, input, { page: false, smsOnly: true, numbers: exact })) as ChatView[];
}

/** An SMS chat's messages, newest first; `pagination_key` is the previous page's (a message number). */
export async function listSmsMessages(workspaceId: string, input: { chat_id: string; limit?: number; pagination_key?: string }) {
  await smsChatItem(workspaceId, input.chat_id);
  let before: number | undefined;
  if (input.pagination_key !== undefined) {
    if (!/^[1-9][0-9]{0,8}$/.test(input.pagination_key)) throw badRequest('Invalid pagination_key');
    before = Number(input.pagination_key);
  }
  const page = await newestMessages(input.chat_id, input.limit ?? 50, before);
  const last = page.items.at(-1);
  return {
    items: page.items.map(toMessage),
    has_more: page.more && last !== undefined && last.seq > 1,
    ...(page.more && last && last.seq > 1 ? { pagination_key: String(last.seq) } : {}),
  };
}

/** send-sms: one message from a workspace number, outside any chat (the operation log keeps it). */
export async function sendSms(workspaceId: string, input: SendSmsInput) {
  const from = e164Field('from_number', input.from_number);
  const to = e164Field('to_number', input.to_number);
  if (from === to) throw badRequest('to_number: Must be another number than from_number');
  if (!(await workspaceNumber(workspaceId, from))) throw notFound(`Phone number ${from} not found`);
  await assertMayText(workspaceId, to);
  await assertCanSpend(workspaceId, 'sms');
  const nowMs = Date.now();
  const messageId = newTimeOrderedId('chatMessage', nowMs);
  const provider = await messagingProvider();
  const sent = await provider.send(workspaceId, { from, to, body: input.content, context: { message_id: messageId }, ...statusCallback() });
  await chargeSms(workspaceId, messageId);
  return { message_id: messageId, from_number: from, to_number: to, content: input.content, ...sent, created_timestamp: nowMs };
}

/** simulate-inbound: the other party's message to an SMS chat; the agent's replies are sent by SMS and answered. */
export async function simulateInboundSms(workspaceId: string, chatId: string, content: string) {
  const chat = await smsChatItem(workspaceId, chatId);
  const { number, party } = endsOf(chat);
  if (chat.chat_status !== 'ongoing') throw badRequest(`Chat ${chatId} has ended: no more completions`);
  await recordCarrierReport(workspaceId, 'mock', 'receive_sms', { from: party, to: number, body: content, chat_id: chatId, simulated: true });
  const result = await completeChat(workspaceId, chatId, content);
  await sendAgentMessages(workspaceId, { chatId, ended: result.ended }, number, party, result.agentItems);
  return { chat_id: chatId, chat_status: result.chat.chat_status, messages: result.messages };
}

/** How long an inbound message waits for the chat its thread names to be written (its first turn is running). */
const THREAD_WAIT_MS = 20_000;

/**
 * An inbound SMS from `party` to the workspace's `number`: continues the thread's ongoing
 * chat, or starts one with the number's inbound SMS agent whose first turn answers it.
 * Answers the chat and the agent's replies, or undefined when the number has no inbound SMS agent.
 */
async function converse(number: NumberItem, party: string, text: string): Promise<{ chatId: string; ended: boolean; messages: MessageItem[] } | undefined> {
  const workspaceId = number.workspace_id;
  const deadline = Date.now() + THREAD_WAIT_MS;
  for (;;) {
    const thread = await getSmsThread(workspaceId, number.phone_number, party);
    if (thread) {
      try {
        const result = await completeChat(workspaceId, thread.chat_id, text);
        return { chatId: thread.chat_id, ended: result.ended, messages: result.agentItems };
      } catch (error) {
        const starting = error instanceof NotFound && Date.now() - thread.updated_timestamp < 35_000;
        if (starting && Date.now() < deadline) {
          // Another message's first turn is creating this chat: wait for it.
          await sleep(100 + randomInt(0, 150));
          continue;
        }
        // Ended, or gone: this message starts a new chat.
        if (!(error instanceof NotFound) && !(error instanceof Invalid)) throw error;
      }
    }
    if (!number.inbound_sms_agents?.length) return undefined;
    const entry = pickAgent(number.inbound_sms_agents);
    const chatId = newTimeOrderedId('chat', Date.now());
    if (!(await pointSmsThread(workspaceId, number.phone_number, party, chatId, { expected: thread?.chat_id }))) continue;
    try {
      const { chat, agentItems } = await startChat(
        workspaceId,
        { agent_id: entry.agent_id, ...(entry.agent_version !== undefined ? { agent_version: String(entry.agent_version) } : {}) },
        { chatType: 'sms_chat', fromNumber: party, toNumber: number.phone_number, direction: 'inbound', party, chatId, firstUserMessage: text },
      );
      return { chatId, ended: chat.chat_status !== 'ongoing', messages: agentItems };
    } catch (error) {
      await releaseSmsThread(workspaceId, number.phone_number, party, chatId);
      throw error;
    }
  }
}

/**
 * One carrier message, delivered once: claimed by its message ID first (a redelivery is
 * answered with nothing more), then the conversation's turn, then the replies by SMS. A
 * turn that fails gives the claim back (nothing was written, a retry runs it again); a
 * reply the carrier refuses is recorded on the claim and in the operation log.
 */
async function receiveInboundSms(
  number: NumberItem,
  message: { provider: 'twilio' | 'mock'; messageId: string; from: string; body: string },
): Promise<{ duplicate: boolean; chat_id?: string; replies: number }> {
  const workspaceId = number.workspace_id;
  const claimed = await claimInboundSms(workspaceId, message.provider, message.messageId, { from_number: message.from, to_number: number.phone_number });
  if (!claimed) return { duplicate: true, replies: 0 };
  await recordCarrierReport(workspaceId, message.provider, 'receive_sms', {
    from: message.from,
    to: number.phone_number,
    body: message.body,
    message_sid: message.messageId,
  });
  let outcome: Awaited<ReturnType<typeof converse>>;
  try {
    outcome = await converse(number, message.from, message.body);
  } catch (error) {
    await releaseInboundSms(workspaceId, message.provider, message.messageId);
    throw error;
  }
  if (!outcome) {
    logger.info('inbound SMS to a number without an inbound SMS agent', { workspace_id: workspaceId });
    await finishInboundSms(workspaceId, message.provider, message.messageId, { status: 'unanswered' });
    return { duplicate: false, replies: 0 };
  }
  try {
    await sendAgentMessages(workspaceId, outcome, number.phone_number, message.from, outcome.messages);
    await finishInboundSms(workspaceId, message.provider, message.messageId, { status: 'answered', chat_id: outcome.chatId });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    logger.warn('SMS reply not sent', { chat_id: outcome.chatId, error: reason });
    await finishInboundSms(workspaceId, message.provider, message.messageId, { status: 'reply_failed', chat_id: outcome.chatId, error: reason });
  }
  return { duplicate: false, chat_id: outcome.chatId, replies: outcome.messages.filter((m) => m.role === 'agent').length };
}

/** The URL Twilio requested (and signed): PUBLIC_BASE_URL, else the request's own host (local runs). */
function webhookUrl(host: string | undefined, path: string): string {
  const base = config.PUBLIC_BASE_URL ? trimTrailing(config.PUBLIC_BASE_URL, '/') : `http://${host ?? '127.0.0.1'}`;
  return `${base}${path}`;
}

/** A Twilio request's form parameters, once its signature is Twilio's (403 otherwise, or while Twilio is not configured). */
async function verifiedTwilioForm(rawBody: string, headers: Record<string, string | undefined>, path: string): Promise<URLSearchParams> {
  const token = await twilioWebhookToken();
  if (!token) throw forbidden('Twilio webhooks are not accepted: TWILIO_AUTH_TOKEN is not set');
  const params = new URLSearchParams(rawBody);
  if (!verifyTwilioSignature(token, webhookUrl(headers.host, path), params, headers['x-twilio-signature'])) {
    throw forbidden('Invalid X-Twilio-Signature');
  }
  return params;
}

/**
 * Twilio's delivery report of a message Parley sent (StatusCallback): signature first, then
 * the sending number's workspace (404 unless one holds it); kept in its provider operation
 * log as `sms_status`.
 */
export async function receiveTwilioSmsStatus(rawBody: string, headers: Record<string, string | undefined>): Promise<void> {
  const params = await verifiedTwilioForm(rawBody, headers, SMS_STATUS_PATH);
  const messageId = params.get('MessageSid') ?? params.get('SmsSid') ?? '';
  const status = params.get('MessageStatus') ?? params.get('SmsStatus') ?? '';
  if (!messageId || !status) throw badRequest('MessageSid and MessageStatus are required');
  const from = params.get('From') ?? '';
  const ours = canonicalE164(from);
  const number = ours ? await numberHolder(ours) : undefined;
  if (!number) throw notFound(`Phone number ${from} not found`);
  const errorCode = params.get('ErrorCode');
  await recordCarrierReport(number.workspace_id, 'twilio', 'sms_status', {
    message_sid: messageId,
    status,
    from: number.phone_number,
    to: params.get('To') ?? '',
    ...(errorCode ? { error_code: errorCode } : {}),
  });
  await applyDeliveryReport(number.workspace_id, 'twilio', messageId, status, errorCode ?? undefined);
}

/**
 * A delivery report onto its chat message, only forward: the link records it when it is
 * later than what it holds (an out-of-order or repeated report changes nothing), then the
 * message, when the sender has linked it (else the sender applies it: recordSent).
 */
async function applyDeliveryReport(workspaceId: string, provider: string, messageId: string, status: string, errorCode?: string): Promise<void> {
  const rank = SMS_STATUS_RANK[status];
  if (rank === undefined || !isSmsStatus(status)) return;
  const link = await reportOutboundSms(workspaceId, provider, messageId, { sms_status: status, rank, ...(errorCode ? { sms_error_code: errorCode } : {}) });
  if (!link?.chat_id || link.seq === undefined) return;
  await setMessageSmsStatus(link.chat_id, link.seq, {
    provider,
    provider_message_id: messageId,
    sms_status: status,
    rank,
    ...(errorCode ? { sms_error_code: errorCode } : {}),
  });
}

const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

/**
 * Twilio's inbound SMS webhook: the form body's signature first (403 without a valid
 * `X-Twilio-Signature`, or when Twilio is not configured), then the number (404 unless a
 * workspace holds it), then the message, delivered once. Answers empty TwiML: replies go
 * through the messaging adapter, not the webhook's answer.
 */
export async function receiveTwilioSms(rawBody: string, headers: Record<string, string | undefined>): Promise<string> {
  const params = await verifiedTwilioForm(rawBody, headers, SMS_WEBHOOK_PATH);
  const to = params.get('To') ?? '';
  const from = params.get('From') ?? '';
  const messageId = params.get('MessageSid') ?? params.get('SmsSid') ?? '';
  if (!messageId || !from) throw badRequest('MessageSid and From are required');
  const ours = canonicalE164(to);
  const number = ours ? await numberHolder(ours) : undefined;
  if (!number) throw notFound(`Phone number ${to} not found`);
  const party = canonicalE164(from);
  if (!party) throw badRequest(`From ${from} is not a valid E.164 number`);
  // A picture without text still reaches the agent (MMS attachments are not passed on: Not done yet).
  const media = Number(params.get('NumMedia') ?? '0') || 0;
  const body = (params.get('Body') ?? '').trim() || (media > 0 ? `[${media} attachment${media === 1 ? '' : 's'}]` : '[empty message]');
  await receiveInboundSms(number, { provider: 'twilio', messageId, from: party, body });
  return EMPTY_TWIML;
}
