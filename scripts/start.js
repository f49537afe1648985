#!/usr/bin/env -S node --max-semi-space-size=4
// Run by `npm start` as `node --max-semi-space-size=4 scripts/start.js`: the main isolate's young generation held as src/cli.ts's shebang holds it (src/core/young-generation.ts).
// `npm start -- <tritonserver flags>`: serve model_repository/ (with
// --exit-on-error=false unless the flags say) unless the flags name a
// repository of their own, then hand over to the CLI.
const path = require('node:path');
const args = process.argv.slice(2);
const named = args.some((a) => /^--model-(repository|store)(=|$)/.test(a));
if (!named) {
  args.unshift(`--model-repository=${path.join(__dirname, '..', 'model_repository')}`);
  // The examples start anywhere: one that cannot load here (its reason names what to install) is
  // skipped and the rest serve. A repository of your own keeps Triton's default (--exit-on-error=true).
  if (!args.some((a) => /^--exit-on-error(=|$)/.test(a))) args.unshift('--exit-on-error=false');
}
process.argv = [process.argv[0], path.join(__dirname, '..', 'dist/src/cli.js'), ...args];
require('../dist/src/cli.js');
