import { keys } from '../platform/store/keys.ts';
import { ConditionFailed, table } from '../platform/store/table.ts';
import { setAndRemove } from '../platform/store/update-expression.ts';

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

export interface SmsThreadItem {
  pk: string;
  sk: string;
  workspace_id: string;
  phone_number: string;
  party: string;
  chat_id: string;
  updated_timestamp: number;
}

export const getSmsThread = (workspaceId: string, number: string, party: string) =>
  table.get<SmsThreadItem>(keys.smsThread(workspaceId, number, party));

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
  const item: SmsThreadItem = {
    ...keys.smsThread(workspaceId, number, party),
    workspace_id: workspaceId,
    phone_number: number,
    party,
    chat_id: chatId,
    updated_timestamp: Date.now(),
  };
  try {
    await table.put({
      Item: item,
      ...(options.force
        ? {}
        : options.expected === undefined
          ? { ConditionExpression: 'attribute_not_exists(pk)' }
          : { ConditionExpression: 'chat_id = :expected', ExpressionAttributeValues: { ':expected': options.expected } }),
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** Takes the thread back from a chat that could not be started (only while it still names that chat). */
export async function releaseSmsThread(workspaceId: string, number: string, party: string, chatId: string): Promise<void> {
  try {
    await table.delete({
      Key: keys.smsThread(workspaceId, number, party),
      ConditionExpression: 'chat_id = :chat',
      ExpressionAttributeValues: { ':chat': chatId },
    });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}

const INBOUND_RETENTION_SECONDS = 7 * 24 * 3600;

/** Claims a carrier message for handling; false when it was claimed before (a redelivery). */
export async function claimInboundSms(workspaceId: string, provider: string, messageId: string, fields: Record<string, unknown>): Promise<boolean> {
  const nowMs = Date.now();
  try {
    await table.put({
      Item: {
        ...keys.smsInbound(workspaceId, provider, messageId),
        ...fields,
        workspace_id: workspaceId,
        provider_message_id: messageId,
        status: 'processing',
        received_timestamp: nowMs,
        expires_at: Math.floor(nowMs / 1000) + INBOUND_RETENTION_SECONDS,
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** Records how a claimed message was handled (`answered`, `unanswered`, or a failed reply). */
export async function finishInboundSms(workspaceId: string, provider: string, messageId: string, fields: Record<string, unknown>): Promise<void> {
  const update = setAndRemove(fields);
  if (!update.expression) return;
  await table.update({
    Key: keys.smsInbound(workspaceId, provider, messageId),
    UpdateExpression: update.expression,
    ExpressionAttributeNames: update.names,
    ExpressionAttributeValues: update.values,
  });
}

/** Gives a claim back when handling failed before anything was written, so the carrier's retry is handled afresh. */
export async function releaseInboundSms(workspaceId: string, provider: string, messageId: string): Promise<void> {
  await table.delete({ Key: keys.smsInbound(workspaceId, provider, messageId) });
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

/** The sender's half: the chat message this SMS is. Answers the link as it is now (with a report's status if one came first). */
export async function linkOutboundSms(workspaceId: string, provider: string, messageId: string, chatId: string, seq: number): Promise<SmsOutboundItem> {
  return (await table.update<SmsOutboundItem>({
    Key: keys.smsOutbound(workspaceId, provider, messageId),
    UpdateExpression: 'SET workspace_id = :ws, provider_message_id = :sid, chat_id = :chat, seq = :seq, expires_at = :expires',
    ExpressionAttributeValues: {
      ':ws': workspaceId,
      ':sid': messageId,
      ':chat': chatId,
      ':seq': seq,
      ':expires': Math.floor(Date.now() / 1000) + OUTBOUND_RETENTION_SECONDS,
    },
    ReturnValues: 'ALL_NEW',
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
  try {
    return await table.update<SmsOutboundItem>({
      Key: keys.smsOutbound(workspaceId, provider, messageId),
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
      ReturnValues: 'ALL_NEW',
    });
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    throw error;
  }
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
  try {
    await table.delete({ Key: keys.smsThread(workspaceId, number, party), ConditionExpression: 'chat_id = :chat', ExpressionAttributeValues: { ':chat': chatId } });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}
