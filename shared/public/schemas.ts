import * as z from 'zod';
import { dynamicVariables, epochMs, lazySchema } from '../platform/http/schemas.ts';
import { Chat, ChatMessage } from '../chats/index.ts';
import { publicVariablesProblem } from '../platform/auth/public-start.ts';

/*
 * The public routes' contract (spec: Public; docs/browser.md). Shapes the spec does not show
 * are ours; the chats' own shapes are reused where a public route answers a chat.
 */

/** Dynamic variables from a share link's page: bounded as a public key's are (public-start.ts). */
const browserVariables = () =>
  dynamicVariables().superRefine((variables, ctx) => {
    const problem = publicVariablesProblem(variables);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

/** A public chat's secret: 32 random bytes, base64url (43 characters). */
const chatSecret = () => z.string().min(1).max(200);

export const StartPublicChatBody = lazySchema(() =>
  z.object({
    agent_id: z.string().regex(/^chat_agent_[0-9a-f]{24}$/, 'Must be a chat agent ID (chat_agent_ followed by 24 hex characters)'),
    retell_llm_dynamic_variables: dynamicVariables().optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  }),
);
export type StartPublicChatInput = z.infer<typeof StartPublicChatBody>;

export const PublicChatStarted = lazySchema(() => Chat.and(z.object({ chat_secret: z.string() })));

export const publicChatParams = lazySchema(() => z.object({ chat_id: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'Must be a chat ID') }));

export const PublicChatMessageBody = lazySchema(() =>
  z.object({
    content: z.string().min(1).max(10_000),
    chat_secret: chatSecret(),
  }),
);

export const PublicChatEndBody = lazySchema(() => z.object({ chat_secret: chatSecret() }));

export const PublicChatReply = lazySchema(() =>
  z.object({
    chat_id: z.string(),
    chat_status: z.string(),
    messages: z.array(ChatMessage),
  }),
);

export const PublicChatEnded = lazySchema(() => z.object({ chat_id: z.string(), chat_status: z.string() }));

export const shareTokenParams = lazySchema(() => z.object({ token: z.string().min(1).max(200) }));

export const PublicShare = lazySchema(() =>
  z.object({
    agent_id: z.string(),
    agent_name: z.string().nullable(),
    agent_type: z.enum(['voice', 'chat']),
    /** What the page may start with this link: `web_call` (voice agents) or `chat` (chat agents). */
    start: z.enum(['web_call', 'chat']),
    web_call_path: z.string().nullable(),
    chat_path: z.string().nullable(),
  }),
);

export const ShareWebCallBody = lazySchema(() => z.object({ retell_llm_dynamic_variables: browserVariables().optional() }));

export const ShareWebCall = lazySchema(() =>
  z.object({
    call_id: z.string(),
    agent_id: z.string(),
    call_status: z.string(),
    access_token: z.string(),
    expires_at: epochMs(),
    livekit_url: z.string(),
    transport: z.literal('livekit'),
    ice_servers: z.array(z.object({ urls: z.union([z.string(), z.array(z.string())]), username: z.string().optional(), credential: z.string().optional() })),
  }),
);

export const ShareChatBody = lazySchema(() => z.object({ retell_llm_dynamic_variables: browserVariables().optional() }));

export const ShareChatStarted = lazySchema(() =>
  z.object({
    chat_id: z.string(),
    chat_secret: z.string(),
    agent_id: z.string(),
    chat_status: z.string(),
    messages: z.array(ChatMessage),
  }),
);

export const publicCallParams = lazySchema(() => z.object({ call_id: z.string().regex(/^call_[0-9a-f]{24}$/, 'Must be a call ID') }));
/** The call's access token may come as `?access_token=` (an EventSource or an <img> cannot set headers). */
export const publicCallQuery = lazySchema(() => z.object({ access_token: z.string().max(4096).optional() }));

export const PublicCallLog = lazySchema(() =>
  z.object({
    call_id: z.string(),
    call_status: z.string(),
    agent_id: z.string(),
    start_timestamp: epochMs().nullable(),
    end_timestamp: epochMs().nullable(),
    disconnection_reason: z.string().nullable(),
    transcript: z.string(),
    transcript_object: z.array(z.unknown()),
  }),
);

export const PublicKbRetrievals = lazySchema(() => z.object({ call_id: z.string(), retrievals: z.array(z.unknown()) }));
