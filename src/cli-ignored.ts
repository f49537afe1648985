/**
 * Flags nodetron accepts so that Triton command lines run unchanged but does
 * not act on (cli-help.ts FlagDoc.ignored says why): one warning each at
 * start, naming the flag, that it is ignored, and what to do instead.
 */
import { FLAG_DOCS } from './cli-help';
import { FLAGS, type RawValues } from './cli-flags';
import { parseBoolValue } from './cli-values';

/** The warnings for the ignored flags on this command line, in flag-table order. */
export function ignoredFlagWarnings(raw: RawValues): string[] {
  const out: string[] = [];
  for (const [name, values] of raw) {
    const doc = FLAG_DOCS[name];
    if (doc?.ignored === undefined) continue;
    const last = values[values.length - 1]!;
    const isBool = FLAGS.find((f) => f.name === name)?.kind === 'bool';
    if (doc.quietWhen !== undefined && (isBool ? normalise(last) : last) === doc.quietWhen) continue;
    out.push(`Warning: '--${name}=${last}' is ignored: ${doc.ignored}.`);
  }
  return out;
}

/** Booleans in any of Triton's spellings compare as true/false. */
function normalise(value: string): string {
  try {
    return String(parseBoolValue('', value));
  } catch {
    return value;
  }
}
