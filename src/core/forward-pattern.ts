/**
 * The header forward patterns' syntax (`--http-header-forward-pattern`,
 * `--grpc-header-forward-pattern`): Triton compiles them with RE2,
 * case-insensitive unless the pattern starts with `(?-i)`; JavaScript has no
 * inline flag groups, so a leading `(?i)` or `(?-i)` becomes the flag.
 * Checked once when the flags are read (cli-options.ts), used by both
 * frontends (request/header-forward.ts).
 */
export function forwardPatternRegExp(flag: string, pattern: string): RegExp {
  let source = pattern;
  let flags = 'i';
  if (source.startsWith('(?-i)')) {
    source = source.slice(5);
    flags = '';
  } else if (source.startsWith('(?i)')) source = source.slice(4);
  try {
    return new RegExp(source, flags);
  } catch (err) {
    throw new Error(`invalid argument for --${flag}: '${pattern}' is not a valid regular expression (${(err as Error).message})`);
  }
}
