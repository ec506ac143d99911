import { checkDestination, EgressRefused, egressFetch } from '../platform/egress/egress.ts';
import { htmlText } from './html-text.ts';

/*
 * The polite crawler behind URL sources, refresh and crawl-preview. Every request goes
 * through the egress guard (production SSRF rules: public addresses only, the connection
 * pinned to the checked address, no redirect followed blindly, capped body and time).
 *
 * - Scope: the start URL's origin and directory (`https://x.com/docs/a.html` → pages under
 *   `https://x.com/docs/`); links elsewhere are listed as skipped.
 * - robots.txt of the origin, for the `ParleyBot` user agent: a disallowed page is skipped;
 *   a 4xx robots.txt allows everything, a 5xx or unreachable one stops the crawl (as the
 *   major crawlers do). `Crawl-delay` is honoured up to 5 s; otherwise pages are fetched
 *   one at a time, POLITE_DELAY_MS apart.
 * - Limits: depth (links followed from the start page), pages, PAGE_TIMEOUT_MS and
 *   MAX_PAGE_BYTES per page; a redirect is followed (up to 3 hops) only inside the scope.
 * - HTML pages give their readable text and links; text/plain and text/markdown their text;
 *   anything else is skipped.
 */

const USER_AGENT = 'ParleyBot/1.0 (+knowledge base crawler)';
const PAGE_TIMEOUT_MS = 10_000;
const MAX_PAGE_BYTES = 2 * 1024 * 1024;
const POLITE_DELAY_MS = 200;
const MAX_REDIRECTS = 3;
const MAX_CRAWL_DELAY_MS = 5_000;

export interface CrawlLimits {
  maxPages: number;
  maxDepth: number;
  /** Keep each page's text (sources) or only list pages (preview). */
  keepText: boolean;
}

interface CrawledPage {
  url: string;
  depth: number;
  title?: string;
  text?: string;
}

export interface CrawlResult {
  pages: CrawledPage[];
  skipped: { url: string; reason: string }[];
}

/** A crawl that could not start (the start URL refused, robots.txt unavailable); the message is safe to show. */
export class CrawlFailed extends Error {}

function scopeOf(start: URL): string {
  const path = start.pathname.endsWith('/') ? start.pathname : start.pathname.slice(0, start.pathname.lastIndexOf('/') + 1);
  return `${start.origin}${path}`;
}

const normal = (url: URL) => {
  const copy = new URL(url);
  copy.hash = '';
  return copy.toString();
};

type Robots = { isAllowed(url: string, ua?: string): boolean | undefined; getCrawlDelay(ua?: string): number | undefined };

async function readRobots(origin: string, signal?: AbortSignal): Promise<Robots> {
  const robotsUrl = `${origin}/robots.txt`;
  // A CommonJS module whose types declare an ES default: at run time the default is the function.
  const robotsParser = ((await import('robots-parser')) as unknown as { default: (url: string, text: string) => Robots }).default;
  let response: Response;
  try {
    response = await egressFetch(robotsUrl, { timeoutMs: PAGE_TIMEOUT_MS, maxResponseBytes: 512 * 1024, headers: { 'user-agent': USER_AGENT }, signal });
  } catch (error) {
    if (error instanceof EgressRefused) throw new CrawlFailed(error.message);
    throw new CrawlFailed(`robots.txt of ${origin} could not be read (${(error as Error).message}); not crawling`);
  }
  if (response.status >= 500) throw new CrawlFailed(`robots.txt of ${origin} answered ${response.status}; not crawling`);
  const text = response.status >= 200 && response.status < 300 ? await response.text() : '';
  return robotsParser(robotsUrl, text) as Robots;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

interface Fetched {
  url: string;
  contentType: string;
  body: string;
}

/** One page, following redirects inside the scope only. */
async function fetchPage(url: string, scope: string, signal?: AbortSignal): Promise<Fetched | { skipped: string }> {
  let current = url;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const response = await egressFetch(current, {
      timeoutMs: PAGE_TIMEOUT_MS,
      maxResponseBytes: MAX_PAGE_BYTES,
      headers: { 'user-agent': USER_AGENT, accept: 'text/html, text/plain, text/markdown;q=0.9, */*;q=0.1' },
      signal,
    });
    if (response.status >= 300 && response.status < 400) {
      const location = response.headers.get('location');
      await response.body?.cancel().catch(() => undefined);
      if (!location) return { skipped: `redirect ${response.status} without a location` };
      const next = normal(new URL(location, current));
      if (!next.startsWith(scope)) return { skipped: `redirects outside ${scope} (to ${next})` };
      current = next;
      continue;
    }
    if (response.status < 200 || response.status >= 300) {
      await response.body?.cancel().catch(() => undefined);
      return { skipped: `answered ${response.status}` };
    }
    const contentType = (response.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (!['text/html', 'application/xhtml+xml', 'text/plain', 'text/markdown'].includes(contentType)) {
      await response.body?.cancel().catch(() => undefined);
      return { skipped: `unsupported content type ${contentType || 'none'}` };
    }
    return { url: current, contentType, body: await response.text() };
  }
  return { skipped: 'too many redirects' };
}

async function linksOf(html: string, base: string): Promise<string[]> {
  const { parse } = await import('node-html-parser');
  const out: string[] = [];
  for (const anchor of parse(html).querySelectorAll('a[href]')) {
    try {
      const url = new URL(anchor.getAttribute('href')!, base);
      if (url.protocol === 'http:' || url.protocol === 'https:') out.push(normal(url));
    } catch {
      // Not a URL: ignored.
    }
  }
  return out;
}

/**
 * Crawls from `start` breadth-first within the limits. Throws CrawlFailed when the start URL
 * is refused by the egress guard or robots.txt is unavailable.
 */
export async function crawl(start: string, limits: CrawlLimits, signal?: AbortSignal): Promise<CrawlResult> {
  let startUrl: URL;
  try {
    startUrl = (await checkDestination(start)).url;
  } catch (error) {
    if (error instanceof EgressRefused) throw new CrawlFailed(error.message);
    throw new CrawlFailed(`${start} could not be reached (${(error as Error).message})`);
  }
  const scope = scopeOf(startUrl);
  const robots = await readRobots(startUrl.origin, signal);
  const delay = Math.min(MAX_CRAWL_DELAY_MS, Math.max(POLITE_DELAY_MS, (robots.getCrawlDelay(USER_AGENT) ?? 0) * 1000));
  const result: CrawlResult = { pages: [], skipped: [] };
  const seen = new Set<string>([normal(startUrl)]);
  const queue: { url: string; depth: number }[] = [{ url: normal(startUrl), depth: 0 }];
  let fetched = 0;
  while (queue.length > 0 && result.pages.length < limits.maxPages) {
    signal?.throwIfAborted();
    const { url, depth } = queue.shift()!;
    if (robots.isAllowed(url, USER_AGENT) === false) {
      result.skipped.push({ url, reason: 'disallowed by robots.txt' });
      continue;
    }
    if (fetched > 0) await sleep(delay, signal);
    fetched++;
    let page: Fetched | { skipped: string };
    try {
      page = await fetchPage(url, scope, signal);
    } catch (error) {
      result.skipped.push({ url, reason: (error as Error).message });
      continue;
    }
    if ('skipped' in page) {
      result.skipped.push({ url, reason: page.skipped });
      continue;
    }
    const isHtml = page.contentType === 'text/html' || page.contentType === 'application/xhtml+xml';
    const { title, text } = isHtml ? await htmlText(page.body) : { title: undefined, text: page.body.trim() };
    result.pages.push({ url: page.url, depth, ...(title ? { title } : {}), ...(limits.keepText ? { text } : {}) });
    if (!isHtml || depth >= limits.maxDepth) continue;
    for (const link of await linksOf(page.body, page.url)) {
      if (seen.has(link)) continue;
      seen.add(link);
      if (!link.startsWith(scope)) {
        if (result.skipped.length < 200) result.skipped.push({ url: link, reason: `outside ${scope}` });
        continue;
      }
      queue.push({ url: link, depth: depth + 1 });
    }
  }
  for (const rest of queue) if (result.skipped.length < 200) result.skipped.push({ url: rest.url, reason: `over the ${limits.maxPages}-page limit` });
  return result;
}
