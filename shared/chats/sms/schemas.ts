import * as z from 'zod';
import { dynamicVariables, epochMs, lazySchema, versionRef } from '../../platform/http/schemas.ts';
import { ChatMessage, ListChatsQuery } from '../schemas.ts';

/*
 * The SMS part of the chats API contract (spec: Chats and SMS lists the routes only;
 * create-sms-chat follows retell-sdk's ChatCreateSMSChatParams, the rest are Parley's
 * shapes, docs/chats.md). Numbers are checked in the logic, so a bad one is the spec's
 * `<field> <number> is not a valid E.164 number`.
 */
const phone = () => z.string().min(1).max(32);
/** One SMS: Twilio takes at most 1,600 characters (ten segments). */
const smsText = () => z.string().min(1).max(1600);

export const CreateSmsChatBody = lazySchema(() =>
  z.object({
    from_number: phone(),
    to_number: phone(),
    metadata: z.unknown().optional(),
    override_agent_id: z.string().min(1).max(128).optional(),
    override_agent_version: versionRef().optional(),
    retell_llm_dynamic_variables: dynamicVariables().optional(),
  }),
);
export type CreateSmsChatInput = z.infer<typeof CreateSmsChatBody>;

export const SendSmsBody = lazySchema(() => z.object({ from_number: phone(), to_number: phone(), content: smsText() }));
export type SendSmsInput = z.infer<typeof SendSmsBody>;

export const SimulateInboundBody = lazySchema(() => z.object({ content: smsText() }));

const strictInt = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]{1,7}$/, 'Must be a whole number')
    .transform(Number)
    .refine((n) => n >= min && n <= max, `Must be from ${min} to ${max}`);

/** list-sms-chats: the chat listing's query, and the chat's numbers (`from_number`: who sent the first message; E.164, checked in the logic). */
export const ListSmsChatsQuery = lazySchema(() => ListChatsQuery.extend({ from_number: phone().optional(), to_number: phone().optional() }));

export const ListSmsMessagesQuery = lazySchema(() =>
  z.object({
    chat_id: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'Must be a chat ID'),
    limit: strictInt(1, 1000).optional(),
    pagination_key: z.string().min(1).max(32).optional(),
  }),
);

export const SmsMessagePage = lazySchema(() =>
  z.object({ items: z.array(ChatMessage), has_more: z.boolean(), pagination_key: z.string().optional() }),
);

export const SentSms = lazySchema(() =>
  z.object({
    message_id: z.string(),
    from_number: z.string(),
    to_number: z.string(),
    content: z.string(),
    provider: z.enum(['twilio', 'mock']),
    provider_message_id: z.string(),
    status: z.string(),
    created_timestamp: epochMs(),
  }),
);

export const SimulatedInbound = lazySchema(() =>
  z.object({
    chat_id: z.string(),
    chat_status: z.enum(['ongoing', 'ended', 'error']),
    messages: z.array(ChatMessage).describe('The agent\'s replies, each sent by SMS'),
  }),
);
