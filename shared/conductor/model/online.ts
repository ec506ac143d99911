import { workspaceReliability } from '../../account/index.ts';
import { languageModel, LlmUnavailable, type ChatMessage, type Completion, type CompletionRequest } from '../../vendors/llm/index.ts';
import { TOOLS, toolNamed } from '../tools/catalog.ts';
import type { RespondInput, Response } from './turn-types.ts';
import { capabilitiesText, outcomeText } from './offline.ts';

/*
 * The assistant with a language model: the tools offered as functions, up to MAX_ROUNDS of
 * calls a turn, each run as the caller. A tool that needs confirmation is never run here:
 * the first such call becomes the turn's proposed action and the turn ends.
 */

/** The model the assistant asks; on LlmUnavailable, the workspace's fallback model (PUT /workspace/reliability). */
const ASSISTANT_MODEL = 'gpt-4.1';
const MAX_ROUNDS = 6;
const MAX_TOOL_RESULT_CHARS = 8_000;
const HISTORY_MESSAGES = 20;

/**
 * Asks `model.current`; when it is unavailable, asks the fallback once and keeps it for the
 * rest of the turn: a primary that just failed all its retries would most likely fail the
 * next round too, and each failure costs the retries' back-off. The next turn tries the
 * primary first again.
 */
async function complete(request: Omit<CompletionRequest, 'model'>, model: { current: string }, fallbackModel: string | undefined): Promise<Completion> {
  try {
    return await languageModel().complete({ ...request, model: model.current });
  } catch (error) {
    if (!(error instanceof LlmUnavailable) || !fallbackModel || fallbackModel === model.current) throw error;
    model.current = fallbackModel;
    return languageModel().complete({ ...request, model: fallbackModel });
  }
}

function systemPrompt(input: RespondInput): string {
  const attached = input.attachments.map((attachment) => `${attachment.type} ${attachment.id}`).join(', ') || 'nothing';
  return [
    "You are Parley's assistant. You build, test and fix the user's voice and chat agents by calling tools, which are Parley's own API run with the user's own credential and role.",
    'Tools marked as asking to confirm first (publishing, deleting, spending, placing calls) are not run when you call them: the call is shown to the user as a proposal they confirm in their next message. Propose at most one such action a turn.',
    'When a tool is refused, say so plainly with the reason; never claim a change you did not make. Propose prompt changes as unified diffs.',
    `The session works on: ${attached}.`,
    capabilitiesText(),
  ].join('\n\n');
}

export async function onlineTurn(input: RespondInput): Promise<Response> {
  const reliability = await workspaceReliability(input.caller.principal.workspaceId);
  const messages: ChatMessage[] = [
    { role: 'system', content: systemPrompt(input) },
    ...input.history.slice(-HISTORY_MESSAGES).map((message): ChatMessage => ({ role: message.role, content: message.content })),
    { role: 'user', content: input.content },
  ];
  const tools = TOOLS.map((tool) => ({ name: tool.name, description: `${tool.description}${tool.confirm ? ' (asks the user to confirm first)' : ''}`, parameters: tool.parameters }));
  const usage = { input_tokens: 0, output_tokens: 0 };
  const model = { current: ASSISTANT_MODEL };
  for (let round = 0; round < MAX_ROUNDS; round++) {
    let answer: Completion;
    try {
      answer = await complete({ messages, tools, temperature: 0.2, maxTokens: 1_500 }, model, reliability.fallbackLlmModel);
    } catch (error) {
      // Before any tool ran, the message fails as the provider did and nothing is kept. After,
      // the tools' changes are made: the turn ends here so they are recorded (the session's
      // tool calls, the audit entries) and the tokens so far are charged.
      if (input.runner.calls.length === 0) throw error;
      const reason = error instanceof Error ? error.message : String(error);
      return { text: `I stopped here: the language model did not answer (${reason}). The tool calls above were made; tell me how to go on.`, usage };
    }
    usage.input_tokens += answer.usage.prompt_tokens;
    usage.output_tokens += answer.usage.completion_tokens;
    if (!answer.toolCalls?.length) return { text: answer.content.trim() || '…', usage };
    messages.push({ role: 'assistant', content: answer.content, toolCalls: answer.toolCalls });
    for (const call of answer.toolCalls) {
      let args: Record<string, unknown>;
      try {
        const parsed: unknown = JSON.parse(call.arguments || '{}');
        args = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
      } catch {
        messages.push({ role: 'tool', toolCallId: call.id, content: 'Not run: the arguments were not a JSON object' });
        continue;
      }
      const tool = toolNamed(call.name);
      if (tool?.confirm) {
        const summary = `${tool.name} with ${JSON.stringify(args)}`;
        const text = `${answer.content.trim() ? `${answer.content.trim()}\n\n` : ''}I can do this: ${summary}. Reply "yes" (or send confirm_action_id) to go ahead; anything else cancels it.`;
        return { text, usage, pending: { action_id: input.newActionId(), summary, steps: [{ tool: tool.name, arguments: args }], created_timestamp: input.nowMs } };
      }
      const record = await input.runner.run(call.name, args);
      const shown = record.status === 'ok' ? JSON.stringify({ status: record.http_status, result: record.result }) : outcomeText(record);
      messages.push({ role: 'tool', toolCallId: call.id, content: shown.slice(0, MAX_TOOL_RESULT_CHARS) });
    }
  }
  return { text: 'I stopped after several tool calls without finishing; tell me what to do next.', usage };
}
