import {
  ArcElement,
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PieController,
  PointElement,
  Tooltip,
  type ChartConfiguration,
} from 'chart.js';

/*
 * The dashboard page's script (docs/browser.md, "The dashboard page"), served at
 * `/dashboards/{dashboard_id}/page`. It reads the dashboard (`GET /dashboards/{id}`), runs
 * its widgets' queries (`POST /analytics/query`, ten at a time, the most one request
 * takes), and draws each widget: a figure, a line, bar or pie chart (Chart.js, with only
 * the controllers, elements and scales these use registered), or a table. The session
 * cookie authenticates every request (same origin); the query's POST echoes the session's
 * CSRF token from the page's `parley-csrf-token` meta tag.
 */

Chart.register(LineController, BarController, PieController, LineElement, PointElement, BarElement, ArcElement, CategoryScale, LinearScale, Legend, Tooltip);

type WidgetType = 'number' | 'line' | 'bar' | 'pie' | 'table';

interface Operation {
  operation: string;
  column?: string;
  alias?: string;
}

interface Widget {
  widget_id: string;
  title: string;
  type: WidgetType;
  query: { group_by?: string[]; time_range: { step?: string }; operations: Operation[] } & Record<string, unknown>;
}

interface Dashboard {
  dashboard_id: string;
  name: string;
  description?: string;
  widgets: Widget[];
}

type Row = Record<string, string | number | null>;

interface QueryResponse {
  results: { result: Row[] }[];
}

/** The most queries one POST /analytics/query takes. */
const QUERIES_PER_REQUEST = 10;

/** A palette readable on white, one colour per series or slice, in turn. */
const COLOURS = ['#2563eb', '#d97706', '#059669', '#dc2626', '#7c3aed', '#0891b2', '#db2777', '#4b5563', '#65a30d', '#9333ea'];

const main = document.getElementById('dashboard')!;
const statusLine = document.getElementById('status')!;
const widgetsBox = document.getElementById('widgets')!;

/** The page's address is `<base>/dashboards/<id>/page`: the API is at `<base>/`. */
const apiBase = new URL('../../', window.location.href);
const dashboardId = decodeURIComponent(/\/dashboards\/([^/]+)\/page\/?$/.exec(window.location.pathname)?.[1] ?? '');
const csrfToken = document.querySelector<HTMLMetaElement>('meta[name="parley-csrf-token"]')?.content;

class RequestFailed extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  if (init.method && init.method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  const response = await fetch(new URL(path, apiBase), { ...init, headers, credentials: 'same-origin', cache: 'no-store' });
  const body = (await response.json().catch(() => undefined)) as { message?: string } | undefined;
  if (!response.ok) throw new RequestFailed(response.status, body?.message ?? `The request failed (${response.status})`);
  return body as T;
}

function setState(state: 'loading' | 'ready' | 'failed', message: string): void {
  main.dataset.state = state;
  statusLine.textContent = message;
}

/** The field an operation's value is answered in: its alias, else `<operation>_<column>`, else `count`. */
const fieldOf = (operation: Operation): string => operation.alias ?? (operation.column ? `${operation.operation}_${operation.column}` : operation.operation);

const numberFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
const formatValue = (value: string | number | null | undefined): string =>
  value === null || value === undefined ? '—' : typeof value === 'number' ? numberFormat.format(value) : value;

/** A row's group: its group_by values joined, or `All` without a group_by. */
const groupOf = (row: Row, groupBy: string[]): string => (groupBy.length ? groupBy.map((dimension) => String(row[dimension] ?? '(none)')).join(' · ') : 'All');

function canvasFor(body: HTMLElement, title: string): HTMLCanvasElement {
  const box = document.createElement('div');
  box.className = 'chart';
  const canvas = document.createElement('canvas');
  canvas.setAttribute('role', 'img');
  canvas.setAttribute('aria-label', title);
  box.append(canvas);
  body.append(box);
  return canvas;
}

function drawChart(canvas: HTMLCanvasElement, config: ChartConfiguration): void {
  new Chart(canvas, { ...config, options: { animation: false, responsive: true, maintainAspectRatio: false, ...config.options } });
}

function drawNumber(body: HTMLElement, widget: Widget, rows: Row[]): void {
  const figure = document.createElement('p');
  figure.className = 'figure';
  figure.textContent = formatValue(rows[0]?.[fieldOf(widget.query.operations[0]!)]);
  body.append(figure);
}

/** Line and bar charts: the buckets' dates along x, one series per group (and operation, when there are several). */
function drawSeries(body: HTMLElement, widget: Widget, rows: Row[]): void {
  const groupBy = widget.query.group_by ?? [];
  const operations = widget.query.operations;
  const dates = [...new Set(rows.map((row) => String(row.date)))];
  const series = new Map<string, (number | null)[]>();
  for (const row of rows) {
    for (const operation of operations) {
      const label = operations.length > 1 ? `${groupOf(row, groupBy)} — ${fieldOf(operation)}` : groupOf(row, groupBy);
      const values = series.get(label) ?? dates.map(() => null);
      const value = row[fieldOf(operation)];
      values[dates.indexOf(String(row.date))] = typeof value === 'number' ? value : null;
      series.set(label, values);
    }
  }
  const datasets = [...series].map(([label, data], index) => {
    const colour = COLOURS[index % COLOURS.length]!;
    return { label, data, borderColor: colour, backgroundColor: colour, spanGaps: true };
  });
  drawChart(canvasFor(body, widget.title), {
    type: widget.type === 'bar' ? 'bar' : 'line',
    data: { labels: dates, datasets },
    options: { plugins: { legend: { display: datasets.length > 1 } }, scales: { y: { beginAtZero: true } } },
  } as ChartConfiguration);
}

/** A pie: one slice per group, its value the operation's (summed over buckets). */
function drawPie(body: HTMLElement, widget: Widget, rows: Row[]): void {
  const field = fieldOf(widget.query.operations[0]!);
  const slices = new Map<string, number>();
  for (const row of rows) {
    const value = row[field];
    if (typeof value === 'number') slices.set(groupOf(row, widget.query.group_by ?? []), (slices.get(groupOf(row, widget.query.group_by ?? [])) ?? 0) + value);
  }
  drawChart(canvasFor(body, widget.title), {
    type: 'pie',
    data: { labels: [...slices.keys()], datasets: [{ data: [...slices.values()], backgroundColor: [...slices.keys()].map((_, index) => COLOURS[index % COLOURS.length]!) }] },
    options: { plugins: { legend: { position: 'right' } } },
  });
}

function drawTable(body: HTMLElement, widget: Widget, rows: Row[]): void {
  const columns = [...(widget.query.time_range.step ? ['date'] : []), ...(widget.query.group_by ?? []), ...widget.query.operations.map(fieldOf)];
  const box = document.createElement('div');
  box.className = 'table';
  const table = document.createElement('table');
  const head = table.createTHead().insertRow();
  for (const column of columns) {
    const cell = document.createElement('th');
    cell.scope = 'col';
    cell.textContent = column;
    head.append(cell);
  }
  const tbody = table.createTBody();
  for (const row of rows) {
    const line = tbody.insertRow();
    for (const column of columns) line.insertCell().textContent = formatValue(row[column]);
  }
  if (rows.length === 0) {
    const cell = tbody.insertRow().insertCell();
    cell.colSpan = columns.length;
    cell.textContent = 'No data in this range';
  }
  box.append(table);
  body.append(box);
}

const DRAW: Record<WidgetType, (body: HTMLElement, widget: Widget, rows: Row[]) => void> = {
  number: drawNumber,
  line: drawSeries,
  bar: drawSeries,
  pie: drawPie,
  table: drawTable,
};

/** A widget's card: its title, and a body the drawing (or its error) goes in. */
function widgetCard(widget: Widget, index: number): HTMLElement {
  const card = document.createElement('section');
  card.className = 'widget';
  card.dataset.type = widget.type;
  card.dataset.widgetId = widget.widget_id;
  const heading = document.createElement('h2');
  heading.id = `widget-${index}`;
  heading.textContent = widget.title;
  card.setAttribute('aria-labelledby', heading.id);
  const body = document.createElement('div');
  body.className = 'widget-body';
  card.append(heading, body);
  widgetsBox.append(card);
  return body;
}

function showWidgetError(body: HTMLElement, message: string): void {
  body.parentElement!.dataset.state = 'failed';
  const text = document.createElement('p');
  text.className = 'widget-error';
  text.textContent = message;
  body.replaceChildren(text);
}

async function run(): Promise<void> {
  if (!dashboardId) {
    setState('failed', 'This address names no dashboard.');
    return;
  }
  let dashboard: Dashboard;
  try {
    dashboard = await api<Dashboard>(`dashboards/${encodeURIComponent(dashboardId)}`);
  } catch (error) {
    const status = error instanceof RequestFailed ? error.status : 0;
    setState('failed', status === 401 ? 'Your session has ended: sign in again, then reload this page.' : status === 404 ? 'This dashboard does not exist.' : (error as Error).message);
    return;
  }
  document.title = dashboard.name;
  document.getElementById('dashboard-name')!.textContent = dashboard.name;
  const description = document.getElementById('description')!;
  if (dashboard.description) {
    description.textContent = dashboard.description;
    description.hidden = false;
  }
  if (dashboard.widgets.length === 0) {
    setState('ready', 'This dashboard has no widgets yet.');
    return;
  }
  const bodies = dashboard.widgets.map(widgetCard);
  let failed = 0;
  for (let start = 0; start < dashboard.widgets.length; start += QUERIES_PER_REQUEST) {
    const widgets = dashboard.widgets.slice(start, start + QUERIES_PER_REQUEST);
    try {
      const answer = await api<QueryResponse>('analytics/query', { method: 'POST', body: JSON.stringify({ queries: widgets.map((widget) => widget.query) }) });
      widgets.forEach((widget, index) => {
        const body = bodies[start + index]!;
        try {
          DRAW[widget.type](body, widget, answer.results[index]?.result ?? []);
          body.parentElement!.dataset.state = 'drawn';
        } catch (error) {
          failed += 1;
          showWidgetError(body, `This widget could not be drawn: ${(error as Error).message}`);
        }
      });
    } catch (error) {
      failed += widgets.length;
      for (const index of widgets.keys()) showWidgetError(bodies[start + index]!, (error as Error).message);
    }
  }
  setState('ready', failed === 0 ? '' : `${failed} of ${dashboard.widgets.length} widgets could not be drawn.`);
}

void run();
