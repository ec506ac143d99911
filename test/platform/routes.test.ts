import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { DOMAINS } from '../../shared/platform/http/route.ts';
import { buildOpenApiDocument } from '../../shared/openapi.ts';
import { servedRoutes } from '../../shared/route-table.ts';
import { domainFunctions } from '../../local/functions.ts';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';

const app = await startTestApp();
const served = servedRoutes();

describe('route table', () => {
  it('serves each method and path once', () => {
    const keys = served.map((r) => r.key);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('is what `npm run routes` prints, one METHOD /path a line', () => {
    const printed = execFileSync('npx', ['tsx', 'scripts/print-routes.ts'], { encoding: 'utf8' }).trim().split('\n');
    expect(printed).toEqual(served.map((r) => `${r.method} ${r.path}`));
  });

  it('gives every domain a function module', () => {
    expect(Object.keys(domainFunctions).sort()).toEqual([...DOMAINS].sort());
  });

  it("has each domain's function serve exactly the table's routes of that domain", async () => {
    for (const domain of DOMAINS) {
      const { handler } = (await domainFunctions[domain]()) as unknown as { handler: { routeIds: readonly string[] } };
      const fromTable = [...new Set(served.filter((r) => r.domain === domain).map((r) => r.id))].sort();
      expect([...handler.routeIds].sort(), domain).toEqual(fromTable);
    }
  });

  it('declares a schema for exactly the parameters in each path', () => {
    for (const { route, path } of served) {
      const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const json = route.params ? (z.toJSONSchema(route.params, { io: 'input' }) as { properties?: object }) : {};
      const declared = Object.keys(json.properties ?? {});
      expect(declared.sort(), path).toEqual(inPath.sort());
    }
  });

  it('reaches a handler for every route through the router (no route falls through to 404)', async () => {
    for (const { method, path, route } of served) {
      const concrete = path.replace(/\{[^}]+\}/g, 'x');
      const res = await call(app.url, method, concrete, { localAddress: '127.0.0.9' });
      expect(res.body?.message ?? '', `${method} ${path}`).not.toMatch(/^Route /);
      if (route.access !== 'public') expect(res.status, `${method} ${path}`).toBe(401);
    }
  });

  it('publishes a checked-in OpenAPI document equal to the one generated from the table', () => {
    const checkedIn = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8'));
    expect(checkedIn).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument())));
    const operations = Object.values(checkedIn.paths as Record<string, object>).flatMap((p) => Object.keys(p));
    expect(operations).toHaveLength(served.length);
  });

  it('serves that document without a key', async () => {
    const res = await call(app.url, 'GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8')));
  });
});
