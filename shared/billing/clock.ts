/*
 * Billing's clock: months, days and the overdue rule read it, so a test can move it (month
 * rollover, an invoice 14 days old) without waiting. Everything else uses the real time.
 */
let offsetMs = 0;

export const billingNow = (): number => Date.now() + offsetMs;

/** Moves billing's clock by `ms` from real time (tests: `setBillingClockOffset(0)` restores it). */
export function setBillingClockOffset(ms: number): void {
  offsetMs = ms;
}

/** `YYYY-MM` (UTC) of a time. */
export const monthOf = (ms: number): string => new Date(ms).toISOString().slice(0, 7);
/** `YYYY-MM-DD` (UTC) of a time. */
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The first instant of a month `YYYY-MM` and of the month after it. */
export function monthBounds(month: string): { start: number; end: number } {
  const [year, mon] = month.split('-').map(Number) as [number, number];
  return { start: Date.UTC(year, mon - 1, 1), end: Date.UTC(year, mon, 1) };
}

/** The month before `YYYY-MM`. */
export function previousMonth(month: string): string {
  return monthOf(monthBounds(month).start - 1);
}
