/**
 * Which AWS credential an S3 root uses, as Triton chooses it (s3.h
 * S3Credential): the `s3` entry of TRITON_CLOUD_CREDENTIAL_PATH for the URL
 * when that variable is set (fields key_id, secret_key, session_token,
 * region, profile), else the environment (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_DEFAULT_REGION or
 * AWS_REGION, AWS_PROFILE). A key pair wins over a profile; with neither the
 * SDK's default chain decides. `source` names where it came from and, at
 * most, the first characters of the key id: never a secret.
 */
import { ServerError } from '../../core/errors';
import { credentialFor } from './credential-file';

export interface S3Credential {
  keys?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  profile?: string;
  region: string;
  source: string;
}

const DEFAULT_REGION = 'us-east-1';

export function s3CredentialFor(url: string, env: NodeJS.ProcessEnv = process.env): S3Credential {
  const match = credentialFor(url, env);
  if (match !== undefined) {
    const entry = match.entry;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw new ServerError(
        'INTERNAL',
        `${match.source} is not an object: an s3 credential is { "key_id": ..., "secret_key": ..., "region": ..., "session_token": ..., "profile": ... }.`,
      );
    }
    const e = entry as Record<string, unknown>;
    const text = (k: string): string => (typeof e[k] === 'string' ? (e[k] as string) : '');
    return pick(text('key_id'), text('secret_key'), text('session_token'), text('region'), text('profile'), match.source, false);
  }
  const v = (k: string): string => env[k] ?? '';
  return pick(
    v('AWS_ACCESS_KEY_ID'),
    v('AWS_SECRET_ACCESS_KEY'),
    v('AWS_SESSION_TOKEN'),
    v('AWS_DEFAULT_REGION') || v('AWS_REGION'),
    v('AWS_PROFILE'),
    'environment',
    true,
  );
}

function pick(keyId: string, secret: string, token: string, region: string, profile: string, from: string, fromEnv: boolean): S3Credential {
  const r = region || DEFAULT_REGION;
  if (keyId !== '' && secret !== '') {
    const source = fromEnv ? `environment AWS_ACCESS_KEY_ID=${masked(keyId)}` : `${from} (key_id ${masked(keyId)})`;
    return { keys: { accessKeyId: keyId, secretAccessKey: secret, sessionToken: token || undefined }, region: r, source };
  }
  if (profile !== '') {
    return { profile, region: r, source: fromEnv ? `AWS profile '${profile}' (AWS_PROFILE)` : `${from} (AWS profile '${profile}')` };
  }
  return {
    region: r,
    source: fromEnv
      ? "the AWS SDK's default credential chain (no AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY, no AWS_PROFILE)"
      : `${from} (no key_id with secret_key, no profile: the AWS SDK's default credential chain)`,
  };
}

/** The first 4 characters of a key id, then an ellipsis. */
export function masked(keyId: string): string {
  return keyId.length <= 4 ? '…' : `${keyId.slice(0, 4)}…`;
}
