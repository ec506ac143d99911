import { listHeads } from '../../platform/store/versions.ts';

/**
 * The Retell LLMs and conversation flows whose latest version names a knowledge base in
 * `knowledge_base_ids` (the knowledge-bases domain refuses to delete one in use). Two
 * queries of the workspace's heads; older versions are not searched.
 */
export async function knowledgeBaseUsers(workspaceId: string, knowledgeBaseId: string): Promise<{ llm_ids: string[]; conversation_flow_ids: string[] }> {
  const [llms, flows] = await Promise.all([listHeads(workspaceId, 'llm'), listHeads(workspaceId, 'conversation_flow')]);
  const uses = (data: Record<string, unknown>) => Array.isArray(data.knowledge_base_ids) && data.knowledge_base_ids.includes(knowledgeBaseId);
  return {
    llm_ids: llms.filter((head) => uses(head.latest.data)).map((head) => head.id),
    conversation_flow_ids: flows.filter((head) => uses(head.latest.data)).map((head) => head.id),
  };
}
