import * as z from 'zod';
import { epochMs, idOf, lazySchema } from '../../platform/http/schemas.ts';
import { AnalyticsQuery } from '../query/index.ts';

/*
 * Dashboards (docs/analytics.md, "Dashboards"): saved, named layouts of analytics queries.
 * Each widget is a title, a chart type and one query in the query language; the query is
 * checked with the query language's own schema on save, plus the few rules a chart type
 * needs that no data is needed to check (below). Schemas are built on first use.
 */

const WIDGET_TYPES = ['number', 'line', 'bar', 'pie', 'table'] as const;

/** The most widgets one dashboard holds: each runs a query when the page opens (10 per request). */
const MAX_WIDGETS = 24;
/** The most dashboards a workspace keeps: the list is one read, never paged. */
export const MAX_DASHBOARDS = 100;
/** The most a dashboard may hold as JSON: well inside a DynamoDB item (400 KB). */
export const MAX_DASHBOARD_BYTES = 100_000;

type Query = z.infer<typeof AnalyticsQuery>;

/**
 * What each chart type needs of its query: a `number` shows one figure (no step, no
 * group_by, one operation); a `pie` shows one operation's share per group (one group_by,
 * no step, one operation); a `line` or `bar` chart draws buckets along time (a step). A
 * `table` shows rows as they come. Each problem names its field.
 */
function checkWidgetQuery(type: (typeof WIDGET_TYPES)[number], query: Query, context: z.RefinementCtx): void {
  const problem = (path: (string | number)[], message: string) => context.addIssue({ code: 'custom', path: ['query', ...path], message });
  const groups = query.group_by?.length ?? 0;
  const step = query.time_range.step;
  switch (type) {
    case 'number':
      if (step) problem(['time_range', 'step'], 'A number widget shows one figure: leave out step');
      if (groups > 0) problem(['group_by'], 'A number widget shows one figure: leave out group_by');
      if (query.operations.length !== 1) problem(['operations'], 'A number widget shows one figure: give exactly one operation');
      break;
    case 'pie':
      if (step) problem(['time_range', 'step'], 'A pie widget shares one figure among groups: leave out step');
      if (groups !== 1) problem(['group_by'], 'A pie widget needs exactly one group_by dimension (its slices)');
      if (query.operations.length !== 1) problem(['operations'], 'A pie widget shares one figure among groups: give exactly one operation');
      break;
    case 'line':
    case 'bar':
      if (!step) problem(['time_range', 'step'], `A ${type} widget draws buckets along time: give a step (minute, hour, day, week or month)`);
      break;
    case 'table':
      break;
  }
}

const WIDGET_ID = /^[A-Za-z0-9_-]{1,64}$/;

const widget = () =>
  z
    .object({
      widget_id: z.string().regex(WIDGET_ID, 'Must be 1 to 64 letters, digits, `_` or `-`').optional().describe('Kept as given; made up when left out'),
      title: z.string().trim().min(1).max(200),
      type: z.enum(WIDGET_TYPES),
      query: AnalyticsQuery,
    })
    .superRefine((value, context) => checkWidgetQuery(value.type, value.query, context));

const dashboardFields = () => ({
  name: z.string().trim().min(1).max(200),
  description: z.string().trim().max(2_000).optional(),
  widgets: z
    .array(widget())
    .max(MAX_WIDGETS)
    .superRefine((widgets, context) => {
      const seen = new Set<string>();
      widgets.forEach((item, index) => {
        if (item.widget_id === undefined) return;
        if (seen.has(item.widget_id)) context.addIssue({ code: 'custom', path: [index, 'widget_id'], message: `Duplicate widget_id ${item.widget_id}` });
        seen.add(item.widget_id);
      });
    }),
});

export const DashboardBody = lazySchema(() => z.object(dashboardFields()));
export type DashboardInput = z.infer<typeof DashboardBody>;

/** PUT replaces the whole dashboard; `revision` (the one read) makes the replace conditional. */
export const ReplaceDashboardBody = lazySchema(() =>
  z.object({
    ...dashboardFields(),
    revision: z.number().int().min(1).optional().describe('Replace only if the dashboard is still at this revision (409 otherwise); left out, the last write wins'),
  }),
);
export type ReplaceDashboardInput = z.infer<typeof ReplaceDashboardBody>;

export const Dashboard = lazySchema(() =>
  z.object({
    dashboard_id: z.string(),
    name: z.string(),
    description: z.string().optional(),
    widgets: z.array(z.object({ widget_id: z.string(), title: z.string(), type: z.enum(WIDGET_TYPES), query: AnalyticsQuery })),
    revision: z.number().int().describe('1 when created, one more on each replace'),
    created_timestamp: epochMs(),
    last_modification_timestamp: epochMs(),
  }),
);
export type Dashboard = z.infer<typeof Dashboard>;

export const DashboardList = lazySchema(() => z.array(Dashboard));

export const dashboardIdParams = lazySchema(() => z.object({ dashboard_id: idOf('dashboard', 'a dashboard ID') }));

/** The dashboard page (HTML). */
export const DashboardPage = lazySchema(() => z.string());
