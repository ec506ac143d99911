import { conflict, notFound } from '../../platform/errors.ts';
import { keys } from '../../platform/store/keys.ts';
import { createWithinLimit, transactCounted } from '../../platform/store/listing-count.ts';
import { defineEntity, table, TransactionCancelled } from '../../platform/store/table.ts';
import type { Dashboard } from './schemas.ts';

/*
 * Dashboards (docs/data-model.md), in the workspace's dashboards partition
 * `WS#<ws>#DASHBOARD`: one item per dashboard (`DASHBOARD#<id>`, time-ordered IDs, so the
 * list is newest first) and the counter `COUNT` (`n`: how many there are), changed in the
 * same transaction as each create and delete, so the limit holds under concurrent creates
 * (a transaction that only lost a race on the counter is tried again: transactCounted).
 */

export type DashboardItem = Dashboard & { workspace_id: string };

const dashboards = defineEntity<DashboardItem & { pk: string; sk: string }, [workspaceId: string, dashboardId: string]>({
  key: keys.dashboard,
  notFound: (_workspaceId, dashboardId) => dashboardNotFound(dashboardId),
});

const dashboardNotFound = (dashboardId: string) => notFound(`Dashboard ${dashboardId} not found`);

export const getDashboardItem = (workspaceId: string, dashboardId: string): Promise<DashboardItem> => dashboards.mustGet(workspaceId, dashboardId);

/** The workspace's dashboards, newest first (at most the limit: one page). */
export const listDashboardItems = (workspaceId: string): Promise<DashboardItem[]> => {
  const partition = keys.dashboards(workspaceId);
  return table.queryAll<DashboardItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
    ScanIndexForward: false,
  });
};

/** Writes a new dashboard and counts it, refused with 409 when the workspace already has `limit`. */
export async function createDashboardItem(item: DashboardItem, limit: number): Promise<void> {
  await createWithinLimit({
    create: dashboards.createOp(item, item.workspace_id, item.dashboard_id),
    counter: keys.dashboardCount(item.workspace_id),
    limit,
    overLimit: () => conflict(`A workspace can have at most ${limit} dashboards; delete one to make another`),
  });
}

/**
 * Replaces a dashboard's fields and moves its revision on by one, answering it as written:
 * 404 when it is gone; with `expectedRevision`, 409 when another write came first.
 */
export async function replaceDashboardItem(
  workspaceId: string,
  dashboardId: string,
  fields: Pick<DashboardItem, 'name' | 'description' | 'widgets' | 'last_modification_timestamp'>,
  expectedRevision?: number,
): Promise<DashboardItem> {
  const { description, ...set } = fields;
  const written = await dashboards.update(
    [workspaceId, dashboardId],
    {
      UpdateExpression: `SET #name = :name, widgets = :widgets, last_modification_timestamp = :at${description === undefined ? '' : ', description = :description'} ADD revision :one${description === undefined ? ' REMOVE description' : ''}`,
      ConditionExpression: expectedRevision === undefined ? 'attribute_exists(pk)' : 'attribute_exists(pk) AND revision = :expected',
      ExpressionAttributeNames: { '#name': 'name' },
      ExpressionAttributeValues: {
        ':name': set.name,
        ':widgets': set.widgets,
        ':at': set.last_modification_timestamp,
        ':one': 1,
        ...(description === undefined ? {} : { ':description': description }),
        ...(expectedRevision === undefined ? {} : { ':expected': expectedRevision }),
      },
    },
    (current) => {
      if (!current) throw dashboardNotFound(dashboardId);
      throw conflict(`Dashboard ${dashboardId} is at revision ${current.revision}, not ${expectedRevision}: read it again and replace that`);
    },
  );
  return written!;
}

/** Deletes a dashboard and uncounts it (404 when it is not there). */
export async function deleteDashboardItem(workspaceId: string, dashboardId: string): Promise<void> {
  try {
    await transactCounted([
      dashboards.removeOp(workspaceId, dashboardId),
      { Update: { Key: keys.dashboardCount(workspaceId), UpdateExpression: 'ADD n :minus', ExpressionAttributeValues: { ':minus': -1 } } },
    ]);
  } catch (error) {
    if (error instanceof TransactionCancelled && error.failedAt.includes(0)) throw dashboardNotFound(dashboardId);
    throw error;
  }
}
