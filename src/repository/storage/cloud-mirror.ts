/**
 * The local cache of one cloud repository root (--model-cache-dir): a
 * folder that mirrors the root's objects, so the repository code above it
 * (scan, config, versions, ensembles, Python models and their
 * EXECUTION_ENV_PATH archives) reads plain files. A manifest (key → tag and
 * size) beside the folder says what is already here: an object is fetched
 * again only when its tag changed or its file is gone. Each download goes
 * to a temporary name outside the model folders and is renamed into place,
 * so a half-written file is never read under its real name.
 *
 *   <cache>/<root id>/models/<model>/...   what the scan reads
 *   <cache>/<root id>/manifest.json        key → { tag, size }
 *   <cache>/<root id>/partial/             downloads in progress
 *   <cache>/<root id>/owner                pid of the server using it
 *
 * A second live server on the same root and cache folder gets a folder of
 * its own (`<root id>.<pid>`), removed when it stops.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ServerError } from '../../core/errors';
import type { ObjectStore, StoredObject } from './object-store';
import { makeDirs } from './make-dirs';
import { pidAlive } from '../../core/pid-alive';

/** Downloads in flight at once per root. */
const PARALLEL_DOWNLOADS = 8;

/** A root's listing, by model folder (the key's first segment). */
export type ModelObjects = Map<string, StoredObject[]>;

/** What one sync did. */
export interface SyncOutcome {
  /** Models that could not be fetched completely (see `sync`). */
  incomplete: Set<string>;
  /** Objects downloaded, of `objects` in the models synced. */
  fetched: number;
  objects: number;
}

interface ManifestEntry {
  tag: string;
  size: number;
}

export class CloudMirror {
  /** The folder the scan reads, one folder per model. */
  readonly dir: string;
  private readonly home: string;
  private readonly manifestFile: string;
  private readonly partial: string;
  private readonly manifest = new Map<string, ManifestEntry>();
  /** The manifest changed since it was last written. */
  private dirty = false;
  private readonly privateHome: boolean;

  constructor(
    readonly store: ObjectStore,
    cacheDir: string,
    private readonly warn: (text: string) => void,
  ) {
    const id = rootId(store.url);
    let home = path.join(cacheDir, id);
    this.privateHome = !claim(home);
    if (this.privateHome) {
      home = path.join(cacheDir, `${id}.${process.pid}`);
      fs.rmSync(home, { recursive: true, force: true });
      claim(home);
    }
    this.home = home;
    this.dir = path.join(home, 'models');
    this.manifestFile = path.join(home, 'manifest.json');
    this.partial = path.join(home, 'partial');
    fs.mkdirSync(this.dir, { recursive: true });
    fs.rmSync(this.partial, { recursive: true, force: true });
    fs.mkdirSync(this.partial, { recursive: true });
    this.readManifest();
  }

  /**
   * Every object of the root, by model. A root with no model folder is an
   * error (nothing to serve, or a wrong path) unless `allowEmpty` (a load
   * that only asks whether the root has one model).
   */
  async list(allowEmpty = false): Promise<ModelObjects> {
    const objects = await this.store.list();
    const models: ModelObjects = new Map();
    for (const o of objects) {
      const cut = o.key.indexOf('/');
      if (cut <= 0) continue; // a file beside the model folders, not part of a model
      if (!safeKey(o.key)) {
        this.warn(`model repository '${this.store.url}': skipping object '${o.key}', whose path would leave the model folder`);
        continue;
      }
      const name = o.key.slice(0, cut);
      let list = models.get(name);
      if (list === undefined) models.set(name, (list = []));
      list.push(o);
    }
    if (models.size === 0 && !allowEmpty) {
      throw new ServerError(
        'NOT_FOUND',
        `failed to stat file ${this.store.url}: no model folder in it (${objects.length === 0 ? 'the listing is empty' : `${objects.length} object(s), none inside a folder`}; credential from ${this.store.credentialSource}). ` +
          'Check the path in --model-repository, or upload the models first (<model>/config.pbtxt, <model>/1/...).',
      );
    }
    return models;
  }

  /**
   * Bring the given models' folders up to date with `listing` (every model
   * of the listing when `only` is undefined: then models gone from the root
   * leave the cache too). Resolves with the models that could not be
   * fetched completely (their folders may be part old, part new: not to be
   * loaded until a later sync succeeds); logs why.
   */
  async sync(listing: ModelObjects, only?: readonly string[]): Promise<SyncOutcome> {
    const names = only ?? [...listing.keys()];
    const failed = new Set<string>();
    const work: { name: string; object: StoredObject }[] = [];
    let total = 0;
    for (const name of names) {
      const objects = listing.get(name) ?? [];
      total += objects.length;
      const keep = new Set(objects.map((o) => o.key));
      for (const key of [...this.manifest.keys()]) {
        if (key.startsWith(`${name}/`) && !keep.has(key)) this.removeFile(key);
      }
      for (const object of objects) if (!this.current(object)) work.push({ name, object });
    }
    if (only === undefined) {
      for (const name of this.localModels()) if (!listing.has(name)) this.drop(name);
    }
    let next = 0;
    let fetched = 0;
    const worker = async (): Promise<void> => {
      while (next < work.length) {
        const { name, object } = work[next++];
        if (failed.has(name)) continue;
        try {
          await this.fetch(object);
          fetched++;
        } catch (err) {
          failed.add(name);
          this.warn(`model '${name}' was not fetched completely: ${(err as Error).message}`);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_DOWNLOADS, work.length) }, worker));
    this.writeManifest();
    return { incomplete: failed, fetched, objects: total };
  }

  /** An empty folder per model of the listing, so the scan (the index in explicit mode) sees every name. */
  markNames(listing: ModelObjects): void {
    for (const name of listing.keys()) fs.mkdirSync(path.join(this.dir, name), { recursive: true });
    for (const name of this.localModels()) {
      if (listing.has(name)) continue;
      const folder = path.join(this.dir, name);
      if (fs.readdirSync(folder).length === 0) fs.rmdirSync(folder);
    }
  }

  /** The model's files leave the cache (its model was unloaded, or it left the root). */
  drop(name: string): void {
    for (const key of [...this.manifest.keys()]) if (key.startsWith(`${name}/`)) this.manifest.delete(key);
    this.dirty = true;
    fs.rmSync(path.join(this.dir, name), { recursive: true, force: true });
    this.writeManifest();
  }

  /** Frees the client; the cache stays for the next start, unless it was this server's own folder. */
  close(): void {
    this.store.close();
    if (this.privateHome) {
      fs.rmSync(this.home, { recursive: true, force: true });
      return;
    }
    try {
      if (fs.readFileSync(path.join(this.home, 'owner'), 'utf8') === String(process.pid)) fs.rmSync(path.join(this.home, 'owner'));
    } catch {
      // already gone
    }
  }

  private current(o: StoredObject): boolean {
    const had = this.manifest.get(o.key);
    if (had === undefined || had.tag !== o.tag || had.size !== o.size) return false;
    try {
      return fs.statSync(path.join(this.dir, o.key)).size === o.size;
    } catch {
      return false;
    }
  }

  private async fetch(o: StoredObject): Promise<void> {
    const temp = path.join(this.partial, crypto.randomBytes(8).toString('hex'));
    try {
      await this.store.download(o.key, temp);
      const target = path.join(this.dir, o.key);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      if (fs.statSync(target, { throwIfNoEntry: false })?.isDirectory()) fs.rmSync(target, { recursive: true });
      fs.renameSync(temp, target);
      this.manifest.set(o.key, { tag: o.tag, size: o.size });
      this.dirty = true;
    } finally {
      fs.rmSync(temp, { force: true });
    }
  }

  private removeFile(key: string): void {
    this.manifest.delete(key);
    this.dirty = true;
    const file = path.join(this.dir, key);
    fs.rmSync(file, { force: true });
    // Empty folders it leaves go too, up to the model folder.
    const top = path.join(this.dir, key.slice(0, key.indexOf('/')));
    for (let d = path.dirname(file); d.startsWith(top) && d !== top; d = path.dirname(d)) {
      try {
        fs.rmdirSync(d);
      } catch {
        break; // not empty
      }
    }
  }

  private localModels(): string[] {
    return fs
      .readdirSync(this.dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  }

  private readManifest(): void {
    try {
      const saved = JSON.parse(fs.readFileSync(this.manifestFile, 'utf8')) as Record<string, ManifestEntry>;
      for (const [key, e] of Object.entries(saved)) {
        if (typeof e?.tag === 'string' && typeof e.size === 'number' && safeKey(key)) this.manifest.set(key, e);
      }
    } catch {
      // none yet, or unreadable: every object is fetched again
    }
  }

  private writeManifest(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const temp = `${this.manifestFile}.${process.pid}.tmp`;
    fs.writeFileSync(temp, JSON.stringify(Object.fromEntries(this.manifest)));
    fs.renameSync(temp, this.manifestFile);
  }
}

/** A readable, unique folder name for a root URL: `s3_bucket_path-1a2b3c4d`. */
export function rootId(url: string): string {
  const readable = url
    .replace(/^([a-z0-9]+):\/\//, '$1_')
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .slice(0, 80);
  return `${readable}-${crypto.createHash('sha256').update(url).digest('hex').slice(0, 8)}`;
}

/** A key that stays inside the mirror: no empty, '.' or '..' segment, no NUL, no backslash. */
export function safeKey(key: string): boolean {
  if (key === '' || key.includes('\0') || key.includes('\\')) return false;
  return key.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}

/** Take `home` for this process unless another live process holds it. */
function claim(home: string): boolean {
  makeDirs(home);
  const owner = path.join(home, 'owner');
  try {
    const pid = Number(fs.readFileSync(owner, 'utf8'));
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && pidAlive(pid)) return false;
  } catch {
    // no owner yet
  }
  fs.writeFileSync(owner, String(process.pid));
  return true;
}
