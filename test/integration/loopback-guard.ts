/**
 * Loaded into a server under test with `NODE_OPTIONS=--require <this file>`:
 * prints one `loopback-guard:` line on stderr for every host name the
 * process looks up and every connection it makes to an address other than
 * 127.0.0.1, so a test can assert that a cloud client stayed on loopback
 * (no metadata server, no token exchange) by finding no such line.
 */
import diagnostics from 'node:diagnostics_channel';
import type net from 'node:net';

diagnostics.subscribe('net.client.socket', (msg) => {
  const socket = (msg as { socket: net.Socket }).socket;
  socket.once('lookup', (_err: Error | null, _address: string, _family: number, host: string) => {
    process.stderr.write(`loopback-guard: lookup ${host}\n`);
  });
  socket.once('connect', () => {
    if (socket.remoteAddress !== '127.0.0.1') process.stderr.write(`loopback-guard: connect ${socket.remoteAddress ?? '?'}\n`);
  });
});
