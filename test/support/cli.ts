import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const cliFile = new URL('../../local/cli.ts', import.meta.url).pathname;

/**
 * `npm run cli -- <args>` as a user runs it (node with tsx, a process of its own), with `env`
 * added to this one's: its exit code and what it printed, whether it succeeded or not.
 */
export async function runCli(args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', tsxLoader, cliFile, ...args], { env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}
