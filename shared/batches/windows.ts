import { DAYS, type CallTimeWindowInput, type Day } from './schemas.ts';

/*
 * call_time_window (spec): windows of minutes after local midnight in the window's IANA
 * time zone (Intl, so daylight saving follows the zone's rules), several allowed; a window
 * whose start is after its end wraps past midnight. `day` lists the days a window may
 * START on: a Friday 22:00–02:00 window is open on Friday from 22:00 and on Saturday until
 * 02:00. Without `day`, every day.
 */

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'long', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    formatters.set(timeZone, format);
  }
  return format;
}

/** The local day and minute of the day at `atMs` in `timeZone`. */
function localTime(atMs: number, timeZone: string): { day: Day; minute: number } {
  const parts = formatter(timeZone).formatToParts(new Date(atMs));
  const part = (type: string) => parts.find((entry) => entry.type === type)?.value ?? '';
  return { day: part('weekday') as Day, minute: Number(part('hour')) * 60 + Number(part('minute')) };
}

const previousDay = (day: Day): Day => DAYS[(DAYS.indexOf(day) + 6) % 7]!;

/** Whether `atMs` is inside the call time window (no window: always). */
export function insideWindow(window: CallTimeWindowInput | undefined, atMs: number): boolean {
  if (!window) return true;
  const { day, minute } = localTime(atMs, window.timezone);
  const days = window.day?.length ? new Set(window.day) : undefined;
  const startsOn = (d: Day) => !days || days.has(d);
  return window.windows.some(({ start, end }) => {
    if (start < end) return startsOn(day) && minute >= start && minute < end;
    // Wraps past midnight: the evening part on a listed day, the morning part after one.
    return (startsOn(day) && minute >= start) || (startsOn(previousDay(day)) && minute < end);
  });
}

/**
 * When the window next opens after `atMs` (outside it): every zone's offset is whole minutes
 * and windows are whole minutes, so checking each minute boundary finds the exact opening.
 * At most 8 days ahead (a `day` list repeats weekly).
 */
export function nextOpening(window: CallTimeWindowInput, atMs: number): number {
  const MINUTE = 60_000;
  const limit = atMs + 8 * 24 * 60 * MINUTE;
  for (let t = Math.floor(atMs / MINUTE) * MINUTE + MINUTE; t <= limit; t += MINUTE) {
    if (insideWindow(window, t)) return t;
  }
  return limit;
}
