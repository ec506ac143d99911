import '../local/quiet-aws-sdk.ts';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { percentile, round, table } from './stats.ts';
import type { VoiceFakeLatencies } from './voice-fakes.ts';

/**
 * P6, voice to voice: the time from the caller's last voiced frame to the agent's first audio
 * frame reaching the caller's speaker, through the worker's real session (worker/src/session.ts:
 * LiveKit Agents' AgentSession, its built-in voice activity detection, the real Deepgram and
 * ElevenLabs plugins, Parley's engine streamAgentTurn on a Retell LLM in DynamoDB Local),
 * with the vendors faked on 127.0.0.1 at fixed latencies (bench/voice-fakes.ts, in a process
 * of their own) and the caller's microphone and speaker in-process (espeak-ng speech).
 *
 * Each turn is split: the end of the turn (last voiced frame → the framework commits the
 * caller's turn), the vendors' time (the model's first token as the engine measured it, plus
 * the voice's first byte), and the pipeline's own overhead: total − end of turn − the
 * vendors' time still ahead at the commit. The reply starts at the final transcript,
 * before the commit (preemptive generation), so part of the model's time is hidden in the
 * end of the turn; subtracting all of it would make the overhead look negative.
 * Then K calls at once: CPU and memory per concurrent call, and calls per vCPU.
 *
 *   npm run bench -- --only=p6            (from bench/run.ts)
 *   npx tsx bench/voice-to-voice.ts --turns=20 --concurrent=10 --out=bench/out/p6.json
 */

export const P6_TARGETS = { totalP50Ms: 700, overheadP50Ms: 150 };

/** The latencies of the issue: final transcript 100 ms after the speech, first token 300 ms, first byte 150 ms. */
const VENDOR_LATENCIES: VoiceFakeLatencies = { finalDelayMs: 100, hangoverMs: 100, modelFirstTokenMs: 300, voiceFirstByteMs: 150 };
const ZERO_LATENCIES: VoiceFakeLatencies = { finalDelayMs: 0, hangoverMs: 100, modelFirstTokenMs: 0, voiceFirstByteMs: 0 };

const SETTINGS = {
  TABLE_NAME: 'parley-bench-voice',
  AWS_REGION: 'us-east-1',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  LOG_LEVEL: 'error',
  WORKER_TEST_LOG_LEVEL: 'fatal',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

export interface P6Turn {
  totalMs: number;
  endOfTurnMs: number;
  /** The model's first token (as the engine measured it) plus the voice's first byte. */
  vendorMs: number;
  /** The part of it after the commit: what the caller waits on once the turn is theirs. */
  vendorAfterCommitMs: number;
  /** total − end of turn − vendors after the commit: the pipeline's own time. */
  overheadMs: number;
  /** When the reply the caller heard started, from the turn's commit (negative: started early, preemptively). */
  replyStartFromCommitMs: number;
  modelFirstTokenMs: number;
}

export interface P6Split {
  n: number;
  total: { p50: number; p90: number };
  endOfTurn: { p50: number; p90: number };
  vendor: { p50: number; p90: number };
  vendorAfterCommit: { p50: number; p90: number };
  overhead: { p50: number; p90: number };
  replyStartFromCommit: { p50: number; p90: number };
}

export interface P6Result {
  latencies: { vendors: VoiceFakeLatencies; zero: VoiceFakeLatencies };
  endOfTurnDelayMs: number;
  vendors: P6Split;
  zero: P6Split;
  concurrency: { calls: number; turnsPerCall: number; wallMs: number; cpuMs: number; cpuPerCallPct: number; callsPerVcpu: number; rssBeforeMiB: number; rssPeakMiB: number; rssPerCallMiB: number; fakesCpuMs: number | null; loadAverage: number; totalP50Ms: number };
  met: { total: boolean; overhead: boolean };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`P6: ${what} did not happen within ${timeoutMs} ms`);
    await sleep(5);
  }
}

function startFakes(latencies: VoiceFakeLatencies): Promise<{ child: ChildProcess; urls: { deepgram: string; elevenlabs: string; openai: string } }> {
  const child = fork(join(import.meta.dirname, 'voice-fakes.ts'), [JSON.stringify(latencies)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (urls) => resolve({ child, urls: urls as never }));
    child.once('exit', (code) => reject(new Error(`P6: the fake vendors exited (${code})`)));
  });
}

/** A process's CPU time (user + system, ms) from /proc; undefined where there is none. */
function processCpuMs(pid: number | undefined): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are the 12th and 13th fields after the command, in clock ticks (100 a second).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

function split(turns: P6Turn[]): P6Split {
  const pick = (get: (turn: P6Turn) => number) => {
    const sorted = turns.map(get).sort((a, b) => a - b);
    return { p50: round(percentile(sorted, 50), 1), p90: round(percentile(sorted, 90), 1) };
  };
  return {
    n: turns.length,
    total: pick((t) => t.totalMs),
    endOfTurn: pick((t) => t.endOfTurnMs),
    vendor: pick((t) => t.vendorMs),
    vendorAfterCommit: pick((t) => t.vendorAfterCommitMs),
    overhead: pick((t) => t.overheadMs),
    replyStartFromCommit: pick((t) => t.replyStartFromCommitMs),
  };
}

export async function measureVoiceToVoice(options: { turns: number; concurrent: number; concurrentTurns: number; log: (line: string) => void }): Promise<P6Result> {
  const { log } = options;
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-voice-'));
  Object.assign(process.env, SETTINGS, { DATA_DIR: dataDir });
  const closers: (() => Promise<unknown> | unknown)[] = [() => rmSync(dataDir, { recursive: true, force: true })];
  try {
    const { startDynamoDbLocal } = await import('../local/dynamodb.ts');
    const dynamoDbLocal = await startDynamoDbLocal();
    closers.unshift(() => dynamoDbLocal.stop());
    process.env.DYNAMODB_ENDPOINT = dynamoDbLocal.endpoint;
    // Only now: these read the settings above once, at load.
    const [{ ensureTable }, { dynamo, tableName }, { startLocalServer }, { createWorkspace }] = await Promise.all([
      import('../shared/platform/store/create-table.ts'),
      import('../shared/platform/store/db.ts'),
      import('../local/server.ts'),
      import('../shared/account/workspaces.ts'),
    ]);
    await ensureTable(dynamo, tableName);
    const server = await startLocalServer({ port: 0, host: '127.0.0.1' });
    closers.unshift(() => server.close());
    const workspace = await createWorkspace('Voice benchmark');
    const post = async (path: string, body: unknown) => {
      const response = await fetch(new URL(path, server.url), {
        method: 'POST',
        headers: { authorization: `Bearer ${workspace.api_key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const json = (await response.json()) as { llm_id: string; agent_id: string; version: number };
      if (response.status !== 201) throw new Error(`P6: POST ${path} answered ${response.status}: ${JSON.stringify(json)}`);
      return json;
    };
    const llm = await post('/create-retell-llm', { general_prompt: 'You book appointments.', begin_message: 'Hello.' });
    const agent = await post('/create-agent', { response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, voice_id: '11labs-Adrian' });

    const [{ getAgent }, conversation, { OpenAiCompatibleModel, useLanguageModel }, { agentSettings, endOfTurnDelayMs }, { readSpeechVendorSettings }, { startCallSession }, { createStt, createVoice }, speech, io, { CALLER_LINE }] =
      await Promise.all([
        import('../shared/agents/index.ts'),
        import('../shared/conversation/index.ts'),
        import('../shared/vendors/llm/index.ts'),
        import('../worker/src/agent-settings.ts'),
        import('../worker/src/config.ts'),
        import('../worker/src/session.ts'),
        import('../worker/src/vendors.ts'),
        import('../worker/test/support/speech.ts'),
        import('../worker/test/support/voice-call.ts'),
        import('./voice-fakes.ts'),
      ]);
    const version = await getAgent(workspace.workspace_id, agent.agent_id, agent.version);
    const { settings } = agentSettings(version as Record<string, unknown>);
    const callerPcm = speech.speechPcm(CALLER_LINE);
    let callNumber = 0;

    /** One call: the greeting, then `turns` turns of the caller, each heard out before the next. */
    async function runCall(turns: number, latencies: VoiceFakeLatencies, urls: { deepgram: string; elevenlabs: string; openai: string }): Promise<P6Turn[]> {
      const access = await readSpeechVendorSettings(async (name) =>
        ({ DEEPGRAM_API_KEY: 'k', DEEPGRAM_BASE_URL: urls.deepgram, ELEVENLABS_API_KEY: 'k', ELEVENLABS_BASE_URL: urls.elevenlabs })[name],
      );
      const state = await conversation.openConversation({
        workspaceId: workspace.workspace_id,
        agentId: agent.agent_id,
        agentVersion: agent.version,
        callId: `call_bench${String(++callNumber).padStart(22, '0')}`,
        channel: 'voice',
        dynamicVariables: {},
      });
      const started: { at: number; firstTokenMs: Promise<number | undefined> }[] = [];
      const microphone = new io.SpeechMicrophone();
      const speaker = new io.TimedSpeaker();
      const call = await startCallSession({
        settings,
        state,
        streamTurn: (turnState, event, turnOptions) => {
          const turn = conversation.streamAgentTurn(turnState, event, turnOptions);
          started.push({ at: performance.now(), firstTokenMs: turn.firstTokenMs });
          return turn;
        },
        reports: { transcript: async () => {}, send: async () => ({ status: 'applied' as const }), kbRetrieve: async () => ({ prompt: '' }), flush: async () => {} },
        stt: createStt('deepgram', access, settings),
        tts: await createVoice([settings.voice_id], access, settings),
        io: { input: microphone, output: speaker },
        aecWarmupMs: null,
      });
      const commits: number[] = [];
      io.onUserTurn(call.session, (at) => commits.push(at));
      const samples: P6Turn[] = [];
      try {
        await until(() => speaker.segments.length === 1, 15_000, 'the greeting');
        for (let turn = 0; turn < turns; turn++) {
          await sleep(300);
          const heardBefore = speaker.segments.length;
          const framesBefore = speaker.firstFrames.length;
          const commitsBefore = commits.length;
          await microphone.say(callerPcm);
          const lastVoiced = microphone.lastVoicedAt!;
          await until(() => speaker.segments.length > heardBefore && commits.length > commitsBefore, 15_000, 'the reply');
          const firstFrame = speaker.firstFrames[framesBefore]!;
          const committed = commits[commitsBefore]!;
          // The reply heard is the last turn the engine started before its audio arrived.
          const reply = started.filter((turnStarted) => turnStarted.at <= firstFrame).at(-1)!;
          const modelMs = (await reply.firstTokenMs) ?? latencies.modelFirstTokenMs;
          const totalMs = firstFrame - lastVoiced;
          const endOfTurnMs = committed - lastVoiced;
          const vendorMs = modelMs + latencies.voiceFirstByteMs;
          // A reply started before the commit (preemptive generation) waits on the model only for what is left of its first token then.
          const vendorAfterCommitMs = Math.max(0, reply.at + modelMs - committed) + latencies.voiceFirstByteMs;
          samples.push({
            totalMs,
            endOfTurnMs,
            vendorMs,
            vendorAfterCommitMs,
            overheadMs: totalMs - endOfTurnMs - vendorAfterCommitMs,
            replyStartFromCommitMs: reply.at - committed,
            modelFirstTokenMs: modelMs,
          });
        }
      } finally {
        await call.end('user_hangup');
      }
      return samples;
    }

    async function variant(latencies: VoiceFakeLatencies, name: string) {
      const fakes = await startFakes(latencies);
      try {
        useLanguageModel(new OpenAiCompatibleModel({ baseUrl: fakes.urls.openai }));
        // A warm-up call (JIT, connections, fixtures), not measured.
        await runCall(2, latencies, fakes.urls);
        const turns = await runCall(options.turns, latencies, fakes.urls);
        log(`P6 ${name}: ${turns.length} turns`);
        return { turns, fakes };
      } catch (error) {
        fakes.child.kill();
        throw error;
      }
    }

    const vendors = await variant(VENDOR_LATENCIES, 'vendors at fixed latencies');
    vendors.fakes.child.kill();
    const zero = await variant(ZERO_LATENCIES, 'zero-latency vendors');

    // K calls at once on the zero-latency fakes (in their own process): the worker's CPU and memory per call.
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 100);
    const cpuStart = process.cpuUsage();
    const fakesCpuStart = processCpuMs(zero.fakes.child.pid);
    const wallStart = performance.now();
    const concurrentTurns = (
      await Promise.all(Array.from({ length: options.concurrent }, async (_, index) => {
        await sleep(index * 150);
        return runCall(options.concurrentTurns, ZERO_LATENCIES, zero.fakes.urls);
      }))
    ).flat();
    const wallMs = performance.now() - wallStart;
    const cpu = process.cpuUsage(cpuStart);
    const fakesCpuEnd = processCpuMs(zero.fakes.child.pid);
    clearInterval(sampler);
    zero.fakes.child.kill();
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const cpuPerCall = cpuMs / wallMs / options.concurrent;

    const vendorSplit = split(vendors.turns);
    const zeroSplit = split(zero.turns);
    return {
      latencies: { vendors: VENDOR_LATENCIES, zero: ZERO_LATENCIES },
      endOfTurnDelayMs: endOfTurnDelayMs(settings),
      vendors: vendorSplit,
      zero: zeroSplit,
      concurrency: {
        calls: options.concurrent,
        turnsPerCall: options.concurrentTurns,
        wallMs: round(wallMs, 0),
        cpuMs: round(cpuMs, 0),
        cpuPerCallPct: round(cpuPerCall * 100, 1),
        callsPerVcpu: round(1 / cpuPerCall, 1),
        rssBeforeMiB: round(rssBefore / 2 ** 20, 1),
        rssPeakMiB: round(rssPeak / 2 ** 20, 1),
        rssPerCallMiB: round((rssPeak - rssBefore) / 2 ** 20 / options.concurrent, 1),
        fakesCpuMs: fakesCpuStart === undefined || fakesCpuEnd === undefined ? null : fakesCpuEnd - fakesCpuStart,
        loadAverage: round(loadavg()[0]!, 2),
        totalP50Ms: round(percentile(concurrentTurns.map((t) => t.totalMs).sort((a, b) => a - b), 50), 1),
      },
      met: { total: vendorSplit.total.p50 <= P6_TARGETS.totalP50Ms, overhead: vendorSplit.overhead.p50 <= P6_TARGETS.overheadP50Ms },
    };
  } finally {
    for (const close of closers) await close();
  }
}

/** The P6 table as printed and as docs/performance.md shows it. */
export function p6Table(result: P6Result): string {
  const row = (name: string, s: P6Split) => [
    name,
    String(s.n),
    `${s.total.p50} / ${s.total.p90}`,
    `${s.endOfTurn.p50} / ${s.endOfTurn.p90}`,
    `${s.vendor.p50} / ${s.vendor.p90}`,
    `${s.vendorAfterCommit.p50} / ${s.vendorAfterCommit.p90}`,
    `${s.overhead.p50} / ${s.overhead.p90}`,
    `${s.replyStartFromCommit.p50} / ${s.replyStartFromCommit.p90}`,
  ];
  return table(
    ['vendors', 'turns', 'total p50 / p90 ms', 'end of turn', 'vendor time', 'vendor time after commit', 'overhead', 'reply start − commit'],
    [row('fixed latencies (100 / 300 / 150 ms)', result.vendors), row('zero latency', result.zero)],
  );
}

export function p6Summary(result: P6Result): string {
  const c = result.concurrency;
  const verdict = (met: boolean) => (met ? 'met' : 'MISSED');
  return [
    p6Table(result),
    `P6 total p50 ${result.vendors.total.p50} ms (target ≤ ${P6_TARGETS.totalP50Ms}: ${verdict(result.met.total)}); ` +
      `overhead p50 ${result.vendors.overhead.p50} ms (target ≤ ${P6_TARGETS.overheadP50Ms}: ${verdict(result.met.overhead)}); ` +
      `end-of-turn delay setting ${result.endOfTurnDelayMs} ms (responsiveness 1).`,
    `${c.calls} calls at once, ${c.turnsPerCall} turns each: CPU ${c.cpuPerCallPct}% of a vCPU per call (${c.callsPerVcpu} calls per vCPU), ` +
      `RSS ${c.rssBeforeMiB} → ${c.rssPeakMiB} MiB (${c.rssPerCallMiB} MiB per call), total p50 under that load ${c.totalP50Ms} ms (zero-latency vendors); ` +
      `the fakes' process used ${c.fakesCpuMs ?? '?'} ms of CPU meanwhile, load average ${c.loadAverage}.`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { turns: { type: 'string' }, concurrent: { type: 'string' }, 'concurrent-turns': { type: 'string' }, out: { type: 'string' } } });
  const result = await measureVoiceToVoice({
    turns: Number(values.turns ?? 20),
    concurrent: Number(values.concurrent ?? Math.min(10, cpus().length * 5)),
    concurrentTurns: Number(values['concurrent-turns'] ?? 4),
    log: (line) => console.log(`[bench] ${line}`),
  });
  console.log(p6Summary(result));
  if (values.out) writeFileSync(values.out, `${JSON.stringify(result, null, 2)}\n`);
  process.exit(0);
}
