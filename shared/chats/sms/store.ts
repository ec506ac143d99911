import { notFound } from '../../platform/errors.ts';
import { keys } from '../../platform/store/keys.ts';
import { defineEntity, table } from '../../platform/store/table.ts';

/*
 * The SMS part's items (docs/chats.md, SMS; docs/data-model.md):
 *
 * - the thread (`WS#<ws>#SMSTHREAD#<number>#<party>`): which SMS chat an inbound message
 *   between a workspace number and a party continues. Written before the chat it names
 *   (the chat's ID is chosen first), conditional on the chat it replaces, so two first
 *   messages arriving together start one chat, not two.
 * - the inbound claim (`WS#<ws>#SMSIN#<provider>#<message id>`): one per carrier message,
 *   written before anything else with `attribute_not_exists`, so a carrier's redelivery of
 *   the same MessageSid is answered without a second message or reply. Kept a week.
 */

interface SmsThreadItem {
  pk: string;
  sk: string;
  workspace_id: string;
  phone_number: string;
  party: string;
  chat_id: string;
  updated_timestamp: number;
}

const smsThreads = defineEntity<SmsThreadItem, [workspaceId: string, number: string, party: string]>({
  key: keys.smsThread,
  notFound: () => notFound('SMS thread not found'),
});

export const getSmsThread = (workspaceId: string, number: string, party: string) => smsThreads.get(workspaceId, number, party);

/**
 * Points the thread at `chatId`: only if it still names `expected` (undefined: no thread
 * yet), unless `force` (an outbound create-sms-chat starts a new chat whatever the thread
 * held). Answers whether it was written.
 */
export async function pointSmsThread(
  workspaceId: string,
  number: string,
  party: string,
  chatId: string,
  options: { expected?: string; force?: boolean } = {},
): Promise<boolean> {
  return smsThreads.putIf(
    { workspace_id: workspaceId, phone_number: number, party, chat_id: chatId, updated_timestamp: Date.now() },
    [workspaceId, number, party],
    options.force
      ? null
      : options.expected === undefined
        ? { expression: 'attribute_not_exists(pk)' }
        : { expression: 'chat_id = :expected', values: { ':expected': options.expected } },
  );
}

/** Takes the thread back from a chat that could not be started (only while it still names that chat). */
export async function releaseSmsThread(workspaceId: string, number: string, party: string, chatId: string): Promise<void> {
  await smsThreads.take([workspaceId, number, party], { expression: 'chat_id = :chat', values: { ':chat': chatId } });
}

const INBOUND_RETENTION_SECONDS = 7 * 24 * 3600;

const inboundClaims = defineEntity<Record<string, unknown> & { pk: string; sk: string }, [workspaceId: string, provider: string, messageId: string]>({
  key: keys.smsInbound,
  notFound: () => notFound('Inbound SMS not found'),
});

/** Claims a carrier message for handling; false when it was claimed before (a redelivery). */
export async function claimInboundSms(workspaceId: string, provider: string, messageId: string, fields: Record<string, unknown>): Promise<boolean> {
  const nowMs = Date.now();
  return inboundClaims.putIf(
    {
      ...fields,
      workspace_id: workspaceId,
      provider_message_id: messageId,
      status: 'processing',
      received_timestamp: nowMs,
      expires_at: Math.floor(nowMs / 1000) + INBOUND_RETENTION_SECONDS,
    },
    [workspaceId, provider, messageId],
  );
}

/** Records how a claimed message was handled (`answered`, `unanswered`, or a failed reply). */
export async function finishInboundSms(workspaceId: string, provider: string, messageId: string, fields: Record<string, unknown>): Promise<void> {
  if (Object.keys(fields).length === 0) return;
  // The claim was written first; one gone (its week is up) is not written again.
  await inboundClaims.setFields([workspaceId, provider, messageId], { set: fields });
}

/** Gives a claim back when handling failed before anything was written, so the carrier's retry is handled afresh. */
export async function releaseInboundSms(workspaceId: string, provider: string, messageId: string): Promise<void> {
  await inboundClaims.take([workspaceId, provider, messageId]);
}

/*
 * The outbound link (`WS#<ws>#SMSOUT#<provider>#<message id>`): which chat message an SMS
 * Parley sent is, for its delivery reports. A report may arrive before the sender has
 * written the link (Twilio reports within milliseconds), so both sides write to it: the
 * report records its status (only forward, by rank), the sender records the chat message.
 * Whoever comes second sees the other's half and writes the message's status, which is
 * itself only ever moved forward; either order ends with the latest status on the message.
 */
export interface SmsOutboundItem {
  pk: string;
  sk: string;
  workspace_id: string;
  provider_message_id: string;
  chat_id?: string;
  seq?: number;
  sms_status?: string;
  sms_status_rank?: number;
  sms_error_code?: string;
  expires_at: number;
}

const OUTBOUND_RETENTION_SECONDS = 30 * 24 * 3600;

const outboundLinks = defineEntity<SmsOutboundItem, [workspaceId: string, provider: string, messageId: string]>({
  key: keys.smsOutbound,
  notFound: () => notFound('Outbound SMS not found'),
});

/** The sender's half: the chat message this SMS is. Answers the link as it is now (with a report's status if one came first). */
export async function linkOutboundSms(workspaceId: string, provider: string, messageId: string, chatId: string, seq: number): Promise<SmsOutboundItem> {
  return (await outboundLinks.update([workspaceId, provider, messageId], {
    UpdateExpression: 'SET workspace_id = :ws, provider_message_id = :sid, chat_id = :chat, seq = :seq, expires_at = :expires',
    ExpressionAttributeValues: {
      ':ws': workspaceId,
      ':sid': messageId,
      ':chat': chatId,
      ':seq': seq,
      ':expires': Math.floor(Date.now() / 1000) + OUTBOUND_RETENTION_SECONDS,
    },
  }))!;
}

/**
 * The report's half: records the status when it is later than the one recorded (by rank).
 * Answers the link as written, or undefined when the report is not newer (out of order, or
 * a repeat: nothing to do).
 */
export async function reportOutboundSms(
  workspaceId: string,
  provider: string,
  messageId: string,
  report: { sms_status: string; rank: number; sms_error_code?: string },
): Promise<SmsOutboundItem | undefined> {
  return outboundLinks.update([workspaceId, provider, messageId], {
    UpdateExpression: `SET workspace_id = :ws, provider_message_id = :sid, sms_status = :status, sms_status_rank = :rank, expires_at = if_not_exists(expires_at, :expires)${
      report.sms_error_code ? ', sms_error_code = :code' : ''
    }`,
    ConditionExpression: 'attribute_not_exists(sms_status_rank) OR sms_status_rank < :rank',
    ExpressionAttributeValues: {
      ':ws': workspaceId,
      ':sid': messageId,
      ':status': report.sms_status,
      ':rank': report.rank,
      ':expires': Math.floor(Date.now() / 1000) + OUTBOUND_RETENTION_SECONDS,
      ...(report.sms_error_code ? { ':code': report.sms_error_code } : {}),
    },
  });
}

// A privacy erase of one number (shared/account-data/privacy.ts, through index.ts).

/** The workspace's chats with `e164` as their other party (SMS chats: the party index, gsi2). */
export async function smsChatIdsWithParty(workspaceId: string, e164: string): Promise<string[]> {
  const entries = await table.queryAll<{ chat_id?: string; type?: string }>({
    IndexName: 'gsi2',
    KeyConditionExpression: 'gsi2pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.partyConversations(workspaceId, e164).gsi2pk },
  });
  return entries.filter((entry) => entry.type === 'chat' && entry.chat_id).map((entry) => entry.chat_id!);
}

/** The SMS thread between a workspace number and the party, if it still points at `chatId` (its key holds the party's number). */
export async function deleteSmsThreadOf(workspaceId: string, number: string, party: string, chatId: string): Promise<void> {
  await releaseSmsThread(workspaceId, number, party, chatId);
}
