/**
 * Which flag a typed long-option name means, as getopt_long decides it (an
 * exact name, else the one flag it is a prefix of), and, for a name that
 * means none, the flag it was probably meant to be. Pure, table-tested.
 */

export type FlagMatch = { kind: 'flag'; name: string } | { kind: 'ambiguous'; candidates: string[] } | { kind: 'unknown'; suggestion?: string };

export function matchFlag(typed: string, names: readonly string[]): FlagMatch {
  if (names.includes(typed)) return { kind: 'flag', name: typed };
  const candidates = typed === '' ? [] : names.filter((n) => n.startsWith(typed));
  if (candidates.length === 1) return { kind: 'flag', name: candidates[0]! };
  if (candidates.length > 1) return { kind: 'ambiguous', candidates };
  const suggestion = closestFlag(typed, names);
  return suggestion === undefined ? { kind: 'unknown' } : { kind: 'unknown', suggestion };
}

/**
 * The flag a mistyped name most likely meant: the same name with `_` for `-`
 * (Triton's docs and old guides write --grpc_infer_thread_count), or the
 * nearest by edit distance when that is small for the name's length; ties go
 * to the flag listed first.
 */
export function closestFlag(typed: string, names: readonly string[]): string | undefined {
  const dashed = typed.replace(/_/g, '-').toLowerCase();
  if (dashed === '') return undefined;
  const exact = matchDashed(dashed, names);
  if (exact !== undefined) return exact;
  const limit = Math.max(1, Math.min(3, Math.floor(dashed.length / 4)));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const n of names) {
    const dist = editDistance(dashed, n);
    if (dist < bestDistance) {
      best = n;
      bestDistance = dist;
    }
  }
  return best;
}

function matchDashed(dashed: string, names: readonly string[]): string | undefined {
  if (names.includes(dashed)) return dashed;
  const prefixed = names.filter((n) => n.startsWith(dashed));
  return prefixed.length === 1 ? prefixed[0] : undefined;
}

/** Levenshtein distance (insert, delete, substitute; an adjacent swap counts 1). */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0]!.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, rows[i - 2]![j - 2]! + 1);
      rows[i]!.push(v);
    }
  }
  return rows[a.length]![b.length]!;
}
