import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

// Usage answers and usage errors come before the CLI touches any store: no server or DynamoDB here.
const cli = (...args: string[]) => runCli(args);

const allUsage = [
  'usage:',
  '  npm run cli -- create-workspace --name <name>',
  '  npm run cli -- create-session --workspace <id> --email <email>',
  '  npm run cli -- test --base-url <url> --api-key <key> (--llm <llm_id> | --flow <conversation_flow_id>) [--version <n>] [--case <test_case_id>]... [--timeout <seconds>]',
  '  npm run cli -- import-retell --from-key <key> [--from-url <url>] (--to-url <url> --to-key <key> | --workspace <id>) [--only llms,flows,...] [--dry-run] [--mapping <file prefix>]',
  '',
].join('\n');
const workspaceUsage = 'usage: npm run cli -- create-workspace --name <name>\n';
const sessionUsage = 'usage: npm run cli -- create-session --workspace <id> --email <email>\n';

describe('npm run cli usage', () => {
  it('--help and -h answer the usage of every command, or of the command named, with exit 0', async () => {
    expect(await cli('--help')).toEqual({ code: 0, stdout: allUsage, stderr: '' });
    expect(await cli('-h')).toEqual({ code: 0, stdout: allUsage, stderr: '' });
    expect(await cli('create-workspace', '--help')).toEqual({ code: 0, stdout: workspaceUsage, stderr: '' });
    expect(await cli('create-session', '-h')).toEqual({ code: 0, stdout: sessionUsage, stderr: '' });
    // --help wins over what else is wrong on the line.
    expect(await cli('create-workspace', '--bogus', '--help')).toEqual({ code: 0, stdout: workspaceUsage, stderr: '' });
  });

  it('an unknown option, command or argument is one line and the usage on stderr, exit 2, no stack', async () => {
    expect(await cli('create-workspace', '--bogus')).toEqual({ code: 2, stdout: '', stderr: `unknown option --bogus\n${workspaceUsage}` });
    expect(await cli('--bogus')).toEqual({ code: 2, stdout: '', stderr: `unknown option --bogus\n${allUsage}` });
    expect(await cli('create-session', '-x')).toEqual({ code: 2, stdout: '', stderr: `unknown option -x\n${sessionUsage}` });
    expect(await cli('drop-table')).toEqual({ code: 2, stdout: '', stderr: `unknown command drop-table\n${allUsage}` });
    expect(await cli()).toEqual({ code: 2, stdout: '', stderr: `a command is required\n${allUsage}` });
    expect(await cli('create-workspace', 'extra', '--name', 'Acme')).toEqual({ code: 2, stdout: '', stderr: `unexpected argument extra\n${workspaceUsage}` });
    expect(await cli('create-session', '--workspace', 'ws_1')).toEqual({ code: 2, stdout: '', stderr: `--workspace and --email are required\n${sessionUsage}` });
  });

  it('an option missing its value is one line and the usage, exit 2', async () => {
    const missing = await cli('create-workspace', '--name');
    expect(missing.code).toBe(2);
    expect(missing.stderr.split('\n')).toHaveLength(3);
    expect(missing.stderr).toMatch(/^Option '--name <value>' argument missing\nusage: npm run cli -- create-workspace --name <name>\n$/);
  });
});
