/**
 * An `as://account/container/path` root through `@azure/storage-blob`:
 * the flat blob listing under the prefix (ETags as tags) and downloads to
 * local files. Which account, endpoint and credential: `azure-target.ts`.
 * Every SDK error becomes one of `store-failure.ts`'s sentences here.
 *
 * Timeouts: a listing that gets no page for LIST_IDLE_MS, or a download
 * that gets no bytes for DOWNLOAD_IDLE_MS, is abandoned; the SDK tries a
 * request at most MAX_TRIES times, so an unreachable endpoint fails a start
 * in about a second (refused) or LIST_IDLE_MS (no answer at all).
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  AnonymousCredential,
  BlobServiceClient,
  RestError,
  StorageSharedKeyCredential,
  type ContainerClient,
  type StoragePipelineOptions,
} from '@azure/storage-blob';
import type { ObjectStore, StoredObject } from './object-store';
import { azureTarget, type AzureCredential, type AzureTarget, type Env } from './azure-target';
import { firstLine, isNetworkFailure, storeFailure, type StoreFailureKind } from './store-failure';

export type { AzureCredential } from './azure-target';

const MAX_TRIES = 3;
const LIST_IDLE_MS = 10_000;
const DOWNLOAD_IDLE_MS = 60_000;

export interface AzureStoreOptions {
  /** Blobs per listing request; the service's maximum (5000) unless a test wants several pages. */
  pageSize?: number;
  /** The environment the credential rules read; process.env unless a test gives its own. */
  env?: Env;
}

function pipelineOptions(): StoragePipelineOptions {
  return { retryOptions: { maxTries: MAX_TRIES, retryDelayInMs: 200, maxRetryDelayInMs: 1000 } };
}

function serviceClient(t: AzureTarget): BlobServiceClient {
  switch (t.auth.kind) {
    case 'connection-string':
      return BlobServiceClient.fromConnectionString(t.auth.value, pipelineOptions());
    case 'key':
      return new BlobServiceClient(t.serviceUrl, new StorageSharedKeyCredential(t.auth.account, t.auth.key), pipelineOptions());
    case 'anonymous':
      return new BlobServiceClient(t.serviceUrl, new AnonymousCredential(), pipelineOptions());
  }
}

/** An AbortSignal that fires once `idleMs` pass without a call to `touch`. */
function idleAbort(idleMs: number): { signal: AbortSignal; touch(): void; done(): void } {
  const ac = new AbortController();
  let timer = setTimeout(() => ac.abort(), idleMs);
  return {
    signal: ac.signal,
    touch() {
      clearTimeout(timer);
      timer = setTimeout(() => ac.abort(), idleMs);
    },
    done: () => clearTimeout(timer),
  };
}

class AzureStore implements ObjectStore {
  readonly scheme = 'as' as const;
  readonly credentialSource: string;
  private readonly container: ContainerClient;

  constructor(
    readonly url: string,
    private readonly target: AzureTarget,
    private readonly pageSize: number,
  ) {
    this.credentialSource = target.credentialSource;
    this.container = serviceClient(target).getContainerClient(target.container);
  }

  async list(): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    const idle = idleAbort(LIST_IDLE_MS);
    try {
      const pages = this.container
        .listBlobsFlat({ prefix: this.target.prefix, includeMetadata: true, abortSignal: idle.signal })
        .byPage({ maxPageSize: this.pageSize });
      for await (const page of pages) {
        idle.touch();
        for (const blob of page.segment.blobItems) {
          const key = blob.name.slice(this.target.prefix.length);
          // Folder placeholders: a name ending in '/', or a hierarchical-namespace directory.
          if (key === '' || key.endsWith('/') || blob.metadata?.['hdi_isfolder'] === 'true') continue;
          out.push({ key, size: blob.properties.contentLength ?? 0, tag: blob.properties.etag ?? '' });
        }
      }
    } catch (err) {
      throw this.failure('list the objects', err, idle.signal.aborted);
    } finally {
      idle.done();
    }
    return out;
  }

  async download(key: string, file: string): Promise<void> {
    await fs.promises.mkdir(path.dirname(file), { recursive: true });
    const idle = idleAbort(DOWNLOAD_IDLE_MS);
    try {
      await this.container
        .getBlobClient(this.target.prefix + key)
        .downloadToFile(file, 0, undefined, { abortSignal: idle.signal, onProgress: () => idle.touch() });
    } catch (err) {
      await fs.promises.rm(file, { force: true });
      throw this.failure(`download '${key}'`, err, idle.signal.aborted, key);
    } finally {
      idle.done();
    }
  }

  close(): void {
    // The SDK's pipeline has no close; its keep-alive sockets are released by the agent when idle.
  }

  private failure(doing: string, err: unknown, timedOut: boolean, key?: string): Error {
    const rest = err instanceof RestError ? err : undefined;
    const status = rest?.statusCode;
    const code = rest?.code ?? '';
    const where = `account ${this.target.account}, container '${this.target.container}', endpoint ${this.target.serviceUrl}`;
    let kind: StoreFailureKind;
    let hint: string;
    let detail = `${status !== undefined ? `HTTP ${status} ` : ''}${code !== '' ? `${code}: ` : ''}${firstLine(err)} (${where})`;
    if (timedOut || (status === undefined && isNetworkFailure(err))) {
      kind = 'unreachable';
      if (timedOut) detail = `no answer from the endpoint within ${(key === undefined ? LIST_IDLE_MS : DOWNLOAD_IDLE_MS) / 1000} s (${where})`;
      hint =
        "Check that the endpoint is reachable from here; to use another endpoint (Azurite, a sovereign cloud) set AZURE_STORAGE_BLOB_ENDPOINT or the credential entry's blob_endpoint.";
    } else if (status === 404 && key !== undefined && code === 'BlobNotFound') {
      kind = 'object-gone';
      hint = 'The blob was listed but is gone now; it was probably deleted or replaced during the download. The next poll or load reads the listing again.';
    } else if (status === 404 || status === 401 || status === 403) {
      kind = status === 404 ? 'not-found' : 'denied';
      if (this.target.auth.kind === 'anonymous') {
        hint =
          'Check the container name in the path, or give a credential (AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, AZURE_STORAGE_CONNECTION_STRING, or a TRITON_CLOUD_CREDENTIAL_PATH "as" entry): an anonymous client reads only public containers.';
      } else if (status === 404) {
        hint = 'Check the account and container names in the path, or create the container.';
      } else {
        hint = 'Check that the key belongs to this account (the Access keys page of the storage account) and that it may read the container.';
      }
    } else {
      kind = 'other';
      hint = "Check the storage account's state; the server keeps its last good models while a poll fails.";
    }
    return storeFailure({ kind, url: this.url, doing, credentialSource: this.credentialSource, detail, hint });
  }
}

/**
 * Opens `as://account/container/path` with `cred` (the credential file's
 * entry for it, found by the caller) or, without one, the environment.
 * Synchronous: nothing is fetched until `list`. Throws ServerError
 * (INVALID_ARG) for a malformed path or entry.
 */
export function openAzureStore(url: string, cred: AzureCredential | undefined, opts: AzureStoreOptions = {}): ObjectStore {
  const target = azureTarget(url, cred, opts.env ?? process.env);
  return new AzureStore(url, target, opts.pageSize ?? 5000);
}
