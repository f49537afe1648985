/**
 * How model versions are built: at most `--model-load-thread-count` at once
 * (Triton's load thread pool; the others wait their turn in order), and a
 * failed build is tried again up to `--model-load-retry-count` times before
 * its error counts.
 */
export class LoadSlots {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly limit: number;

  constructor(
    threads: number,
    private readonly retries: number,
  ) {
    this.limit = Math.max(1, Math.floor(threads));
  }

  /** Loads running now (for tests and logs). */
  running(): number {
    return this.active;
  }

  /** Run `build` in a free slot, retrying failures (`onRetry` before each); resolves or rejects with the last error. */
  async run<T>(build: () => Promise<T>, onRetry: (attempt: number, err: unknown) => void = () => undefined): Promise<T> {
    await this.acquire();
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          return await build();
        } catch (err) {
          if (attempt >= this.retries) throw err;
          onRetry(attempt + 1, err);
        }
      }
    } finally {
      this.release();
    }
  }

  private acquire(): Promise<void> {
    if (this.active < this.limit) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next)
      next(); // the slot passes on: active stays the same
    else this.active--;
  }
}
