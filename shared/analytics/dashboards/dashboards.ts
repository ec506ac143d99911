import { randomBytes } from 'node:crypto';
import { badRequest } from '../../platform/errors.ts';
import { newTimeOrderedId } from '../../platform/ids.ts';
import { planQuery } from '../query/index.ts';
import { MAX_DASHBOARD_BYTES, MAX_DASHBOARDS, type Dashboard, type DashboardInput, type ReplaceDashboardInput } from './schemas.ts';
import { createDashboardItem, deleteDashboardItem, getDashboardItem, listDashboardItems, replaceDashboardItem, type DashboardItem } from './store.ts';

/** A dashboard as the API answers it (the item without its workspace and keys). */
function toDashboard(item: DashboardItem): Dashboard {
  return {
    dashboard_id: item.dashboard_id,
    name: item.name,
    ...(item.description === undefined ? {} : { description: item.description }),
    widgets: item.widgets,
    revision: item.revision,
    created_timestamp: item.created_timestamp,
    last_modification_timestamp: item.last_modification_timestamp,
  };
}

/** The widgets as stored: each keeps the ID it was given, or gets one, so a replace can keep it. */
const storedWidgets = (widgets: DashboardInput['widgets']): Dashboard['widgets'] =>
  widgets.map((widget) => ({ ...widget, widget_id: widget.widget_id ?? `widget_${randomBytes(6).toString('hex')}` }));

/** A dashboard too large for its item is refused, naming its widgets (where the size is). */
function assertStorable(dashboard: Dashboard): void {
  const bytes = Buffer.byteLength(JSON.stringify(dashboard));
  if (bytes > MAX_DASHBOARD_BYTES) {
    throw badRequest(`widgets: The dashboard is ${Math.ceil(bytes / 1000)} KB as JSON; at most ${MAX_DASHBOARD_BYTES / 1000} KB`);
  }
}

/**
 * Plans every widget's query as POST /analytics/query would when the page opens, so a
 * dashboard never keeps a query the planner refuses (a dimension of the other table, a
 * group and filter no view holds together, a range too long for its step or older than the
 * cells it needs are kept): the 400 names the widget's field, `widgets.<i>.query.<field>`.
 * Only the answer's row count depends on the data; the run checks it.
 */
function assertPlannable(widgets: DashboardInput['widgets'], nowMs: number): void {
  widgets.forEach((widget, index) => planQuery(widget.query, nowMs, `widgets.${index}.query`));
}

export async function createDashboard(workspaceId: string, body: DashboardInput, nowMs = Date.now()): Promise<Dashboard> {
  assertPlannable(body.widgets, nowMs);
  const item: DashboardItem = {
    workspace_id: workspaceId,
    dashboard_id: newTimeOrderedId('dashboard', nowMs),
    name: body.name,
    ...(body.description === undefined ? {} : { description: body.description }),
    widgets: storedWidgets(body.widgets),
    revision: 1,
    created_timestamp: nowMs,
    last_modification_timestamp: nowMs,
  };
  assertStorable(toDashboard(item));
  await createDashboardItem(item, MAX_DASHBOARDS);
  return toDashboard(item);
}

export const getDashboard = async (workspaceId: string, dashboardId: string): Promise<Dashboard> => toDashboard(await getDashboardItem(workspaceId, dashboardId));

export const listDashboards = async (workspaceId: string): Promise<Dashboard[]> => (await listDashboardItems(workspaceId)).map(toDashboard);

/**
 * Replaces the whole dashboard (name, description, widgets). Concurrent replaces: the last
 * write wins, unless the body carries the `revision` it read, which makes the replace
 * conditional on it (409 when another write came first).
 */
export async function replaceDashboard(workspaceId: string, dashboardId: string, body: ReplaceDashboardInput, nowMs = Date.now()): Promise<Dashboard> {
  assertPlannable(body.widgets, nowMs);
  const fields = { name: body.name, description: body.description, widgets: storedWidgets(body.widgets), last_modification_timestamp: nowMs };
  assertStorable({ dashboard_id: dashboardId, revision: 1, created_timestamp: nowMs, ...fields });
  return toDashboard(await replaceDashboardItem(workspaceId, dashboardId, fields, body.revision));
}

export const deleteDashboard = (workspaceId: string, dashboardId: string): Promise<void> => deleteDashboardItem(workspaceId, dashboardId);
