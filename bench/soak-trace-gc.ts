/**
 * Preloaded into the soak's server by `bench/soak.js --trace-gc`
 * (NODE_OPTIONS=--require=<this file>; node refuses --trace-gc itself in
 * NODE_OPTIONS): turns on V8's --trace-gc for the whole process, so every
 * isolate (main, HTTP, gRPC, instance and host threads) prints a line per GC
 * with its heap before and after.
 */
import v8 from 'node:v8';

v8.setFlagsFromString('--trace-gc');
