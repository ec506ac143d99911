import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';

/*
 * Headless Chromium for browser tests (docs/browser.md): Debian's `chromium` (or CHROMIUM)
 * driven by playwright-core, which downloads no browser of its own. `.ci/run` installs the
 * package when /usr/bin/chromium is missing. Reusable: launch a browser, serve test pages from
 * another local origin, check a page with axe-core.
 */

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

/** A headless Chromium; `--no-sandbox` when running as root (CI containers), which Chromium requires there. */
export async function launchBrowser(): Promise<Browser> {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [...(root ? ['--no-sandbox'] : []), '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking'],
  });
}

export interface PageServer {
  /** The server's origin, e.g. http://127.0.0.1:51234 (another origin than the API's port). */
  url: string;
  port: number;
  /** Serves `html` at `path` from now on. */
  page(path: string, html: string): void;
  close(): Promise<void>;
}

/** A static server for test pages on 127.0.0.1 (and so also reachable as `localhost`, a different origin). */
export async function servePages(): Promise<PageServer> {
  const pages = new Map<string, string>();
  const server: Server = createServer((req, res) => {
    const html = pages.get((req.url ?? '/').split('?')[0]!);
    if (html === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    page: (path, html) => void pages.set(path, html),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[]; failureSummary?: string }[];
}

const axeSource = () => readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core's violations on the page, or only in the element `within` selects (its shadow
 * root included), `serious` and `critical` only unless `all`.
 */
export async function axeViolations(page: Page, options: { all?: boolean; within?: string } = {}): Promise<AxeViolation[]> {
  await page.addScriptTag({ content: axeSource() });
  const violations = await page.evaluate(async (within) => {
    const axe = (globalThis as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run(within ? { include: [[within]] } : (globalThis as unknown as { document: unknown }).document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target, failureSummary: n.failureSummary })) }));
  }, options.within);
  return options.all ? violations : violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** The browser window as the page's functions see it (this project's TypeScript has no DOM library). */
interface PageWindow {
  getComputedStyle(element: unknown): { getPropertyValue(property: string): string };
}

/** A CSS property's computed value on the element (`background-color`, `color`, ...). */
export const computedStyle = (locator: Locator, property: string): Promise<string> =>
  locator.evaluate((element, name) => (globalThis as unknown as PageWindow).getComputedStyle(element).getPropertyValue(name), property);

/** Whether the element has focus in its own document or shadow root. */
export const hasFocus = (locator: Locator): Promise<boolean> =>
  locator.evaluate((element) => (element.getRootNode() as unknown as { activeElement: unknown }).activeElement === element);
