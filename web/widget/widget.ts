/*
 * The Parley chat widget (docs/browser.md). One tag on any page:
 *
 *   <script src="https://<parley>/widget.js" data-public-key="public_key_…" data-agent-id="chat_agent_…" async></script>
 *
 * adds a launcher button and a chat panel inside a shadow root (the page's styles do not reach
 * in, and the widget's do not leak out), talks to /public/chat/* on the script's own origin,
 * and keeps the chat for the tab's life in sessionStorage (reloads and page changes keep it).
 * Accessible: labelled controls, the messages in a polite live region, focus moved into the
 * panel on open and back to the launcher on close (Escape closes), Enter sends; what is sent
 * while connecting or while the agent replies is queued and sent in order.
 *
 * Built by scripts/build-widget.ts into web/widget/dist/widget.js (an IIFE for every browser
 * of the last years); this file is browser code only and imports nothing.
 */

interface Message {
  role: 'agent' | 'user';
  content: string;
}

interface Stored {
  chat_id: string;
  chat_secret: string;
  messages: Message[];
  ended: boolean;
  open: boolean;
}

interface ChatAnswer {
  chat_id?: string;
  chat_secret?: string;
  chat_status?: string;
  messages?: { role: string; content?: string }[];
  message_with_tool_calls?: { role: string; content?: string }[];
  message?: string;
}

const STYLE = `
/* Important :host rules win over the page's own, even its !important ones (CSS Scoping). */
:host { all: initial !important; display: block !important; position: fixed !important; right: 20px !important; bottom: 20px !important; z-index: 2147483000 !important; font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif !important; color: #1a1a1a !important; }
*, *::before, *::after { box-sizing: border-box; }
.launcher { display: flex; align-items: center; gap: 8px; border: 0; border-radius: 999px; padding: 12px 18px; background: #1f4fd1; color: #fff; font: inherit; font-weight: 600; cursor: pointer; box-shadow: 0 4px 14px rgba(0,0,0,.25); }
.launcher:hover { background: #173fab; }
.launcher:focus-visible, button:focus-visible, textarea:focus-visible { outline: 3px solid #ffbf47; outline-offset: 2px; }
.panel { position: absolute; right: 0; bottom: 60px; width: min(360px, calc(100vw - 40px)); height: min(520px, calc(100vh - 100px)); display: flex; flex-direction: column; background: #fff; border: 1px solid #c9ced6; border-radius: 12px; box-shadow: 0 8px 30px rgba(0,0,0,.25); overflow: hidden; }
.panel[hidden] { display: none; }
header { display: flex; align-items: center; justify-content: space-between; padding: 10px 14px; background: #1f4fd1; color: #fff; }
h2 { margin: 0; font-size: 16px; font-weight: 600; }
.close, .restart { border: 0; background: transparent; color: inherit; font: inherit; cursor: pointer; padding: 4px 8px; border-radius: 6px; }
.close { font-size: 20px; line-height: 1; }
.log { margin: 0; padding: 12px; flex: 1; overflow-y: auto; display: flex; flex-direction: column; gap: 8px; }
.msg { margin: 0; max-width: 85%; padding: 8px 12px; border-radius: 12px; white-space: pre-wrap; word-wrap: break-word; }
.msg.agent { align-self: flex-start; background: #eef1f6; color: #1a1a1a; }
.msg.user { align-self: flex-end; background: #1f4fd1; color: #fff; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
form { display: flex; gap: 8px; padding: 10px; border-top: 1px solid #e1e4ea; }
textarea { flex: 1; resize: none; min-height: 40px; max-height: 120px; padding: 8px 10px; border: 1px solid #8a93a3; border-radius: 8px; font: inherit; color: #1a1a1a; background: #fff; }
.send { border: 0; border-radius: 8px; padding: 0 14px; background: #1f4fd1; color: #fff; font: inherit; font-weight: 600; cursor: pointer; }
.status { margin: 0; padding: 0 12px 8px; min-height: 1.4em; font-size: 13px; color: #4a5160; }
`;

function boot(script: HTMLScriptElement): void {
  const publicKey = script.dataset.publicKey ?? '';
  const agentId = script.dataset.agentId ?? '';
  const base = new URL(script.src, location.href).origin;
  const storageKey = `parley-widget:${agentId}`;
  const title = script.dataset.title ?? 'Chat with us';

  const host = document.createElement('div');
  host.setAttribute('data-parley-widget', '');
  const root = host.attachShadow({ mode: 'open' });
  root.innerHTML = `
<style>${STYLE}</style>
<section class="panel" id="panel" role="dialog" aria-modal="false" aria-labelledby="title" hidden>
  <header>
    <h2 id="title"></h2>
    <div>
      <button type="button" class="restart" id="restart">New chat</button>
      <button type="button" class="close" id="close" aria-label="Close chat">×</button>
    </div>
  </header>
  <div class="log" id="log" role="log" aria-live="polite" aria-relevant="additions" aria-label="Messages"></div>
  <p class="status" id="status" role="status"></p>
  <form id="form">
    <label class="sr-only" for="input">Your message</label>
    <textarea id="input" rows="1" maxlength="10000" placeholder="Type a message…" autocomplete="off"></textarea>
    <button type="submit" class="send" id="send">Send</button>
  </form>
</section>
<button type="button" class="launcher" id="launcher" aria-expanded="false" aria-controls="panel"></button>`;
  const $ = <T extends HTMLElement>(id: string) => root.getElementById(id) as T;
  const panel = $<HTMLElement>('panel');
  const launcher = $<HTMLButtonElement>('launcher');
  const log = $<HTMLDivElement>('log');
  const status = $<HTMLParagraphElement>('status');
  const form = $<HTMLFormElement>('form');
  const input = $<HTMLTextAreaElement>('input');
  $<HTMLElement>('title').textContent = title;
  launcher.textContent = title;

  let state: Stored | undefined = load();
  let busy = false;

  function load(): Stored | undefined {
    try {
      const raw = sessionStorage.getItem(storageKey);
      return raw ? (JSON.parse(raw) as Stored) : undefined;
    } catch {
      return undefined;
    }
  }
  function save(): void {
    try {
      if (state) sessionStorage.setItem(storageKey, JSON.stringify(state));
      else sessionStorage.removeItem(storageKey);
    } catch {
      // Storage full or blocked: the chat still works for this page.
    }
  }
  function render(message: Message): HTMLElement {
    const item = document.createElement('p');
    item.className = `msg ${message.role}`;
    const who = document.createElement('span');
    who.className = 'sr-only';
    who.textContent = message.role === 'agent' ? 'Agent: ' : 'You: ';
    item.append(who, document.createTextNode(message.content));
    log.append(item);
    log.scrollTop = log.scrollHeight;
    return item;
  }
  function say(text: string): void {
    status.textContent = text;
  }
  function visible(messages: ChatAnswer['messages']): Message[] {
    return (messages ?? [])
      .filter((m) => (m.role === 'agent' || m.role === 'user') && typeof m.content === 'string' && m.content !== '')
      .map((m) => ({ role: m.role as Message['role'], content: m.content as string }));
  }
  async function post(path: string, body: unknown, withKey: boolean): Promise<{ status: number; json: ChatAnswer }> {
    const response = await fetch(base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(withKey ? { authorization: `Bearer ${publicKey}` } : {}) },
      body: JSON.stringify(body),
      credentials: 'omit',
    });
    const json = (await response.json().catch(() => ({}))) as ChatAnswer;
    return { status: response.status, json };
  }
  async function start(): Promise<boolean> {
    say('Connecting…');
    let answer: { status: number; json: ChatAnswer };
    try {
      answer = await post('/public/chat/start', { agent_id: agentId }, true);
    } catch {
      // Refused by CORS (this page's origin is not allowed for the key) or offline.
      say('Chat unavailable right now.');
      return false;
    }
    const { status: code, json } = answer;
    if (code !== 201 || !json.chat_id || !json.chat_secret) {
      say(json.message ? `Chat unavailable: ${json.message}` : 'Chat unavailable right now.');
      return false;
    }
    state = { chat_id: json.chat_id, chat_secret: json.chat_secret, messages: [], ended: json.chat_status === 'ended', open: true };
    for (const message of visible(json.message_with_tool_calls)) {
      state.messages.push(message);
      render(message);
    }
    save();
    say('');
    return true;
  }
  function setBusy(value: boolean): void {
    busy = value;
    input.setAttribute('aria-busy', String(value));
  }
  /**
   * Texts sent while the widget is busy (connecting, or waiting for the agent's reply): taken
   * from the box at once and sent in order as soon as it is free. One that cannot be sent
   * goes back into the box with those after it, so nothing typed is lost.
   */
  const pending: string[] = [];
  let connecting = false;
  function submit(text: string): void {
    if (text.trim() === '') return;
    pending.push(text);
    input.value = '';
    if (!busy) void drain();
    else say(connecting ? 'Connecting… your message will be sent once connected.' : 'Agent is typing… your message will be sent next.');
  }
  async function drain(): Promise<void> {
    setBusy(true);
    try {
      while (pending.length > 0) {
        if (!(await deliver(pending[0]!))) {
          input.value = pending.join('\n');
          pending.length = 0;
          return;
        }
        pending.shift();
      }
    } finally {
      setBusy(false);
    }
  }
  /** Sends one text (starting a chat first when there is none); false when it was not sent. */
  async function deliver(text: string): Promise<boolean> {
    let shown: HTMLElement | undefined;
    try {
      if ((!state || state.ended) && !(await connect())) return false;
      const chat = state!;
      shown = render({ role: 'user', content: text });
      say('Agent is typing…');
      const { status: code, json } = await post(`/public/chat/${encodeURIComponent(chat.chat_id)}/message`, { content: text, chat_secret: chat.chat_secret }, false);
      if (code === 404) {
        state = undefined;
        save();
        shown.remove();
        say('This conversation has ended. Send a message to start a new one.');
        return false;
      }
      if (code !== 200) {
        shown.remove();
        say(json.message ? `Not sent: ${json.message}` : 'Not sent; try again.');
        return false;
      }
      chat.messages.push({ role: 'user', content: text });
      for (const message of visible(json.messages)) {
        chat.messages.push(message);
        render(message);
      }
      chat.ended = json.chat_status === 'ended';
      save();
      say(chat.ended ? 'The conversation has ended.' : pending.length > 1 ? 'Agent is typing…' : '');
      return true;
    } catch {
      shown?.remove();
      say('Network error; try again.');
      return false;
    }
  }
  async function connect(): Promise<boolean> {
    connecting = true;
    try {
      return await start();
    } finally {
      connecting = false;
    }
  }
  function open(focus = true): void {
    panel.hidden = false;
    launcher.setAttribute('aria-expanded', 'true');
    launcher.setAttribute('aria-label', `Close ${title.toLowerCase()}`);
    if (state) {
      state.open = true;
      save();
    }
    if (focus) input.focus();
    if (!state && !busy) {
      setBusy(true);
      connect().finally(() => {
        setBusy(false);
        // What was typed while connecting goes now (a failed start is tried once more by the send).
        if (pending.length > 0) void drain();
      });
    }
  }
  function close(): void {
    panel.hidden = true;
    launcher.setAttribute('aria-expanded', 'false');
    launcher.removeAttribute('aria-label');
    if (state) {
      state.open = false;
      save();
    }
    launcher.focus();
  }

  launcher.addEventListener('click', () => (panel.hidden ? open() : close()));
  $<HTMLButtonElement>('close').addEventListener('click', close);
  $<HTMLButtonElement>('restart').addEventListener('click', () => {
    if (state && !state.ended) {
      fetch(`${base}/public/chat/${encodeURIComponent(state.chat_id)}/end`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chat_secret: state.chat_secret }),
        credentials: 'omit',
      }).catch(() => undefined);
    }
    state = undefined;
    save();
    log.replaceChildren();
    say('');
    input.focus();
  });
  root.addEventListener('keydown', (event) => {
    const key = (event as KeyboardEvent).key;
    if (key === 'Escape' && !panel.hidden) {
      event.preventDefault();
      close();
    }
  });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit(input.value);
    }
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    submit(input.value);
  });

  for (const message of state?.messages ?? []) render(message);
  document.body.append(host);
  if (state?.open) open(false);
}

const current = document.currentScript as HTMLScriptElement | null;
if (current) {
  if (document.body) boot(current);
  else document.addEventListener('DOMContentLoaded', () => boot(current), { once: true });
}
