import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** `diff` (a unified diff of a file named `general_prompt`) applied by `git apply` to a file holding `text`: the file's new content. */
export function gitApply(text: string, diff: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'conductor-diff-'));
  try {
    writeFileSync(join(dir, 'general_prompt'), text);
    writeFileSync(join(dir, 'change.diff'), `${diff}\n`);
    execFileSync('git', ['apply', 'change.diff'], { cwd: dir, stdio: 'pipe' });
    return readFileSync(join(dir, 'general_prompt'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
