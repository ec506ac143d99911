import { randomBytes } from 'node:crypto';
import { afterAll } from 'vitest';
import type { LocalServer } from '../../local/server.ts';
import { apiClient, type ApiClient } from './http.ts';

export interface TestApp {
  url: string;
  server: LocalServer;
  /** A client for a fresh workspace's Default key. */
  api: ApiClient;
  workspace: { workspace_id: string; name: string; api_key: string };
  newWorkspace(): Promise<{ workspace_id: string; name: string; api_key: string; api: ApiClient }>;
}

/**
 * Starts the local HTTP runtime in this test file (same handlers as Lambda) on a free
 * port, after applying `settings` (read once at load, like a Lambda's environment). With
 * `PORT` in the settings it listens there instead, so the links and redirects Parley
 * builds from its own address (PUBLIC_BASE_URL's default) lead back to it: for a browser
 * that follows them.
 */
export async function startTestApp(settings: Record<string, string> = {}): Promise<TestApp> {
  Object.assign(process.env, settings);
  const [{ startLocalServer }, { createWorkspace }] = await Promise.all([
    import('../../local/server.ts'),
    import('../../shared/account/workspaces.ts'),
  ]);
  const server = await startLocalServer({ port: Number(settings.PORT ?? 0), host: '127.0.0.1' });
  afterAll(() => server.close());
  const newWorkspace = async () => {
    const created = await createWorkspace(`Workspace ${randomBytes(3).toString('hex')}`);
    return { ...created, api: apiClient(server.url, created.api_key) };
  };
  const workspace = await newWorkspace();
  return { url: server.url, server, api: workspace.api, workspace, newWorkspace };
}
