import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { offlineEmbedding } from '../../shared/vendors/llm/embeddings.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgent, newChatAgent } from '../support/factories.ts';
import { completion, defaultReply, startFakeOpenAi, type RecordedRequest } from '../support/fake-openai.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Retrieval with the OpenAI-compatible embeddings configured (LLM_BASE_URL and
 * LLM_EMBEDDING_MODEL at a fake provider, which answers /embeddings with deterministic
 * vectors and chat completions with a fixed reply): the index is built from the provider's
 * vectors, a labelled set finds its answers, and sandbox calls and chats retrieve before
 * answering, put the chunks in the model's prompt and record them for kb-retrievals.
 */

const fake = await startFakeOpenAi();
const embeddingsAnswer = (request: RecordedRequest) => ({
  body: {
    object: 'list',
    model: request.body.model,
    data: (request.body.input as string[]).map((text, index) => ({ object: 'embedding', index, embedding: Array.from(offlineEmbedding(text)) })),
  },
});
fake.setDefault((request) => {
  if (request.path.endsWith('/embeddings')) return embeddingsAnswer(request);
  if (request.body?.response_format) {
    return { body: completion(JSON.stringify({ call_summary: 'ok', user_sentiment: 'Neutral', call_successful: true, in_voicemail: false, custom_analysis_data: {} })) };
  }
  return defaultReply(request);
});

const app = await startTestApp({ LLM_BASE_URL: fake.url, LLM_EMBEDDING_MODEL: 'text-embedding-3-small' });
const background = startBackgroundWork();
afterAll(() => background.stop());

/** A small help centre: one fact a source, the answers of the labelled questions among them. */
const FACTS: Record<string, string> = {
  hours: 'Opening hours: the clinic is open from 8 am to 6 pm Monday to Friday, and closed on weekends.',
  parking: 'Parking: free parking is available in the garage under the building; take a ticket at the barrier.',
  insurance: 'Insurance: we accept most dental insurance plans, including Delta and Cigna, and bill them directly.',
  cancel: 'Cancellations: please cancel at least 24 hours before your appointment or a fee of 50 dollars applies.',
  whitening: 'Whitening: teeth whitening takes about one hour and costs 300 dollars per session.',
  children: 'Children: our paediatric dentist sees kids from age two, with a play corner in the waiting room.',
  emergency: 'Emergencies: for a dental emergency outside opening hours, call the on-call line at 555 0199.',
  payment: 'Payment: we take cash, credit cards and monthly payment plans for treatments above 1000 dollars.',
  xray: 'X-rays: digital x-rays use very low radiation and are taken once a year during the check-up.',
  address: 'Address: the clinic is at 12 Harbour Street, second floor, next to the pharmacy.',
  wifi: 'Guest wifi: the network is ClinicGuest and the password is on the reception desk card.',
  staff: 'Team: Dr. Lee founded the clinic in 2009 and leads a team of four dentists and six hygienists.',
};

const QUESTIONS: [string, string][] = [
  ['When are you open?', 'hours'],
  ['Where can I park my car?', 'parking'],
  ['Do you take my insurance?', 'insurance'],
  ['Is there a fee if I cancel late?', 'cancel'],
  ['How much does whitening cost?', 'whitening'],
  ['Can my son who is three come?', 'children'],
  ['My tooth broke at night, who do I call?', 'emergency'],
  ['Can I pay in instalments?', 'payment'],
  ['Are x-rays safe?', 'xray'],
  ['What is your street address?', 'address'],
];

async function helpCentre(ws: { api: any }) {
  const res = await ws.api.post('/create-knowledge-base', {
    body: { knowledge_base_name: 'Clinic', knowledge_base_texts: Object.entries(FACTS).map(([title, text]) => ({ title, text })) },
  });
  expect(res.status).toBe(201);
  const kb = await eventually(
    async () => (await ws.api.get(`/get-knowledge-base/${res.body.knowledge_base_id}`)).body,
    (body: any) => body.status === 'complete',
    30_000,
  );
  const sourceOf = Object.fromEntries(kb.knowledge_base_sources.map((source: any) => [source.title, source.source_id])) as Record<string, string>;
  return { kb, sourceOf };
}

describe('the index with OpenAI-compatible embeddings', () => {
  it('embeds every chunk through /embeddings, and finds the answer chunk in the top 3 for at least 9 of 10 labelled questions', async () => {
    const ws = await app.newWorkspace();
    fake.reset();
    fake.setDefault((request) => (request.path.endsWith('/embeddings') ? embeddingsAnswer(request) : defaultReply(request)));
    const { kb, sourceOf } = await helpCentre(ws);
    const embeddingCalls = fake.requests.filter((request) => request.path.endsWith('/embeddings'));
    expect(embeddingCalls.length).toBeGreaterThanOrEqual(1);
    expect(embeddingCalls[0]!.body.model).toBe('text-embedding-3-small');
    expect(embeddingCalls.flatMap((request) => request.body.input)).toHaveLength(Object.keys(FACTS).length);

    const { retrieve } = await import('../../shared/knowledge-bases/index.ts');
    let found = 0;
    for (const [question, answer] of QUESTIONS) {
      const chunks = await retrieve({ workspaceId: ws.workspace_id, knowledgeBaseIds: [kb.knowledge_base_id], query: question, topK: 3 });
      expect(chunks.length).toBeGreaterThan(0);
      for (const chunk of chunks) {
        expect(chunk.score).toBeCloseTo(0.5 * chunk.lexical_score + 0.5 * chunk.vector_score, 3);
        expect(chunk.vector_score).toBeGreaterThanOrEqual(0);
        expect(chunk.vector_score).toBeLessThanOrEqual(1);
      }
      if (chunks.some((chunk) => chunk.source_id === sourceOf[answer])) found++;
    }
    expect(found, `${found} of ${QUESTIONS.length} answers in the top 3`).toBeGreaterThanOrEqual(9);
  });
});

describe('retrieval in conversations', () => {
  it('a sandbox call retrieves before answering: the chunk is in the prompt and in kb-retrievals', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const { kb, sourceOf } = await helpCentre(ws);
    const { agent } = await newAgent(ws.api, {
      llm: { general_prompt: 'You are the clinic front desk.', begin_message: 'Hello, clinic.', knowledge_base_ids: [kb.knowledge_base_id] },
    });
    const number = freshNumber();
    const imported = await ws.api.post('/import-phone-number', {
      body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
    });
    expect(imported.status).toBe(201);
    fake.reset();
    fake.setDefault((request) => {
      if (request.path.endsWith('/embeddings')) return embeddingsAnswer(request);
      if (request.body?.response_format) {
        return { body: completion(JSON.stringify({ call_summary: 'ok', user_sentiment: 'Neutral', call_successful: true, in_voicemail: false, custom_analysis_data: {} })) };
      }
      return defaultReply(request);
    });
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155550123',
      metadata: { sandbox_call_ms: 1500, sandbox_user_says: ['Where can I park my car?'] },
    });
    await eventually(() => client.call.retrieve(created.call_id) as Promise<any>, (call) => call.call_status === 'ended', 30_000);

    const retrievals = await ws.api.get(`/kb-retrievals/${created.call_id}`);
    expect(retrievals.status).toBe(200);
    expect(retrievals.body.call_id).toBe(created.call_id);
    expect(retrievals.body.retrievals).toHaveLength(1);
    const [first] = retrievals.body.retrievals;
    expect(first).toMatchObject({ query: 'Where can I park my car?', knowledge_base_ids: [kb.knowledge_base_id] });
    expect(first.retrieval_id).toMatch(/^kb_retrieval_[0-9a-f]{24}$/);
    expect(first.chunks.length).toBeGreaterThanOrEqual(1);
    expect(first.chunks.length).toBeLessThanOrEqual(3);
    expect(first.chunks[0]).toMatchObject({ knowledge_base_id: kb.knowledge_base_id, source_id: sourceOf.parking, content: FACTS.parking });

    // The model was asked with the chunk in its system prompt.
    const asked = fake.requests.filter((request) => !request.path.endsWith('/embeddings') && JSON.stringify(request.body.messages ?? []).includes('Where can I park my car?'));
    expect(asked.length).toBeGreaterThanOrEqual(1);
    const system = asked[0]!.body.messages[0];
    expect(system.role).toBe('system');
    expect(system.content).toContain('You are the clinic front desk.');
    expect(system.content).toContain('## Knowledge base');
    expect(system.content).toContain(`[1] ${FACTS.parking}`);

    // Another workspace cannot read them.
    const other = await app.newWorkspace();
    const hidden = await other.api.get(`/kb-retrievals/${created.call_id}`);
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ status: 404, message: `No knowledge base retrievals for ${created.call_id}` });
  }, 60_000);

  it('a chat completion retrieves from its chat agent\'s knowledge bases (kb_config top_k), recorded under the chat ID', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const { kb, sourceOf } = await helpCentre(ws);
    const { chatAgent } = await newChatAgent(ws.api, {
      llm: { general_prompt: 'You help.', knowledge_base_ids: [kb.knowledge_base_id], kb_config: { top_k: 1 } },
    });
    const chat = await client.chat.create({ agent_id: chatAgent.agent_id });
    await client.chat.createChatCompletion({ chat_id: chat.chat_id, content: 'How much does whitening cost?' });
    await client.chat.createChatCompletion({ chat_id: chat.chat_id, content: 'Is there a fee if I cancel late?' });
    const res = await ws.api.get(`/kb-retrievals/${chat.chat_id}`);
    expect(res.status).toBe(200);
    expect(res.body.retrievals.map((r: any) => r.query)).toEqual(['How much does whitening cost?', 'Is there a fee if I cancel late?']);
    expect(res.body.retrievals.map((r: any) => r.chunks.map((c: any) => c.source_id))).toEqual([[sourceOf.whitening], [sourceOf.cancel]]);
  }, 60_000);

  it('an LLM without knowledge bases records nothing', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const { chatAgent } = await newChatAgent(ws.api, { llm: { general_prompt: 'You help.' } });
    const chat = await client.chat.create({ agent_id: chatAgent.agent_id });
    await client.chat.createChatCompletion({ chat_id: chat.chat_id, content: 'Hello?' });
    expect((await ws.api.get(`/kb-retrievals/${chat.chat_id}`)).status).toBe(404);
  });
});
