/**
 * What pip prints while it builds a model's environment, sorted for the
 * server log: the lines a person follows (one per package collected and
 * installed) at info, the rest (download retries, build chatter) at
 * verbose, and on failure the package it was on and its last error lines.
 */

/** Lines that say progress: one per package pip collects, and the install summary. */
const PROGRESS =
  /^(Collecting |Processing |Requirement already satisfied: |Installing collected packages: |Successfully installed |Looking in indexes: |Looking in links: )/;
const COLLECTING = /^(?:Collecting|Processing) (\S+)/;
const KEPT_LINES = 12;

export class PipOutput {
  /** The package pip was collecting or installing last (what a failure names). */
  current: string | undefined;
  private readonly tail: string[] = [];

  /** One line of pip's stdout or stderr: 'info' to log it, 'verbose' otherwise. */
  line(text: string): 'info' | 'verbose' {
    const line = text.trimEnd();
    if (line.trim() === '') return 'verbose';
    const collecting = COLLECTING.exec(line);
    if (collecting !== null) this.current = collecting[1];
    const installing = /^Installing collected packages: (.+)$/.exec(line);
    if (installing !== null) this.current = installing[1];
    const unsatisfied = /^ERROR: (?:Could not find a version that satisfies|No matching distribution found for) (?:the requirement )?(\S+)/.exec(line);
    if (unsatisfied !== null) this.current ??= unsatisfied[1];
    this.tail.push(line);
    if (this.tail.length > KEPT_LINES) this.tail.shift();
    return PROGRESS.test(line) ? 'info' : 'verbose';
  }

  /** The interpreter has no pip, or one too old for `--python` (pip < 22.3). */
  lacksPipPython(): boolean {
    return this.tail.some((l) => /No module named pip|no such option: --python/.test(l));
  }

  /** pip's last error lines (those from its first ERROR on, else its last few). */
  errorLines(): string[] {
    const first = this.tail.findIndex((l) => l.startsWith('ERROR:'));
    const lines = first < 0 ? this.tail.slice(-6) : this.tail.slice(first);
    return lines.filter((l) => !/^\s*$/.test(l) && !l.startsWith('WARNING: Retrying'));
  }
}
