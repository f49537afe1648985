/**
 * Azurite's blob server (the npm `azurite` package, `azurite-blob`) as our
 * own child process on a free loopback port, its data in a temp folder,
 * stopped by its PID. Real SharedKey auth: the well-known development
 * account devstoreaccount1 (its published key) and, when asked, more
 * accounts through AZURITE_ACCOUNTS. Telemetry is always off
 * (`--disableTelemetry`: otherwise azurite reports to the internet).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, stopChild } from './fleet-proxies';
import { REPO_ROOT } from './server-process';

/** Azurite's published development account and key (not a secret: azurite's documentation gives it). */
export const DEV_ACCOUNT = 'devstoreaccount1';
export const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface Azurite {
  port: number;
  /** The blob service URL of `account` on this server: `http://127.0.0.1:<port>/<account>`. */
  endpoint(account?: string): string;
  /** A connection string for `account` (DEV_ACCOUNT with DEV_KEY by default). */
  connectionString(account?: string, key?: string): string;
  output(): string;
  stop(): Promise<void>;
}

/** Starts azurite-blob; `accounts` are extra `name:key` pairs (AZURITE_ACCOUNTS). */
export async function startAzurite(accounts: { name: string; key: string }[] = []): Promise<Azurite> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodetron-azurite-'));
  const port = await freePort();
  const bin = path.join(REPO_ROOT, 'node_modules/.bin/azurite-blob');
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (accounts.length > 0) {
    env['AZURITE_ACCOUNTS'] = [`${DEV_ACCOUNT}:${DEV_KEY}`, ...accounts.map((a) => `${a.name}:${a.key}`)].join(';');
  }
  const child: ChildProcess = spawn(
    bin,
    ['--disableTelemetry', '--silent', '--skipApiVersionCheck', '--blobHost', '127.0.0.1', '--blobPort', String(port), '--location', dir],
    { stdio: ['ignore', 'pipe', 'pipe'], env, cwd: dir },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const endpoint = (account = DEV_ACCOUNT): string => `http://127.0.0.1:${port}/${account}`;
  const stop = (): Promise<void> => stopChild(child).then(() => fs.rmSync(dir, { recursive: true, force: true }));
  // Ready once it answers HTTP at all (an unauthenticated list is refused, which is an answer).
  const end = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`azurite-blob exited with ${child.exitCode}:\n${out}`);
    const answered = await fetch(`${endpoint()}?comp=list`).then(
      () => true,
      () => false,
    );
    if (answered) break;
    if (Date.now() > end) {
      await stop();
      throw new Error(`azurite-blob did not answer on port ${port} within 30 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port,
    endpoint,
    connectionString: (account = DEV_ACCOUNT, key = DEV_KEY) =>
      `DefaultEndpointsProtocol=http;AccountName=${account};AccountKey=${key};BlobEndpoint=${endpoint(account)};`,
    output: () => out,
    stop,
  };
}
