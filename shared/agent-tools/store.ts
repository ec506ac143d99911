import { sha256 } from '../platform/crypto/hash.ts';
import { notFound } from '../platform/errors.ts';
import { keys } from '../platform/store/keys.ts';
import { defineEntity } from '../platform/store/table.ts';
import type { WorkflowStage, WorkflowStep } from './schemas.ts';

/*
 * The agent tools' items, each declared once with its key (keys from the keys module).
 * Share links and workflows belong to a voice agent, whose head is the versioned-resource
 * store's (shared/platform/store/versions.ts): their writes check it in the same transaction.
 */

/** An item's key as a type alias (an interface does not satisfy defineEntity's `Record`). */
type Keyed = { pk: string; sk: string };

/** The voice agent's head, which a share link or workflow write requires to exist. */
export const agentHeadKey = (workspaceId: string, agentId: string) => keys.resourceHead(workspaceId, 'agent', agentId);

/** A share link's agent head: a voice agent's, or a chat agent's (public chats), by the ID's prefix. */
export const shareAgentKind = (agentId: string) => (agentId.startsWith('chat_agent_') ? ('chat_agent' as const) : ('agent' as const));
export const shareAgentHeadKey = (workspaceId: string, agentId: string) => keys.resourceHead(workspaceId, shareAgentKind(agentId), agentId);

/** A share link as the API answers it (share-links.ts). */
export interface ShareLink {
  share_link_id: string;
  agent_id: string;
  token: string;
  enabled: boolean;
  url_path: string;
  created_timestamp: number;
  revoked_timestamp?: number;
}

/** A share link's record, in the workspace partition (found by ID, listed by prefix). Pick makes the interface a Record. */
export type ShareLinkItem = Pick<ShareLink, keyof ShareLink> & Keyed & { workspace_id: string };

export const shareLinks = defineEntity<ShareLinkItem, [workspaceId: string, shareLinkId: string]>({
  key: keys.shareLink,
  notFound: (_workspaceId, shareLinkId) => notFound(`Share link ${shareLinkId} not found`),
});
export const shareLinksOf = keys.shareLinks;

/** The public lookup of an enabled share link, by the SHA-256 of its token; exists only while the link is enabled. */
export type TokenItem = Keyed & { workspace_id: string; agent_id: string; share_link_id: string };
export const shareTokenKey = (token: string) => keys.shareLinkToken(sha256(token));

/** A workflow and its runs as the API answers them (workflows.ts). */
export interface Workflow {
  agent_id: string;
  stage: WorkflowStage;
  enabled: boolean;
  steps: WorkflowStep[];
  last_modification_timestamp: number;
}

export interface StepLog {
  name: string;
  type: WorkflowStep['type'];
  status: 'succeeded' | 'failed' | 'skipped';
  duration_ms: number;
  outputs: string[];
  missing_outputs?: string[];
  error?: string;
  request?: { method: string; url: string };
  response_status?: number;
  response_excerpt?: string;
  model?: string;
}

export interface WorkflowRun {
  run_id: string;
  agent_id: string;
  stage: WorkflowStage;
  trigger: 'test' | 'call';
  call_id?: string;
  status: 'succeeded' | 'failed';
  outputs: Record<string, string>;
  steps: StepLog[];
  started_timestamp: number;
  duration_ms: number;
}

/** An agent's workflow for one stage, among the agent's children (deleted with it). */
export type WorkflowItem = Workflow & Keyed;
export const workflowKey = keys.agentWorkflow;
export const workflowsOf = keys.agentWorkflows;

/** A recorded workflow run (expires by TTL `expires_at`). */
export type WorkflowRunItem = WorkflowRun & Keyed & { expires_at: number };
export const workflowRunKey = keys.workflowRun;
export const workflowRunsOf = keys.workflowRuns;

/**
 * Other domains' items that repair only tests for existence (their keys, from the keys
 * module): a workspace's own voice and a knowledge base's record.
 */
export const workspaceVoiceKey = keys.workspaceVoice;
export const knowledgeBaseKey = keys.knowledgeBase;
