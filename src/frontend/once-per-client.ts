/**
 * Which refusals a frontend has already logged for which client address, so
 * each reason is logged once per client (a slowloris or connection flood
 * from one address is one line, not thousands). The memory of one reason
 * is forgotten in one go at `limit` addresses, so it stays bounded.
 */
export class OncePerClient {
  private readonly seen = new Map<string, Set<string>>();

  constructor(private readonly limit = 1000) {}

  /** True the first time `reason` is given for `client` (since its reason's memory was last forgotten). */
  first(reason: string, client: string): boolean {
    let clients = this.seen.get(reason);
    if (clients === undefined) this.seen.set(reason, (clients = new Set()));
    if (clients.has(client)) return false;
    if (clients.size >= this.limit) clients.clear();
    clients.add(client);
    return true;
  }
}
