/**
 * Bursts that must land in one rate-limit minute wait out the last seconds of the current
 * one, so a test never straddles the boundary (where the previous minute is weighted in).
 */
export async function awayFromMinuteBoundary(marginSeconds = 6): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 60_000 - marginSeconds * 1000) {
    await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 50));
  }
}
