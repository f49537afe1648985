/**
 * Golden tests of what the real server says about a mistake: one folder per
 * case under test/golden/server/ with `case.json` (and an optional `repo/`
 * overlay, golden-repo.ts). A case either expects the server to exit
 * (`exit`, and `stderr`: the last line of its output, exact) or to serve,
 * and then lists HTTP requests with the exact status and JSON answer and gRPC
 * calls with the exact status code and details. `log` lists messages that
 * must appear, exactly, each on a log line of the given level.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { buildCaseRepo, fill, goldenCases, GOLDEN_DIR, readCase } from './golden-repo';
import type { RepoSetup } from './golden-repo';
import { createClient } from './grpc-test-client';
import { runToExit, startServer, waitForOutput } from './server-process';

interface HttpCheck {
  method?: string;
  path: string;
  body?: unknown;
  status: number;
  json: unknown;
}

interface GrpcCheck {
  rpc: string;
  request: object;
  code: number;
  details: string;
}

interface ServerCase {
  about: string;
  repo?: RepoSetup;
  args: string[];
  exit?: number;
  stderr?: string;
  log?: { level: 'E' | 'W' | 'I' | 'V'; text: string }[];
  http?: HttpCheck[];
  grpc?: GrpcCheck[];
}

/** Whether some log line of `level` carries exactly `text` (quoted, as TRITON_SERVER_ESCAPE_LOG_MESSAGES prints it). */
function hasLogLine(output: string, level: string, text: string): boolean {
  const quoted = JSON.stringify(text);
  return output.split('\n').some((line) => line.startsWith(level) && line.endsWith(`] ${quoted}`));
}

const cases = goldenCases('server');

test('golden server cases exist', () => {
  assert.ok(cases.length >= 5, `only ${cases.length} cases in ${path.join(GOLDEN_DIR, 'server')}`);
});

for (const name of cases) {
  const raw = readCase<ServerCase>('server', name);
  test(`golden server: ${name}: ${raw.about}`, async () => {
    const repo = buildCaseRepo('server', name, raw.repo);
    const c = fill(raw, { repo, case: path.join(GOLDEN_DIR, 'server', name) });
    try {
      if (c.exit !== undefined) {
        const r = await runToExit(c.args);
        const lines = r.output.trimEnd().split('\n');
        assert.equal(r.code, c.exit, r.output);
        if (c.stderr !== undefined) assert.equal(lines[lines.length - 1], c.stderr);
        for (const l of c.log ?? []) assert.ok(hasLogLine(r.output, l.level, l.text), `no ${l.level} line ${JSON.stringify(l.text)} in:\n${r.output}`);
        return;
      }
      const grpcArgs = c.grpc === undefined ? [] : ['--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1'];
      const server = await startServer([...c.args, ...grpcArgs]);
      try {
        for (const h of c.http ?? []) {
          const res = await fetch(server.url + h.path, {
            method: h.method ?? (h.body === undefined ? 'GET' : 'POST'),
            body: h.body === undefined ? undefined : JSON.stringify(h.body),
            headers: { 'Content-Type': 'application/json' },
          });
          const text = await res.text();
          assert.equal(res.status, h.status, `${h.path}: ${text}`);
          assert.deepEqual(JSON.parse(text), h.json, h.path);
        }
        if (c.grpc !== undefined) {
          const client = createClient(server.grpcPort);
          try {
            for (const g of c.grpc) {
              await assert.rejects(client.call(g.rpc, g.request), (err: { code: number; details: string }) => {
                assert.equal(err.code, g.code, err.details);
                assert.equal(err.details, g.details);
                return true;
              });
            }
          } finally {
            client.close();
          }
        }
        for (const l of c.log ?? []) {
          const quoted = JSON.stringify(l.text).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          await waitForOutput(server, new RegExp(`^${l.level}.*\\] ${quoted}$`, 'm'));
        }
      } finally {
        await server.stop();
      }
    } finally {
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
}
