#!/usr/bin/env -S node --max-semi-space-size=4
// Run by `npm start` as `node --max-semi-space-size=4 scripts/start.js`: the main isolate's young generation held as src/cli.ts's shebang holds it (src/core/young-generation.ts).
// `npm start -- <tritonserver flags>`: serve model_repository/ unless the
// flags name a repository of their own, then hand over to the CLI.
const path = require('node:path');
const args = process.argv.slice(2);
const named = args.some((a) => /^--model-(repository|store)(=|$)/.test(a));
if (!named) args.unshift(`--model-repository=${path.join(__dirname, '..', 'model_repository')}`);
process.argv = [process.argv[0], path.join(__dirname, '..', 'dist/src/cli.js'), ...args];
require('../dist/src/cli.js');
