/**
 * The one place that turns a cloud repository URL into its provider's
 * `ObjectStore`, by scheme: `s3://` (s3-store.ts), `as://` (azure-store.ts),
 * `gs://` (gcs-store.ts). Each provider reads its credential from the
 * credential file (credential-file.ts) or its own environment variables.
 */
import { ServerError } from '../../core/errors';
import type { CloudScheme, ObjectStore } from './object-store';
import { openS3Store } from './s3-store';
import { credentialFor } from './credential-file';
import type { CredentialMatch } from './credential-file';

const CLOUD = /^(s3|gs|as):\/\//;

/** The URL's cloud scheme, or undefined for a local path. */
export function cloudScheme(url: string): CloudScheme | undefined {
  return CLOUD.exec(url)?.[1] as CloudScheme | undefined;
}

export function openObjectStore(url: string): ObjectStore {
  switch (cloudScheme(url)) {
    case 's3':
      return openS3Store(url);
    case 'as':
      return openAzureStore(url, credentialFor(url));
    case 'gs':
      return openGcsStore(url, credentialFor(url));
    default:
      throw new ServerError('INVALID_ARG', `'${url}' is not a cloud repository URL (s3://, as:// or gs://)`);
  }
}

// STUB until the Azure and GCS providers land (issue 16, branch cloudaz):
// these two functions are then deleted and the same names are imported
// from azure-store.ts and gcs-store.ts, with these signatures (`cred`: the
// credential file's match, undefined when TRITON_CLOUD_CREDENTIAL_PATH is
// not set).
function openAzureStore(url: string, cred: CredentialMatch | undefined): ObjectStore {
  void cred;
  throw notYet(url, 'Azure Blob Storage (as://)');
}
function openGcsStore(url: string, cred: CredentialMatch | undefined): ObjectStore {
  void cred;
  throw notYet(url, 'Google Cloud Storage (gs://)');
}
function notYet(url: string, what: string): ServerError {
  return new ServerError('UNSUPPORTED', `model repository '${url}' is in ${what}, which this build of nodetron does not read yet. Copy the repository to a local folder and pass that folder to --model-repository.`);
}
