import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';

const app = await startTestApp();
const packageVersion = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;
const swaggerFile = (name: string) => readFileSync(new URL(`../../node_modules/swagger-ui-dist/${name}`, import.meta.url), 'utf8');

describe('GET / and the API reference at /docs (no key)', () => {
  it('GET / names the docs, the OpenAPI document and the version, and both links answer', async () => {
    const index = await call(app.url, 'GET', '/');
    expect(index.status).toBe(200);
    expect(index.headers['content-type']).toBe('application/json');
    expect(index.body).toEqual({ name: 'Parley', version: packageVersion, docs_url: '/docs', openapi_url: '/openapi.json' });
    expect((await call(app.url, 'GET', index.body.openapi_url)).body.openapi).toBe('3.1.0');
    expect((await call(app.url, 'GET', index.body.docs_url)).status).toBe(200);
  });

  it('serves a Swagger UI page over /openapi.json whose files all come from this API', async () => {
    const page = await call(app.url, 'GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.text).toContain('<link rel="stylesheet" href="docs/swagger-ui.css">');
    expect(page.text).toContain('<script src="docs/swagger-ui-bundle.js"></script>');
    expect(page.text).toContain("url: 'openapi.json'");
    // No CDN, and no call to Swagger's online validator.
    expect(page.text).not.toMatch(/https?:\/\//);
    expect(page.text).toContain('validatorUrl: null');
    // Swagger UI 5 alone keeps only the operations near the viewport in the page once there
    // are 150 rows; the page's plugin renders them all (npm run check:docs proves it in Chromium).
    expect(page.text).toContain('plugins: [EveryOperation],');
    expect(page.text).toContain("return { components: { operations: Operations } };");
    expect(page.text).toContain("getComponent('OperationContainer', true)");

    const styles = await call(app.url, 'GET', '/docs/swagger-ui.css');
    expect([styles.status, styles.headers['content-type']]).toEqual([200, 'text/css; charset=utf-8']);
    expect(styles.text).toBe(swaggerFile('swagger-ui.css'));
    const script = await call(app.url, 'GET', '/docs/swagger-ui-bundle.js');
    expect([script.status, script.headers['content-type']]).toEqual([200, 'text/javascript; charset=utf-8']);
    expect(script.text).toBe(swaggerFile('swagger-ui-bundle.js'));
  });

  it('documents these routes in the OpenAPI document with their media types', async () => {
    const doc = (await call(app.url, 'GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths['/docs'].get.responses['200'].content)).toEqual(['text/html; charset=utf-8']);
    expect(doc.paths['/'].get.security).toEqual([]);
    expect(Object.keys(doc.paths['/'].get.responses['200'].content)).toEqual(['application/json']);
  });
});
