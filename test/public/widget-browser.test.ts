import { mkdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { axeViolations, computedStyle, hasFocus, launchBrowser, servePages } from '../support/browser.ts';
import { newChatAgent, publicKeyBody } from '../support/factories.ts';

/*
 * The chat widget in headless Chromium (docs/browser.md): a shop page on another local
 * origin loads /widget.js from the app and holds a chat with a sandbox chat agent (the
 * offline model) end to end; a page on an origin the key does not allow gets no chat; axe-core
 * finds no serious violation. PARLEY_SCREENSHOTS=1 saves the docs' screenshots.
 */
const app = await startTestApp();
const pages = await servePages();
const browser = await launchBrowser();
afterAll(async () => {
  await browser.close();
  await pages.close();
});

const { chatAgent } = await newChatAgent(app.api, { chatAgent: { agent_name: 'Shop helper' }, llm: { begin_message: 'Hi! Ask me about your order.' } });
const key = await app.api.post('/public-keys', { body: publicKeyBody({ allowed_origins: [pages.url] }) });
expect(key.status).toBe(201);

// The page's own styles are hostile on purpose: none may reach the widget.
const shopPage = (scriptUrl: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<style>
  button { background: rgb(255, 0, 0) !important; font-size: 40px !important; }
  p, div, textarea { color: rgb(0, 255, 0) !important; }
</style></head>
<body><main><h1>Our shop</h1><p>Plain page content.</p><button id="page-button" type="button">Page button</button></main>
<script src="${scriptUrl}" data-public-key="${key.body.public_key}" data-agent-id="${chatAgent.agent_id}"></script>
</body></html>`;
pages.page('/shop.html', shopPage(`${app.url}/widget.js`));

const screenshots = process.env.PARLEY_SCREENSHOTS === '1';
const shotsDir = new URL('../../docs/images/', import.meta.url);
if (screenshots) mkdirSync(shotsDir, { recursive: true });

describe('the chat widget', () => {
  it('holds a chat from another origin, keeps it across reloads, and stays out of the page\'s styles', async () => {
    const context = await browser.newContext({ viewport: { width: 1000, height: 720 } });
    const page = await context.newPage();
    await page.goto(`${pages.url}/shop.html`);
    if (screenshots) await page.screenshot({ path: new URL('widget-closed.png', shotsDir).pathname });

    const launcher = page.getByRole('button', { name: 'Chat with us' });
    await expect.poll(() => launcher.getAttribute('aria-expanded')).toBe('false');
    // The page's `button { background: red !important }` does not reach into the shadow root, nor the widget's styles out.
    expect(await computedStyle(launcher, 'background-color')).toBe('rgb(31, 79, 209)');
    expect(await computedStyle(page.locator('#page-button'), 'background-color')).toBe('rgb(255, 0, 0)');

    await launcher.click();
    const input = page.getByRole('textbox', { name: 'Your message' });
    const log = page.getByRole('log', { name: 'Messages' });
    await expect.poll(() => log.textContent(), { timeout: 15_000 }).toContain('Hi! Ask me about your order.');
    expect(await launcher.getAttribute('aria-expanded')).toBe('true');
    expect(await log.getAttribute('aria-live')).toBe('polite');
    // Opening moves focus into the panel's text box.
    expect(await hasFocus(input)).toBe(true);

    await input.fill('Where is order 1234?');
    await input.press('Enter');
    await expect.poll(() => log.locator('.msg').count(), { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
    const texts = await log.locator('.msg').allTextContents();
    expect(texts[0]).toBe('Agent: Hi! Ask me about your order.');
    expect(texts[1]).toBe('You: Where is order 1234?');
    expect(texts[2]).toMatch(/^Agent: ./);
    expect(await computedStyle(log.locator('.msg').first(), 'color')).not.toBe('rgb(0, 255, 0)');

    // The server holds the same chat, started from this page's origin.
    const chats = (await app.api.get('/list-chats')).body as { chat_id: string; metadata: { source: string } }[];
    expect(chats.filter((chat) => chat.metadata?.source === 'widget')).toHaveLength(1);
    if (screenshots) await page.screenshot({ path: new URL('widget-open.png', shotsDir).pathname });

    // The widget's part of the page (the test page's own colours are hostile on purpose).
    const violations = await axeViolations(page, { within: '[data-parley-widget]' });
    expect(violations, JSON.stringify(violations, null, 2)).toEqual([]);

    // A reload in the same tab keeps the conversation (sessionStorage) and the open panel.
    await page.reload();
    await expect.poll(() => page.getByRole('log', { name: 'Messages' }).locator('.msg').count()).toBe(texts.length);
    expect(await page.getByRole('button', { name: 'Close chat', exact: true }).isVisible()).toBe(true);

    // Escape closes the panel and gives focus back to the launcher.
    await page.getByRole('textbox', { name: 'Your message' }).focus();
    await page.keyboard.press('Escape');
    const relaunch = page.getByRole('button', { name: 'Chat with us' });
    expect(await relaunch.getAttribute('aria-expanded')).toBe('false');
    expect(await hasFocus(relaunch)).toBe(true);
    expect((await app.api.get('/list-chats')).body).toHaveLength(1);
    await context.close();
  });

  it('queues a message sent while it is connecting, and sends it once connected', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    // The chat's start is held until the message has been typed and sent.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/public/chat/start', async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(`${pages.url}/shop.html`);
    await page.getByRole('button', { name: 'Chat with us' }).click();
    const status = page.getByRole('status');
    await expect.poll(() => status.textContent()).toBe('Connecting…');
    const input = page.getByRole('textbox', { name: 'Your message' });
    await input.fill('Is my parcel late?');
    await input.press('Enter');
    expect(await input.inputValue()).toBe('');
    expect(await status.textContent()).toBe('Connecting… your message will be sent once connected.');
    release();

    const log = page.getByRole('log', { name: 'Messages' });
    await expect.poll(() => log.locator('.msg').count(), { timeout: 15_000 }).toBe(3);
    const texts = await log.locator('.msg').allTextContents();
    expect(texts.slice(0, 2)).toEqual(['Agent: Hi! Ask me about your order.', 'You: Is my parcel late?']);
    expect(texts[2]).toMatch(/^Agent: ./);
    await expect.poll(() => status.textContent()).toBe('');
    await context.close();
  });

  it('gets no chat on a page whose origin the key does not allow', async () => {
    const before = ((await app.api.get('/list-chats')).body as unknown[]).length;
    const context = await browser.newContext();
    const page = await context.newPage();
    // localhost:<port> is another origin than 127.0.0.1:<port>, which the key allows.
    await page.goto(`http://localhost:${pages.port}/shop.html`);
    await page.getByRole('button', { name: 'Chat with us' }).click();
    await expect.poll(() => page.getByRole('status').textContent(), { timeout: 15_000 }).toBe('Chat unavailable right now.');
    expect(await page.getByRole('log', { name: 'Messages' }).locator('.msg').count()).toBe(0);
    expect(((await app.api.get('/list-chats')).body as unknown[]).length).toBe(before);
    await context.close();
  });
});
