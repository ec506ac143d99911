import { providerEntry, TOOLS, type ToolDefinition } from '../catalogue.ts';
import { getApps } from '../store.ts';

/*
 * The integrations domain's narrow entry for agent tools that use an app (docs/integrations.md,
 * "App tools"): what the agents domain checks when an LLM or a flow is saved, what agent repair
 * asks, and the tool definitions the conversation runtime offers the model. It reads app items
 * and the catalogue only (no OAuth, vendor clients or settings), so the agents and flows
 * functions bundle it without the rest of the domain (the lint rule allows
 * `./index.ts` beside every index.ts, as it allows calls/records/index.ts).
 */

/** The CRM providers, each of which may have a partition of synced-object records in a workspace (the workspace purge empties them). */
export { CRM_PROVIDERS } from '../catalogue.ts';

/** An `app` tool's reference as found in a saved configuration: where it is (`general_tools.0`), its app and tool name. */
export interface AppToolRef {
  path: string;
  app_id: string;
  tool: string;
}

/**
 * The problems of these references, each `path.field: issue` (empty when every app exists
 * in the workspace and its provider has the tool). One batch read of the apps.
 */
export async function appToolProblems(workspaceId: string, refs: readonly AppToolRef[]): Promise<string[]> {
  if (!refs.length) return [];
  const apps = new Map((await getApps(workspaceId, refs.map((ref) => ref.app_id))).map((app) => [app.app_id, app]));
  const problems: string[] = [];
  for (const ref of refs) {
    const app = apps.get(ref.app_id);
    if (!app) {
      problems.push(`${ref.path}.app_id: App ${ref.app_id} not found`);
      continue;
    }
    const tools = providerEntry(app.provider)?.tools ?? [];
    if (!tools.includes(ref.tool)) {
      problems.push(`${ref.path}.tool: ${app.provider} has no tool ${ref.tool} (it has ${tools.join(', ') || 'none'}; GET /get-app-tool-schema?app_id=${app.app_id})`);
    }
  }
  return problems;
}

/** Which of these app IDs exist in the workspace. */
export async function existingAppIds(workspaceId: string, appIds: readonly string[]): Promise<Set<string>> {
  return new Set((await getApps(workspaceId, appIds)).map((app) => app.app_id));
}

/** A catalogue tool's JSON-schema definition (name, description, parameters), or undefined for an unknown name. */
export function appToolDefinition(tool: string): ToolDefinition | undefined {
  return Object.hasOwn(TOOLS, tool) ? TOOLS[tool] : undefined;
}
