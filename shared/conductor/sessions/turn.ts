import { auditPut } from '../../account/index.ts';
import { badRequest, conflict } from '../../platform/errors.ts';
import { newTimeOrderedId } from '../../platform/ids.ts';
import { assertAssistantCanSpend, chargeAssistantMessage } from '../credits/index.ts';
import { respond } from '../model/index.ts';
import { outcomeText } from '../model/offline.ts';
import type { Caller } from '../tools/dispatch.ts';
import { ToolRunner } from '../tools/run.ts';
import { MAX_SESSION_MESSAGES, type PendingAction, type PostMessageInput, type ToolCallRecord, type Turn } from './schemas.ts';
import { toMessage } from './sessions.ts';
import { getSessionItem, listMessageItems, markPlaygroundTurn, recordTurn, type MessageItem } from './store.ts';

/*
 * One turn of a session (docs/assistant.md, "Messages" and "Confirmations"): the user's
 * message, then either the pending action it confirms (run now, step by step), or the
 * model's answer (offline rules or the language model with the tools), which may propose
 * a new action instead of running it. A pending action the message does not confirm is
 * cancelled. The turn's two messages, the session's new state and the audit entries of the
 * tools' changes are written together; the credits are charged after.
 */

const CONFIRMATION = /^(?:yes|y|yep|yeah|sure|ok|okay|confirm|confirmed|go ahead|do it|proceed)(?:,?\s+(?:please|do it|go ahead))?[\s.!]*$/i;
const REFUSAL = /^(?:no|n|nope|cancel|stop|never ?mind|don'?t)[\s.!]*$/i;

/** `{{steps.<n>.<field>}}` in a step's arguments: that field of step n's answer. */
function resolveArguments(value: unknown, done: readonly ToolCallRecord[]): unknown {
  if (typeof value === 'string') {
    const ref = /^\{\{steps\.(\d+)\.(\w+)\}\}$/.exec(value);
    if (!ref) return value;
    return (done[Number(ref[1])]?.result as Record<string, unknown> | undefined)?.[ref[2]!];
  }
  if (Array.isArray(value)) return value.map((item) => resolveArguments(item, done));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, resolveArguments(item, done)]));
  return value;
}

async function runAction(action: PendingAction, runner: ToolRunner): Promise<string> {
  const done: ToolCallRecord[] = [];
  for (const step of action.steps) {
    const record = await runner.run(step.tool, resolveArguments(step.arguments, done) as Record<string, unknown>);
    done.push(record);
    if (record.status !== 'ok') {
      const finished = done.slice(0, -1).map((earlier) => describe(earlier));
      return [`I could not finish "${action.summary}".`, ...finished, outcomeText(record)].join('\n');
    }
  }
  return [`Done: ${action.summary}.`, ...done.map(describe)].join('\n');
}

/** One line for a tool's success: what it made or changed, by ID. */
function describe(record: ToolCallRecord): string {
  const result = (record.result ?? {}) as Record<string, unknown>;
  const id = ['agent_id', 'llm_id', 'conversation_flow_id', 'call_id', 'chat_id', 'test_case_batch_job_id', 'knowledge_base_id'].find((name) => typeof result[name] === 'string');
  return `- ${record.tool}${id ? `: ${id} ${result[id]}` : ''}${typeof result.agent_name === 'string' ? ` ("${result.agent_name}")` : ''}`;
}

const tokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

export async function postMessage(caller: Caller, sessionId: string, body: PostMessageInput, options: { nowMs?: number } = {}): Promise<Turn> {
  const nowMs = options.nowMs ?? Date.now();
  const workspaceId = caller.principal.workspaceId;
  const session = await getSessionItem(workspaceId, sessionId);
  if (session.message_count + 2 > MAX_SESSION_MESSAGES) {
    throw conflict(`Assistant session ${sessionId} has reached its ${MAX_SESSION_MESSAGES} messages; start a new session`);
  }
  const pending = session.pending_action;
  if (body.confirm_action_id !== undefined && pending?.action_id !== body.confirm_action_id) {
    throw badRequest(`confirm_action_id: ${body.confirm_action_id} is not the action pending in this session`);
  }
  await assertAssistantCanSpend(workspaceId, nowMs);

  const content = body.content.trim();
  const runner = new ToolRunner(caller, sessionId);
  let text: string;
  let proposed: PendingAction | undefined;
  let usage = { input_tokens: tokens(content), output_tokens: 0 };
  if (pending && (body.confirm_action_id !== undefined || CONFIRMATION.test(content))) {
    text = await runAction(pending, runner);
  } else if (pending && (content === '' || REFUSAL.test(content))) {
    text = `Cancelled: ${pending.summary}.`;
  } else {
    const history = session.message_count > 0 ? await listMessageItems(workspaceId, sessionId) : [];
    const answer = await respond({
      caller,
      content,
      history,
      attachments: session.attachments,
      runner,
      nowMs,
      newActionId: () => newTimeOrderedId('conductorAction', nowMs),
    });
    text = pending ? `Cancelled: ${pending.summary}.\n\n${answer.text}` : answer.text;
    proposed = answer.pending;
    if (answer.usage) usage = answer.usage;
  }
  if (usage.output_tokens === 0) usage = { ...usage, output_tokens: tokens(text) };

  const replyMs = Math.max(Date.now(), nowMs + 1);
  const userMessage: MessageItem = {
    workspace_id: workspaceId,
    session_id: sessionId,
    message_id: newTimeOrderedId('conductorMessage', nowMs),
    role: 'user',
    content: body.content,
    created_timestamp: nowMs,
  };
  const reply: MessageItem = {
    workspace_id: workspaceId,
    session_id: sessionId,
    message_id: newTimeOrderedId('conductorMessage', replyMs),
    role: 'assistant',
    content: text,
    ...(runner.calls.length ? { tool_calls: runner.calls } : {}),
    ...(proposed ? { pending_action: proposed } : {}),
    usage,
    created_timestamp: replyMs,
  };
  // The tools' changes are the caller's, made through the assistant: the audit log says both.
  const actor = { ...caller.principal, conductorSessionId: sessionId };
  const audits = runner.audits.map((record) => auditPut(workspaceId, actor, record, replyMs));
  await recordTurn(session, { messages: [userMessage, reply], pending: proposed, nowMs: replyMs, extra: audits });
  if (runner.calls.some((call) => call.tool === 'playground_turn' && call.status === 'ok')) await markPlaygroundTurn(workspaceId, replyMs);
  await chargeAssistantMessage({ workspaceId, sessionId, messageId: reply.message_id, inputTokens: usage.input_tokens, outputTokens: usage.output_tokens, nowMs: replyMs });
  return { session_id: sessionId, user_message: toMessage(userMessage), reply: toMessage(reply), pending_action: proposed ?? null };
}

/** The turn as server-sent events (as the playground streams): each message, each tool call, then `done` with the turn. */
export function turnEvents(turn: Turn): string {
  const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
  return [
    event('message', turn.user_message),
    ...(turn.reply.tool_calls ?? []).map((call) => event('tool_call', call)),
    event('message', turn.reply),
    event('done', turn),
  ].join('');
}
