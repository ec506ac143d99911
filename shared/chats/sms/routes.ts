import { defineRoutes } from '../../platform/http/route.ts';
import { wire } from '../../platform/naming.ts';
import { Chat, ChatList, chatIdParams } from '../schemas.ts';
import {
  CreateSmsChatBody,
  ListSmsChatsQuery,
  ListSmsMessagesQuery,
  SendSmsBody,
  SentSms,
  SimulateInboundBody,
  SimulatedInbound,
  SmsMessagePage,
} from './schemas.ts';

/**
 * SMS chats (docs/chats.md, SMS): served by the chats function. Scope
 * `calls` (it covers chats and SMS); the carrier's inbound webhook has no API key and is
 * verified by its request signature instead.
 */
export const SMS_WEBHOOK_PATH = `/${wire.carrierA}/sms-webhook` as const;
/** Where Twilio reports the delivery of the messages Parley sends (StatusCallback). */
export const SMS_STATUS_PATH = `/${wire.carrierA}/sms-status` as const;

export const smsRoutes = defineRoutes({ domain: 'chats', access: 'calls' }, {
  createSmsChat: {
    method: 'POST', path: '/create-sms-chat', status: 201,
    summary: 'Start an SMS chat from a workspace number to a recipient (the agent\'s opening is sent by SMS)',
    spendChecked: true, throttle: 'conversation',
    body: CreateSmsChatBody, response: Chat,
  },
  getSmsChat: {
    method: 'GET', path: '/get-sms-chat/{chat_id}', status: 200,
    summary: 'Get an SMS chat with its messages',
    params: chatIdParams, response: Chat,
  },
  endSmsChat: {
    method: 'POST', path: '/end-sms-chat/{chat_id}', status: 200,
    summary: 'End an ongoing SMS chat (then chat_ended, the analysis and chat_analyzed)',
    params: chatIdParams, response: Chat,
  },
  listSmsChats: {
    method: 'GET', path: '/list-sms-chats', status: 200,
    summary: 'List SMS chats, newest first (an array; the transcript fields are left out); ?from_number=&to_number= filter on the chat\'s numbers',
    query: ListSmsChatsQuery, response: ChatList,
  },
  listSmsMessages: {
    method: 'GET', path: '/list-sms-messages', status: 200,
    summary: 'An SMS chat\'s messages, newest first, paged (?chat_id=&limit=&pagination_key=)',
    query: ListSmsMessagesQuery, response: SmsMessagePage,
  },
  sendSms: {
    method: 'POST', path: '/send-sms', status: 200,
    summary: 'Send one SMS from a workspace number (not part of a chat)',
    spendChecked: true, throttle: 'conversation',
    body: SendSmsBody, response: SentSms,
  },
  simulateInboundSms: {
    method: 'POST', path: '/sms-chats/{chat_id}/simulate-inbound', status: 200,
    summary: 'Deliver a message to an SMS chat as if the other party had texted it; the agent answers by SMS',
    spendChecked: true, throttle: 'vendor',
    params: chatIdParams, body: SimulateInboundBody, response: SimulatedInbound,
  },
  twilioSmsWebhook: {
    method: 'POST', path: SMS_WEBHOOK_PATH, status: 200, access: 'public',
    summary: 'Twilio\'s inbound SMS webhook (form-encoded, verified with X-Twilio-Signature; 403 otherwise): the number\'s inbound SMS agent answers by SMS',
  },
  twilioSmsStatus: {
    method: 'POST', path: SMS_STATUS_PATH, status: 204, access: 'public',
    summary: 'Twilio\'s delivery reports of sent SMS (StatusCallback; verified with X-Twilio-Signature), kept in the provider operation log',
  },
});
