import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { createAgent, getAgent } from '../agents/index.ts';
import { badGateway, NotFound } from '../platform/errors.ts';
import { formatIssues } from '../platform/http/validation.ts';
import { defineOfflineShape, languageModel, type ChatMessage } from '../vendors/llm/index.ts';
import { createLlm, deleteLlm, getLlm } from '../agents/index.ts';
import { logger } from '../platform/logger.ts';
import { LLM_MODELS, type LlmModel } from '../agents/index.ts';
import { definedFields } from '../platform/objects.ts';
import { CreateAgentBody, LANGUAGES, RETELL_LLM_ENGINE, UpdateAgentBody, type Agent, type VersionReference } from '../agents/index.ts';
import type { CopilotInput, GenerateAgentInput } from './schemas.ts';
import { LlmBody, type Llm } from '../agents/index.ts';
import { assertVoiceUsable } from '../voices/index.ts';

/*
 * Agent generation and the copilot: both ask the language model (shared/llm) for one JSON
 * object, check it with the same schemas the create and update routes use, and never
 * trust it further than that. Generation writes through createLlm/createAgent; the
 * copilot only proposes changes.
 */

/** The model that writes agents and answers copilot questions (LLM_MODEL_MAP maps it to the provider's name). */
const AUTHORING_MODEL: LlmModel = 'gpt-4.1';
/** API Gateway gives up at 30 s: one model attempt gets at most this long. */
const MODEL_TIMEOUT_MS = 20_000;

const unusable = (what: string, detail: string) =>
  badGateway(`Language model returned an unusable ${what}: ${detail.slice(0, 500)}`);

function parseAnswer<S extends z.ZodType>(content: string, schema: S, what: string): z.output<S> {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch {
    throw unusable(what, 'not JSON');
  }
  const result = schema.safeParse(value, { reportInput: true });
  if (!result.success) throw unusable(what, formatIssues(result.error.issues, 'answer'));
  return result.data;
}

// ---------------------------------------------------------------------------------------
// Generation

const GENERATION_PROMPT = [
  'You design phone voice agents. From the user’s description, write one agent and answer with a JSON object',
  'with exactly these fields:',
  '- "agent_name": a short name for the agent (at most 60 characters);',
  '- "general_prompt": the agent’s system prompt, in Markdown, with sections for identity, task, style and',
  '  what to do when it cannot help; write for speech (short sentences, one question at a time);',
  '- "begin_message": the first sentence the agent says when the call connects;',
  `- "language": the BCP 47 tag of the language the callers speak, one of ${LANGUAGES.join(', ')}.`,
  'Answer with the JSON object only.',
].join('\n');

/** What the model must give back; anything more is dropped. */
const AgentDefinition = lazySchema(() =>
  z.object({
    agent_name: z.string().trim().min(1),
    general_prompt: z.string().trim().min(1),
    begin_message: z.string().nullable().optional(),
    language: z.string().optional(),
  }),
);

/**
 * `POST /generate-agent`: the model writes a name, prompt, first message and language;
 * the caller's own fields win over the model's. The LLM and agent go through the create
 * routes' schemas and domain functions, so every rule of theirs applies. The caller's
 * voice is checked before anything is written, and the LLM is removed again if the agent
 * cannot be created, so a failure leaves nothing behind.
 */
export async function generateAgent(workspaceId: string, input: GenerateAgentInput): Promise<{ agent: Agent; llm: Llm }> {
  if (input.voice_id) await assertVoiceUsable(workspaceId, input.voice_id);
  const completion = await languageModel().complete({
    model: AUTHORING_MODEL,
    messages: [
      { role: 'system', content: GENERATION_PROMPT },
      { role: 'user', content: input.description },
    ],
    temperature: 0.4,
    responseFormat: 'json',
    offlineHint: 'agent_definition',
    timeoutMs: MODEL_TIMEOUT_MS,
  });
  const definition = parseAnswer(completion.content, AgentDefinition, 'agent definition');
  const modelLanguage = (LANGUAGES as readonly string[]).includes(definition.language ?? '')
    ? (definition.language as (typeof LANGUAGES)[number])
    : undefined;

  const llmInput = LlmBody.safeParse(
    definedFields({
      general_prompt: definition.general_prompt,
      begin_message: definition.begin_message ?? undefined,
      model: input.model,
    }),
    { reportInput: true },
  );
  if (!llmInput.success) throw unusable('agent definition', formatIssues(llmInput.error.issues, 'llm'));
  const agentFields = (llmId: string) =>
    CreateAgentBody.safeParse(
      definedFields({
        response_engine: { type: RETELL_LLM_ENGINE, llm_id: llmId },
        agent_name: input.agent_name ?? definition.agent_name.slice(0, 200),
        language: input.language ?? modelLanguage,
        voice_id: input.voice_id,
      }),
      { reportInput: true },
    );
  // Checked before the LLM exists (with a placeholder ID), so a bad answer writes nothing.
  const preview = agentFields('llm_000000000000000000000000');
  if (!preview.success) throw unusable('agent definition', formatIssues(preview.error.issues, 'agent'));

  const llm = await createLlm(workspaceId, llmInput.data);
  try {
    const parsed = agentFields(llm.llm_id);
    if (!parsed.success) throw unusable('agent definition', formatIssues(parsed.error.issues, 'agent'));
    const agent = await createAgent(workspaceId, parsed.data);
    return { agent, llm };
  } catch (error) {
    await deleteLlm(workspaceId, llm.llm_id, { force: true, usedBy: async () => [] }).catch((cleanup: unknown) =>
      logger.error('generate-agent could not remove its LLM after a failure', { llm_id: llm.llm_id, error: cleanup }),
    );
    throw error;
  }
}

// ---------------------------------------------------------------------------------------
// Copilot

const COPILOT_PROMPT = [
  'You are the configuration copilot of a voice-agent platform. You answer questions about one agent and',
  'propose changes to its configuration, which the user applies themselves. Answer with a JSON object:',
  '{"reply": "<your answer, plain text>", "suggested_changes": null or {"agent": {<agent fields to change>},',
  '"llm": {<Retell LLM fields to change>}}}. Propose only fields shown in the configuration below, with',
  `values of the same type; "model" must be one of ${LLM_MODELS.join(', ')}. Propose nothing when the user`,
  'only asks a question. Never claim to have changed anything.',
].join('\n');

const CopilotAnswer = lazySchema(() =>
  z.object({
    reply: z.string().trim().min(1),
    suggested_changes: z
      .object({ agent: z.record(z.string(), z.unknown()).nullish(), llm: z.record(z.string(), z.unknown()).nullish() })
      .nullish(),
  }),
);

/** Fields the copilot may never propose: the engine binding and version bookkeeping. */
const NOT_SUGGESTED = new Set(['response_engine', 'version_title', 'version_description']);

/** Keeps the proposed fields that pass the update route's schema; drops the rest, field by field. */
function validChanges(schema: z.ZodType, proposed: Record<string, unknown> | null | undefined) {
  if (!proposed) return undefined;
  const kept: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(proposed)) {
    if (NOT_SUGGESTED.has(field)) continue;
    const result = schema.safeParse({ [field]: value });
    if (result.success && field in (result.data as Record<string, unknown>)) {
      kept[field] = (result.data as Record<string, unknown>)[field];
    }
  }
  return Object.keys(kept).length > 0 ? kept : undefined;
}

/** The configuration the copilot sees: the agent version and, for a Retell LLM engine, that LLM version. */
function configurationText(agent: Agent, llm: Llm | undefined): string {
  const text = JSON.stringify({ agent, ...(llm ? { llm } : {}) }, null, 1);
  // Prompts are large; the model sees at most ~60,000 characters of configuration.
  return text.length > 60_000 ? `${text.slice(0, 60_000)}\n…(truncated)` : text;
}

/**
 * `POST /agents/{agent_id}/copilot`: one turn of a stateless chat about an agent version
 * (the client sends earlier turns as `history`). Proposed changes are checked against the
 * update routes' schemas; invalid ones are dropped. Nothing is written.
 */
export async function askCopilot(workspaceId: string, agentId: string, version: VersionReference | undefined, input: CopilotInput) {
  const agent = await getAgent(workspaceId, agentId, version);
  const engine = agent.response_engine;
  let llm: Llm | undefined;
  if (engine?.type === RETELL_LLM_ENGINE) {
    llm = await getLlm(workspaceId, engine.llm_id, engine.version ?? undefined).catch((error: unknown) => {
      if (error instanceof NotFound) return undefined;
      throw error;
    });
  }
  const messages: ChatMessage[] = [
    { role: 'system', content: `${COPILOT_PROMPT}\n\nConfiguration:\n${configurationText(agent, llm)}` },
    ...input.history.map((turn) => ({ role: turn.role, content: turn.content })),
    { role: 'user', content: input.message },
  ];
  const completion = await languageModel().complete({
    model: AUTHORING_MODEL,
    messages,
    temperature: 0.2,
    responseFormat: 'json',
    offlineHint: 'copilot_reply',
    timeoutMs: MODEL_TIMEOUT_MS,
  });
  const answer = parseAnswer(completion.content, CopilotAnswer, 'copilot answer');
  const agentChanges = validChanges(UpdateAgentBody, answer.suggested_changes?.agent);
  const llmChanges = llm ? validChanges(LlmBody, answer.suggested_changes?.llm) : undefined;
  return {
    agent_id: agentId,
    version: agent.version,
    reply: answer.reply,
    suggested_changes:
      agentChanges || llmChanges ? { ...(agentChanges ? { agent: agentChanges } : {}), ...(llmChanges ? { llm: llmChanges } : {}) } : null,
  };
}

/** Offline: a deterministic reply naming the question; it proposes nothing. */
defineOfflineShape('copilot_reply', ({ user }) => ({
  reply: `You asked: "${user.length > 200 ? `${user.slice(0, 199)}…` : user}". This is Parley's offline model, which cannot review the configuration; set LLM_BASE_URL for real answers.`,
  suggested_changes: null,
}));
