/**
 * Triton's response cache (`--cache-config=local,size=<bytes>` on the server,
 * `response_cache { enable: true }` in a model's config): a server-wide LRU
 * of final responses keyed by everything that decides a result, and a
 * Scheduler wrapper that answers a repeated request from it without running
 * the model. Decoupled and sequence models are refused at config validation
 * (src/repository/config/validate*.ts, Triton's texts).
 *
 * The key: model, version, requested outputs, result-affecting parameters and
 * each input's name, datatype, shape and bytes, hashed with SHA-256 over the
 * arena bytes. Entries hold copies of the output bytes (outside the arena); a
 * hit copies them back into fresh arena blocks, which the receiver frees as
 * it frees any response's outputs.
 */
import { createHash } from 'node:crypto';
import type { Arena } from '../dataplane/arena';
import { nowNs } from '../core/clock';
import { LruBytes } from './lru-bytes';
import type { InferRequest, InferResponse, ParamValue, Respond, TensorRef } from '../core/request';
import type { Scheduler } from './scheduler';
import type { RequestDoneStats, SchedulerHooks } from './scheduler-hooks';

interface CachedTensor {
  name: string;
  datatype: TensorRef['datatype'];
  shape: number[];
  data: Buffer;
}

interface CachedResponse {
  outputs: CachedTensor[];
  parameters?: Record<string, ParamValue>;
}

/** Parameters that only steer scheduling, never the result. */
const NOT_IN_KEY = new Set(['priority', 'timeout', 'binary_data_output', 'sequence_id', 'sequence_start', 'sequence_end']);
/** Rough bookkeeping bytes per entry and per tensor (key, names, shapes). */
const ENTRY_OVERHEAD = 128;
const TENSOR_OVERHEAD = 64;

/** The `local` cache of `--cache-config`; undefined when the server has no cache. */
export function responseCacheFromOptions(cacheConfig: Record<string, Record<string, string>>): ResponseCache | undefined {
  const local = cacheConfig['local'];
  if (local === undefined) return undefined;
  const size = Number(local['size'] ?? 0);
  if (!Number.isSafeInteger(size) || size < 0) {
    throw new RangeError(`--cache-config local,size must be a byte count >= 0, got '${local['size']}'`);
  }
  return new ResponseCache(size);
}

export class ResponseCache {
  private readonly lru: LruBytes<CachedResponse>;

  constructor(sizeBytes: number) {
    this.lru = new LruBytes(sizeBytes);
  }

  /** The cache key of a request whose input bytes live in the arena. */
  key(arena: Arena, req: InferRequest): string {
    const h = createHash('sha256');
    const field = (s: string): void => {
      h.update(String(s.length));
      h.update(':');
      h.update(s);
    };
    field(req.model);
    field(String(req.version));
    field(req.requestedOutputs === null ? '*' : req.requestedOutputs.join('\u0000'));
    const params = Object.keys(req.parameters)
      .filter((k) => !NOT_IN_KEY.has(k))
      .sort();
    for (const k of params) {
      field(k);
      const v = req.parameters[k]!;
      field(`${typeof v}:${String(v)}`);
    }
    // Input order in a request does not change the result.
    const inputs = [...req.inputs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const t of inputs) {
      field(t.name);
      field(t.datatype);
      field(t.shape.join(','));
      field(String(t.byteSize));
      h.update(arena.bytes(t.offset, t.byteSize));
    }
    return h.digest('base64');
  }

  /** A copy of the cached response in fresh arena blocks, or undefined on a miss. */
  lookup(arena: Arena, key: string): InferResponse | undefined {
    const hit = this.lru.get(key);
    if (hit === undefined) return undefined;
    const outputs: TensorRef[] = [];
    try {
      for (const t of hit.outputs) {
        const { offset, gen } = arena.alloc(t.data.byteLength);
        outputs.push({ name: t.name, datatype: t.datatype, shape: [...t.shape], offset, gen, byteSize: t.data.byteLength });
        arena.bytes(offset, t.data.byteLength).set(t.data);
      }
    } catch (err) {
      for (const o of outputs) arena.free(o);
      throw err;
    }
    const response: InferResponse = { outputs, final: true };
    if (hit.parameters !== undefined) response.parameters = { ...hit.parameters };
    return response;
  }

  /** Copies a successful final response out of the arena into the cache. */
  insert(arena: Arena, key: string, response: InferResponse): void {
    let bytes = ENTRY_OVERHEAD + key.length;
    const outputs: CachedTensor[] = response.outputs.map((o) => {
      bytes += TENSOR_OVERHEAD + o.byteSize;
      return { name: o.name, datatype: o.datatype, shape: [...o.shape], data: Buffer.from(arena.bytes(o.offset, o.byteSize)) };
    });
    const entry: CachedResponse = { outputs };
    if (response.parameters !== undefined) entry.parameters = { ...response.parameters };
    this.lru.set(key, entry, bytes);
  }

  stats(): ReturnType<LruBytes<CachedResponse>['stats']> {
    return this.lru.stats();
  }
}

/** Wraps a model version's scheduler: hits never reach it. */
export class CachingScheduler implements Scheduler {
  private hitsInFlight = 0;

  constructor(
    private readonly inner: Scheduler,
    private readonly cache: ResponseCache,
    private readonly arena: Arena,
    private readonly hooks?: SchedulerHooks,
  ) {}

  enqueue(request: InferRequest, respond: Respond): void {
    const startNs = nowNs();
    let key: string;
    let hit: InferResponse | undefined;
    try {
      key = this.cache.key(this.arena, request);
      hit = this.cache.lookup(this.arena, key);
    } catch {
      // A cache that cannot answer (arena full, say) must not fail the request.
      this.inner.enqueue(request, respond);
      return;
    }
    const lookupNs = nowNs() - startNs;
    if (hit !== undefined) {
      this.answerHit(request, respond, hit, startNs, lookupNs);
      return;
    }
    let reported = false;
    this.inner.enqueue(request, (response) => {
      if (response.final && !reported) {
        reported = true;
        let insertNs = 0;
        if (response.error === undefined) {
          const t0 = nowNs();
          try {
            this.cache.insert(this.arena, key, response);
          } catch {
            // Not cached; the response itself is fine.
          }
          insertNs = nowNs() - t0;
        }
        callHook(() => this.hooks?.cacheDone?.(request, false, lookupNs + insertNs));
      }
      respond(response);
    });
  }

  /** A hit is answered at once, so only a miss can still be cancelled: in the inner scheduler. */
  cancel(request: InferRequest): void {
    this.inner.cancel(request);
  }

  inflightCount(): number {
    return this.inner.inflightCount() + this.hitsInFlight;
  }

  stop(): Promise<void> {
    return this.inner.stop();
  }

  serve(on: boolean): void {
    this.inner.serve?.(on);
  }

  private answerHit(request: InferRequest, respond: Respond, hit: InferResponse, startNs: number, lookupNs: number): void {
    this.hitsInFlight++;
    try {
      respond(hit);
    } finally {
      this.hitsInFlight--;
    }
    callHook(() => this.hooks?.cacheDone?.(request, true, lookupNs));
    const end = nowNs();
    const s: RequestDoneStats = {
      success: true,
      queueStartNs: startNs,
      computeStartNs: 0,
      computeInputEndNs: 0,
      computeInferEndNs: 0,
      computeEndNs: 0,
      endNs: end,
      cacheHit: true,
    };
    callHook(() => this.hooks?.requestDone?.(request, s));
  }
}

function callHook(f: () => void): void {
  try {
    f();
  } catch (err) {
    process.emitWarning(`response cache: statistics hook threw: ${err instanceof Error ? err.message : String(err)}`);
  }
}
