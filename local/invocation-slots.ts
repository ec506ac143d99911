/**
 * How many handler invocations the local server runs at once; the rest wait, in arrival
 * order, before their handler starts. In AWS each Lambda instance serves one request at
 * a time, so the store sees a few calls per running request; locally one process serves
 * every request, and without a cap a burst (700 requests) put ~1,400 calls in flight
 * against DynamoDB Local, which answers a hot item at about a hundred writes a second.
 * Every call then waited longer than the AWS clients' bounded timeouts
 * (shared/platform/aws/client-options.ts) and most of the burst became 503s. With the cap, a
 * burst waits here, where no store timeout is running, and is served at the store's pace,
 * as it was before the timeouts (measured: 700 requests, all served, no 503, no socket
 * warning). At most ~3 calls per slot, 192, stay inside the clients' socket pool
 * (AWS_MAX_SOCKETS), so no call queues for a socket either; 64 leaves room for requests
 * that wait on slow outbound calls.
 */
export const LOCAL_CONCURRENCY = 64;

export class InvocationSlots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
