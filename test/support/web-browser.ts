import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll } from 'vitest';
import { buildWeb, type WebManifest } from '../../scripts/build-web.ts';

/**
 * Browser tests in headless Chromium: Debian's `chromium` (`/usr/bin/chromium`, or CHROMIUM;
 * .ci/run installs it when missing) driven by playwright-core, which downloads no browser of
 * its own. The microphone is Chromium's fake device, allowed without a prompt. Only
 * 127.0.0.1 is ever contacted.
 */
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

let browser: Promise<Browser> | undefined;

/** One browser per test file, closed after it. */
function launchBrowser(): Promise<Browser> {
  if (!browser) {
    browser = chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--use-fake-ui-for-media-stream',
        '--use-fake-device-for-media-stream',
        '--autoplay-policy=no-user-gesture-required',
        '--disable-background-networking',
        '--disable-component-update',
      ],
    });
    const launched = browser;
    afterAll(async () => (await launched).close());
  }
  return browser;
}

/** A fresh page (its own context) with every CSP violation it meets recorded for `cspViolations`. */
export async function newPage(): Promise<Page> {
  const context = await (await launchBrowser()).newContext();
  const page = await context.newPage();
  // Init scripts run through the DevTools protocol, before the page's own, whatever its CSP.
  await page.addInitScript(() => {
    const seen: string[] = [];
    const global = globalThis as any;
    global.__cspViolations = seen;
    global.addEventListener('securitypolicyviolation', (event: any) => seen.push(`${event.violatedDirective} ${event.blockedURI}`));
  });
  return page;
}

export const cspViolations = (page: Page): Promise<string[]> => page.evaluate(() => (globalThis as any).__cspViolations);

/** The browser files built once per test file into its own temporary folder (never the project's web/dist). */
let built: Promise<{ dir: string; manifest: WebManifest }> | undefined;
export function builtWebAssets(): Promise<{ dir: string; manifest: WebManifest }> {
  built ??= (async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'parley-web-')), 'dist');
    return { dir, manifest: await buildWeb(dir, undefined) };
  })();
  return built;
}

/** A plain HTTP server on 127.0.0.1 for the test's own pages (closed after the file). */
export async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): Promise<string> {
  const server = createServer((req, res) => {
    Promise.resolve(handler(req, res)).catch((error: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * axe-core's WCAG 2.x A/AA checks of the page as it is now: the violations of `serious` or
 * `critical` impact. axe is evaluated through the DevTools protocol, so the page's CSP (no
 * inline or foreign scripts) stays in force.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const global = globalThis as any;
    const result: { violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[] } = await global.axe.run(global.document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
    return result.violations.map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      targets: violation.nodes.map((node) => node.target.join(' ')),
    }));
  });
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
}
