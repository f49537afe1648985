/**
 * One HTTP layer alone, for bench/http-layer.ts: `uws` (the uWS build the
 * design named), `node-http` (node:http) or `nodetron` (our HttpServer,
 * src/frontend/http/http-server.ts, the class the HTTP threads run). Each
 * reads the whole body, parses it as JSON, and answers one fixed KServe-like
 * reply on the next turn of the loop (setImmediate), as a server whose
 * answer comes from elsewhere does. Prints `listening <port>`; answers a
 * parent's 'cpu' message with its process CPU time in µs.
 * Usage: node dist/bench/peers/http-layer-server.js KIND
 */
import http from 'node:http';
import net from 'node:net';
import uws from '@trufflesuite/uws-js-unofficial';
import { HttpServer } from '../../src/frontend/http/http-server';
import { readBody } from '../../src/frontend/http/http-reply';
import { ListenSocket } from '../../src/frontend/http/listen-socket';

const REPLY = JSON.stringify({
  model_name: 'simple',
  model_version: '1',
  outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i + 1) }],
});
const kind = process.argv[2];

process.on('message', () => {
  const u = process.cpuUsage();
  process.send!({ cpuUs: u.user + u.system });
});
const up = (port: number): void => {
  process.send!({ port });
};

if (kind === 'uws') {
  uws
    .App()
    .post('/*', (res) => {
      let aborted = false;
      res.onAborted(() => (aborted = true));
      const chunks: Buffer[] = [];
      res.onData((ab, last) => {
        chunks.push(Buffer.from(ab.slice(0)));
        if (!last) return;
        JSON.parse(Buffer.concat(chunks).toString());
        setImmediate(() => {
          if (!aborted) res.cork(() => res.writeHeader('Content-Type', 'application/json').end(REPLY));
        });
      });
    })
    .listen('127.0.0.1', 0, (ls) => up(uws.us_socket_local_port(ls as unknown as Parameters<typeof uws.us_socket_local_port>[0])));
} else if (kind === 'node-http') {
  const s = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      JSON.parse(Buffer.concat(chunks).toString());
      setImmediate(() => {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(REPLY) });
        res.end(REPLY);
      });
    });
  });
  s.listen(0, '127.0.0.1', () => up((s.address() as net.AddressInfo).port));
} else if (kind === 'nodetron') {
  // The port opened as main opens it, and the server on its own descriptor of it, as an HTTP thread runs.
  const server = new HttpServer((reply, head) => {
    readBody(reply, head, 1 << 26, (r) => {
      if (!r.ok) return reply.error(400, 'too large');
      JSON.parse(r.body.toString());
      setImmediate(() => reply.json(200, REPLY));
    });
  });
  void ListenSocket.open('127.0.0.1', 0).then(async (socket) => {
    const [fd] = await socket.descriptors(1);
    up(await server.listen(fd!));
  });
} else {
  throw new Error(`unknown server kind '${kind}': uws, node-http or nodetron`);
}
