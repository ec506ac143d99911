import type { QueryStep } from './schemas.ts';

/*
 * Calendar arithmetic in an IANA time zone with Intl (daylight saving follows the zone's
 * rules): the local start of a query's buckets, the next one, and a bucket's local
 * date-time as answered. Minute and hour buckets are UTC minutes and hours, the cells' own.
 */

const HOUR_MS = 3_600_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    formatters.set(timeZone, format);
  }
  return format;
}

interface LocalParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

function localParts(atMs: number, timeZone: string): LocalParts {
  const parts: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(new Date(atMs))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour! % 24, minute: parts.minute!, second: parts.second! };
}

/** The zone's offset from UTC at `atMs`, in ms (New York in winter: -18,000,000). */
function offsetAt(atMs: number, timeZone: string): number {
  const p = localParts(atMs, timeZone);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - Math.floor(atMs / 1000) * 1000;
}

/** The instant a local wall-clock date begins (month and day may overflow, as Date.UTC allows). */
function localMidnight(year: number, month: number, day: number, timeZone: string): number {
  const wall = Date.UTC(year, month - 1, day);
  const first = wall - offsetAt(wall, timeZone);
  return wall - offsetAt(first, timeZone);
}

/** The start of the step's bucket holding `atMs` (weeks start on Monday). */
export function bucketFloor(atMs: number, step: QueryStep, timeZone: string): number {
  if (step === 'minute') return Math.floor(atMs / 60_000) * 60_000;
  if (step === 'hour') return Math.floor(atMs / HOUR_MS) * HOUR_MS;
  const p = localParts(atMs, timeZone);
  if (step === 'month') return localMidnight(p.year, p.month, 1, timeZone);
  if (step === 'day') return localMidnight(p.year, p.month, p.day, timeZone);
  const weekday = (new Date(Date.UTC(p.year, p.month - 1, p.day)).getUTCDay() + 6) % 7;
  return localMidnight(p.year, p.month, p.day - weekday, timeZone);
}

/** The start of the bucket after the one starting at `bucketStart`. */
export function nextBucket(bucketStart: number, step: QueryStep, timeZone: string): number {
  if (step === 'minute') return bucketStart + 60_000;
  if (step === 'hour') return bucketStart + HOUR_MS;
  const p = localParts(bucketStart, timeZone);
  if (step === 'month') return localMidnight(p.year, p.month + 1, 1, timeZone);
  return localMidnight(p.year, p.month, p.day + (step === 'week' ? 7 : 1), timeZone);
}

/** Whether the zone is UTC (offset 0) at every instant of [start, end]: day cells then are its days. */
export function utcThroughout(start: number, end: number, timeZone: string): boolean {
  for (let at = start; at < end; at += 86_400_000) if (offsetAt(at, timeZone) !== 0) return false;
  return offsetAt(end, timeZone) === 0;
}

const pad = (value: number, width = 2) => String(Math.abs(value)).padStart(width, '0');

/** `2026-11-29T00:00:00-05:00`: the instant's local date-time in the zone, with its offset. */
export function localIso(atMs: number, timeZone: string): string {
  const p = localParts(atMs, timeZone);
  const offsetMinutes = Math.round(offsetAt(atMs, timeZone) / 60_000);
  const zone = `${offsetMinutes < 0 ? '-' : '+'}${pad(Math.trunc(offsetMinutes / 60))}:${pad(offsetMinutes % 60)}`;
  return `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}T${pad(p.hour)}:${pad(p.minute)}:${pad(p.second)}${zone}`;
}
