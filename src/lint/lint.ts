/**
 * `nodetron lint`: everything the server would say about a repository
 * without serving it. Each model goes through the server's own load
 * pipeline up to the instances (repository-paths.ts, scan.ts,
 * prepareModel, checkModelFile): config parse and validation, the backend,
 * config vs model-file signature (ONNX), Python auto-complete (which imports
 * model.py in the configured environment), skipped folders and misplaced
 * files, ignored settings, version policies that select nothing. The texts
 * are the server's, from the same functions.
 */
import { ServerError, toErrorInfo } from '../core/errors';
import { ENSEMBLE_PLATFORM } from '../repository/config/backend-resolution';
import { reasonOf } from '../repository/model-lifecycle';
import { checkModelFile, prepareModel } from '../repository/model-loader';
import type { LoaderOptions, PreparedModel } from '../repository/model-loader';
import { ensembleMissingModelText } from '../repository/ensemble-services';
import { duplicateModelText, loadFailedText } from '../repository/load-texts';
import { lintCloudRootText, repositoryPathProblem } from '../repository/repository-paths';
import { scanRepositories } from '../repository/scan';
import type { ModelLocation } from '../repository/scan';

export type Severity = 'error' | 'warning' | 'ok';

export interface Finding {
  severity: Severity;
  text: string;
}

export interface LintReport {
  findings: Finding[];
  errors: number;
  warnings: number;
  models: number;
}

export async function lintRepositories(repositories: readonly string[], loader: LoaderOptions): Promise<LintReport> {
  const findings: Finding[] = [];
  const readable: string[] = [];
  for (const r of repositories) {
    const cloud = lintCloudRootText(r);
    const problem = repositoryPathProblem(r);
    if (cloud !== undefined) findings.push({ severity: 'error', text: cloud });
    else if (problem === undefined) readable.push(r);
    else findings.push({ severity: 'error', text: `${problem.message}` });
  }
  const scan = scanRepositories(readable);
  for (const [name, repos] of scan.duplicates) findings.push({ severity: 'error', text: duplicateModelText(name, repos) });
  const locations = [...scan.models.values()].sort((a, b) => a.name.localeCompare(b.name));
  // One model at a time: Python auto-complete starts a stub per model.
  for (const location of locations) {
    const model = await lintModel(location, loader);
    // An ensemble's steps must name models of the repository (their own errors are theirs).
    const missing = [...new Set((model.prepared?.config.ensemble_scheduling?.step ?? []).map((st) => st.model_name))]
      .filter((m) => !scan.models.has(m))
      .map((m): Finding => {
        const reason = reasonOf(new ServerError('INVALID_ARG', ensembleMissingModelText(location.name, m)));
        return { severity: 'error', text: loadFailedText(location.name, reason, model.prepared!.versions[0]) };
      });
    findings.push(...(missing.length === 0 ? model.findings : [...model.findings.filter((f) => f.severity !== 'ok'), ...missing]));
  }
  return {
    findings,
    errors: findings.filter((f) => f.severity === 'error').length,
    warnings: findings.filter((f) => f.severity === 'warning').length,
    models: locations.length + scan.duplicates.size,
  };
}

/** What loading one model would say: its warnings, then its errors, or one `ok` line; and what was prepared. */
export async function lintModel(location: ModelLocation, loader: LoaderOptions): Promise<{ findings: Finding[]; prepared?: PreparedModel }> {
  const out: Finding[] = [];
  const listener = { warn: (text: string) => out.push({ severity: 'warning', text }), detail: () => undefined };
  let prepared;
  try {
    prepared = await prepareModel(location, loader, undefined, listener);
  } catch (err) {
    out.push({ severity: 'error', text: loadFailedText(location.name, reasonOf(err)) });
    return { findings: out };
  }
  if (prepared.versions.length === 0) {
    out.push({ severity: 'error', text: loadFailedText(location.name, prepared.noVersionReason ?? 'no version to load') });
    return { findings: out };
  }
  const ensemble = prepared.config.platform === ENSEMBLE_PLATFORM;
  let failed = false;
  if (!ensemble) {
    for (const v of prepared.versions) {
      try {
        checkModelFile(prepared, location, v);
      } catch (err) {
        failed = true;
        out.push({ severity: 'error', text: loadFailedText(location.name, reasonOf(err), v) });
      }
    }
  }
  if (!failed) {
    const what = ensemble ? 'ensemble' : prepared.backend.name;
    out.push({ severity: 'ok', text: `'${location.name}' version ${prepared.versions.join(', ')} (${what})` });
  }
  return { findings: out, prepared };
}

/** The report as printed: one line per finding (continuation lines indented), then the totals. */
export function formatReport(report: LintReport): string {
  const lines = report.findings.map(
    (f) =>
      `${f.severity}: ${f.text
        .trimEnd()
        .split('\n')
        .map((l) => l.trimEnd())
        .join('\n    ')
        .replace(/\n {4}\n/g, '\n\n')}`,
  );
  const plural = (n: number, w: string): string => `${n} ${w}${n === 1 ? '' : 's'}`;
  lines.push(`${plural(report.errors, 'error')}, ${plural(report.warnings, 'warning')} in ${plural(report.models, 'model')}`);
  return `${lines.join('\n')}\n`;
}

/** For the CLI's own failures (not findings). */
export function errorText(err: unknown): string {
  return toErrorInfo(err).message;
}
