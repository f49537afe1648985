/**
 * The frontend ceiling of the side-by-side bench: uWebSockets.js on the same
 * number of threads as nodetron's HTTP frontend (min(8, cores)), reading the
 * whole body and parsing it exactly as a KServe v2 server must (JSON header,
 * binary tail views), then answering one fixed reply. No model, no hops.
 * Usage: node dist/bench/peers/uws-ceiling.js PORT [threads]
 */
import os from 'node:os';
import { Worker, isMainThread, workerData } from 'node:worker_threads';
import uws from '@trufflesuite/uws-js-unofficial';
import { parseKserveBody } from './kserve-body';

const REPLY = '{"model_name":"ceiling","outputs":[]}';

function serve(port: number): void {
  const app = uws.App();
  app.get('/v2/health/ready', (res) => void res.end());
  app.post('/v2/models/:model/infer', (res, req) => {
    const hl = req.getHeader('inference-header-content-length');
    const chunks: Buffer[] = [];
    let aborted = false;
    res.onAborted(() => (aborted = true));
    res.onData((ab, last) => {
      chunks.push(Buffer.from(Buffer.from(ab)));
      if (!last || aborted) return;
      try {
        parseKserveBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), hl === '' ? undefined : Number(hl));
        res.cork(() => res.writeHeader('Content-Type', 'application/json').end(REPLY));
      } catch (err) {
        res.cork(() => res.writeStatus('400 Bad Request').end(JSON.stringify({ error: (err as Error).message })));
      }
    });
  });
  app.listen('127.0.0.1', port, (sock) => {
    if (!sock) throw new Error(`uws ceiling: cannot listen on ${port}`);
    if (isMainThread) console.log(`uws ceiling listening on ${port}`);
  });
}

if (isMainThread) {
  const port = Number(process.argv[2]);
  const threads = Number(process.argv[3] ?? Math.min(8, os.availableParallelism()));
  for (let i = 1; i < threads; i++) new Worker(__filename, { workerData: { port } });
  serve(port);
} else {
  serve((workerData as { port: number }).port);
}
