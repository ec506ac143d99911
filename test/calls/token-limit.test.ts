import { describe, expect, it } from 'vitest';
import { openConversation } from '../../shared/calls/engine/agent-runtime.ts';
import { DEFAULT_LLM_TOKEN_LIMIT } from '../../shared/conversation/limits.ts';
import { startTestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';

const app = await startTestApp();

describe("a call's conversation and the workspace LLM token limit", () => {
  it('opens with the limit PUT /workspace/reliability set, else the runtime default', async () => {
    const [limited, plain] = await Promise.all([app.newWorkspace(), app.newWorkspace()]);
    expect((await limited.api.put('/workspace/reliability', { body: { llm_token_limit: 2048 } })).status).toBe(200);
    const open = async (ws: typeof limited) => {
      const { agent } = await newAgent(ws.api);
      return openConversation({ workspaceId: ws.workspace_id, agentId: agent.agent_id, agentVersion: 0, callId: 'call_000000000000000000000001', channel: 'voice', dynamicVariables: {} });
    };
    expect((await open(limited)).token_limit).toBe(2048);
    expect((await open(plain)).token_limit).toBe(DEFAULT_LLM_TOKEN_LIMIT);
  });
});
