import { parse } from 'csv-parse/sync';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { findCallItem } from '../../shared/calls/store.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgent, seedCallsLike } from '../support/factories.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * The proof of scale: an export of over a thousand calls in both formats, parsed back and
 * compared with the calls as the API lists them, with their transcripts (which get-call
 * answers and list-calls leaves out). A handful are real sandbox calls (dialled, run, ended
 * and analysed by the call steps); the rest are copies of the items those left, transcript
 * lines included (test/support/factories.ts seedCallsLike: the calls store's own items,
 * written in BatchWrites), so every row has the shape a sandbox call really leaves.
 */
const app = await startTestApp();
const background = startBackgroundWork(JOBS.filter((job) => job.name === 'call-steps' || job.name === 'export-jobs'));
afterAll(() => background.stop());

// Over a thousand: several pages of the export (500 a page) and of list-calls (1,000 a page).
const SEEDED = 1_500;
/** Callees' last four digits: two conversations, a voicemail, a busy line (docs/calls.md, the sandbox). */
const REAL = [
  { lastFour: '5555', says: ['Hello?', 'What are your hours?'] },
  { lastFour: '5556', says: ['Hi, "quoted", and, commas', 'Line one\nline two'] },
  { lastFour: '0003', says: [] },
  { lastFour: '0001', says: [] },
];
const COLUMNS = [
  'call_id', 'call_type', 'direction', 'call_status', 'agent_id', 'agent_version', 'from_number', 'to_number',
  'start_timestamp', 'end_timestamp', 'duration_ms', 'disconnection_reason', 'user_sentiment', 'call_successful',
  'call_summary', 'combined_cost', 'metadata', 'transcript',
];

type Api = Awaited<ReturnType<typeof app.newWorkspace>>['api'];

/** Every call of the workspace through `POST /v2/list-calls`, oldest first, page by page (1,000 a page). */
async function listAll(api: Api): Promise<any[]> {
  const calls: any[] = [];
  for (;;) {
    const body: Record<string, unknown> = { limit: 1000, sort_order: 'ascending' };
    if (calls.length) body.pagination_key = calls.at(-1).call_id;
    const page = await api.post('/v2/list-calls', { body });
    expect(page.status).toBe(200);
    calls.push(...page.body);
    if (page.body.length < 1000) return calls;
  }
}

async function finished(api: Api, exportId: string) {
  return eventually(async () => (await api.get(`/exports/${exportId}`)).body, (e) => e.status === 'complete' || e.status === 'failed', 60_000);
}

async function download(api: Api, exportId: string): Promise<string> {
  const link = await api.get(`/exports/${exportId}/download`);
  expect(link.status).toBe(200);
  const res = await fetch(link.body.url);
  expect(res.status).toBe(200);
  return res.text();
}

/**
 * The CSV cell a value becomes (docs/account-data.md, Formats): empty for absent, JSON text for
 * nested values, and a leading `'` on text a spreadsheet would run as a formula (phone numbers'
 * `+` among them; docs/security.md, "Files opened in spreadsheets").
 */
const cell = (value: unknown): string => {
  const text = value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /^'*[=+\-@\t\r]/.test(text) ? `'${text}` : text;
};

/** A call's CSV row, derived here from the listed call (not by the export's own code). */
const expectedRow = (call: any): string[] =>
  [
    call.call_id, call.call_type, call.direction, call.call_status, call.agent_id, call.agent_version, call.from_number, call.to_number,
    call.start_timestamp, call.end_timestamp, call.duration_ms, call.disconnection_reason, call.call_analysis?.user_sentiment,
    call.call_analysis?.call_successful, call.call_analysis?.call_summary, call.call_cost?.combined_cost, call.metadata, call.transcript,
  ].map(cell);

describe('an export of over a thousand calls', () => {
  it(`exports ${SEEDED + REAL.length} ended calls as CSV and JSONL, each exactly once and equal to the API's call`, async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api);
    const from = freshNumber();
    expect(
      (await ws.api.post('/import-phone-number', {
        body: { phone_number: from, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
      })).status,
    ).toBe(201);

    // The real ones: dialled through the API and run to their end by the call steps. The callee hangs
    // up at sandbox_call_ms whatever is said, and says a line a second (SANDBOX_LINE_GAP_MS): 6 s
    // leaves both lines room on a loaded machine.
    const realStartedAt = Date.now();
    const real = await Promise.all(
      REAL.map(async ({ lastFour, says }) => {
        const created = await ws.api.post('/v2/create-phone-call', {
          body: { from_number: from, to_number: `+1415555${lastFour}`, metadata: { sandbox_call_ms: says.length ? 6000 : 1000, sandbox_user_says: says } },
        });
        expect(created.status).toBe(201);
        return eventually(
          async () => (await ws.api.get(`/v2/get-call/${created.body.call_id}`)).body,
          (call) => call.call_status === 'not_connected' || call.call_analysis !== undefined,
          60_000,
        );
      }),
    );
    expect(real.map((call) => call.call_status)).toEqual(['ended', 'ended', 'ended', 'not_connected']);
    expect(real.map((call) => call.disconnection_reason)).toEqual(['user_hangup', 'user_hangup', 'voicemail_reached', 'dial_busy']);
    expect(real[0].transcript).toContain('User: What are your hours?');

    // The copies: created a second apart before the real ones, each template in turn, with its own callee and metadata.
    const templates = await Promise.all(real.map(async (call) => (await findCallItem(call.call_id))!));
    const seededAt = Date.now();
    const perTemplate = Math.ceil(SEEDED / templates.length);
    const copiesOf = await Promise.all(
      templates.map((template, t) =>
        seedCallsLike(template, t === templates.length - 1 ? SEEDED - perTemplate * t : perTemplate, {
          firstCreatedMs: realStartedAt - 3_600_000 + t,
          stepMs: templates.length * 1000,
          vary: (i) => ({
            to_number: `+1${628 + t}555${String(i).padStart(4, '0')}`,
            metadata: { row: `${t}-${i}`, note: `say "hi", then\r\nbye, ${'é'.repeat(i % 3)}` },
          }),
        }),
      ),
    );
    const seeded = copiesOf.flat();
    expect(seeded).toHaveLength(SEEDED);
    const seedMs = Date.now() - seededAt;
    // A copy's transcript is its template's: the real call's as get-call answers it.
    const TRANSCRIPT = ['transcript', 'transcript_object', 'transcript_with_tool_calls'];
    const transcriptOf = (call: Record<string, unknown>) => Object.fromEntries(TRANSCRIPT.filter((field) => field in call).map((field) => [field, call[field]]));
    const transcripts = new Map(real.map((call) => [call.call_id as string, transcriptOf(call)]));
    copiesOf.forEach((copies, t) => copies.forEach((copy) => transcripts.set(copy.call_id as string, transcriptOf(real[t]))));

    const listedAt = Date.now();
    const listed = await listAll(ws.api);
    const listMs = Date.now() - listedAt;
    const exportedAt = Date.now();
    expect(listed.every((call) => TRANSCRIPT.every((field) => !(field in call)))).toBe(true);
    const calls = listed.map((call) => ({ ...call, ...transcripts.get(call.call_id) }));
    expect(calls).toHaveLength(SEEDED + REAL.length);
    expect(calls.slice(-REAL.length).map((call) => call.call_id).sort()).toEqual(real.map((call) => call.call_id).sort());
    expect(new Set(calls.map((call) => call.call_id)).size).toBe(calls.length);

    const jsonl = await ws.api.post('/exports', { body: { type: 'calls', format: 'jsonl' } });
    const csv = await ws.api.post('/exports', { body: { type: 'calls', format: 'csv' } });
    expect(jsonl.status).toBe(202);
    expect(csv.status).toBe(202);

    // JSONL: one line per call, each the call as the API answers it, in the listing's order.
    const doneJsonl = await finished(ws.api, jsonl.body.export_id);
    expect(doneJsonl).toMatchObject({ status: 'complete', type: 'calls', format: 'jsonl', row_count: calls.length });
    const jsonlText = await download(ws.api, jsonl.body.export_id);
    expect(Buffer.byteLength(jsonlText)).toBe(doneJsonl.size_bytes);
    const lines = jsonlText.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(calls.length);
    const parsed = lines.map((line) => JSON.parse(line));
    expect(new Set(parsed.map((row) => row.call_id)).size).toBe(calls.length);
    parsed.forEach((row, i) => expect(row).toEqual(calls[i]));

    const jsonlMs = Date.now() - exportedAt;
    // CSV: the header, then one row per call with the fields equal, quoting undone by csv-parse.
    const doneCsv = await finished(ws.api, csv.body.export_id);
    expect(doneCsv).toMatchObject({ status: 'complete', type: 'calls', format: 'csv', row_count: calls.length });
    const csvText = await download(ws.api, csv.body.export_id);
    expect(Buffer.byteLength(csvText)).toBe(doneCsv.size_bytes);
    const [header, ...rows] = parse(csvText, { relax_column_count: false }) as string[][];
    expect(header).toEqual(COLUMNS);
    expect(rows).toHaveLength(calls.length);
    expect(new Set(rows.map((row) => row[0])).size).toBe(calls.length);
    rows.forEach((row, i) => expect(row).toEqual(expectedRow(calls[i])));
    // Spot checks on what the quoting had to carry, and on the real calls' own fields.
    const quoted = rows.find((row) => row[7] === "'+16295550001")!;
    expect(JSON.parse(quoted[16]!)).toEqual({ row: '1-1', note: 'say "hi", then\r\nbye, é' });
    const conversation = rows.find((row) => row[0] === real[1].call_id)!;
    expect(conversation[17]).toBe(real[1].transcript);
    expect(conversation[17]).toContain('User: Line one\nline two');
    expect(rows.find((row) => row[0] === real[3].call_id)!.slice(11, 15)).toEqual(['dial_busy', '', '', '']);

    console.info(`export-scale: real calls ${seededAt - realStartedAt} ms, seeded ${SEEDED} calls in ${seedMs} ms, listed in ${listMs} ms, JSONL done and compared ${jsonlMs} ms, all ${Date.now() - realStartedAt} ms; JSONL ${doneJsonl.size_bytes} bytes, CSV ${doneCsv.size_bytes} bytes`);
  }, 240_000);
});
