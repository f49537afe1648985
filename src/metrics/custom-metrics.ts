/**
 * Custom metric families defined by models (pb_utils.MetricFamily,
 * python_backend.md §1.12), exported after nodetron's own families on the
 * metrics endpoint. A family is shared by name: a second definition with the
 * same kind maps onto it (the first description wins), another kind is an
 * error. Series with identical labels share one value. Each Python stub gets
 * an owner (its own handle space); families and series are reference
 * counted across owners and vanish with their last owner, so unloading a
 * model removes what it defined.
 *
 * Rendered by hand rather than with prom-client because a histogram's
 * buckets are chosen per series (per Metric), which prom-client cannot do.
 */
export type CustomKind = 'counter' | 'gauge' | 'histogram';

interface Series {
  labels: string;
  refs: number;
  value: number;
  /** Histograms: upper bounds, their (non-cumulative) counts, sum and count. */
  buckets: number[];
  counts: number[];
  sum: number;
  count: number;
}

interface Family {
  name: string;
  help: string;
  kind: CustomKind;
  refs: number;
  series: Map<string, Series>;
}

/** One stub's operation (the `metric` control message, minus its routing fields). */
export type MetricOp =
  | { op: 'family_new'; h: number; name: string; description: string; kind: CustomKind }
  | { op: 'family_del'; h: number }
  | { op: 'metric_new'; h: number; family: number; labels: Record<string, string>; buckets?: number[] }
  | { op: 'metric_del'; h: number }
  | { op: 'increment' | 'set' | 'observe'; h: number; v: number }
  | { op: 'value'; h: number };

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export class CustomMetrics {
  private readonly families = new Map<string, Family>();

  /** The handle space of one stub process; close it when the process is gone. */
  owner(): CustomMetricsOwner {
    return new CustomMetricsOwner(this.families);
  }

  /** Exposition text of every family that has a series ('' when none). */
  text(): string {
    const out: string[] = [];
    for (const f of this.families.values()) {
      if (f.series.size === 0) continue;
      out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.kind}`);
      for (const s of f.series.values()) {
        const sep = s.labels === '' ? '' : ',';
        if (f.kind !== 'histogram') {
          out.push(`${f.name}${braces(s.labels)} ${num(s.value)}`);
          continue;
        }
        out.push(`${f.name}_count${braces(s.labels)} ${num(s.count)}`, `${f.name}_sum${braces(s.labels)} ${num(s.sum)}`);
        let cumulative = 0;
        s.buckets.forEach((le, i) => {
          cumulative += s.counts[i]!;
          out.push(`${f.name}_bucket{${s.labels}${sep}le="${num(le)}"} ${cumulative}`);
        });
        out.push(`${f.name}_bucket{${s.labels}${sep}le="+Inf"} ${s.count}`);
      }
    }
    return out.length === 0 ? '' : `${out.join('\n')}\n`;
  }
}

export class CustomMetricsOwner {
  private readonly myFamilies = new Map<number, Family>();
  private readonly mySeries = new Map<number, { family: Family; series: Series; familyHandle: number }>();

  constructor(private readonly families: Map<string, Family>) {}

  /** Apply one operation; returns the answer for `value`, throws Error with the text for the model. */
  apply(m: MetricOp): number | undefined {
    switch (m.op) {
      case 'family_new': {
        if (!NAME.test(m.name)) throw new Error(`Invalid metric family name '${m.name}'`);
        let f = this.families.get(m.name);
        if (f !== undefined && f.kind !== m.kind) {
          throw new Error(`Metric family '${m.name}' already exists with a different kind (${f.kind}, not ${m.kind})`);
        }
        if (f === undefined) this.families.set(m.name, (f = { name: m.name, help: m.description, kind: m.kind, refs: 0, series: new Map() }));
        f.refs++;
        this.myFamilies.set(m.h, f);
        return undefined;
      }
      case 'family_del':
        this.dropFamily(m.h);
        return undefined;
      case 'metric_new': {
        const f = this.myFamilies.get(m.family);
        if (f === undefined) throw new Error("Invalid metric operation as the corresponding 'MetricFamily' has been deleted.");
        const names = Object.keys(m.labels).sort();
        for (const n of names) if (!LABEL.test(n)) throw new Error(`Invalid metric label name '${n}'`);
        const key = names.map((n) => `${n}="${escapeLabel(String(m.labels[n]))}"`).join(',');
        let s = f.series.get(key);
        if (s === undefined) {
          const buckets = m.buckets ?? [];
          s = { labels: key, refs: 0, value: 0, buckets, counts: buckets.map(() => 0), sum: 0, count: 0 };
          f.series.set(key, s);
        }
        s.refs++;
        this.mySeries.set(m.h, { family: f, series: s, familyHandle: m.family });
        return undefined;
      }
      case 'metric_del':
        this.dropSeries(m.h);
        return undefined;
      default: {
        const e = this.mySeries.get(m.h);
        if (e === undefined) throw new Error("Invalid metric operation as the corresponding 'MetricFamily' has been deleted.");
        const s = e.series;
        if (m.op === 'value') return s.value;
        if (m.op === 'increment') s.value += m.v;
        else if (m.op === 'set') s.value = m.v;
        else {
          s.count++;
          s.sum += m.v;
          const i = s.buckets.findIndex((le) => m.v <= le);
          if (i >= 0) s.counts[i]!++;
        }
        return undefined;
      }
    }
  }

  /** The stub is gone: release everything it held. */
  close(): void {
    for (const h of [...this.mySeries.keys()]) this.dropSeries(h);
    for (const h of [...this.myFamilies.keys()]) this.dropFamily(h);
  }

  private dropSeries(h: number): void {
    const e = this.mySeries.get(h);
    if (e === undefined) return;
    this.mySeries.delete(h);
    if (--e.series.refs === 0) e.family.series.delete(e.series.labels);
  }

  private dropFamily(h: number): void {
    const f = this.myFamilies.get(h);
    if (f === undefined) return;
    this.myFamilies.delete(h);
    // A deleted family takes this owner's series with it.
    for (const [sh, e] of [...this.mySeries]) if (e.familyHandle === h) this.dropSeries(sh);
    if (--f.refs === 0 && this.families.get(f.name) === f) this.families.delete(f.name);
  }
}

function braces(labels: string): string {
  return labels === '' ? '' : `{${labels}}`;
}

function num(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}
