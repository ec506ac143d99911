import { toFile } from 'retell-sdk';
import { describe, expect, it } from 'vitest';
import { runIngestion, SOURCE_START_BUDGET_MS, type IngestJobMessage } from '../../shared/knowledge-bases/ingest.ts';
import { setLocalQueue } from '../../shared/platform/aws/queue.ts';
import { startTestApp } from '../support/app.ts';
import { docxOf } from '../support/kb-fixtures.ts';
import { retellClient } from '../support/sdk.ts';

/*
 * One ingestion message ends well within kb-jobs' timeout however slow its files: a source
 * starts only within SOURCE_START_BUDGET_MS of the step's beginning, a file whose turn in the
 * extraction worker (one document at a time) comes later is not read, and what is left waits
 * for the same generation's next message. The clock is injected: each reading moves it on.
 */

const app = await startTestApp();
// The kb-jobs queue records what is sent to it instead of running it: the test runs each step.
const queued: IngestJobMessage[] = [];
setLocalQueue('kb-jobs', { send: async (message) => void queued.push(message as IngestJobMessage) });

/** A clock that moves on `stepMs` at every reading. */
const advancing = (stepMs: number) => {
  let now = Date.now();
  return () => (now += stepMs);
};

async function knowledgeBase(texts: string[], files: string[]) {
  const ws = await app.newWorkspace();
  queued.length = 0;
  const created = await retellClient(app.url, ws.api_key).knowledgeBase.create({
    knowledge_base_name: 'Deadline',
    knowledge_base_texts: texts.map((text, i) => ({ title: `Text ${i}`, text })),
    knowledge_base_files: await Promise.all(files.map(async (text, i) => toFile(await docxOf([text]), `file-${i}.docx`))),
  });
  expect(queued).toHaveLength(1);
  const message = queued.shift()!;
  const statuses = async () => {
    const kb = (await ws.api.get(`/get-knowledge-base/${created.knowledge_base_id}`)).body;
    return { kb, statuses: (kb.knowledge_base_sources as any[]).map((source) => source.status).sort() };
  };
  return { message, statuses };
}

describe('an ingestion step within its deadline', () => {
  it('starts no source after the budget and queues the same generation for the rest', async () => {
    const { message, statuses } = await knowledgeBase(['Alpha.', 'Bravo.', 'Charlie.', 'Delta.'], []);
    // Readings 50 s apart: the budget ends after the second source has started.
    await runIngestion(message, advancing(SOURCE_START_BUDGET_MS / 2.4));
    expect((await statuses()).statuses).toEqual(['complete', 'complete', 'in_progress', 'in_progress']);
    expect(queued).toEqual([message]);

    await runIngestion(queued.shift()!);
    const after = await statuses();
    expect(after.statuses).toEqual(['complete', 'complete', 'complete', 'complete']);
    expect(after.kb).toMatchObject({ status: 'complete', chunk_count: 4 });
    expect(queued).toEqual([]);
  });

  it('leaves a started file unread when its turn in the extraction worker comes after the budget', async () => {
    const { message, statuses } = await knowledgeBase([], ['Echo.', 'Foxtrot.', 'Golf.']);
    // Two files start within the budget; by their turn in the worker the budget is spent.
    await runIngestion(message, advancing(SOURCE_START_BUDGET_MS / 2.4));
    expect((await statuses()).statuses).toEqual(['in_progress', 'in_progress', 'in_progress']);
    expect(queued).toEqual([message]);

    await runIngestion(queued.shift()!);
    const after = await statuses();
    expect(after.statuses).toEqual(['complete', 'complete', 'complete']);
    expect(after.kb).toMatchObject({ status: 'complete', chunk_count: 3 });
  });

  it('reads everything in one step when the clock stays within the budget', async () => {
    const { message, statuses } = await knowledgeBase(['Hotel.'], ['India.', 'Juliett.']);
    await runIngestion(message, () => 1_000);
    expect((await statuses()).kb).toMatchObject({ status: 'complete', chunk_count: 3 });
    expect(queued).toEqual([]);
  });
});
