import { logger } from '../../shared/platform/logger.ts';
import {
  MAX_REPORT_UTTERANCES,
  MAX_WORKER_ENTRY_BYTES,
  MAX_WORKER_REPORT_BYTES,
  type WorkerEvent,
  type WorkerUtterance,
} from '../../shared/vendors/media/index.ts';

/*
 * The worker's side of `POST /internal/calls/{call_id}/events` and
 * `POST /internal/calls/{call_id}/kb-retrieve` (docs/calls-media.md, The agent worker's
 * contract). Events go out one at a time, in the order they happened, each with the next
 * sequence number; a try that may not have been applied (a 5xx, a 409 that is not the end,
 * no answer) is sent again with the same sequence, which Parley applies at most once.
 */

type WithoutSequence<E> = E extends unknown ? Omit<E, 'sequence' | 'timestamp'> : never;
/** An event as the worker hands it over: the client numbers and stamps it. */
export type ReportEvent = WithoutSequence<WorkerEvent>;
export type Utterance = Omit<WorkerUtterance, 'words'> & { words?: WorkerUtterance['words'] };

export type ReportOutcome =
  /** 2xx: applied, or ignored as one Parley had already. */
  | { status: 'applied' }
  /** 400, 413, 422 (and a decision with no transfer waiting): this event is not applied and never will be; the next ones go on. */
  | { status: 'refused'; code: number; message: string }
  /** 401, 404, or 409 `has ended`: the call's route is shut, so this event and every later one are dropped. */
  | { status: 'closed'; code: number; message: string }
  /** Still not through after the last try (5xx, 409 races, network failures). */
  | { status: 'failed'; message: string };

export interface RetryOptions {
  /** Wait before the second try; doubled each try up to maxDelayMs. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** Tries of one event, the first included. */
  maxAttempts: number;
}

const DEFAULT_RETRY: RetryOptions = { initialDelayMs: 250, maxDelayMs: 5000, maxAttempts: 10 };

export interface ReportClientOptions {
  /** `report_url` of the dispatch metadata. */
  reportUrl: string;
  /** `report_token` of the dispatch metadata. */
  token: string;
  fetch?: typeof fetch;
  /** Event timestamps (epoch ms). */
  now?: () => number;
  /** Waits between tries (tests pass one that does not wait). */
  sleep?: (ms: number) => Promise<void>;
  retry?: Partial<RetryOptions>;
  /** One try's limit, from sending to the answer's end. */
  requestTimeoutMs?: number;
  /** A retrieval's limit: a turn waits for it, and answers without knowledge past it. */
  retrieveTimeoutMs?: number;
}

interface Entry {
  event: WorkerEvent;
  sending: boolean;
  /** Bytes of the event's JSON (transcript batches grow while they wait). */
  bytes: number;
  done: ((outcome: ReportOutcome) => void)[];
}

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/** Room left in a body for the envelope around the utterances. */
const ENVELOPE_BYTES = 1024;

/**
 * An utterance as one or more whose JSON each fits MAX_WORKER_ENTRY_BYTES: a long turn is
 * halved at a word boundary until every part fits, its word timings split with it.
 */
export function splitUtterance(utterance: Utterance, maxBytes = MAX_WORKER_ENTRY_BYTES): WorkerUtterance[] {
  const whole: WorkerUtterance = { role: utterance.role, content: utterance.content, words: utterance.words ?? [] };
  if (jsonBytes(whole) <= maxBytes) return [whole];
  const tokens = whole.content.split(/(?<=\s)(?=\S)/);
  if (tokens.length < 2 && whole.words.length < 2) {
    // One "word" too large to split at a boundary: cut the text itself.
    const half = Math.ceil(whole.content.length / 2);
    return [
      ...splitUtterance({ role: whole.role, content: whole.content.slice(0, half), words: [] }, maxBytes),
      ...splitUtterance({ role: whole.role, content: whole.content.slice(half), words: [] }, maxBytes),
    ];
  }
  const cut = Math.ceil(tokens.length / 2);
  const wordCut = tokens.length > 1 ? Math.round((whole.words.length * cut) / tokens.length) : Math.ceil(whole.words.length / 2);
  return [
    ...splitUtterance({ role: whole.role, content: tokens.slice(0, cut).join('').trimEnd(), words: whole.words.slice(0, wordCut) }, maxBytes),
    ...splitUtterance({ role: whole.role, content: tokens.slice(cut).join(''), words: whole.words.slice(wordCut) }, maxBytes),
  ];
}

export class ReportClient {
  private readonly eventsUrl: string;
  private readonly retrieveUrl: string;
  private readonly fetch: typeof fetch;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly retry: RetryOptions;
  private readonly requestTimeoutMs: number;
  private readonly retrieveTimeoutMs: number;
  private readonly queue: Entry[] = [];
  private nextSequence = 1;
  private pumping: Promise<void> | undefined;
  private closedBy: Extract<ReportOutcome, { status: 'closed' }> | undefined;
  /** The last answer's Retry-After, for the next wait. */
  private retryAfterMs: number | undefined;

  constructor(private readonly options: ReportClientOptions) {
    this.eventsUrl = options.reportUrl;
    // `…/internal/calls/<id>/events` → `…/internal/calls/<id>/kb-retrieve`
    this.retrieveUrl = new URL('kb-retrieve', options.reportUrl).toString();
    this.fetch = options.fetch ?? fetch;
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
    this.retrieveTimeoutMs = options.retrieveTimeoutMs ?? 3000;
  }

  /** Set once Parley shut the call's route (401, 404, or the call has ended): nothing more is sent. */
  get closed(): ReportOutcome | undefined {
    return this.closedBy;
  }

  /** Sequence numbers handed out so far. */
  get lastSequence(): number {
    return this.nextSequence - 1;
  }

  /**
   * Utterances finished since the last report. They join the report still waiting to be
   * sent when there is one (up to 50 utterances and 2 MiB), else start the next; a long
   * utterance is split first (splitUtterance). Resolves when they have been sent (or dropped).
   */
  transcript(utterances: Utterance[]): Promise<void> {
    const parts = utterances.flatMap((utterance) => splitUtterance(utterance));
    if (parts.length === 0) return Promise.resolve();
    if (this.closedBy) return Promise.resolve();
    const waits: Promise<ReportOutcome>[] = [];
    for (const part of parts) {
      const partBytes = jsonBytes(part) + 1;
      const tail = this.queue.at(-1);
      if (
        tail &&
        !tail.sending &&
        tail.event.event === 'transcript_updated' &&
        tail.event.utterances.length < MAX_REPORT_UTTERANCES &&
        tail.bytes + partBytes <= MAX_WORKER_REPORT_BYTES - ENVELOPE_BYTES
      ) {
        tail.event.utterances.push(part);
        tail.bytes += partBytes;
        waits.push(new Promise((resolve) => tail.done.push(resolve)));
      } else {
        waits.push(this.enqueue({ event: 'transcript_updated', utterances: [part] }));
      }
    }
    this.startPump();
    return Promise.all(waits).then(() => undefined);
  }

  /** Queues one event (numbered and stamped now) and resolves with what became of it. */
  send(event: ReportEvent): Promise<ReportOutcome> {
    if (this.closedBy) return Promise.resolve(this.closedBy);
    const outcome = this.enqueue(event);
    this.startPump();
    return outcome;
  }

  private enqueue(event: ReportEvent): Promise<ReportOutcome> {
    const numbered = { ...event, sequence: this.nextSequence++, timestamp: this.now() } as WorkerEvent;
    return new Promise((resolve) => {
      this.queue.push({ event: numbered, sending: false, bytes: jsonBytes(numbered), done: [resolve] });
    });
  }

  private startPump(): void {
    if (this.pumping) return;
    this.pumping = this.pump().finally(() => {
      this.pumping = undefined;
      // What was queued after the loop last looked (its waiters resume before this runs) goes now.
      if (this.queue.length) this.startPump();
    });
  }

  /** Resolves once every event queued so far has been sent or dropped. */
  async flush(): Promise<void> {
    while (this.pumping) await this.pumping;
  }

  private async pump(): Promise<void> {
    for (let entry = this.queue[0]; entry; entry = this.queue[0]) {
      entry.sending = true;
      const outcome = this.closedBy ?? (await this.deliver(entry.event));
      if (outcome.status === 'closed' && !this.closedBy) {
        this.closedBy = outcome;
        logger.warn('Parley closed the call\'s report route; later reports are dropped', {
          call_url: this.eventsUrl,
          sequence: entry.event.sequence,
          status: outcome.code,
          reason: outcome.message,
        });
      }
      this.queue.shift();
      for (const resolve of entry.done) resolve(outcome);
    }
  }

  private async deliver(event: WorkerEvent): Promise<ReportOutcome> {
    const body = JSON.stringify(event);
    let lastProblem = '';
    for (let attempt = 1; attempt <= this.retry.maxAttempts; attempt++) {
      if (attempt > 1) await this.sleep(this.delayBefore(attempt));
      let response: Response;
      let text: string;
      try {
        response = await this.fetch(this.eventsUrl, {
          method: 'POST',
          headers: { authorization: `Bearer ${this.options.token}`, 'content-type': 'application/json' },
          body,
          signal: AbortSignal.timeout(this.requestTimeoutMs),
        });
        text = await response.text();
      } catch (error) {
        lastProblem = `no answer (${(error as Error).message})`;
        continue;
      }
      const outcome = classify(response.status, messageOf(text));
      if (outcome) {
        if (outcome.status === 'refused') {
          logger.warn('Parley refused a report', { event: event.event, sequence: event.sequence, status: outcome.code, reason: outcome.message });
        }
        return outcome;
      }
      lastProblem = `HTTP ${response.status} ${messageOf(text)}`;
      this.retryAfterMs = retryAfterMs(response.headers.get('retry-after'));
    }
    logger.error('A report could not be delivered; giving up', { event: event.event, sequence: event.sequence, reason: lastProblem });
    return { status: 'failed', message: lastProblem };
  }

  /** Waits twice as long each try; a Retry-After Parley sent is honoured (within maxDelayMs). */
  private delayBefore(attempt: number): number {
    const backoff = Math.min(this.retry.maxDelayMs, this.retry.initialDelayMs * 2 ** (attempt - 2));
    const asked = this.retryAfterMs;
    this.retryAfterMs = undefined;
    return asked === undefined ? backoff : Math.min(this.retry.maxDelayMs, Math.max(backoff, asked));
  }

  /**
   * The knowledge-base section for the user's words (docs/calls-media.md, Knowledge-base
   * retrieval), to add to the turn's system prompt. Any failure answers no knowledge:
   * the turn goes on without it rather than wait or fail.
   */
  async kbRetrieve(query: string): Promise<{ prompt: string }> {
    const words = query.trim().slice(0, 4000);
    if (!words || this.closedBy) return { prompt: '' };
    try {
      const response = await this.fetch(this.retrieveUrl, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.options.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: words }),
        signal: AbortSignal.timeout(this.retrieveTimeoutMs),
      });
      const text = await response.text();
      if (response.status !== 200) {
        logger.warn('Knowledge retrieval failed; answering without it', { status: response.status, reason: messageOf(text) });
        return { prompt: '' };
      }
      const prompt = (JSON.parse(text) as { prompt?: unknown }).prompt;
      return { prompt: typeof prompt === 'string' ? prompt : '' };
    } catch (error) {
      logger.warn('Knowledge retrieval failed; answering without it', { reason: (error as Error).message });
      return { prompt: '' };
    }
  }
}

function messageOf(text: string): string {
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 500);
}

/** What an answer means for the event; undefined: try again. */
function classify(status: number, message: string): ReportOutcome | undefined {
  if (status >= 200 && status < 300) return { status: 'applied' };
  if (status === 401 || status === 404) return { status: 'closed', code: status, message };
  if (status === 409) {
    if (/ has ended$/.test(message)) return { status: 'closed', code: status, message };
    // A decision with no transfer waiting stays refused however often it is sent.
    if (/ has no transfer waiting /.test(message)) return { status: 'refused', code: status, message };
    return undefined;
  }
  if (status === 408 || status === 429 || status >= 500) return undefined;
  return { status: 'refused', code: status, message };
}

function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}
