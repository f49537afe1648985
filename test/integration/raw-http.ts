/**
 * A raw HTTP/1.x exchange over one TCP connection, for tests that must send
 * what no HTTP client library would (malformed heads, pipelines, half
 * closes): write the pieces, read the answers (Content-Length framed, a
 * `100 Continue` kept as its own answer), until the expected count came and,
 * when asked, the server closed; bounded by a deadline.
 */
import net from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: string;
}

export interface RawExchange {
  answers: RawAnswer[];
  /** The server closed the connection. */
  closed: boolean;
  /** The deadline passed first. */
  timedOut: boolean;
  ms: number;
}

export interface RawOptions {
  /** Stop once this many answers came (and, with `waitClose`, the connection closed). */
  answers: number;
  waitClose?: boolean;
  /** Half-close (FIN) after the last piece. */
  end?: boolean;
  /** Milliseconds between pieces. */
  gapMs?: number;
  deadlineMs?: number;
}

function parseAnswers(buf: Buffer): { answers: RawAnswer[]; rest: Buffer } {
  const answers: RawAnswer[] = [];
  let at = 0;
  for (;;) {
    const he = buf.indexOf('\r\n\r\n', at);
    if (he < 0) break;
    const lines = buf.toString('latin1', at, he).split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0])?.[1] ?? 0);
    const headers = new Map<string, string>();
    for (const l of lines.slice(1)) {
      const c = l.indexOf(':');
      headers.set(l.slice(0, c).toLowerCase(), l.slice(c + 1).trim());
    }
    const len = Number(headers.get('content-length') ?? 0);
    if (buf.length < he + 4 + len) break;
    answers.push({ status, headers, body: buf.toString('utf8', he + 4, he + 4 + len) });
    at = he + 4 + len;
  }
  return { answers, rest: buf.subarray(at) };
}

export function rawExchange(port: number, pieces: (string | Buffer)[], opts: RawOptions): Promise<RawExchange> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let pending: Buffer = Buffer.alloc(0);
    const answers: RawAnswer[] = [];
    let closed = false;
    let settled = false;
    const finish = (timedOut: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ answers, closed, timedOut, ms: Date.now() - t0 });
    };
    const check = (): void => {
      if (answers.length >= opts.answers && (!opts.waitClose || closed)) finish(false);
    };
    const timer = setTimeout(() => finish(true), opts.deadlineMs ?? 5000);
    s.on('data', (d: Buffer) => {
      const r = parseAnswers(Buffer.concat([pending, d]));
      answers.push(...r.answers);
      pending = r.rest;
      check();
    });
    s.on('error', () => undefined);
    s.on('close', () => {
      closed = true;
      check();
      finish(false);
    });
    const send = async (): Promise<void> => {
      for (let i = 0; i < pieces.length; i++) {
        if (i > 0 && opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
        if (s.destroyed) return;
        s.write(pieces[i]);
      }
      if (opts.end) s.end();
    };
    s.once('connect', () => void send());
  });
}
