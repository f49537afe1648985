/**
 * Triton's cloud credential file (TRITON_CLOUD_CREDENTIAL_PATH): a JSON
 * object keyed by scheme (`s3`, `gs`, `as`), then by path prefix, whose
 * value is that provider's credential. The longest prefix of the URL wins;
 * the key "" matches every URL of its scheme. When the variable is set,
 * Triton reads credentials only from the file (not from the environment),
 * and a URL that no key matches is refused.
 *
 *   { "s3": { "": { "key_id": "...", "secret_key": "...", "region": "..." },
 *             "s3://bucket-b": { ... } },
 *     "as": { "": { "account_str": "...", "account_key": "..." } },
 *     "gs": { "": "/path/to/service-account.json" } }
 *
 * The entry is returned as written: each provider reads the fields it
 * knows (s3-store.ts: key_id, secret_key, session_token, region, profile).
 */
import fs from 'node:fs';
import { ServerError } from '../../core/errors';

export const CREDENTIAL_PATH_VARIABLE = 'TRITON_CLOUD_CREDENTIAL_PATH';

export interface CredentialMatch {
  /** The credential as the file has it (an object, or a string for `gs`). */
  readonly entry: unknown;
  /** Where it came from, for logs and error texts: the file and the key, never a value. */
  readonly source: string;
}

/**
 * The credential file's entry for `url` (`s3://...`, `as://...`,
 * `gs://...`), or undefined when TRITON_CLOUD_CREDENTIAL_PATH is not set
 * (the provider then reads its own environment variables). Throws when the
 * file cannot be read or parsed, or when no key matches the URL.
 */
export function credentialFor(url: string, env: NodeJS.ProcessEnv = process.env): CredentialMatch | undefined {
  const file = env[CREDENTIAL_PATH_VARIABLE];
  if (file === undefined || file === '') return undefined;
  return matchCredential(readCredentialFile(file), file, url);
}

/** The parsed file, or a text naming the file and what is wrong with it. */
export function readCredentialFile(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new ServerError(
      'INTERNAL',
      `failed to read the cloud credential file ${file} (${CREDENTIAL_PATH_VARIABLE}): ${code === 'ENOENT' ? 'no such file' : code}. ` +
        `Point ${CREDENTIAL_PATH_VARIABLE} at a readable JSON file, or unset it to use the providers' environment variables.`,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ServerError(
      'INTERNAL',
      `the cloud credential file ${file} (${CREDENTIAL_PATH_VARIABLE}) is not valid JSON: ${(err as Error).message}. ` +
        'It holds one object per scheme ("s3", "gs", "as"), each keyed by path prefix ("" for every path).',
    );
  }
}

/** Pure: the entry of `parsed` (the file `file`'s JSON) that `url` uses. */
export function matchCredential(parsed: unknown, file: string, url: string): CredentialMatch {
  const scheme = /^([a-z0-9]+):\/\//.exec(url)?.[1] ?? '';
  const section = isObject(parsed) ? parsed[scheme] : undefined;
  if (section !== undefined && !isObject(section)) {
    throw new ServerError(
      'INTERNAL',
      `the cloud credential file ${file} (${CREDENTIAL_PATH_VARIABLE}) has a "${scheme}" entry that is not an object: ` +
        `write it as { "<path prefix>": <credential>, ... }, with "" for every ${scheme}:// path.`,
    );
  }
  let best: string | undefined;
  for (const prefix of Object.keys(section ?? {})) {
    if (url.startsWith(prefix) && (best === undefined || prefix.length > best.length)) best = prefix;
  }
  if (best === undefined) {
    throw new ServerError(
      'NOT_FOUND',
      `Cannot match credential for path  ${url}: the cloud credential file ${file} (${CREDENTIAL_PATH_VARIABLE}) has no "${scheme}" key that is a prefix of it. ` +
        `Add one (or "" for every ${scheme}:// path) to its "${scheme}" object.`,
    );
  }
  return { entry: section![best], source: `${CREDENTIAL_PATH_VARIABLE} ${file} entry "${best}"` };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
