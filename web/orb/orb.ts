/**
 * The Voice Orb page's script (`GET /orb/{token}`; docs/browser.md, "The Voice Orb page").
 * The page's HTML comes from the meta function (shared/meta/orb-page.ts) with the SDK's IIFE
 * (window.ParleyWebSDK) loaded before this file. It reads the share token from its own
 * address, asks `GET /public/share/{token}` for the agent's name, and on the button starts a
 * web call through `POST /public/share/{token}/web-call` and joins it with the SDK. Paths are
 * relative to the page, so it works under any base path (an API Gateway stage included).
 * Everything it writes into the page goes through textContent.
 */
import type { ParleyCallError, ParleyWebClient, TranscriptEntry, UpdateEvent } from '../sdk/src/index.ts';

type Sdk = { ParleyWebClient: typeof ParleyWebClient };
type State = 'loading' | 'ready' | 'unavailable' | 'starting' | 'connecting' | 'in_call' | 'ended' | 'unreachable' | 'failed';

const sdk = (window as unknown as { ParleyWebSDK?: Sdk }).ParleyWebSDK;
const main = document.getElementById('orb') as HTMLElement;
const heading = document.getElementById('agent-name') as HTMLElement;
const button = document.getElementById('call') as HTMLButtonElement;
const status = document.getElementById('status') as HTMLElement;
const transcriptSection = document.getElementById('transcript-section') as HTMLElement;
const transcriptList = document.getElementById('transcript') as HTMLOListElement;

const token = decodeURIComponent(location.pathname.replace(/\/+$/, '').split('/').pop() ?? '');
const shareUrl = new URL(`../public/share/${encodeURIComponent(token)}`, location.href);
const webCallUrl = new URL(`../public/share/${encodeURIComponent(token)}/web-call`, location.href);

let state: State = 'loading';
let client: ParleyWebClient | undefined;

function show(next: State, message: string, action?: string): void {
  state = next;
  main.dataset.state = next;
  status.textContent = message;
  if (action === undefined) {
    button.hidden = true;
  } else {
    button.hidden = false;
    button.textContent = action;
    button.disabled = next === 'starting' || next === 'connecting' || next === 'loading';
  }
}

function unavailable(): void {
  heading.textContent = 'This link is not available';
  document.title = 'Link not available';
  show('unavailable', 'This share link is unknown or has been revoked. Ask whoever sent it for a new one.');
}

function renderTranscript(entries: TranscriptEntry[]): void {
  transcriptSection.hidden = entries.length === 0 && transcriptList.childElementCount === 0;
  const items = entries.slice(-50).map((entry) => {
    const item = document.createElement('li');
    item.className = entry.role;
    const who = document.createElement('span');
    who.className = 'who';
    who.textContent = entry.role === 'agent' ? 'Agent: ' : 'You: ';
    item.append(who, entry.content);
    return item;
  });
  transcriptList.replaceChildren(...items);
}

async function load(): Promise<void> {
  if (!sdk) {
    show('failed', 'This page could not load its call library. Reload the page to try again.');
    return;
  }
  let response: Response;
  try {
    response = await fetch(shareUrl, { headers: { accept: 'application/json' }, credentials: 'omit' });
  } catch {
    show('failed', 'The service could not be reached. Check your connection and reload the page.');
    return;
  }
  if (response.status === 404 || response.status === 410 || response.status === 403) {
    unavailable();
    return;
  }
  if (!response.ok) {
    show('failed', `The agent could not be loaded (error ${response.status}). Reload the page to try again.`);
    return;
  }
  const agent = (await response.json().catch(() => ({}))) as { agent_name?: unknown };
  const name = typeof agent.agent_name === 'string' && agent.agent_name.trim() !== '' ? agent.agent_name.trim() : 'Voice agent';
  heading.textContent = name;
  document.title = `Talk to ${name}`;
  show('ready', 'Press Start call and allow the microphone to talk to the agent.', 'Start call');
}

async function startCall(): Promise<void> {
  show('starting', 'Starting the call…', 'Start call');
  renderTranscript([]);
  let response: Response;
  try {
    response = await fetch(webCallUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: '{}',
      credentials: 'omit',
    });
  } catch {
    show('failed', 'The service could not be reached. Check your connection and try again.', 'Try again');
    return;
  }
  if (response.status === 404 || response.status === 410 || response.status === 403) {
    unavailable();
    return;
  }
  if (response.status === 402) {
    show('failed', 'This agent cannot take calls right now. Try again later.', 'Try again');
    return;
  }
  if (response.status === 429) {
    show('failed', 'Too many calls were started from here. Wait a minute and try again.', 'Try again');
    return;
  }
  if (response.status !== 201) {
    show('failed', `The call could not be started (error ${response.status}). Try again later.`, 'Try again');
    return;
  }
  const call = (await response.json().catch(() => ({}))) as { access_token?: unknown; livekit_url?: unknown };
  if (typeof call.access_token !== 'string') {
    show('failed', 'The call could not be started (the answer had no access token). Try again later.', 'Try again');
    return;
  }
  show('connecting', 'Connecting to the media server…', 'Start call');
  const current = new sdk!.ParleyWebClient();
  client = current;
  current.on('call_started', () => {
    show('in_call', 'Connected. Waiting for the agent to join…', 'End call');
    void current.startAudioPlayback().catch(() => undefined);
  });
  current.on('call_ready', () => {
    if (state === 'in_call') status.textContent = 'The agent is listening. Speak now.';
  });
  current.on('agent_start_talking', () => {
    main.dataset.speaking = 'true';
    if (state === 'in_call') status.textContent = 'The agent is speaking…';
  });
  current.on('agent_stop_talking', () => {
    delete main.dataset.speaking;
    if (state === 'in_call') status.textContent = 'The agent is listening. Speak now.';
  });
  current.on('update', (update: UpdateEvent) => renderTranscript(update.transcript));
  current.on('call_ended', () => {
    delete main.dataset.speaking;
    client = undefined;
    if (state === 'in_call') show('ended', 'The call has ended.', 'Start a new call');
  });
  current.on('error', (error: ParleyCallError) => {
    if (error.code === 'connection_failed') {
      client = undefined;
      show('unreachable', 'Cannot reach the media server, so the call could not connect. Try again later.', 'Try again');
    } else if (error.code === 'microphone_failed' && state !== 'in_call') {
      client = undefined;
      show('failed', 'The microphone is blocked or missing. Allow microphone access and try again.', 'Try again');
    }
  });
  await current.startCall({
    accessToken: call.access_token,
    ...(typeof call.livekit_url === 'string' && call.livekit_url ? { livekitUrl: call.livekit_url } : {}),
  });
}

button.addEventListener('click', () => {
  if (state === 'in_call' && client) {
    client.stopCall();
    return;
  }
  if (state === 'ready' || state === 'ended' || state === 'unreachable' || state === 'failed') void startCall();
});

void load();
