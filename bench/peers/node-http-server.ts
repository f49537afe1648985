/**
 * Peer for the side-by-side bench: the server a TypeScript developer writes
 * first — node:http, onnxruntime-node on the main thread (intra-op threads set
 * to the cores, as perf-facts.md says to), KServe v2 JSON and binary bodies.
 * Usage: node dist/bench/peers/node-http-server.js PORT name=path.onnx ...
 */
import http from 'node:http';
import os from 'node:os';
import * as ort from 'onnxruntime-node';
import { parseKserveBody } from './kserve-body';

const ORT_TYPES: Record<string, ort.Tensor.Type> = { FP32: 'float32', INT32: 'int32', FP64: 'float64', INT8: 'int8', UINT8: 'uint8' };
const TRITON_TYPES: Record<string, string> = { float32: 'FP32', int32: 'INT32', float64: 'FP64', int8: 'INT8', uint8: 'UINT8' };

async function main(): Promise<void> {
  const port = Number(process.argv[2]);
  const sessions = new Map<string, ort.InferenceSession>();
  for (const spec of process.argv.slice(3)) {
    const [name, file] = spec.split('=') as [string, string];
    sessions.set(name, await ort.InferenceSession.create(file, { intraOpNumThreads: os.availableParallelism(), interOpNumThreads: 1 }));
  }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        if (req.url === '/v2/health/ready') return void res.end();
        const m = /^\/v2\/models\/([^/]+)\/infer$/.exec(req.url ?? '');
        const session = m ? sessions.get(m[1]!) : undefined;
        if (session === undefined) {
          res.statusCode = 404;
          return void res.end('{"error":"unknown model"}');
        }
        try {
          const hl = req.headers['inference-header-content-length'];
          const body = parseKserveBody(Buffer.concat(chunks), hl === undefined ? undefined : Number(hl));
          const feeds: Record<string, ort.Tensor> = {};
          for (const t of body.inputs) feeds[t.name] = new ort.Tensor(ORT_TYPES[t.datatype]!, t.data as Float32Array, t.shape);
          const out = await session.run(feeds);
          const outputs = Object.entries(out).map(([name, t]) => ({ name, datatype: TRITON_TYPES[t.type] ?? t.type, shape: t.dims, t }));
          res.setHeader('Content-Type', 'application/json');
          if (!body.binaryOutput) {
            return void res.end(
              JSON.stringify({
                model_name: m![1],
                outputs: outputs.map((o) => ({ name: o.name, datatype: o.datatype, shape: o.shape, data: Array.from(o.t.data as Float32Array) })),
              }),
            );
          }
          const blobs = outputs.map((o) =>
            Buffer.from((o.t.data as Float32Array).buffer, (o.t.data as Float32Array).byteOffset, (o.t.data as Float32Array).byteLength),
          );
          const json = Buffer.from(
            JSON.stringify({
              model_name: m![1],
              outputs: outputs.map((o, i) => ({ name: o.name, datatype: o.datatype, shape: o.shape, parameters: { binary_data_size: blobs[i]!.length } })),
            }),
          );
          res.setHeader('Inference-Header-Content-Length', String(json.length));
          res.end(Buffer.concat([json, ...blobs]));
        } catch (err) {
          res.statusCode = 400;
          res.end(JSON.stringify({ error: (err as Error).message }));
        }
      })();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(port, '127.0.0.1', () => console.log(`node-http peer listening on ${port}`));
}

void main();
