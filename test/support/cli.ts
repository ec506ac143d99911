import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const cliFile = new URL('../../local/cli.ts', import.meta.url).pathname;
const cliCommand = (args: readonly string[]) => [process.execPath, '--import', tsxLoader, cliFile, ...args];

/**
 * `npm run cli -- <args>` as a user runs it (node with tsx, a process of its own), with `env`
 * added to this one's: its exit code and what it printed, whether it succeeded or not.
 */
export async function runCli(args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const [file, ...rest] = cliCommand(args);
  try {
    const { stdout, stderr } = await promisify(execFile)(file!, rest, { env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const shellQuoted = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

/**
 * The same command on a terminal: util-linux's `script` gives it a pseudo-terminal (with no
 * window size, as some CI terminals have) for stdout and stderr alike. What the terminal
 * received, both streams in the order written and every newline as CR LF, and the exit code.
 */
export async function runCliOnTerminal(args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number; terminal: string }> {
  const command = cliCommand(args).map(shellQuoted).join(' ');
  try {
    const { stdout } = await promisify(execFile)('script', ['--quiet', '--return', '--command', command, '/dev/null'], { env: { ...process.env, ...env } });
    return { code: 0, terminal: stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, terminal: failed.stdout };
  }
}
