import { chmodSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/*
 * The local data folder holds the master key that wraps every secret and DynamoDB Local's
 * files (every workspace's keys, passwords and data): only the user who runs Parley may
 * read it. Folders are 0700 and files 0600, including those an earlier version created
 * with the default 0755/0644, and DynamoDB Local (a Java child process) inherits a umask
 * of 077 so the files it creates later are private too.
 */

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
const PRIVATE_UMASK = 0o077;

/** Creates `path` (and its parents) private, and makes an existing tree private. */
export function ensurePrivateDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  tighten(path);
}

function tighten(path: string): void {
  chmodSync(path, PRIVATE_DIR_MODE);
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name);
    if (entry.isDirectory()) tighten(child);
    else if (entry.isFile()) chmodSync(child, PRIVATE_FILE_MODE);
  }
}

/** Runs `start` (a child process spawn) with a umask that keeps what the child creates private. */
export function withPrivateUmask<T>(start: () => T): T {
  const previous = process.umask(PRIVATE_UMASK);
  try {
    return start();
  } finally {
    process.umask(previous);
  }
}
