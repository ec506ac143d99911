/**
 * Counts the calls and chats a table held before the listing counters existed
 * (shared/platform/store/listing-count.ts), so list-calls' and list-chats' unfiltered
 * `include_total` is exact for them too: every registered workspace, each call and chat
 * marked and counted once (a conditional transaction), beside live traffic. Run once after
 * deploying the counters against a store that has calls: `TABLE_NAME=<table> npx tsx
 * scripts/count-listings.ts` (with AWS credentials), or with DYNAMODB_ENDPOINT for a local
 * table. Running it again counts nothing (docs/operations.md).
 */
const [{ registeredWorkspaceIds }, { countCallsWrittenBefore }, { countChatsWrittenBefore }, { markListingCountsComplete }, { keys }] = await Promise.all([
  import('../shared/account/index.ts'),
  import('../shared/calls/store.ts'),
  import('../shared/chats/store.ts'),
  import('../shared/platform/store/listing-count.ts'),
  import('../shared/platform/store/keys.ts'),
]);

let calls = 0;
let chats = 0;
for (const workspaceId of await registeredWorkspaceIds()) {
  const counted = { calls: await countCallsWrittenBefore(workspaceId), chats: await countChatsWrittenBefore(workspaceId) };
  // From here its totals come from the counters; until now they were counted on the index.
  await markListingCountsComplete(keys.listingCountsComplete(workspaceId));
  calls += counted.calls;
  chats += counted.chats;
  if (counted.calls || counted.chats) console.log(`${workspaceId}: counted ${counted.calls} calls, ${counted.chats} chats`);
}
console.log(`done: counted ${calls} calls and ${chats} chats written before the counters`);
