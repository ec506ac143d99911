import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { builtWebAssets, newPage, serve } from '../support/web-browser.ts';

/**
 * `@parley/web-sdk` in headless Chromium, built as the pages load it (the IIFE that sets
 * window.ParleyWebSDK), against a fake livekit-client Room given through the client's
 * `roomFactory`: the test emits the Room's events (with livekit-client's event names) and
 * reads what the client emitted and what it asked of the Room.
 */

/** A stand-in for livekit-client's Room: records what the client asks, emits what the test says. */
const FAKE_ROOM = `
window.rooms = [];
window.events = [];
window.fail = {};
class FakeRoom {
  constructor(options) {
    this.options = options;
    this.listeners = {};
    this.calls = [];
    this.remoteParticipants = new Map();
    this.localParticipant = {
      setMicrophoneEnabled: async (on) => {
        this.calls.push('microphone ' + on);
        if (window.fail.microphone) throw new Error('Permission denied');
      },
    };
    window.rooms.push(this);
  }
  on(event, listener) { (this.listeners[event] = this.listeners[event] || []).push(listener); return this; }
  emit(event, ...args) { for (const listener of this.listeners[event] || []) listener(...args); }
  async connect(url, token) {
    this.calls.push('connect ' + url + ' ' + token);
    if (window.fail.connect) throw new Error('could not establish signal connection');
  }
  async disconnect() { this.calls.push('disconnect'); this.emit('disconnected'); }
  async startAudio() { this.calls.push('startAudio'); }
}
const EVENTS = ['call_started', 'call_ready', 'agent_start_talking', 'agent_stop_talking', 'update', 'metadata', 'node_transition', 'call_ended', 'error'];
window.agent = { identity: 'agent-AJ_1', isAgent: true, attributes: {} };
window.caller = { identity: 'listener_1', isAgent: false, attributes: {} };
window.bytes = (value) => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));
window.makeClient = (options = {}) => {
  const client = new ParleyWebSDK.ParleyWebClient({ ...options, roomFactory: (roomOptions) => new FakeRoom(roomOptions) });
  for (const name of EVENTS) {
    client.on(name, (payload) => window.events.push(payload === undefined ? [name] : [name, payload instanceof Error ? { code: payload.code, message: payload.message } : payload]));
  }
  client.on('audio', (samples) => { window.audio = (window.audio || 0) + 1; window.audioLength = samples.length; window.audioIsFloat32 = samples instanceof Float32Array; });
  return client;
};
window.room = () => window.rooms[window.rooms.length - 1];
window.started = async (config = {}) => {
  window.client = window.makeClient(config.clientOptions);
  await window.client.startCall({ accessToken: 'token-1', ...config.call });
  return window.room();
};
`;

let origin: string;
let page: Page;

beforeAll(async () => {
  const { dir, manifest } = await builtWebAssets();
  const sdk = readFileSync(join(dir, manifest.files['parley-web-sdk.js']!.file), 'utf8');
  origin = await serve((req, res) => {
    if (req.url === '/sdk.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(sdk);
    if (req.url === '/fake-room.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(FAKE_ROOM);
    res.writeHead(200, { 'content-type': 'text/html' }).end(
      '<!doctype html><html lang="en"><head><title>SDK test</title><script src="/sdk.js"></script><script src="/fake-room.js"></script></head><body></body></html>',
    );
  });
  page = await newPage();
}, 60_000);

beforeEach(async () => {
  await page.goto(`${origin}/`);
});

const run = <T = any>(script: string): Promise<T> => page.evaluate(`(async () => { ${script} })()`) as Promise<T>;
const events = () => run<unknown[][]>('return window.events;');
const calls = () => run<string[]>('return window.room().calls;');

describe('ParleyWebClient', () => {
  it('joins the room with the call token, turns the microphone on, then emits call_started', async () => {
    const options = await run(`
      const room = await window.started({ call: { livekitUrl: 'wss://media.example.test', sampleRate: 24000, captureDeviceId: 'mic-2', playbackDeviceId: 'speaker-3' } });
      return room.options;`);
    expect(await calls()).toEqual(['connect wss://media.example.test token-1', 'microphone true']);
    expect(options.audioCaptureDefaults).toMatchObject({ deviceId: 'mic-2', sampleRate: 24000, channelCount: 1, echoCancellation: true });
    expect(options.audioOutput).toEqual({ deviceId: 'speaker-3' });
    expect(await events()).toEqual([['call_started']]);
  });

  it("connects to the call's livekitUrl, else the client's url option, else the deployment default", async () => {
    const urls = await run(`
      const urls = [];
      await window.started({ clientOptions: { url: 'wss://client-option.test' } });
      urls.push(window.room().calls[0]);
      await window.started({ clientOptions: { url: 'wss://client-option.test' }, call: { livekitUrl: 'wss://per-call.test' } });
      urls.push(window.room().calls[0]);
      await window.started();
      urls.push(window.room().calls[0]);
      return urls;`);
    // Built without LIVEKIT_URL, the deployment default is livekit-server --dev's address.
    expect(urls).toEqual(['connect wss://client-option.test token-1', 'connect wss://per-call.test token-1', 'connect ws://127.0.0.1:7880 token-1']);
  });

  it('emits call_ready once when the agent joins, and not for other participants', async () => {
    await run(`
      const room = await window.started();
      room.emit('participantConnected', window.caller);
      room.emit('participantConnected', window.agent);
      room.emit('trackSubscribed', { kind: 'audio', attach() {} }, { trackName: 'agent_audio' }, window.agent);`);
    expect(await events()).toEqual([['call_started'], ['call_ready']]);
  });

  it('emits call_ready for an agent already in the room when the connection completes', async () => {
    await run(`
      window.client = window.makeClient();
      const start = window.client.startCall({ accessToken: 'token-1' });
      window.room().remoteParticipants.set('agent', window.agent);
      await start;`);
    expect(await events()).toEqual([['call_started'], ['call_ready']]);
  });

  it("wires the agent's data messages: transcript updates, metadata, talking state", async () => {
    await run(`
      const room = await window.started();
      const transcript = [{ role: 'agent', content: 'Hi, how can I help?' }, { role: 'user', content: 'Book a table' }];
      room.emit('dataReceived', window.bytes({ event_type: 'agent_start_talking' }), window.agent, 0, 'parley.client');
      room.emit('dataReceived', window.bytes({ event_type: 'agent_start_talking' }), window.agent, 0, 'parley.client');
      room.emit('dataReceived', window.bytes({ event_type: 'update', transcript }), window.agent, 0, 'parley.client');
      room.emit('dataReceived', window.bytes({ event_type: 'agent_stop_talking' }), window.agent, 0, 'parley.client');
      room.emit('dataReceived', window.bytes({ order: 42 }), window.agent, 0, 'parley.metadata');
      room.emit('dataReceived', window.bytes('plain text'), undefined, 0, 'parley.metadata');
      room.emit('dataReceived', window.bytes({ event_type: 'metadata', stage: 'greeting' }), window.agent, 0, undefined);
      room.emit('dataReceived', window.bytes({ event_type: 'node_transition', to: 'n2' }), window.agent, 0, 'parley.client');
      room.emit('dataReceived', window.bytes({ event_type: 'something_new' }), window.agent, 0, 'parley.client');`);
    expect(await events()).toEqual([
      ['call_started'],
      ['agent_start_talking'],
      ['update', { event_type: 'update', transcript: [{ role: 'agent', content: 'Hi, how can I help?' }, { role: 'user', content: 'Book a table' }] }],
      ['agent_stop_talking'],
      ['metadata', { order: 42 }],
      ['metadata', 'plain text'],
      ['metadata', { event_type: 'metadata', stage: 'greeting' }],
      ['node_transition', { event_type: 'node_transition', to: 'n2' }],
    ]);
    expect(await run('return window.client.isAgentTalking;')).toBe(false);
  });

  it("follows the agent's lk.agent.state attribute for the talking events", async () => {
    await run(`
      const room = await window.started();
      room.emit('participantAttributesChanged', { 'lk.agent.state': 'thinking' }, window.agent);
      room.emit('participantAttributesChanged', { 'lk.agent.state': 'speaking' }, window.agent);
      room.emit('participantAttributesChanged', { 'lk.agent.state': 'speaking' }, window.agent);
      room.emit('participantAttributesChanged', { 'lk.agent.state': 'speaking' }, window.caller);
      room.emit('participantAttributesChanged', { other: 'x' }, window.agent);
      room.emit('participantAttributesChanged', { 'lk.agent.state': 'listening' }, window.agent);`);
    expect(await events()).toEqual([['call_started'], ['agent_start_talking'], ['agent_stop_talking']]);
  });

  it('ignores data from other participants and on the worker topic, and reports malformed messages as errors', async () => {
    await run(`
      const room = await window.started();
      room.emit('dataReceived', window.bytes({ event_type: 'update', transcript: [{ role: 'user', content: 'spoofed' }] }), window.caller, 0, 'parley.client');
      room.emit('dataReceived', window.bytes({ type: 'say', text: 'x' }), undefined, 0, 'parley.live');
      room.emit('dataReceived', window.bytes({ event_type: 'update', transcript: [{ role: 'system', content: 1 }] }), window.agent, 0, 'parley.client');
      room.emit('dataReceived', window.bytes('{not json'), window.agent, 0, 'parley.client');`);
    expect(await events()).toEqual([
      ['call_started'],
      ['error', { code: 'invalid_message', message: 'A transcript update from the agent was malformed' }],
      ['error', { code: 'invalid_message', message: 'A message from the agent was not JSON' }],
    ]);
  });

  it('mutes and unmutes the microphone, and starts audio playback on request', async () => {
    await run(`
      await window.started();
      window.client.mute();
      window.client.unmute();
      await window.client.startAudioPlayback();`);
    expect(await calls()).toEqual(['connect ws://127.0.0.1:7880 token-1', 'microphone true', 'microphone false', 'microphone true', 'startAudio']);
  });

  it('stopCall disconnects and emits call_ended once; later room events are ignored', async () => {
    await run(`
      const room = await window.started();
      window.client.stopCall();
      window.client.stopCall();
      window.client.mute();
      room.emit('participantConnected', window.agent);
      room.emit('dataReceived', window.bytes({ event_type: 'agent_start_talking' }), window.agent, 0, 'parley.client');
      await new Promise((resolve) => setTimeout(resolve, 50));`);
    expect(await events()).toEqual([['call_started'], ['call_ended']]);
    expect(await calls()).toEqual(['connect ws://127.0.0.1:7880 token-1', 'microphone true', 'disconnect']);
  });

  it('emits call_ended when the agent leaves or the room disconnects', async () => {
    const ended = await run(`
      const room = await window.started();
      room.emit('participantDisconnected', window.caller);
      room.emit('participantDisconnected', window.agent);
      const afterAgent = window.events.map((event) => event[0]);
      window.events.length = 0;
      const second = await window.started();
      second.emit('disconnected');
      return [afterAgent, window.events.map((event) => event[0])];`);
    expect(ended).toEqual([['call_started', 'call_ended'], ['call_started', 'call_ended']]);
  });

  it('reports a media server it cannot reach as connection_failed, with no call_started or call_ended', async () => {
    await run(`
      window.fail.connect = true;
      await window.started({ call: { livekitUrl: 'ws://127.0.0.1:9' } });
      await new Promise((resolve) => setTimeout(resolve, 20));`);
    expect(await events()).toEqual([['error', { code: 'connection_failed', message: 'Error starting call: cannot reach the media server at ws://127.0.0.1:9' }]]);
    expect(await calls()).toEqual(['connect ws://127.0.0.1:9 token-1', 'disconnect']);
  });

  it('reports a microphone it cannot turn on as microphone_failed and leaves the room', async () => {
    await run(`
      window.fail.microphone = true;
      await window.started();
      await new Promise((resolve) => setTimeout(resolve, 20));`);
    expect(await events()).toEqual([['error', { code: 'microphone_failed', message: 'Error starting call: the microphone could not be turned on' }]]);
    expect(await calls()).toEqual(['connect ws://127.0.0.1:7880 token-1', 'microphone true', 'disconnect']);
  });

  it('refuses a second call while one is in progress', async () => {
    await run(`
      await window.started();
      await window.client.startCall({ accessToken: 'token-2' });`);
    expect(await events()).toEqual([['call_started'], ['error', { code: 'call_in_progress', message: 'A call is already in progress: stopCall() first' }]]);
    expect(await run('return window.rooms.length;')).toBe(1);
  });

  it("emits the agent's raw audio samples as Float32Array with emitRawAudioSamples", async () => {
    await run(`
      const room = await window.started({ call: { emitRawAudioSamples: true } });
      const context = new AudioContext();
      const oscillator = context.createOscillator();
      const destination = context.createMediaStreamDestination();
      oscillator.connect(destination);
      oscillator.start();
      const track = { kind: 'audio', attach() {}, mediaStreamTrack: destination.stream.getAudioTracks()[0] };
      room.emit('trackSubscribed', track, { trackName: 'agent_audio' }, window.agent);`);
    await expect.poll(() => run<number>('return window.audio || 0;'), { timeout: 10_000 }).toBeGreaterThan(2);
    expect(await run('return [window.audioLength, window.audioIsFloat32];')).toEqual([2048, true]);
    const before = await run<number>('window.client.stopCall(); await new Promise((r) => setTimeout(r, 200)); return window.audio;');
    await run('await new Promise((r) => setTimeout(r, 200));');
    expect(await run<number>('return window.audio;')).toBe(before);
  });

  it('exports RetellWebClient as the same class', async () => {
    expect(await run('return ParleyWebSDK.RetellWebClient === ParleyWebSDK.ParleyWebClient;')).toBe(true);
  });
});
