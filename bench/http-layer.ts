/**
 * The HTTP layer alone, side by side in one run: uWS, node:http and our own
 * HttpServer (bench/peers/http-layer-server.ts) each serve a small KServe
 * JSON POST (simple's 2 x 16 INT32 inputs) answered on the next loop turn;
 * a raw keep-alive load generator (its own process, loopback) drives c=1
 * and c=32 for a few seconds per cell, servers alternated per round. Reports
 * req/s, p50 and the server's CPU per request (process CPU time / requests).
 * Usage: node dist/bench/http-layer.js [rounds=2] [seconds=3]
 */
import { fork } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

const SERVERS = ['uws', 'node-http', 'nodetron'] as const;
const BODY = JSON.stringify({
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
});
const REQUEST = Buffer.from(
  `POST /v2/models/simple/infer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${BODY.length}\r\n\r\n${BODY}`,
);

/** Closed-loop load over `conc` raw keep-alive connections for `ms`; runs in this process. */
function load(port: number, conc: number, ms: number): Promise<{ n: number; p50Ms: number }> {
  return new Promise((resolve) => {
    const end = Date.now() + ms;
    const lat: number[] = [];
    let open = conc;
    for (let c = 0; c < conc; c++) {
      const s = net.connect(port, '127.0.0.1');
      s.setNoDelay(true);
      let t0 = 0n;
      let acc = '';
      const send = (): void => {
        if (Date.now() > end) {
          s.destroy();
          if (--open === 0) {
            lat.sort((a, b) => a - b);
            resolve({ n: lat.length, p50Ms: lat[lat.length >> 1] ?? 0 });
          }
          return;
        }
        t0 = process.hrtime.bigint();
        s.write(REQUEST);
      };
      s.on('data', (d: Buffer) => {
        acc += d.toString('latin1');
        const he = acc.indexOf('\r\n\r\n');
        if (he < 0) return;
        const m = /content-length: *(\d+)/i.exec(acc.slice(0, he));
        const need = he + 4 + Number(m?.[1] ?? 0);
        if (acc.length < need) return;
        acc = acc.slice(need);
        lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
        send();
      });
      s.on('connect', send);
      s.on('error', () => undefined);
    }
  });
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 2);
  const seconds = Number(process.argv[3] ?? 3);
  const rows: string[] = [];
  for (let round = 1; round <= rounds; round++) {
    for (const kind of SERVERS) {
      for (const conc of [1, 32]) {
        const child = fork(path.join(__dirname, 'peers/http-layer-server.js'), [kind], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
        const port = await new Promise<number>((r) => child.once('message', (m: { port: number }) => r(m.port)));
        const cpu = (): Promise<number> =>
          new Promise((r) => {
            child.once('message', (m: { cpuUs: number }) => r(m.cpuUs));
            child.send('cpu');
          });
        await load(port, conc, 500); // warm-up
        const c0 = await cpu();
        const res = await load(port, conc, seconds * 1000);
        const c1 = await cpu();
        child.kill();
        rows.push(`| ${round} | ${kind} | ${conc} | ${(res.n / seconds).toFixed(0)} | ${res.p50Ms.toFixed(3)} | ${((c1 - c0) / res.n).toFixed(1)} |`);
        console.log(rows.at(-1));
      }
    }
  }
  console.log(['', '| round | server | c | req/s | p50 ms | server CPU µs/request |', '|---|---|---|---|---|---|', ...rows].join('\n'));
}

void main();
