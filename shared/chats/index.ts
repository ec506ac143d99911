/**
 * The chats domain's entry: the API operations (functions/chats.ts) and what other domains
 * (the SMS part: it only adds transport) may use.
 */
export { completeChat, endChat, rerunChatAnalysis, startChat, updateChat } from './chats.ts';
export { deleteChat, getChat, listChats } from './stored-chats.ts';
;
export { completionEvents, playgroundCompletion, playgroundSimulation } from './playground.ts';
;
;
/** The chat and message schemas, for the public chat routes' answers (shared/public). */
export { Chat, ChatMessage } from './schemas.ts';
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
} from './sms/index.ts';
/** A privacy erase of one number (shared/account-data): its SMS chats (the party index) and their thread. */
;
