/**
 * The last lines the server logged about each model (its loads, its
 * instances, what its Python stubs printed and logged), for the console's
 * model page (`GET /v2/nodetron/models/<model>/log`). Fed by the logger's
 * tap (Logger.tapModelLines: every entry of a logger bound to a model);
 * each line gets a sequence number, so a page that polls asks only for
 * what is new. Bounded: LINES_PER_MODEL a model, and MAX_MODELS models
 * (the one least recently written to goes first).
 */
export const LINES_PER_MODEL = 200;
const MAX_MODELS = 10_000;

export interface LogLine {
  seq: number;
  text: string;
}

export class ModelLogBook {
  private readonly books = new Map<string, LogLine[]>();
  private seq = 0;

  add(model: string, line: string): void {
    let lines = this.books.get(model);
    if (lines === undefined) {
      if (this.books.size >= MAX_MODELS) this.books.delete(this.books.keys().next().value as string);
      lines = [];
    } else {
      this.books.delete(model); // re-inserted below: the Map's order is the order of last writes
    }
    this.books.set(model, lines);
    for (const text of line.split('\n')) {
      lines.push({ seq: ++this.seq, text });
      if (lines.length > LINES_PER_MODEL) lines.shift();
    }
  }

  /** The model's kept lines after sequence number `after` (all of them with 0), oldest first. */
  lines(model: string, after = 0): LogLine[] {
    const lines = this.books.get(model) ?? [];
    return after <= 0 ? [...lines] : lines.filter((l) => l.seq > after);
  }
}
