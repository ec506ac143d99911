import './quiet-aws-sdk.ts';
import { parseArgs } from 'node:util';
import { dataDir, prepareLocalStore, runningRuntime, runningServers, type RuntimeFile } from './runtime.ts';

/**
 * `npm run cli -- test …` runs a batch test against any Parley by its base URL and an API
 * key (`PARLEY_BASE_URL`, `PARLEY_API_KEY` when not given) and exits 1 when a run did not
 * pass (local/agent-test.ts; docs/testing.md). The other commands write to a store:
 * `npm run cli -- create-workspace --name <name>` prints `{workspace_id, name, api_key}` on
 * stdout, and on stderr which store it wrote to. `npm run cli -- create-session --workspace
 * <id> --email <email>` prints `{session_token, role}` for an existing member, so a developer
 * can act as any role without an identity provider. `npm run cli -- import-retell …` moves a
 * Retell account (or another Parley's workspace) into a Parley through both public APIs
 * (local/migration/, docs/migration.md); with `--workspace` instead of `--to-url`/`--to-key`
 * it mints an API key of that workspace in the local store and writes to the running
 * `npm start`. Targets of the store commands, in order:
 * - a deployed table (TABLE_NAME and KMS_KEY_ID set, AWS credentials in the environment);
 * - with DATA_DIR set: the running `npm start` of that folder, else that folder's store;
 * - without DATA_DIR: the running `npm start` of `.data`, else the one running `npm start`
 *   of this user whatever its folder (more than one: refused, DATA_DIR must pick), else
 *   the `.data` store.
 */
const usages = {
  'create-workspace': 'npm run cli -- create-workspace --name <name>',
  'create-session': 'npm run cli -- create-session --workspace <id> --email <email>',
  test: 'npm run cli -- test --base-url <url> --api-key <key> (--llm <llm_id> | --flow <conversation_flow_id>) [--version <n>] [--case <test_case_id>]... [--timeout <seconds>]',
  'import-retell':
    'npm run cli -- import-retell --from-key <key> [--from-url <url>] (--to-url <url> --to-key <key> | --workspace <id>) [--only llms,flows,...] [--dry-run] [--mapping <file prefix>]',
} as const;
type Command = keyof typeof usages;
const isCommand = (word: string | undefined): word is Command => word !== undefined && Object.hasOwn(usages, word);
const usageOf = (command: string | undefined) =>
  isCommand(command) ? `usage: ${usages[command]}` : ['usage:', ...Object.values(usages).map((line) => `  ${line}`)].join('\n');

/** A usage error: one line saying what is wrong, then the usage (of the command named, if any), exit 2. */
function refuse(message: string, command: string | undefined): never {
  console.error(`${message}\n${usageOf(command)}`);
  process.exit(2);
}

const args = process.argv.slice(2);
let parsed;
try {
  parsed = parseArgs({
    args,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      workspace: { type: 'string' },
      email: { type: 'string' },
      'base-url': { type: 'string' },
      'api-key': { type: 'string' },
      llm: { type: 'string' },
      flow: { type: 'string' },
      version: { type: 'string' },
      case: { type: 'string', multiple: true },
      timeout: { type: 'string' },
      'from-key': { type: 'string' },
      'from-url': { type: 'string' },
      'to-url': { type: 'string' },
      'to-key': { type: 'string' },
      only: { type: 'string' },
      'dry-run': { type: 'boolean' },
      mapping: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
} catch (error) {
  // parseArgs's own messages run to several sentences; the first says what is wrong.
  const firstWord = args.find((arg) => !arg.startsWith('-'));
  const code = (error as { code?: string }).code;
  const option = code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /'([^']+)'/.exec((error as Error).message)?.[1] : undefined;
  if (args.includes('--help') || args.includes('-h')) {
    console.log(usageOf(firstWord));
    process.exit(0);
  }
  refuse(option ? `unknown option ${option}` : (error as Error).message.split('. ')[0]!.replace(/\.$/, ''), firstWord);
}
const { positionals, values } = parsed;
const command = positionals[0];
if (values.help) {
  console.log(usageOf(command));
  process.exit(0);
}
if (!isCommand(command)) refuse(command === undefined ? 'a command is required' : `unknown command ${command}`, undefined);
if (positionals.length !== 1) refuse(`unexpected argument ${positionals[1]}`, command);
const name = values.name?.trim();
if (command === 'create-workspace' && (!name || name.length > 200)) {
  refuse('--name is required (1 to 200 characters)', command);
}
if (command === 'create-session' && (!values.workspace || !values.email)) {
  refuse('--workspace and --email are required', command);
}

const baseUrl = values['base-url'] ?? process.env.PARLEY_BASE_URL;
const apiKey = values['api-key'] ?? process.env.PARLEY_API_KEY;
const version = values.version === undefined ? undefined : Number(values.version);
const timeoutSeconds = values.timeout === undefined ? 600 : Number(values.timeout);
if (command === 'test') {
  if (!baseUrl || !/^https?:\/\//.test(baseUrl)) refuse('--base-url (or PARLEY_BASE_URL) is required: the http(s) URL of a Parley API', command);
  if (!apiKey) refuse('--api-key (or PARLEY_API_KEY) is required', command);
  if (Boolean(values.llm) === Boolean(values.flow)) refuse('one of --llm and --flow is required', command);
  if (version !== undefined && !(Number.isInteger(version) && version >= 0)) refuse('--version must be a version number', command);
  if (!(Number.isInteger(timeoutSeconds) && timeoutSeconds > 0)) refuse('--timeout must be a whole number of seconds', command);
}

if (command === 'import-retell') {
  const { KINDS } = await import('./migration/import-retell.ts');
  const only = values.only === undefined ? [] : values.only.split(',').map((kind) => kind.trim()).filter(Boolean);
  const unknown = only.filter((kind) => !(KINDS as readonly string[]).includes(kind));
  if (!values['from-key']) refuse('--from-key is required: an API key of the account to move', command);
  if (values['from-url'] !== undefined && !/^https?:\/\//.test(values['from-url'])) refuse('--from-url must be an http(s) URL', command);
  if (values.workspace === undefined && !(values['to-url'] && values['to-key'])) refuse('--to-url and --to-key are required (or --workspace on the local runtime)', command);
  if (values.workspace !== undefined && (values['to-url'] || values['to-key'])) refuse('give either --workspace or --to-url with --to-key, not both', command);
  if (values['to-url'] !== undefined && !/^https?:\/\//.test(values['to-url'])) refuse('--to-url must be an http(s) URL', command);
  if (unknown.length) refuse(`--only: unknown kind ${unknown.join(', ')} (kinds: ${KINDS.join(', ')})`, command);
}

if (command === 'import-retell') {
  const { runImport } = await import('./migration/command.ts');
  process.exitCode = await runImport({
    fromKey: values['from-key']!,
    fromUrl: values['from-url'] ?? 'https://api.retellai.com',
    ...(values.workspace !== undefined ? { workspace: values.workspace } : { toUrl: values['to-url']!, toKey: values['to-key']! }),
    only: (values.only ?? '').split(',').map((kind) => kind.trim()).filter(Boolean),
    dryRun: values['dry-run'] ?? false,
    mapping: values.mapping ?? 'retell-import',
  });
} else if (command === 'test') {
  const { runAgentTest } = await import('./agent-test.ts');
  process.exitCode = await runAgentTest({
    baseUrl: baseUrl!,
    apiKey: apiKey!,
    engine: values.llm ? { type: 'retell-llm', llm_id: values.llm } : { type: 'conversation-flow', conversation_flow_id: values.flow! },
    ...(version !== undefined ? { version } : {}),
    caseIds: values.case ?? [],
    timeoutMs: timeoutSeconds * 1000,
  });
} else {
  await storeCommand();
}

/** create-workspace and create-session: they write to a store (the targets above). */
async function storeCommand(): Promise<void> {
  process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';

  function localTarget(): RuntimeFile | 'store' {
    const own = runningRuntime();
    if (own || process.env.DATA_DIR !== undefined) return own ?? 'store';
    const servers = runningServers();
    if (servers.length > 1) {
      console.error(
        [
          `${servers.length} Parley servers are running and none uses ${dataDir()}; name the one to use with DATA_DIR:`,
          ...servers.map((server) => `  DATA_DIR=${server.data_dir} npm run cli -- create-workspace --name ...   (${server.url ?? 'no URL'})`),
        ].join('\n'),
      );
      process.exit(1);
    }
    return servers[0] ?? 'store';
  }

  const deployed = Boolean(process.env.TABLE_NAME && process.env.KMS_KEY_ID && !process.env.DYNAMODB_ENDPOINT);
  let stopStore: (() => Promise<void>) | undefined;
  let wroteTo = deployed ? `the deployed table ${process.env.TABLE_NAME}` : `the store in ${dataDir()}`;
  try {
    if (!deployed) {
      const target = localTarget();
      if (target === 'store') {
        const { dynamo } = await prepareLocalStore();
        stopStore = () => dynamo.stop();
        wroteTo = `the store in ${dataDir()} (no server is running on it; \`DATA_DIR=${dataDir()} npm start\` serves it)`;
      } else {
        // The server's own folder too: its master key seals the new workspace's secrets.
        process.env.DATA_DIR = target.data_dir ?? dataDir();
        process.env.DYNAMODB_ENDPOINT = target.dynamodb_endpoint;
        process.env.TABLE_NAME = target.table_name;
        wroteTo = `the running server ${target.url ?? `pid ${target.pid}`} (data in ${process.env.DATA_DIR})`;
      }
    }
    if (command === 'create-session') {
      const { createSessionFor } = await import('../shared/members/sessions.ts');
      console.log(JSON.stringify(await createSessionFor(values.workspace!, values.email!)));
    } else {
      const { createWorkspace } = await import('../shared/account/workspaces.ts');
      console.log(JSON.stringify(await createWorkspace(name!)));
    }
    console.error(`Created in ${wroteTo}.`);
  } catch (error) {
    console.error(`${command} failed (${wroteTo}): ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  } finally {
    await stopStore?.();
  }
}
