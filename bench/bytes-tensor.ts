/**
 * Large BYTES tensors through a BYTES identity model over the four ways a
 * client sends them: gRPC `raw_input_contents`, gRPC `bytes_contents` (one
 * repeated-field entry per element), the HTTP binary-data extension and
 * HTTP JSON `data` (one string per element). Per request: wall time (the
 * client's, on loopback) and the server's CPU (user + system of the server
 * process and its children, so the Python stub counts; `/proc/<pid>/stat`),
 * with the node process's own share in brackets (the rest is the stub).
 *
 *   node dist/bench/bytes-tensor.js [--sizes=1000000,10000000] [--reps=1]
 *     [--paths=grpc-raw,grpc-contents,http-binary,http-json] [--models=py,onnx]
 *     [--trees=<repo root>[,<repo root>...]] [--element-bytes=1]
 *     [--node-args=--cpu-prof,--cpu-prof-dir=/tmp/prof]   (node flags for the servers)
 *
 * `--trees`: each tree's built server (`<tree>/dist/src/cli.js`) is started
 * once and the trees take turns request by request (a before and an after
 * build side by side in one run). Models: `py` is the tests' Python BYTES
 * identity (test/integration/fixtures/large_models/identity_bytes_py), `onnx`
 * an ONNX string Identity made by bench/gen_identity_model.py --kind=string (needs
 * the onnx Python package). Elements are `--element-bytes` long (cycling
 * a..z); every answer is checked: the binary paths byte for byte, JSON by
 * status and size. The client builds each body once per size, outside the
 * timing; it reads the answer into one buffer inside it.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { freePort, startProc, treeCpuSeconds, type Proc } from './bench-procs';

const REPO_ROOT = path.resolve(__dirname, '../..');
const PY_FIXTURE = path.join(REPO_ROOT, 'test/integration/fixtures/large_models/identity_bytes_py');
const MODEL_NAME = { py: 'identity_bytes_py', onnx: 'identity_bytes_onnx' } as const;
type ModelKey = keyof typeof MODEL_NAME;
const PATHS = ['grpc-raw', 'grpc-contents', 'http-binary', 'http-json'] as const;
type PathKey = (typeof PATHS)[number];

function flag(name: string, fallback: string): string {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit === undefined ? fallback : hit.slice(name.length + 3);
}

// ---- request bodies ----------------------------------------------------

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

function lenField(tag: number, payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), varint(payload.length), payload]);
}

/** n elements of `size` bytes each, length-prefixed (the serialized BYTES layout). */
function serialized(n: number, size: number): Buffer {
  const out = Buffer.allocUnsafe(n * (4 + size));
  let p = 0;
  for (let i = 0; i < n; i++) {
    out.writeUInt32LE(size, p);
    out.fill(97 + (i % 26), p + 4, p + 4 + size);
    p += 4 + size;
  }
  return out;
}

/** InferInputTensor (name 1, datatype 2, shape 3 packed, contents 5). */
function inputTensor(n: number, contents?: Buffer): Buffer {
  const parts = [lenField(0x0a, Buffer.from('INPUT0')), lenField(0x12, Buffer.from('BYTES')), lenField(0x1a, varint(n))];
  if (contents !== undefined) parts.push(lenField(0x2a, contents));
  return Buffer.concat(parts);
}

/** The gRPC-framed ModelInferRequest: model_name 1, inputs 5, raw_input_contents 7. */
function grpcBody(model: string, n: number, size: number, raw: Buffer, contents: boolean): Buffer {
  let msg: Buffer;
  if (contents) {
    // InferTensorContents.bytes_contents (8), once per element.
    const each = 2 + size; // tag + one-byte length + payload (size < 128)
    if (size >= 128) throw new Error('--element-bytes must be below 128 for bytes_contents');
    const c = Buffer.allocUnsafe(n * each);
    for (let i = 0, p = 0, q = 4; i < n; i++, p += each, q += 4 + size) {
      c[p] = 0x42;
      c[p + 1] = size;
      raw.copy(c, p + 2, q, q + size);
    }
    msg = Buffer.concat([lenField(0x0a, Buffer.from(model)), lenField(0x2a, inputTensor(n, c))]);
  } else {
    msg = Buffer.concat([lenField(0x0a, Buffer.from(model)), lenField(0x2a, inputTensor(n)), lenField(0x3a, raw)]);
  }
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(msg.length, 1);
  return Buffer.concat([prefix, msg]);
}

function httpBinaryBody(n: number, raw: Buffer): { header: number; body: Buffer } {
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [n], parameters: { binary_data_size: raw.length } }],
      outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
    }),
  );
  return { header: header.length, body: Buffer.concat([header, raw]) };
}

function httpJsonBody(n: number, size: number): Buffer {
  const data = new Array<string>(n);
  for (let i = 0; i < n; i++) data[i] = String.fromCharCode(97 + (i % 26)).repeat(size);
  return Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [n], data }] }));
}

// ---- answers -------------------------------------------------------------

/** raw_output_contents[0] (field 6) of a ModelInferResponse; reads only the top-level fields. */
function rawOutput(msg: Buffer): Buffer | undefined {
  let p = 0;
  const uint = (): number => {
    let v = 0;
    let mul = 1;
    for (;;) {
      const b = msg[p++];
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
  };
  while (p < msg.length) {
    const tag = uint();
    const wt = tag & 7;
    if (wt === 0) uint();
    else if (wt === 1) p += 8;
    else if (wt === 5) p += 4;
    else if (wt === 2) {
      const n = uint();
      if (tag >>> 3 === 6) return msg.subarray(p, p + n);
      p += n;
    } else throw new Error(`wire type ${wt} in the response`);
  }
  return undefined;
}

function grpcCall(session: http2.ClientHttp2Session, body: Buffer): Promise<{ status: string; message: string; data: Buffer }> {
  return new Promise((resolve, reject) => {
    const s = session.request({ ':method': 'POST', ':path': '/inference.GRPCInferenceService/ModelInfer', 'content-type': 'application/grpc', te: 'trailers' });
    const chunks: Buffer[] = [];
    let head: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    s.on('response', (h) => (head = h));
    s.on('trailers', (t) => (trailers = t));
    s.on('data', (d: Buffer) => chunks.push(d));
    s.on('error', reject);
    s.on('close', () => {
      const h = { ...head, ...trailers };
      resolve({ status: String(h['grpc-status'] ?? '?'), message: decodeURIComponent(String(h['grpc-message'] ?? '')), data: Buffer.concat(chunks) });
    });
    s.end(body);
  });
}

function httpPost(
  port: number,
  model: string,
  body: Buffer,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: `/v2/models/${model}/infer`, method: 'POST', headers: { 'Content-Length': String(body.length), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

// ---- the run -------------------------------------------------------------

interface Server {
  tree: string;
  proc: Proc;
  grpcPort: number;
  session: http2.ClientHttp2Session;
}

async function startTree(tree: string, repo: string): Promise<Server> {
  const httpPort = await freePort();
  const grpcPort = await freePort();
  const nodeArgs = flag('node-args', '')
    .split(',')
    .filter((a) => a !== '');
  const proc = await startProc(
    process.execPath,
    [
      ...nodeArgs,
      path.join(tree, 'dist/src/cli.js'),
      `--model-repository=${repo}`,
      `--http-port=${httpPort}`,
      '--allow-grpc=true',
      `--grpc-port=${grpcPort}`,
      '--allow-metrics=false',
      `--http-max-input-size=${2 ** 31 - 1}`,
      '--log-verbose=0',
    ],
    httpPort,
  );
  const session = http2.connect(`http://127.0.0.1:${grpcPort}`, { settings: { initialWindowSize: 2 ** 30 } });
  session.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve());
    session.once('error', reject);
  });
  session.setLocalWindowSize(2 ** 30);
  return { tree, proc, grpcPort, session };
}

type Bodies = { raw: Buffer; grpcRaw?: Buffer; grpcContents?: Buffer; httpBinary?: { header: number; body: Buffer }; json?: Buffer };

/** CPU seconds (user + system, all threads) of one process, without its children. */
function processCpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

interface Sample {
  wall: number;
  cpu: number;
  node: number;
}

async function once(s: Server, route: PathKey, model: string, n: number, b: Bodies): Promise<Sample> {
  const pid = s.proc.child.pid!;
  const cpu0 = treeCpuSeconds(pid);
  const node0 = processCpuSeconds(pid);
  const t0 = performance.now();
  const done = (wall: number): Sample => ({ wall, cpu: treeCpuSeconds(pid) - cpu0, node: processCpuSeconds(pid) - node0 });
  if (route === 'grpc-raw' || route === 'grpc-contents') {
    const r = await grpcCall(s.session, route === 'grpc-raw' ? b.grpcRaw! : b.grpcContents!);
    const wall = performance.now() - t0;
    if (r.status !== '0') throw new Error(`${route} ${model} ${n}: grpc-status ${r.status}: ${r.message}`);
    const out = rawOutput(r.data.subarray(5));
    if (out === undefined || !out.equals(b.raw)) throw new Error(`${route} ${model} ${n}: OUTPUT0 differs from INPUT0`);
    return done(wall);
  }
  const port = s.proc.port;
  if (route === 'http-binary') {
    const r = await httpPost(port, model, b.httpBinary!.body, {
      'Inference-Header-Content-Length': String(b.httpBinary!.header),
      'Content-Type': 'application/octet-stream',
    });
    const wall = performance.now() - t0;
    if (r.status !== 200) throw new Error(`${route} ${model} ${n}: HTTP ${r.status}: ${r.body.subarray(0, 300).toString()}`);
    const h = Number(r.headers['inference-header-content-length']);
    if (!r.body.subarray(h).equals(b.raw)) throw new Error(`${route} ${model} ${n}: OUTPUT0 differs from INPUT0`);
    return done(wall);
  }
  const r = await httpPost(port, model, b.json!, { 'Content-Type': 'application/json' });
  const wall = performance.now() - t0;
  if (r.status !== 200) throw new Error(`${route} ${model} ${n}: HTTP ${r.status}: ${r.body.subarray(0, 300).toString()}`);
  // The request's data, less its other fields: the answer's "data" array is as long.
  if (r.body.length < b.json!.length - 200) throw new Error(`${route} ${model} ${n}: answer of ${r.body.length} bytes is too short`);
  return done(wall);
}

function makeRepo(models: ModelKey[]): string {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-bytes-bench-'));
  if (models.includes('py')) fs.symlinkSync(PY_FIXTURE, path.join(repo, MODEL_NAME.py));
  if (models.includes('onnx'))
    execFileSync('python3', [path.join(REPO_ROOT, 'bench/gen_identity_model.py'), '--kind=string', `--out=${repo}`], { stdio: 'inherit' });
  return repo;
}

async function main(): Promise<void> {
  const sizes = flag('sizes', '1000000,10000000').split(',').map(Number);
  const reps = Number(flag('reps', '1'));
  const routes = flag('paths', PATHS.join(',')).split(',') as PathKey[];
  const models = flag('models', 'py,onnx').split(',') as ModelKey[];
  const trees = flag('trees', REPO_ROOT)
    .split(',')
    .map((t) => path.resolve(t));
  const size = Number(flag('element-bytes', '1'));
  for (const r of routes) if (!PATHS.includes(r)) throw new Error(`unknown path '${r}' (${PATHS.join(', ')})`);
  for (const m of models) if (!(m in MODEL_NAME)) throw new Error(`unknown model '${m}' (py, onnx)`);

  const repo = makeRepo(models);
  const servers: Server[] = [];
  try {
    for (const t of trees) servers.push(await startTree(t, repo));
    // One small request per model, path and server first: stub start-up, region growth, JIT.
    const warm = serialized(10_000, size);
    for (const m of models) {
      const b: Bodies = {
        raw: warm,
        grpcRaw: grpcBody(MODEL_NAME[m], 10_000, size, warm, false),
        grpcContents: grpcBody(MODEL_NAME[m], 10_000, size, warm, true),
        httpBinary: httpBinaryBody(10_000, warm),
        json: httpJsonBody(10_000, size),
      };
      for (const s of servers) for (const route of routes) await once(s, route, MODEL_NAME[m], 10_000, b);
    }
    console.log(`| model | path | elements | ${trees.map((t) => `${path.basename(t)}: wall s, server CPU s (node process alone)`).join(' | ')} |`);
    console.log(`|---|---|---:|${trees.map(() => '---|').join('')}`);
    for (const n of sizes) {
      const raw = serialized(n, size);
      for (const m of models) {
        const model = MODEL_NAME[m];
        for (const route of routes) {
          const b: Bodies = { raw };
          if (route === 'grpc-raw') b.grpcRaw = grpcBody(model, n, size, raw, false);
          if (route === 'grpc-contents') b.grpcContents = grpcBody(model, n, size, raw, true);
          if (route === 'http-binary') b.httpBinary = httpBinaryBody(n, raw);
          if (route === 'http-json') b.json = httpJsonBody(n, size);
          const cells: string[][] = servers.map(() => []);
          for (let rep = 0; rep < reps; rep++) {
            for (const [k, s] of servers.entries()) {
              const r = await once(s, route, model, n, b);
              cells[k].push(`${(r.wall / 1000).toFixed(2)}, ${r.cpu.toFixed(2)} (${r.node.toFixed(2)})`);
            }
          }
          console.log(`| ${m} | ${route} | ${n.toLocaleString('en')} | ${cells.map((c) => c.join('; ')).join(' | ')} |`);
        }
      }
    }
  } finally {
    for (const s of servers) {
      s.session.close();
      await s.proc.stop();
    }
    fs.rmSync(repo, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
