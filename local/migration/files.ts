import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { Row } from './report.ts';

/*
 * What an import leaves beside `--mapping <prefix>`: `<prefix>.json` and `<prefix>.csv`,
 * each source ID with the Parley ID it became (for customer code that stored IDs), and
 * while a run is under way `<prefix>.state.json`, the objects finished so far, which a run
 * started again after an interruption picks up from (removed when a run gets to its end).
 */

export interface MappingEntry {
  kind: string;
  name: string;
  source_id: string;
  parley_id: string;
  /** Voice and chat agents: source version → Parley version. */
  versions?: Record<string, number>;
}

export interface MappingFile {
  source_url: string;
  target_url: string;
  objects: MappingEntry[];
}

export interface StateFile {
  source_url: string;
  target_url: string;
  /** Rows of finished objects, by `kind:source_id`. */
  done: Record<string, Row>;
  mapping: MappingEntry[];
}

const mappingPaths = (prefix: string) => ({
  json: `${prefix}.json`,
  csv: `${prefix}.csv`,
  state: `${prefix}.state.json`,
});

/** Written whole to a temporary name, then renamed: an interrupted write never leaves half a file. */
function writeAtomically(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

const csvCell = (value: string) => (/[",\n\r]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

export function writeMapping(prefix: string, mapping: MappingFile): void {
  const paths = mappingPaths(prefix);
  const objects = [...mapping.objects].sort((a, b) => a.kind.localeCompare(b.kind) || a.source_id.localeCompare(b.source_id));
  writeAtomically(paths.json, `${JSON.stringify({ ...mapping, objects }, null, 2)}\n`);
  const lines = [
    'kind,source_id,parley_id,name',
    ...objects.map((entry) => [entry.kind, entry.source_id, entry.parley_id, entry.name].map(csvCell).join(',')),
  ];
  writeAtomically(paths.csv, `${lines.join('\n')}\n`);
}

/** The previous mapping of this prefix (kept across runs: an object this run did not touch stays in it). */
export function readMapping(prefix: string): MappingFile | undefined {
  const path = mappingPaths(prefix).json;
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as MappingFile) : undefined;
}

export function readState(prefix: string): StateFile | undefined {
  const path = mappingPaths(prefix).state;
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as StateFile) : undefined;
}

export function writeState(prefix: string, state: StateFile): void {
  writeAtomically(mappingPaths(prefix).state, JSON.stringify(state));
}

export function removeState(prefix: string): void {
  rmSync(mappingPaths(prefix).state, { force: true });
}
