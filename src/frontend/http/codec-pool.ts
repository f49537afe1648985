/**
 * Each HTTP thread's codec pool: a piscina pool of one thread that decodes
 * large request bodies and encodes large responses, so one big JSON tensor
 * does not stall every other request on the HTTP thread
 * (`--http-codec-offload-bytes`). The pool thread runs the same functions
 * the HTTP thread runs inline (codec-tasks.ts), gets the body by transfer
 * and gives decoded tensors and encoded bodies back by transfer; responses
 * are read from the shared arena in place. Its errors come back as code and
 * message and are rethrown as the same ServerError the inline path throws.
 *
 * The thread starts on the first offloaded task (a server that never sees a
 * large body never starts it), leaves after IDLE_TIMEOUT_MS without work,
 * never keeps the process alive while idle (piscina unrefs idle threads),
 * and is destroyed when the HTTP thread closes.
 */
import path from 'node:path';
import { Piscina } from 'piscina';
import { fromErrorInfo } from '../../core/errors';
import type { ArenaHandle } from '../../dataplane/arena';
import type { DecodedRequest } from '../../request/decoded-request';
import type { CodecResult } from './codec-tasks';
import { MIN_TRANSFER_BYTES } from './codec-tasks';
import { decodeWorkBytes, type BodyDecodeTask } from './request-body-decode';
import { encodeWorkBytes, type ResponseBody, type ResponseEncodeTask } from './response-body';

export interface CodecWorkerData {
  /** The HTTP thread's index (thread name `nt:codec-N`). */
  index: number;
  arena: ArenaHandle;
}

/** A pool thread costs ~40 ms to start; kept this long after its last task. */
export const IDLE_TIMEOUT_MS = 30_000;

export class CodecPool {
  private pool: Piscina | undefined;
  private closed = false;

  /** `offloadBytes` 0: never offload (everything inline, no pool thread ever). */
  constructor(
    private readonly offloadBytes: number,
    private readonly workerData: CodecWorkerData,
  ) {}

  /** Whether a request body of this size and these headers is decoded in the pool. */
  offloadsDecode(bodyLength: number, contentEncoding: string, headerLength: string): boolean {
    return this.offloads(decodeWorkBytes(bodyLength, contentEncoding, headerLength));
  }

  offloadsEncode(task: ResponseEncodeTask): boolean {
    return this.offloads(encodeWorkBytes(task));
  }

  /** The task's body is transferred (unusable by the caller afterwards) unless it is small. */
  async decode(task: BodyDecodeTask): Promise<DecodedRequest> {
    let body = task.body;
    const transferList: ArrayBuffer[] = [];
    if (body.byteLength >= MIN_TRANSFER_BYTES && body.buffer instanceof ArrayBuffer) transferList.push(body.buffer);
    else body = new Uint8Array(body); // a small Buffer may share Node's pool slab: send a copy
    const r = (await this.threads().run({ ...task, body }, { name: 'decode', transferList })) as CodecResult<DecodedRequest>;
    if (!r.ok) throw fromErrorInfo(r.error);
    return r.value;
  }

  async encode(task: ResponseEncodeTask): Promise<ResponseBody> {
    const r = (await this.threads().run(task, { name: 'encode' })) as CodecResult<ResponseBody>;
    if (!r.ok) throw fromErrorInfo(r.error);
    return r.value;
  }

  /** Ends the pool thread; tasks still queued or running reject. */
  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = undefined;
    if (pool) await pool.destroy();
  }

  private offloads(workBytes: number): boolean {
    return this.offloadBytes > 0 && !this.closed && workBytes >= this.offloadBytes;
  }

  private threads(): Piscina {
    this.pool ??= new Piscina({
      filename: path.join(__dirname, 'codec-worker.js'),
      minThreads: 0,
      maxThreads: 1,
      idleTimeout: IDLE_TIMEOUT_MS,
      recordTiming: false,
      workerData: this.workerData,
    });
    return this.pool;
  }
}
