/**
 * The --model-repository roots as the repository reads them: a local folder
 * is itself; a cloud root (s3://, as://, gs://) is its local mirror
 * (storage/cloud-mirror.ts), brought up to date before the scan reads it,
 * so scan, config overrides, version folders, ensembles and Python models
 * never know where a model came from. What each control mode asks of it:
 * - none, poll (and explicit with --load-model=*): every root mirrored at
 *   start (`start`); a root that cannot be read fails the start.
 * - poll: every tick mirrors every root again (`refresh`): only changed
 *   objects are fetched; a root that cannot be read keeps its models
 *   serving as they are (logged once) until it can.
 * - explicit: the start and the index list each cloud root's model names
 *   (`refreshNames`); a root that cannot be listed keeps the names it had
 *   (logged once, as in a poll), so the index lists what it can read. A
 *   load fetches that model (`fetchModel`; one listing per root serves
 *   the whole load, an ensemble's steps included: `Listings`), an unload
 *   drops its files (`release`).
 * Local roots are read by the scan alone; `noteLocal` logs the ones it
 * could not read.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ServerError, toErrorInfo } from '../core/errors';
import type { ModelControlMode } from '../cli-options';
import type { Logger } from '../logging/logger';
import { CloudMirror } from './storage/cloud-mirror';
import type { ModelObjects } from './storage/cloud-mirror';
import { cloudScheme, openObjectStore } from './storage/open-store';
import { repositoryPathProblem } from './repository-paths';

/** What one refresh found: roots that could not be read, models not fetched completely. */
export interface RefreshOutcome {
  /** Local paths (folders or mirrors) whose models must not be taken as removed. */
  unreadable: Set<string>;
  /** Model folders (local paths) whose files are part old, part new: not loaded now. */
  incomplete: Set<string>;
}

/** One load's listings: each cloud root is listed the first time the load asks, then reused. */
export type Listings = Map<CloudMirror, Promise<ModelObjects>>;

export class RepositoryRoots {
  /** Per root, in the order given: the folder the scan reads. */
  readonly localPaths: readonly string[];
  private readonly mirrors: CloudMirror[];
  /** Roots whose last read failed, with the reason logged (once per failure). */
  private readonly failing = new Map<string, string>();

  constructor(
    private readonly urls: readonly string[],
    cacheDir: string,
    private readonly log: Logger,
  ) {
    this.mirrors = [];
    this.localPaths = urls.map((url) => {
      if (cloudScheme(url) === undefined) return url;
      const store = openObjectStore(url);
      let mirror: CloudMirror;
      try {
        mirror = new CloudMirror(store, cacheDir, (t) => log.warn(t));
      } catch (err) {
        store.close();
        const code = (err as NodeJS.ErrnoException).code ?? toErrorInfo(err).message;
        throw new ServerError(
          'INTERNAL',
          `cannot cache model repository '${url}' in --model-cache-dir ${cacheDir} (${code}): point --model-cache-dir at a folder the server can write.`,
        );
      }
      this.mirrors.push(mirror);
      return mirror.dir;
    });
  }

  /** The root as the user wrote it, for a local path of ours (a mirror's folder → its URL). */
  displayName(localPath: string): string {
    const i = this.localPaths.indexOf(localPath);
    return i < 0 ? localPath : this.urls[i];
  }

  /** At start: every cloud root is read (its names, or all of it); throws the first that cannot be. */
  async start(mode: ModelControlMode, loadAll: boolean): Promise<void> {
    const names = mode === 'explicit' && !loadAll;
    await Promise.all(
      this.mirrors.map(async (m) => {
        const started = Date.now();
        const listing = await m.list();
        if (names) {
          m.markNames(listing);
          return;
        }
        const done = await m.sync(listing);
        if (done.incomplete.size > 0) {
          throw new ServerError(
            'INTERNAL',
            `failed to fetch ${[...done.incomplete].map((n) => `'${n}'`).join(', ')} from model repository '${m.store.url}' (logged above)`,
          );
        }
        this.log.info(
          `model repository '${m.store.url}' mirrored into ${m.dir} in ${Date.now() - started} ms: ` +
            `${done.fetched} of ${done.objects} objects downloaded, the others unchanged in the cache (credential from ${m.store.credentialSource})`,
        );
      }),
    );
  }

  /**
   * One poll: every cloud root mirrored again; what could not be read is
   * reported, not thrown. Local roots are not looked at here: the scan
   * reads them, and `noteLocal` logs what it could not read.
   */
  async refresh(): Promise<RefreshOutcome> {
    const out: RefreshOutcome = { unreadable: new Set(), incomplete: new Set() };
    await Promise.all(
      this.mirrors.map(async (m) => {
        try {
          const done = await m.sync(await m.list());
          for (const name of done.incomplete) out.incomplete.add(path.join(m.dir, name));
          if (done.fetched > 0) this.log.verbose(1, `model repository '${m.store.url}': ${done.fetched} changed objects downloaded`);
          this.recovered(m.dir);
        } catch (err) {
          out.unreadable.add(m.dir);
          this.failed(m.dir, err);
        }
      }),
    );
    return out;
  }

  /**
   * After a poll's scan: the local roots it could not read (`unreadable`,
   * the scan's) are logged once with why, the others that were failing
   * are logged as back. The why is worked out only for a root that failed.
   */
  noteLocal(unreadable: readonly string[]): void {
    for (const p of this.localPaths) {
      if (this.mirrorOf(p) !== undefined) continue;
      if (!unreadable.includes(p)) this.recovered(p);
      else this.failed(p, repositoryPathProblem(p) ?? `failed to open directory ${p}`);
    }
  }

  /**
   * Explicit mode's index: each cloud root's model names, as empty folders
   * until loaded. A root that cannot be listed keeps the names it had and
   * is logged (once per reason); the index lists the others.
   */
  async refreshNames(): Promise<void> {
    await Promise.all(
      this.mirrors.map(async (m) => {
        try {
          m.markNames(await m.list());
          this.recovered(m.dir);
        } catch (err) {
          this.failed(m.dir, err, 'list', 'The index shows the models it listed last.');
        }
      }),
    );
  }

  /** A fresh `Listings` for one load (pass the same one to the loads it makes along). */
  newListings(): Listings {
    return new Map();
  }

  /**
   * Explicit load: the model's objects in every cloud root that has it (a
   * name in two roots is refused by the scan). Each root is listed once
   * per `listings`.
   */
  async fetchModel(name: string, listings: Listings = this.newListings()): Promise<void> {
    await Promise.all(
      this.mirrors.map(async (m) => {
        // An empty root has no such model; a bucket that is not there is its own error.
        let listed = listings.get(m);
        if (listed === undefined) listings.set(m, (listed = m.list(true)));
        const listing = await listed;
        if (!listing.has(name)) {
          if (fs.existsSync(path.join(m.dir, name))) m.drop(name);
          return;
        }
        const done = await m.sync(listing, [name]);
        if (done.incomplete.size > 0)
          throw new ServerError('INTERNAL', `failed to fetch model '${name}' from model repository '${m.store.url}' (logged above)`);
      }),
    );
  }

  /** Explicit unload: the model's mirrored files leave the cache. */
  release(name: string): void {
    for (const m of this.mirrors) if (fs.existsSync(path.join(m.dir, name))) m.drop(name);
  }

  close(): void {
    for (const m of this.mirrors) m.close();
  }

  private mirrorOf(localPath: string): CloudMirror | undefined {
    return this.mirrors.find((m) => m.dir === localPath);
  }

  /** Logs a root that could not be read, once per reason (`doing`: what was tried; `then`: what happens meanwhile). */
  private failed(localPath: string, err: unknown, doing = 'poll', then = 'Its models keep serving as they are until it can be read again.'): void {
    const reason = toErrorInfo(err).message;
    if (this.failing.get(localPath) === reason) return;
    this.failing.set(localPath, reason);
    this.log.error(`failed to ${doing} model repository '${this.displayName(localPath)}': ${reason} ${then}`);
  }

  private recovered(localPath: string): void {
    if (!this.failing.delete(localPath)) return;
    this.log.info(`model repository '${this.displayName(localPath)}' can be read again`);
  }
}
