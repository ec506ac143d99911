import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * `@parley/web-sdk` against the compatible client (retell-client-js-sdk, a dev dependency for
 * this test only): every public member of its RetellWebClient, every event it emits and every
 * startCall option it takes exists in ours under the same name, so a front end only renames
 * its import. Read from the published files (the class's declarations and the built module)
 * and from our source.
 */
const require = createRequire(import.meta.url);
const retellDir = dirname(require.resolve('retell-client-js-sdk/package.json'));
const retellTypes = readFileSync(join(retellDir, 'dist', 'index.d.ts'), 'utf8');
const retellBuilt = readFileSync(join(retellDir, 'dist', 'index.modern.mjs'), 'utf8');
const ours = readFileSync(new URL('../../web/sdk/src/index.ts', import.meta.url), 'utf8');

/** `name` of each member declared in a class or interface body (public ones only). */
function members(source: string, header: RegExp): string[] {
  const start = source.search(header);
  expect(start, `${header} in the source`).toBeGreaterThanOrEqual(0);
  const body = source.slice(source.indexOf('{', start) + 1);
  let depth = 0;
  let end = 0;
  for (; end < body.length; end++) {
    if (body[end] === '{') depth++;
    if (body[end] === '}') {
      if (depth === 0) break;
      depth--;
    }
  }
  return [...body.slice(0, end).matchAll(/^ {4}(?!private |protected |constructor)(?:static |readonly |async )*(\w+)\??\s*[(:<=]/gm)].map((match) => match[1]!);
}

/** Our class's public members, from its source (2-space indentation). */
function ourMembers(header: RegExp): string[] {
  return members(ours.replace(/^ {2}/gm, '    '), header);
}

describe('@parley/web-sdk against retell-client-js-sdk', () => {
  it('has every public member of RetellWebClient', () => {
    const theirs = members(retellTypes, /export declare class RetellWebClient extends EventEmitter/);
    expect(theirs.sort()).toEqual(['analyzerComponent', 'isAgentTalking', 'mute', 'startAudioPlayback', 'startCall', 'stopCall', 'unmute']);
    const mine = ourMembers(/export class ParleyWebClient extends EventEmitter/);
    expect(theirs.filter((name) => !mine.includes(name))).toEqual([]);
  });

  it('takes every startCall option of theirs, plus livekitUrl', () => {
    const theirs = members(retellTypes, /export interface StartCallConfig/);
    const mine = ourMembers(/export interface StartCallConfig/);
    expect(theirs.filter((name) => !mine.includes(name))).toEqual([]);
    expect(mine.sort()).toEqual(['accessToken', 'captureDeviceId', 'emitRawAudioSamples', 'livekitUrl', 'playbackDeviceId', 'sampleRate']);
  });

  it('emits every event theirs emits, and the spec lists', () => {
    const theirs = [...new Set([...retellBuilt.matchAll(/emit\("(\w+)"/g)].map((match) => match[1]!))];
    expect(theirs.length).toBeGreaterThanOrEqual(9);
    const mine = ourMembers(/export interface ParleyWebClientEvents/);
    const spec = ['call_started', 'call_ready', 'agent_start_talking', 'agent_stop_talking', 'update', 'metadata', 'audio', 'call_ended', 'error'];
    expect([...theirs, ...spec].filter((name) => !mine.includes(name))).toEqual([]);
  });

  it('exports the compatible name, on the same EventEmitter base', () => {
    expect(retellTypes).toMatch(/import \{ EventEmitter \} from "eventemitter3"/);
    expect(ours).toMatch(/import \{ EventEmitter \} from 'eventemitter3'/);
    expect(ours).toMatch(/^export const RetellWebClient = ParleyWebClient;$/m);
    expect(ours).toMatch(/^export type RetellWebClient = ParleyWebClient;$/m);
  });
});
