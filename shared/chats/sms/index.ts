/**
 * SMS chats (docs/chats.md, SMS): starting, sending, receiving, carrier reports and the
 * threads that tie a party's messages to one chat. Routes in `routes.ts` (the route table and
 * the chats function take them directly), schemas in `schemas.ts`, items in `store.ts`.
 */
export {
  createSmsChat,
  endSmsChat,
  getSmsChat,
  listSmsChats,
  listSmsMessages,
  receiveTwilioSms,
  receiveTwilioSmsStatus,
  sendSms,
  simulateInboundSms,
} from './sms.ts';
