/**
 * One promise chain per model name: every load, reload and unload of a
 * model runs after the ones asked for before it, so concurrent requests for
 * one model are serialized while different models proceed in parallel.
 */
export class ModelChains {
  private readonly chains = new Map<string, Promise<void>>();

  /** Run `fn` after every earlier operation on the same model. */
  run<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.chains.get(name) ?? Promise.resolve()).then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.chains.set(name, tail);
    void tail.then(() => {
      if (this.chains.get(name) === tail) this.chains.delete(name);
    });
    return run;
  }

  /** Resolves once every operation asked for so far has ended. */
  async idle(): Promise<void> {
    await Promise.all([...this.chains.values()]);
  }
}
