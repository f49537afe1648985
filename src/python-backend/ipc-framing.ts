/**
 * Framing of the control channel between the server and a Python stub: each
 * message is a 4-byte little-endian length followed by that many bytes of
 * UTF-8 JSON. A frame may also carry small tensors inline (ipc-protocol.ts,
 * `inline`): then the length word has its top bit set, the body starts with
 * a 4-byte little-endian JSON length, and the bytes after the JSON are the
 * frame's blob. Large tensors stay in the shared-memory regions
 * (shm-region.ts).
 */
import { ServerError } from '../core/errors';

/** Refuse frames above this size: a corrupt length must not make us buffer gigabytes. */
export const MAX_FRAME_BYTES = 256 * 1024 * 1024;
/** Length-word bit: the body is JSON length + JSON + blob. */
const HAS_BLOB = 0x80000000;

/** A decoded message whose frame had a blob gets it here (never sent as JSON). */
export interface WithBlob {
  blob?: Buffer;
}

/**
 * One frame: the message as JSON, then the `blobs` concatenated (the caller
 * computed the offsets the message refers to, see BlobBuilder).
 */
export function encodeFrame(message: unknown, blob?: BlobBuilder): Buffer {
  const json = JSON.stringify(message);
  const jsonBytes = Buffer.byteLength(json, 'utf8');
  if (blob === undefined || blob.size === 0) {
    const frame = Buffer.allocUnsafe(4 + jsonBytes);
    frame.writeUInt32LE(jsonBytes, 0);
    frame.write(json, 4, 'utf8');
    return frame;
  }
  const bodyBytes = 4 + jsonBytes + blob.size;
  const frame = Buffer.allocUnsafe(4 + bodyBytes);
  frame.writeUInt32LE((bodyBytes | HAS_BLOB) >>> 0, 0);
  frame.writeUInt32LE(jsonBytes, 4);
  frame.write(json, 8, 'utf8');
  blob.copyTo(frame, 8 + jsonBytes);
  return frame;
}

/** Collects tensor bytes for one frame's blob; each part starts on an 8-byte boundary. */
export class BlobBuilder {
  private readonly parts: Uint8Array[] = [];
  private readonly offsets: number[] = [];
  size = 0;

  /** Appends `bytes`; returns their offset in the blob. */
  add(bytes: Uint8Array): number {
    const offset = (this.size + 7) & ~7;
    this.parts.push(bytes);
    this.offsets.push(offset);
    this.size = offset + bytes.byteLength;
    return offset;
  }

  copyTo(dst: Buffer, at: number): void {
    for (let i = 0; i < this.parts.length; i++) dst.set(this.parts[i]!, at + this.offsets[i]!);
  }
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
      const word = head.readUInt32LE(0);
      const len = (word & ~HAS_BLOB) >>> 0;
      if (len > MAX_FRAME_BYTES) {
        throw new ServerError('INTERNAL', `python stub control frame of ${len} bytes exceeds the ${MAX_FRAME_BYTES}-byte limit`);
      }
      if (this.buffered < 4 + len) break;
      const frame = this.take(4 + len);
      let jsonEnd = frame.length;
      if ((word & HAS_BLOB) !== 0) {
        const jsonBytes = len >= 4 ? frame.readUInt32LE(4) : -1;
        if (jsonBytes < 0 || 8 + jsonBytes > frame.length) {
          throw new ServerError('INTERNAL', `python stub sent a control frame whose JSON length ${jsonBytes} does not fit its ${len} bytes`);
        }
        jsonEnd = 8 + jsonBytes;
      }
      const text = frame.toString('utf8', (word & HAS_BLOB) !== 0 ? 8 : 4, jsonEnd);
      let message: unknown;
      try {
        message = JSON.parse(text);
      } catch (err) {
        throw new ServerError('INTERNAL', `python stub sent a control frame that is not JSON: ${(err as Error).message}`);
      }
      if (jsonEnd < frame.length && message !== null && typeof message === 'object') {
        (message as WithBlob).blob = frame.subarray(jsonEnd);
      }
      out.push(message);
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
