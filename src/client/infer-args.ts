/**
 * `nodetron infer`'s command line, parsed (pure): which server (a running
 * one at -u, or one started on --model-repository for this request), which
 * model, the inputs as NAME=VALUE (a JSON literal, or @file: a .npy array,
 * or any other file's bytes as one BYTES element), the outputs asked for,
 * and --json.
 */
export const INFER_USAGE = `Usage: nodetron infer -m <model> [options]
  One inference request, printed as a table of the outputs.
  -m, --model-name <name>       the model (required)
  -x, --model-version <v>       a version (default: the server's choice)
  -u, --url <host:port|url>     a running server's HTTP endpoint (default localhost:8000)
  --model-repository <dir>      start a server on this repository for the request (free ports), then stop it
  --input NAME=VALUE            an input: a JSON literal ([1,2,3,4], [[1,2],[3,4]], "text", 7),
                                @file.npy (a NumPy array), or @file (its bytes as one BYTES element);
                                repeat for each input
  --output NAME                 ask for this output only (repeatable; default: all)
  --json                        print the response as JSON instead of a table
  -h, --help                    this text
Exit status 1 with the server's error text when the request fails.
`;

export class InferUsageError extends Error {}

export interface InferArgs {
  model: string;
  version?: string;
  url: string;
  repository?: string;
  inputs: { name: string; value: string }[];
  outputs: string[];
  json: boolean;
  help: boolean;
}

export function parseInferArgs(argv: readonly string[]): InferArgs {
  const out: InferArgs = { model: '', url: 'http://localhost:8000', inputs: [], outputs: [], json: false, help: false };
  let urlGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const value = (): string => {
      if (eq > 0) return arg.slice(eq + 1);
      const v = argv[++i];
      if (v === undefined) throw new InferUsageError(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '-m':
      case '--model-name':
        out.model = value();
        break;
      case '-x':
      case '--model-version':
        out.version = value();
        break;
      case '-u':
      case '--url':
        out.url = normalizeUrl(value());
        urlGiven = true;
        break;
      case '--model-repository':
        out.repository = value();
        break;
      case '--input': {
        const spec = value();
        const at = spec.indexOf('=');
        if (at <= 0) throw new InferUsageError(`--input '${spec}': expected NAME=VALUE (a JSON literal, @file.npy or @file)`);
        out.inputs.push({ name: spec.slice(0, at), value: spec.slice(at + 1) });
        break;
      }
      case '--output':
        out.outputs.push(value());
        break;
      case '--json':
        out.json = true;
        break;
      case '-h':
      case '--help':
        out.help = true;
        break;
      default:
        throw new InferUsageError(`unknown option '${arg}'`);
    }
  }
  if (out.help) return out;
  if (out.model === '') throw new InferUsageError('-m <model> is required');
  if (urlGiven && out.repository !== undefined) throw new InferUsageError('give either -u (a running server) or --model-repository (start one), not both');
  return out;
}

function normalizeUrl(u: string): string {
  const withScheme = /^https?:\/\//.test(u) ? u : `http://${u}`;
  return withScheme.replace(/\/+$/, '');
}
