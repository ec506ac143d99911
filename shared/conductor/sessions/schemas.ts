import * as z from 'zod';
import { epochMs, idOf, lazySchema, queryInt } from '../../platform/http/schemas.ts';

/*
 * The assistant's sessions and messages (docs/assistant.md). A session works on what is
 * attached to it (typed references to the workspace's own objects), holds its messages in
 * order, and at most one action proposed and waiting for the user's confirmation.
 * Schemas are built on first use.
 */

/** The most objects a session works on at once: each is checked (a read as the caller) when attached. */
const MAX_ATTACHMENTS = 10;
/** The most messages a session keeps (a turn writes two): a longer conversation starts a new session. */
export const MAX_SESSION_MESSAGES = 200;
/** The longest message a user sends. */
const MAX_MESSAGE_CHARS = 8_000;

const ATTACHMENT_TYPES = ['agent', 'chat_agent', 'llm', 'conversation_flow', 'knowledge_base', 'call', 'chat', 'qa_cohort', 'qa_result', 'test_run'] as const;

export const Attachment = lazySchema(() =>
  z.object({
    type: z.enum(ATTACHMENT_TYPES),
    id: z.string().trim().min(1).max(128).regex(/^[A-Za-z0-9_+-]+$/, 'Must be an ID (letters, digits, _, + or -)'),
  }),
);
export type Attachment = z.infer<typeof Attachment>;

const attachments = () =>
  z
    .array(Attachment)
    .max(MAX_ATTACHMENTS, `A session works on at most ${MAX_ATTACHMENTS} attachments`)
    .superRefine((list, context) => {
      const seen = new Set<string>();
      list.forEach((item, index) => {
        const key = `${item.type}:${item.id}`;
        if (seen.has(key)) context.addIssue({ code: 'custom', path: [index], message: `Duplicate attachment ${item.type} ${item.id}` });
        seen.add(key);
      });
    });

export const CreateSessionBody = lazySchema(() =>
  z.object({
    title: z.string().trim().min(1).max(200).optional(),
    attachments: attachments().default([]),
  }),
);
export type CreateSessionInput = z.infer<typeof CreateSessionBody>;

export const PutAttachmentsBody = lazySchema(() => z.object({ attachments: attachments() }));

/** One step of a proposed action: a tool and its arguments (`{{steps.<n>.<field>}}` names an earlier step's answer). */
const ActionStep = () => z.object({ tool: z.string(), arguments: z.record(z.string(), z.unknown()) });

export const PendingAction = lazySchema(() =>
  z.object({
    action_id: z.string(),
    summary: z.string().describe('What confirming does, in words'),
    steps: z.array(ActionStep()).describe('The tools run, in order, once confirmed'),
    created_timestamp: epochMs(),
  }),
);
export type PendingAction = z.infer<typeof PendingAction>;

export const ToolCallRecord = lazySchema(() =>
  z.object({
    tool: z.string(),
    arguments: z.record(z.string(), z.unknown()),
    status: z.enum(['ok', 'refused', 'failed']).describe('`refused`: the API answered 4xx (the caller may not, or the input was invalid); `failed`: 5xx or unreachable'),
    http_status: z.number().int().optional(),
    result: z.unknown().optional().describe("The API's answer (secrets it hands out once are left out)"),
    error: z.string().optional().describe("The API's message when refused or failed"),
  }),
);
export type ToolCallRecord = z.infer<typeof ToolCallRecord>;

export const Message = lazySchema(() =>
  z.object({
    message_id: z.string(),
    role: z.enum(['user', 'assistant']),
    content: z.string(),
    tool_calls: z.array(ToolCallRecord).optional().describe('assistant: the tools it ran this turn, in order'),
    pending_action: PendingAction.optional().describe('assistant: the action it proposes, run only when the next message confirms it'),
    usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }).optional(),
    created_timestamp: epochMs(),
  }),
);
export type Message = z.infer<typeof Message>;

const sessionFields = () => ({
  session_id: z.string(),
  title: z.string().nullable(),
  attachments: z.array(Attachment),
  pending_action: PendingAction.nullable(),
  message_count: z.number().int(),
  created_timestamp: epochMs(),
  last_modification_timestamp: epochMs(),
});

export const Session = lazySchema(() => z.object(sessionFields()));
export type Session = z.infer<typeof Session>;

export const SessionWithMessages = lazySchema(() => z.object({ ...sessionFields(), messages: z.array(Message).describe('Oldest first') }));

export const SessionPage = lazySchema(() => z.object({ items: z.array(Session), has_more: z.boolean(), pagination_key: z.string().optional() }));

export const SessionListQuery = lazySchema(() =>
  z.object({
    limit: queryInt({ min: 1, max: 100, default: 50 }),
    pagination_key: idOf('conductorSession', 'an assistant session ID').optional(),
  }),
);

export const sessionIdParams = lazySchema(() => z.object({ session_id: idOf('conductorSession', 'an assistant session ID') }));

export const PostMessageBody = lazySchema(() =>
  z
    .object({
      content: z.string().max(MAX_MESSAGE_CHARS).default(''),
      confirm_action_id: idOf('conductorAction', 'a proposed action ID').optional().describe('Confirms the pending action (as "yes" does)'),
    })
    .superRefine((value, context) => {
      if (value.content.trim() === '' && value.confirm_action_id === undefined) {
        context.addIssue({ code: 'custom', path: ['content'], message: 'Send a message, or confirm_action_id' });
      }
    }),
);
export type PostMessageInput = z.infer<typeof PostMessageBody>;

export const Turn = lazySchema(() =>
  z.object({
    session_id: z.string(),
    user_message: Message,
    reply: Message,
    pending_action: PendingAction.nullable(),
  }),
);
export type Turn = z.infer<typeof Turn>;
