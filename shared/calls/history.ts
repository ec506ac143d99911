import { listCallItems } from './listing.ts';
import { toCallView } from './view.ts';
import type { CallView } from './schemas.ts';

/*
 * A workspace's call history page by page, oldest first, for jobs that walk it (the
 * contacts backfill): a query of the listing index (gsi1), never a scan. `after` is the
 * last call ID of the previous page (call IDs sort by time).
 */
export async function callHistoryPage(
  workspaceId: string,
  input: { after?: string; limit: number },
): Promise<{ calls: CallView[]; next?: string }> {
  const { items, hasMore } = await listCallItems(workspaceId, {
    limit: input.limit,
    sort_order: 'ascending',
    pagination_key: input.after,
  });
  const calls = items.map(toCallView);
  return { calls, ...(hasMore && items.length ? { next: items.at(-1)!.call_id } : {}) };
}
