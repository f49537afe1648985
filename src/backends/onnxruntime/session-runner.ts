/**
 * The ONNX Runtime session of one instance, run synchronously where possible.
 *
 * onnxruntime-node's `InferenceSession.run()` does synchronous native work,
 * but wrapped in a Promise that first waits for a `setImmediate`
 * (perf-facts.md). An instance thread has nothing else to do while a batch
 * runs, so that turn of its event loop is pure cost: about 10 µs per run on
 * this VM (bench: `simple`'s whole run is about 10 µs). So when the installed
 * onnxruntime-node has the native binding we know (checked when the session
 * is made: `dist/binding` exporting `InferenceSession` with `loadModel`,
 * `run` and `dispose`), the runner calls it directly; otherwise, and for
 * sessions with execution providers (GPU), it uses the public API.
 */
import { InferenceSession } from 'onnxruntime-node';
import type { Tensor } from 'onnxruntime-node';

type Outputs = InferenceSession.OnnxValueMapType;

export interface SessionRunner {
  /** True when runs skip onnxruntime-node's Promise/setImmediate wrapper. */
  readonly direct: boolean;
  /** Runs the session; may return synchronously. Throws/rejects with onnxruntime's error. */
  run(feeds: Record<string, Tensor>, outputNames: string[]): Outputs | Promise<Outputs>;
  release(): Promise<void>;
}

interface NativeSession {
  loadModel(file: string, options: InferenceSession.SessionOptions): void;
  run(feeds: Record<string, Tensor>, fetches: Record<string, null>, options: object): Outputs;
  dispose(): void;
}

interface NativeBinding {
  binding: { InferenceSession: new () => NativeSession };
  initOrt(): void;
}

/** The binding onnxruntime-node's own session handler uses, or undefined when this version differs. */
function nativeBinding(): NativeBinding | undefined {
  try {
    const b = require('onnxruntime-node/dist/binding') as Partial<NativeBinding>;
    const proto = (b.binding?.InferenceSession as { prototype?: Record<string, unknown> } | undefined)?.prototype;
    if (typeof b.initOrt !== 'function' || proto === undefined) return undefined;
    if (typeof proto.loadModel !== 'function' || typeof proto.run !== 'function' || typeof proto.dispose !== 'function') return undefined;
    return b as NativeBinding;
  } catch {
    return undefined;
  }
}

export async function createSessionRunner(file: string, options: InferenceSession.SessionOptions): Promise<SessionRunner> {
  const native = options.executionProviders === undefined ? nativeBinding() : undefined;
  if (native !== undefined) {
    native.initOrt();
    const session = new native.binding.InferenceSession();
    session.loadModel(file, options);
    const noRunOptions = {};
    let disposed = false;
    return {
      direct: true,
      run(feeds, outputNames) {
        const fetches: Record<string, null> = {};
        for (const name of outputNames) fetches[name] = null;
        return session.run(feeds, fetches, noRunOptions);
      },
      release() {
        if (!disposed) {
          disposed = true;
          session.dispose();
        }
        return Promise.resolve();
      },
    };
  }
  const session = await InferenceSession.create(file, options);
  let released: Promise<void> | undefined;
  return {
    direct: false,
    run: (feeds, outputNames) => session.run(feeds, outputNames),
    release: () => (released ??= session.release()),
  };
}
