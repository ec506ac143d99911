import { dataDir, runningRuntime, runningServers } from '../runtime.ts';
import { FatalError } from './client.ts';
import { importRetell, type Kind } from './import-retell.ts';
import { summaryTable } from './report.ts';

/*
 * The CLI side of import-retell (local/cli.ts checks the options): finds the target, runs the
 * import with progress on stderr, prints the plan (dry run) or the summary table on stdout,
 * and answers the exit code: 0 when everything moved or needed nothing, 1 when anything
 * failed or the run stopped.
 */

export interface ImportCommand {
  fromKey: string;
  fromUrl: string;
  toUrl?: string;
  toKey?: string;
  /** On the local runtime: a workspace of the running `npm start`, for which a key is minted. */
  workspace?: string;
  only: string[];
  dryRun: boolean;
  mapping: string;
}

const trimSlash = (url: string) => (url.endsWith('/') ? url.slice(0, -1) : url);

export async function runImport(command: ImportCommand): Promise<number> {
  let target: { url: string; key: string };
  try {
    target = command.workspace !== undefined ? await localTarget(command.workspace) : { url: command.toUrl!, key: command.toKey! };
  } catch (error) {
    console.error(`import-retell: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
  try {
    const result = await importRetell({
      from: { url: trimSlash(command.fromUrl), key: command.fromKey },
      to: { url: trimSlash(target.url), key: target.key },
      only: command.only as Kind[],
      dryRun: command.dryRun,
      mappingPrefix: command.mapping,
      stderr: process.stderr,
    });
    if (command.dryRun) {
      console.log(['Dry run: nothing was written. The plan:', ...result.plan.map((line) => `  ${line}`), ''].join('\n'));
    }
    console.log(summaryTable(result.rows));
    if (!command.dryRun) console.error(`Mapping written to ${command.mapping}.json and ${command.mapping}.csv`);
    return result.exitCode;
  } catch (error) {
    if (error instanceof FatalError) {
      console.error(`import-retell stopped: ${error.message}`);
      if (!command.dryRun) console.error(`Run the same command again to resume (state in ${command.mapping}.state.json).`);
      return 1;
    }
    throw error;
  }
}

/**
 * `--workspace <id>`: the running `npm start` (of DATA_DIR, else the only one running) and
 * a new API key of that workspace, minted in its store as create-workspace writes there.
 */
async function localTarget(workspaceId: string): Promise<{ url: string; key: string }> {
  const servers = runningServers();
  const server = runningRuntime() ?? (servers.length === 1 ? servers[0] : undefined);
  if (!server?.url) {
    throw new Error(
      servers.length > 1
        ? `${servers.length} Parley servers are running and none uses ${dataDir()}; name the one to use with DATA_DIR`
        : 'no Parley server is running: start one with `npm start`, or give --to-url and --to-key',
    );
  }
  process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
  process.env.DATA_DIR = server.data_dir ?? dataDir();
  process.env.DYNAMODB_ENDPOINT = server.dynamodb_endpoint;
  process.env.TABLE_NAME = server.table_name;
  const created = await mintImportKey(workspaceId);
  console.error(`Minted API key ${created.api_key_id} ("import-retell") of workspace ${workspaceId}; delete it when the import is done.`);
  return { url: server.url, key: created.api_key };
}

/**
 * A full-access API key of `workspaceId` named `import-retell`, written to the store the
 * environment names (the running server's, set by localTarget). Loaded late: the store's
 * modules read their settings when first imported.
 */
export async function mintImportKey(workspaceId: string): Promise<{ api_key_id: string; api_key: string }> {
  const [{ createApiKey }, { CreateApiKeyBody }] = await Promise.all([
    import('../../shared/account/api-keys.ts'),
    import('../../shared/account/schemas.ts'),
  ]);
  return createApiKey(
    { kind: 'secret', workspaceId, credentialId: 'import-retell', scopes: [], capabilities: [] },
    CreateApiKeyBody.parse({ name: 'import-retell' }),
  );
}

