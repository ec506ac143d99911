import { describe, expect, it } from 'vitest';
import { MAX_BODY_STRING, MAX_BODY_TEXT } from '../../shared/agent-tools/schemas.ts';
import { startTestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';

const app = await startTestApp();
const newAgentId = async () => (await newAgent(app.api)).agent.agent_id as string;

const step = (extra: Record<string, unknown>) => ({ type: 'http', name: 'lookup', url: 'http://127.0.0.1:4009/x', outputs: {}, ...extra });

describe('workflow templates', () => {
  it('take a header of "{{" and thousands of spaces as literal text, without stalling the server', async () => {
    // The former pattern spent about 30 s on this value.
    const agentId = await newAgentId();
    const value = '{{' + ' '.repeat(3990);
    const res = await app.api.put(`/agents/${agentId}/workflows/pre_call`, { body: { steps: [step({ headers: { 'x-note': value } })] } });
    expect(res.status).toBe(200);
    expect(res.body.steps[0].headers['x-note']).toBe(value);
  });

  it('check every string of a JSON step body like the other templates', async () => {
    const agentId = await newAgentId();
    const put = (body: unknown) => app.api.put(`/agents/${agentId}/workflows/pre_call`, { body: { steps: [step({ method: 'POST', body })] } });

    const long = await put({ a: [{ b: 'x'.repeat(MAX_BODY_STRING + 1) }] });
    expect(long.status).toBe(400);
    expect(long.body.message).toBe(`steps.0.body.a.0.b: Must be at most ${MAX_BODY_STRING} characters`);

    const malformed = await put({ greeting: 'Hello {{ first name }}' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.message).toBe('steps.0.body.greeting: Malformed template {{ first name }}: use {{variable_name}}');

    const many = await put(Array.from({ length: 11 }, () => 'y'.repeat(MAX_BODY_STRING)));
    expect(many.status).toBe(400);
    expect(many.body.message).toBe(`steps.0.body: Must hold at most ${MAX_BODY_TEXT} characters of text in all`);

    const fine = await put({ name: '{{ first_name }}', tags: ['a', { deep: '{{last_name}}' }] });
    expect(fine.status).toBe(200);
  });
});
