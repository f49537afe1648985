/**
 * Incremental decoder of a `Transfer-Encoding: chunked` request body
 * (RFC 9112 §7.1), pure so that every framing error has a table test. It is
 * fed whatever bytes a connection has and says how many it used; the data of
 * each chunk goes to `onData` as views of the fed buffer (copy to keep).
 *
 * Strict, as request smuggling demands (the class Go closed as
 * CVE-2025-22871): every framing line ends with CRLF (a bare LF or CR is an
 * error, as in the head, request-head-parser.ts), the size is hex digits with
 * nothing around them, and chunk extensions must follow RFC 9112 §7.1.1
 * (`;name`, `;name=token` or `;name="quoted"`, and no whitespace around
 * `;` and `=`, as llhttp reads them); trailer fields must be `name: value` without control
 * characters. Extensions and trailers are then ignored.
 *
 * Bounded: a chunk-size line longer than 1 KiB (extensions included), a
 * trailer section larger than 16 KiB and more than `maxChunks` chunks end
 * the body with an error, so a client cannot keep a connection busy with
 * endless tiny chunks or an endless size line.
 */

import { printable } from './request-head-parser';

export type ChunkedStep = { kind: 'more'; used: number } | { kind: 'done'; used: number } | { kind: 'error'; message: string };

const MAX_SIZE_LINE = 1024;
/**
 * RFC 9112 §7.1: chunk-size [chunk-ext], the line end taken off. The grammar
 * allows optional whitespace (BWS) around `;` and `=`; llhttp (node) refuses
 * it, and a size line one parser reads and the other refuses is where
 * request smuggling starts, so we refuse it too (bench: the differential
 * fuzz, test/integration/http-differential.test.ts).
 */
const TOKEN = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]+";
const QUOTED = '"(?:[\\t !#-\\[\\]-~\\x80-\\xff]|\\\\[\\t -~\\x80-\\xff])*"';
const SIZE_LINE = new RegExp(`^([0-9a-fA-F]+)(?:;${TOKEN}(?:=(?:${TOKEN}|${QUOTED}))?)*$`);
const TRAILER_FIELD = new RegExp(`^${TOKEN}:[\\t\\x20-\\x7e\\x80-\\xff]*$`);
const MAX_TRAILERS = 16 * 1024;
/** Hex digits of the largest chunk size read (15 = just under 2^60). */
const MAX_SIZE_DIGITS = 15;

export class ChunkedBody {
  private state: 'size' | 'data' | 'data_end' | 'trailers' = 'size';
  private remaining = 0;
  private chunks = 0;
  private trailerBytes = 0;

  constructor(
    private readonly maxChunks: number,
    private readonly onData: (bytes: Buffer) => void,
  ) {}

  feed(buf: Buffer, from: number): ChunkedStep {
    let at = from;
    for (;;) {
      switch (this.state) {
        case 'size': {
          const nl = buf.indexOf(10, at);
          if (nl < 0) {
            if (buf.length - at > MAX_SIZE_LINE) return { kind: 'error', message: `chunk size line longer than ${MAX_SIZE_LINE} bytes` };
            return { kind: 'more', used: at - from };
          }
          if (nl - at > MAX_SIZE_LINE) return { kind: 'error', message: `chunk size line longer than ${MAX_SIZE_LINE} bytes` };
          if (nl === at || buf[nl - 1] !== 13) return { kind: 'error', message: 'chunk size line ends with a bare LF: it must end with CRLF (RFC 9112 §7.1)' };
          const line = buf.toString('latin1', at, nl - 1);
          const m = SIZE_LINE.exec(line);
          if (m === null) {
            const hex = /^[0-9a-fA-F]*/.exec(line)![0];
            if (hex === '') return { kind: 'error', message: `invalid chunk size '${printable(line)}': expected hexadecimal digits` };
            return {
              kind: 'error',
              message: `invalid chunk extension in '${printable(line)}': expected ';name' or ';name=value' after the size (RFC 9112 §7.1.1)`,
            };
          }
          const hex = m[1]!;
          if (hex.replace(/^0+/, '').length > MAX_SIZE_DIGITS) return { kind: 'error', message: `chunk size '${hex.slice(0, 40)}' is too large` };
          const size = parseInt(hex, 16);
          at = nl + 1;
          if (size === 0) {
            this.state = 'trailers';
            break;
          }
          if (++this.chunks > this.maxChunks) {
            return { kind: 'error', message: `too many chunks: more than ${this.maxChunks} in one request body; send larger chunks or a Content-Length` };
          }
          this.remaining = size;
          this.state = 'data';
          break;
        }
        case 'data': {
          const take = Math.min(this.remaining, buf.length - at);
          if (take > 0) this.onData(buf.subarray(at, at + take));
          at += take;
          this.remaining -= take;
          if (this.remaining > 0) return { kind: 'more', used: at - from };
          this.state = 'data_end';
          break;
        }
        case 'data_end': {
          if (at >= buf.length) return { kind: 'more', used: at - from };
          if (buf[at] === 13) {
            if (at + 1 >= buf.length) return { kind: 'more', used: at - from };
            if (buf[at + 1] !== 10) return { kind: 'error', message: 'missing CRLF after chunk data' };
            at += 2;
          } else if (buf[at] === 10) {
            return { kind: 'error', message: 'chunk data ends with a bare LF: it must end with CRLF (RFC 9112 §7.1)' };
          } else return { kind: 'error', message: 'chunk data longer than its declared size (missing CRLF after chunk data)' };
          this.state = 'size';
          break;
        }
        case 'trailers': {
          const nl = buf.indexOf(10, at);
          if (nl < 0) {
            if (this.trailerBytes + buf.length - at > MAX_TRAILERS) return { kind: 'error', message: `trailer section larger than ${MAX_TRAILERS} bytes` };
            return { kind: 'more', used: at - from };
          }
          if (nl === at || buf[nl - 1] !== 13) return { kind: 'error', message: 'trailer line ends with a bare LF: it must end with CRLF (RFC 9112 §7.1.2)' };
          const empty = nl === at + 1;
          this.trailerBytes += nl + 1 - at;
          if (this.trailerBytes > MAX_TRAILERS) return { kind: 'error', message: `trailer section larger than ${MAX_TRAILERS} bytes` };
          if (!empty) {
            const field = buf.toString('latin1', at, nl - 1);
            if (!TRAILER_FIELD.test(field))
              return { kind: 'error', message: `malformed trailer field '${printable(field)}': expected 'Name: value' without control characters` };
          }
          at = nl + 1;
          if (empty) return { kind: 'done', used: at - from };
          break;
        }
      }
    }
  }
}
