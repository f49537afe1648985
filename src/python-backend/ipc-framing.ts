/**
 * Framing of the control channel between the server and a Python stub: each
 * message is a 4-byte little-endian length followed by that many bytes of
 * UTF-8 JSON. Only small control messages travel this way; tensor bytes stay
 * in the shared-memory regions (shm-region.ts).
 */
import { ServerError } from '../errors';

/** Refuse frames above this size: a corrupt length must not make us buffer gigabytes. */
export const MAX_FRAME_BYTES = 256 * 1024 * 1024;

export function encodeFrame(message: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(message), 'utf8');
  const frame = Buffer.allocUnsafe(4 + body.length);
  frame.writeUInt32LE(body.length, 0);
  body.copy(frame, 4);
  return frame;
}

/** Accumulates stream chunks and yields whole decoded messages. */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;

  /** Feed one chunk; returns the messages it completed, in order. Throws on a corrupt frame. */
  push(chunk: Buffer): unknown[] {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const out: unknown[] = [];
    while (this.buffered >= 4) {
      const head = this.peek(4);
      const len = head.readUInt32LE(0);
      if (len > MAX_FRAME_BYTES) {
        throw new ServerError('INTERNAL', `python stub control frame of ${len} bytes exceeds the ${MAX_FRAME_BYTES}-byte limit`);
      }
      if (this.buffered < 4 + len) break;
      const frame = this.take(4 + len);
      const text = frame.toString('utf8', 4);
      try {
        out.push(JSON.parse(text));
      } catch (err) {
        throw new ServerError('INTERNAL', `python stub sent a control frame that is not JSON: ${(err as Error).message}`);
      }
    }
    return out;
  }

  /** Bytes received that do not yet form a whole frame. */
  pendingBytes(): number {
    return this.buffered;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0]!.subarray(0, n);
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const frame = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return frame;
  }
}
