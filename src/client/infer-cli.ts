/**
 * `nodetron infer`: one inference request from the command line (args:
 * infer-args.ts, tensors and printing: infer-tensors.ts), against a running
 * server or one started for it on --model-repository (`start`, given by
 * cli.ts: this layer does not import the server). Prints the outputs as a
 * table, or the response as JSON; exit 1 with the server's error text.
 */
import fs from 'node:fs';
import { buildInferBody, parseInferResponse } from './kserve-http-client';
import { INFER_USAGE, InferUsageError, parseInferArgs } from './infer-args';
import { decodeOutput, makeInput, outputsTable, type MetaTensor } from './infer-tensors';

/** Starts a server on `repository` with `model` loaded; resolves with its HTTP URL and how to stop it. */
export type StartLocal = (repository: string, model: string) => Promise<{ url: string; stop(): Promise<void> }>;

interface Out {
  stdout(text: string): void;
  stderr(text: string): void;
}

export async function inferMain(argv: readonly string[], start: StartLocal, out: Out): Promise<number> {
  let args;
  try {
    args = parseInferArgs(argv);
  } catch (err) {
    if (err instanceof InferUsageError) {
      out.stderr(`error: ${err.message} (see nodetron infer --help)\n`);
      return 1;
    }
    throw err;
  }
  if (args.help) {
    out.stdout(INFER_USAGE);
    return 0;
  }
  let local: Awaited<ReturnType<StartLocal>> | undefined;
  try {
    if (args.repository !== undefined) local = await start(args.repository, args.model);
    const url = local?.url ?? args.url;
    const modelPath = `/v2/models/${encodeURIComponent(args.model)}${args.version === undefined ? '' : `/versions/${encodeURIComponent(args.version)}`}`;
    const metaRes = await call(url, modelPath, { method: 'GET' });
    const meta = JSON.parse(metaRes.text) as { error?: string; inputs?: MetaTensor[] };
    if (metaRes.status !== 200) throw new Error(meta.error ?? `HTTP ${metaRes.status}`);
    const inputs = args.inputs.map((i) =>
      makeInput(
        args.model,
        meta.inputs?.find((m) => m.name === i.name),
        i.name,
        i.value,
        (f) => fs.readFileSync(f),
      ),
    );
    const missing = (meta.inputs ?? []).filter((m) => !args.inputs.some((i) => i.name === m.name)).map((m) => m.name);
    if (missing.length > 0 && inputs.length === 0) throw new Error(`give the model's inputs with --input NAME=VALUE: ${missing.join(', ')}`);
    const opts = args.outputs.length > 0 ? { outputs: args.outputs.map((name) => ({ name, binary: true })) } : { binaryDataOutput: true };
    const { body, headerLength } = buildInferBody(inputs, opts);
    const headers: Record<string, string> = { 'Content-Type': headerLength === undefined ? 'application/json' : 'application/octet-stream' };
    if (headerLength !== undefined) headers['Inference-Header-Content-Length'] = String(headerLength);
    const res = await fetch(`${url}${modelPath}/infer`, { method: 'POST', headers, body });
    const result = parseInferResponse(res.status, res.headers, Buffer.from(await res.arrayBuffer()));
    if (res.status !== 200) throw new Error(String(result.json.error ?? `HTTP ${res.status}`));
    const outputs = ((result.json.outputs ?? []) as MetaTensor[]).map((o) =>
      decodeOutput(o.name, o.datatype, o.shape, result.binary.get(o.name) ?? new Uint8Array(0)),
    );
    if (args.json) {
      const json = { model_name: result.json.model_name, model_version: result.json.model_version, outputs };
      out.stdout(`${JSON.stringify(json, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`);
    } else {
      out.stdout(`model ${String(result.json.model_name)} version ${String(result.json.model_version)}\n${outputsTable(outputs)}`);
    }
    return 0;
  } catch (err) {
    out.stderr(`error: ${(err as Error).message}\n`);
    return 1;
  } finally {
    await local?.stop();
  }
}

async function call(url: string, path: string, init: RequestInit): Promise<{ status: number; text: string }> {
  let res: Response;
  try {
    res = await fetch(url + path, init);
  } catch (err) {
    throw new Error(
      `cannot reach the server at ${url}: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message} (start one, or give --model-repository to start one for this request)`,
    );
  }
  return { status: res.status, text: await res.text() };
}
