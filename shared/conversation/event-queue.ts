/**
 * A queue between a producer that pushes as things happen (a model's stream, a socket's
 * messages) and one consumer that reads with `for await`: items come out in order, the
 * consumer waits when it has read everything, and the producer ends the queue, or fails it
 * (the consumer's loop then throws). Nothing pushed after the end is kept. Read once.
 */
export class EventQueue<T> {
  private readonly items: T[] = [];
  private ended = false;
  private failure?: { error: unknown };
  private wake?: () => void;

  push(item: T): void {
    if (this.ended) return;
    this.items.push(item);
    this.notify();
  }

  end(): void {
    this.ended = true;
    this.notify();
  }

  fail(error: unknown): void {
    if (this.ended) return;
    this.failure = { error };
    this.end();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      if (this.items.length > 0) {
        yield this.items.shift()!;
        continue;
      }
      if (this.failure) throw this.failure.error;
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
