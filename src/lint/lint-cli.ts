/**
 * `nodetron lint [--model-repository=]<path>... [--model-config-name=<n>]
 * [--disable-auto-complete-config] [--backend-config=<backend>,<k>=<v>]`:
 * prints what the server would say about the repositories and exits 1 when
 * any model would fail to load (for CI), 0 otherwise; 2 on a usage error.
 */
import { detectGpuIds } from '../instances/gpus';
import { createLogger } from '../logging/logger';
import { setAutoCompleteLog } from '../python-backend/complete-config';
import { formatReport, lintRepositories } from './lint';

const USAGE =
  'Usage: nodetron lint <model repository>... [--model-config-name=<name>] [--disable-auto-complete-config] ' +
  '[--backend-config=<backend>,<setting>=<value>]\n' +
  'Checks a model repository the way the server loads it, without serving it; exit status 1 when a model would fail to load.\n';

interface LintArgs {
  repositories: string[];
  modelConfigName: string;
  autoComplete: boolean;
  backendConfig: Record<string, Record<string, string>>;
}

export class LintUsageError extends Error {}

export function parseLintArgs(argv: readonly string[]): LintArgs {
  const args: LintArgs = { repositories: [], modelConfigName: '', autoComplete: true, backendConfig: {} };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const flag = eq < 0 ? a : a.slice(0, eq);
    const value = (): string => {
      if (eq >= 0) return a.slice(eq + 1);
      const next = argv[++i];
      if (next === undefined) throw new LintUsageError(`${flag} needs a value`);
      return next;
    };
    switch (flag) {
      case '--model-repository':
      case '--model-store':
        args.repositories.push(value());
        break;
      case '--model-config-name':
        args.modelConfigName = value();
        break;
      case '--disable-auto-complete-config':
        args.autoComplete = false;
        break;
      case '--backend-config': {
        const v = value();
        const m = /^(?:([^,=]+),)?([^=]+)=(.*)$/.exec(v);
        if (m === null) throw new LintUsageError(`--backend-config takes <backend>,<setting>=<value>, got '${v}'`);
        const backend = m[1] ?? '';
        args.backendConfig[backend] = { ...(args.backendConfig[backend] ?? {}), [m[2]!]: m[3]! };
        break;
      }
      default:
        if (a.startsWith('-')) throw new LintUsageError(`unknown option '${a}'`);
        args.repositories.push(a);
    }
  }
  if (args.repositories.length === 0) throw new LintUsageError('name at least one model repository');
  return args;
}

/** Runs the lint; resolves with the exit status. */
export async function lintMain(argv: readonly string[], write: (text: string) => void): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    write(USAGE);
    return 0;
  }
  let args: LintArgs;
  try {
    args = parseLintArgs(argv);
  } catch (err) {
    if (!(err instanceof LintUsageError)) throw err;
    write(`error: ${err.message}\n${USAGE}`);
    return 2;
  }
  // A Python model's import error is in the report; the stub's own log line would say it twice.
  setAutoCompleteLog(createLogger({ verbose: 0, info: false, warning: false, error: false, format: 'default' }));
  const report = await lintRepositories(args.repositories, {
    modelConfigName: args.modelConfigName,
    autoComplete: args.autoComplete,
    backendConfig: args.backendConfig,
    gpuIds: detectGpuIds(),
  });
  write(formatReport(report));
  return report.errors > 0 ? 1 : 0;
}
