import { readdirSync, readFileSync, statSync } from 'node:fs';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RESERVED_CONCURRENCY, FUNCTIONS, LIVE_MONITOR_FUNCTION, type FunctionSpec } from '../../lib/functions.ts';
import { pascal } from '../../lib/monitoring.ts';
import { ParleyStack } from '../../lib/parley-stack.ts';
import { JOBS } from '../../shared/jobs.ts';
import { DOMAINS } from '../../shared/platform/http/route.ts';

/**
 * The function manifest (lib/functions.ts) is the one place a function is declared: adding a
 * function is its handler in functions/, its code in its shared/<domain>/ folder and its
 * entry, nothing else in lib/. This holds the three together (and the route groups and jobs
 * they serve), and the synthesized template to the entries.
 */
const ROOT = new URL('../../', import.meta.url);
const PROJECT_CONTEXT = (JSON.parse(readFileSync(new URL('cdk.json', ROOT), 'utf8')) as { context: Record<string, unknown> }).context;

const handlers = readdirSync(new URL('functions/', ROOT))
  .filter((file) => file.endsWith('.ts'))
  .map((file) => file.slice(0, -'.ts'.length))
  .sort();
const names = FUNCTIONS.map((spec) => spec.name as string);
const isJob = (spec: FunctionSpec) => spec.trigger.kind === 'queue' || spec.trigger.kind === 'schedule';

describe('the function manifest', () => {
  it('has exactly one entry per functions/*.ts handler, and a handler for every entry', () => {
    expect(new Set(names).size, 'names are unique').toBe(names.length);
    expect([...names].sort()).toEqual(handlers);
  });

  it("names each function's domain by its shared/<domain>/ folder", () => {
    for (const spec of FUNCTIONS) {
      const folder = new URL(`shared/${spec.domain}/`, ROOT);
      expect(statSync(folder, { throwIfNoEntry: false })?.isDirectory(), `${spec.name}: shared/${spec.domain}/`).toBe(true);
    }
  });

  it('routes every route group of the route table to exactly one function, named as its group', () => {
    const routeGroups = FUNCTIONS.flatMap((spec) => (spec.trigger.kind === 'routes' ? [spec.trigger.routeGroup] : []));
    expect([...routeGroups].sort()).toEqual([...DOMAINS].sort());
    for (const spec of FUNCTIONS) {
      if (spec.trigger.kind === 'routes') expect(spec.trigger.routeGroup, spec.name).toBe(spec.name);
    }
    // The $default route and the CORS preflights each go to one function.
    const flagged = (flag: 'catchAll' | 'preflight') => FUNCTIONS.filter((spec) => spec.trigger.kind === 'routes' && spec.trigger[flag]).map((spec) => spec.name);
    expect(flagged('catchAll')).toEqual(['meta']);
    expect(flagged('preflight')).toEqual(['public']);
  });

  it('has an entry for every job of shared/jobs.ts, triggered as the job says, and one WebSocket function', () => {
    const jobs = FUNCTIONS.filter(isJob);
    expect(jobs.map((spec) => spec.name).sort()).toEqual(JOBS.map((job) => job.name).sort());
    for (const job of JOBS) expect(FUNCTIONS.find((spec) => spec.name === job.name)!.trigger.kind, job.name).toBe(job.trigger.kind);
    const queues = jobs.flatMap((spec) => (spec.trigger.kind === 'queue' ? [spec.trigger.queue] : []));
    expect(new Set(queues.map((queue) => queue.resource)).size, 'one job per queue').toBe(queues.length);
    expect(FUNCTIONS.filter((spec) => spec.trigger.kind === 'websocket').map((spec) => spec.name)).toEqual([LIVE_MONITOR_FUNCTION]);
  });

  it('gives HTTP and WebSocket functions a timeout under API Gateway\'s, and leaves jobs\' to shared/jobs.ts', () => {
    for (const spec of FUNCTIONS) {
      if (isJob(spec)) expect(spec.timeoutSeconds, spec.name).toBeUndefined();
      else expect(spec.timeoutSeconds, spec.name).toBeLessThanOrEqual(29);
    }
  });

  it('synthesizes exactly one Lambda function per entry, with its memory, timeout and reservation', () => {
    const app = new App({ context: { ...PROJECT_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
    const stack = new ParleyStack(app, 'Parley', { settings: { sipHost: 'sip.parley.ai', sipIpRanges: ['34.1.2.0/24'] } });
    const functions = Template.fromStack(stack).findResources('AWS::Lambda::Function') as Record<string, { Properties: Record<string, unknown> }>;
    // CDK's own custom-resource handlers are not Parley functions.
    const parleyIds = Object.keys(functions).filter((id) => !id.includes('CustomResourceProvider'));
    expect(parleyIds).toHaveLength(FUNCTIONS.length);
    for (const spec of FUNCTIONS) {
      const fn = stack.functions.byName[spec.name];
      const id = stack.getLogicalId(fn.node.defaultChild as never);
      // The construct ID, hence the logical ID, comes from the name (renaming a function replaces it).
      expect(id, spec.name).toMatch(new RegExp(`^${pascal(spec.name)}Function[0-9A-F]{8}$`));
      const timeout = spec.timeoutSeconds ?? JOBS.find((job) => job.name === spec.name)!.timeoutSeconds;
      expect(functions[id]!.Properties, spec.name).toMatchObject({
        MemorySize: spec.memoryMb,
        Timeout: timeout,
        ReservedConcurrentExecutions: spec.reservedConcurrency,
        LoggingConfig: { LogGroup: { Ref: expect.stringMatching(new RegExp(`^${pascal(spec.name)}FunctionLogs`)) } },
      });
    }
    expect(DEFAULT_RESERVED_CONCURRENCY).toEqual(Object.fromEntries(FUNCTIONS.map((spec) => [spec.name, spec.reservedConcurrency])));
  }, 300_000);
});
