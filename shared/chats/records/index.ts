/**
 * The chats domain's narrow entry, for domains that read, list or erase stored chats
 * (account-data's exports, privacy erases and retention): nothing here reaches the
 * conversation runtime (the custom-LLM client with `ws`, the LLM vendors, knowledge
 * retrieval with S3), billing, the agents domain or SMS sending (the messaging vendor,
 * libphonenumber). esbuild keeps a reached module's side effects even when none of its
 * exports is used, so importing index.ts for `getChat` put all of them into the export-jobs
 * and account-data bundles (docs/performance.md). test/platform/lambda-bundles.test.ts
 * holds the export-jobs bundle free of them. Anything that runs a chat stays in index.ts.
 */
export { deleteChat, getChat, listChats } from '../stored-chats.ts';
export { deleteSmsThreadOf, smsChatIdsWithParty } from '../sms/store.ts';
export { chatRetentionPage, storedChat, storedChatPage } from '../listing.ts';
export { chatAnalysisFacts, chatFacts } from '../rollups.ts';
export type { ChatItem } from '../store.ts';
export { countedChatListing } from '../store.ts';
/** The listing index partitions of a workspace's chats: where the workspace purge finds them. */
export { chatListingPartitions } from '../store.ts';
;
