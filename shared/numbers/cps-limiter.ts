import { randomInt } from 'node:crypto';
import { config } from '../platform/config.ts';
import { tooManyRequests } from '../platform/errors.ts';
import { ConditionFailed, table } from '../platform/store/table.ts';
import { cpsBuckets, type NumberItem } from './store.ts';

/*
 * Calls per second per phone number (spec Limits): a token bucket held in the single
 * table, so it holds across every Lambda instance that dials from the number.
 *
 * The bucket has `cps_limit` tokens. Each token is an attribute of the number's bucket
 * item (`t<i>` = the epoch ms from which token i may be taken again); taking one is a
 * single conditional UpdateItem, `SET t<i> = now + 1000` if `attribute_not_exists(t<i>)
 * OR t<i> <= now`. DynamoDB applies conditional writes to an item one at a time, so two
 * takers can never both get token i: the loser's condition fails and it tries another
 * token. A token comes back one second after it was taken (that is the refill: cps_limit
 * tokens a second), so whatever the concurrency and however many instances, at most
 * cps_limit dials start in any one-second window; a burst of up to cps_limit goes at once.
 *
 * A taker that finds no token free sleeps until the earliest one comes back and tries
 * again, for up to `maxWaitMs` (CPS_MAX_WAIT_MS, 5 s): when the next token is due after
 * that, it gives up with 429 and a retry-after. The first attempt writes a random token
 * without reading (one round trip when the number is not busy); after that each round is
 * a strongly consistent read and conditional writes to the tokens it saw free.
 *
 * Times are each instance's clock: skew between instances shifts a token's return by the
 * skew (milliseconds on Lambda), never lets two takers share a token. Lowering a number's
 * cps_limit takes full effect within a second (the dropped tokens are simply not read).
 */

export const CPS_TOKEN_MS = 1000;
export const MAX_CPS_LIMIT = 1000;
/** The bucket item expires this long after its last take (nothing in it matters after 1 s). */
const IDLE_TTL_SECONDS = 120;

/** Where the limiter reads the time and waits for a token to come back. */
export interface CpsClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const wallClock: CpsClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export interface TakeOptions {
  /** How long a dial may wait for a token before 429 (default CPS_MAX_WAIT_MS). */
  maxWaitMs?: number;
  /** The wall clock unless a test gives its own (tokens are epoch ms, so it must read epoch ms). */
  clock?: CpsClock;
}

export interface DialToken {
  /** When the token was taken (epoch ms). */
  takenAt: number;
  /** How long the taker waited for it. */
  waitedMs: number;
}

export const cpsLimitReached = (cpsLimit: number, phoneNumber: string, retryAfterSeconds: number) =>
  tooManyRequests(`Calls-per-second limit of ${cpsLimit} reached for ${phoneNumber}; retry shortly`, retryAfterSeconds, 'cps');

/**
 * Takes one dial token for `phoneNumber`, waiting for one up to `maxWaitMs`. Throws a 429
 * (`Calls-per-second limit of <n> reached for <number>; retry shortly`) when none comes
 * back in time.
 */
export async function takeDialToken(phoneNumber: string, cpsLimit: number, options: TakeOptions = {}): Promise<DialToken> {
  if (!Number.isInteger(cpsLimit) || cpsLimit < 1 || cpsLimit > MAX_CPS_LIMIT) {
    throw new Error(`cps_limit must be a whole number from 1 to ${MAX_CPS_LIMIT}, not ${cpsLimit}`);
  }
  const maxWaitMs = options.maxWaitMs ?? config.CPS_MAX_WAIT_MS;
  const clock = options.clock ?? wallClock;
  const key = cpsBuckets.key(phoneNumber);
  const started = clock.now();
  const deadline = started + maxWaitMs;

  // A taker only takes a token that is back by its deadline: one that comes back later is one it may not wait for.
  const tryToken = async (index: number): Promise<DialToken | undefined> => {
    const now = clock.now();
    try {
      await table.update({
        Key: key,
        UpdateExpression: 'SET #token = :until, expires_at = :expires',
        ConditionExpression: 'attribute_not_exists(#token) OR #token <= :now',
        ExpressionAttributeNames: { '#token': cpsBuckets.tokenAttribute(index) },
        ExpressionAttributeValues: {
          ':now': Math.min(now, deadline),
          ':until': now + CPS_TOKEN_MS,
          ':expires': Math.ceil((now + CPS_TOKEN_MS) / 1000) + IDLE_TTL_SECONDS,
        },
      });
      return { takenAt: now, waitedMs: now - started };
    } catch (error) {
      if (error instanceof ConditionFailed) return undefined;
      throw error;
    }
  };

  // Not busy is the common case: one write, no read.
  const first = await tryToken(randomInt(cpsLimit));
  if (first) return first;

  for (;;) {
    const bucket = await table.get(key);
    const now = clock.now();
    const dueTimes = Array.from({ length: cpsLimit }, (_, i) => {
      const value = bucket?.[cpsBuckets.tokenAttribute(i)];
      return typeof value === 'number' ? value : 0;
    });
    const usable = (due: number) => due <= deadline;
    const free = shuffle(dueTimes.flatMap((due, i) => (due <= now && usable(due) ? [i] : [])));
    for (const index of free) {
      const token = await tryToken(index);
      if (token) return token;
    }
    if (free.length) continue; // others took them first: look again

    const coming = dueTimes.filter((due) => due > now && usable(due));
    if (!coming.length) {
      const nextDue = Math.min(...dueTimes);
      throw cpsLimitReached(cpsLimit, phoneNumber, Math.max(1, Math.ceil((nextDue - now) / 1000)));
    }
    // A little jitter spreads the takers that wake for the same token.
    await clock.sleep(Math.min(...coming) - now + randomInt(0, 6));
  }
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/** Tokens one conditional update of takeAvailableDialTokens takes at most (the update expression stays small). */
const MAX_AHEAD_TOKENS = 50;

/** How long a token taken ahead (takeAvailableDialTokens) may wait for its dial: within the second it is held. */
export const AHEAD_TOKEN_USE_MS = CPS_TOKEN_MS;

/** What takeAvailableDialTokens took, and when the next token of the number comes back. */
export interface AvailableTokens {
  tokens: DialToken[];
  /** The earliest time (epoch ms) a token not taken now is free again: when to come back for more. */
  nextAt: number;
}

/**
 * Takes up to `count` tokens (at most the limit) of those free right now, never waiting:
 * for a scheduler that dials what it may this second and comes back at `nextAt` for the rest,
 * instead of sleeping for tokens. Each token is taken as takeDialToken takes it (held for
 * CPS_TOKEN_MS from the take, so the limit holds against every other taker), all of one
 * round in one conditional UpdateItem; a round that lost a token to another taker reads again.
 */
export async function takeAvailableDialTokens(
  phoneNumber: string,
  cpsLimit: number,
  count: number,
  { clock = wallClock }: Pick<TakeOptions, 'clock'> = {},
): Promise<AvailableTokens> {
  const key = cpsBuckets.key(phoneNumber);
  const want = Math.min(count, cpsLimit);
  const tokens: DialToken[] = [];
  let nextAt = clock.now();
  // A round takes at most MAX_AHEAD_TOKENS (the update expression stays small); a few rounds
  // cover the largest limit, and a round that lost a token to another taker reads again.
  for (let round = 0; round < 8 && tokens.length < want; round++) {
    const bucket = await table.get(key);
    const now = clock.now();
    const dueTimes = Array.from({ length: cpsLimit }, (_, i) => {
      const value = bucket?.[cpsBuckets.tokenAttribute(i)];
      return typeof value === 'number' ? value : 0;
    });
    const taking = shuffle(dueTimes.flatMap((due, i) => (due <= now ? [i] : []))).slice(0, Math.min(want - tokens.length, MAX_AHEAD_TOKENS));
    // A free token left untaken is free now; otherwise the first to come back.
    nextAt = Math.max(now, Math.min(...dueTimes.map((due, i) => (taking.includes(i) ? now + CPS_TOKEN_MS : due))));
    if (taking.length === 0) break;
    const names = Object.fromEntries(taking.map((index, i) => [`#t${i}`, cpsBuckets.tokenAttribute(index)]));
    try {
      await table.update({
        Key: key,
        UpdateExpression: `SET ${taking.map((_, i) => `#t${i} = :until`).join(', ')}, expires_at = :expires`,
        ConditionExpression: taking.map((_, i) => `(attribute_not_exists(#t${i}) OR #t${i} <= :now)`).join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: {
          ':now': now,
          ':until': now + CPS_TOKEN_MS,
          ':expires': Math.ceil((now + CPS_TOKEN_MS) / 1000) + IDLE_TTL_SECONDS,
        },
      });
      tokens.push(...taking.map(() => ({ takenAt: now, waitedMs: 0 })));
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
    }
  }
  return { tokens, nextAt };
}

/** Calls per second for the number: its cps_limit, else the default for its kind (spec Limits). */
export function cpsLimitFor(number: Pick<NumberItem, 'cps_limit' | 'phone_number_type' | 'provider'>): number {
  if (number.cps_limit !== undefined) return number.cps_limit;
  return number.phone_number_type !== 'custom' || number.provider === 'twilio' ? config.DEFAULT_CPS_HOSTED : config.DEFAULT_CPS_CUSTOM;
}
