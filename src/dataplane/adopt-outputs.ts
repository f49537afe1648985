/**
 * Taking over the outputs a worker thread sent with its responses (the
 * `executed` rule of protocol.ts), for every host of a thread that answers
 * batches: instance threads (instances/worker-instance.ts) and Python host
 * threads (python-backend/python-host.ts).
 */
import type { InferResponse } from '../core/request';
import type { Arena } from './arena';

/**
 * Takes the outputs of an instance thread's responses over for this thread
 * (Arena.adopt). A response with an output that cannot be adopted (the
 * thread died and threadDied reclaimed it) becomes an INTERNAL error; its
 * other outputs, adopted, are freed.
 */
export function adoptOutputs(arena: Arena, responses: InferResponse[], instanceName: string): InferResponse[] {
  return responses.map((r) => {
    let why: string | undefined;
    const kept = r.outputs.filter((o) => {
      const refused = arena.adopt(o);
      why ??= refused === undefined ? undefined : `output '${o.name}': ${refused}`;
      return refused === undefined;
    });
    if (why === undefined) return r;
    for (const o of kept) arena.free(o);
    return {
      outputs: [],
      error: { code: 'INTERNAL', message: `instance ${instanceName} died while its outputs were in flight (${why})` },
      final: r.final,
    };
  });
}
