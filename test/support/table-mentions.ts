import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { config } from '../../shared/platform/config.ts';
import { db } from '../../shared/platform/store/db.ts';

/**
 * Every item of the whole table mentioning `text` and the workspace, as `pk sk`: what a
 * deletion or a data storage setting must have removed. `view` picks what of an item counts
 * (a call item's `metadata` is the caller's own storage, for one).
 */
export async function tableMentions(text: string, workspaceId: string, view: (item: Record<string, unknown>) => unknown = (item) => item): Promise<string[]> {
  const found: string[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await db.send(new ScanCommand({ TableName: config.TABLE_NAME, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) {
      const json = JSON.stringify(view(item));
      if (json.includes(text) && json.includes(workspaceId)) found.push(`${String(item.pk)} ${String(item.sk)}`);
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return found;
}

/** The items whose JSON mentions `text`. */
export const mentions = (items: readonly unknown[], text: string) => items.filter((item) => JSON.stringify(item).includes(text));
