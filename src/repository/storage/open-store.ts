/**
 * The one place that turns a cloud repository URL into its provider's
 * `ObjectStore`, by scheme: `s3://` (s3-store.ts), `as://` (azure-store.ts),
 * `gs://` (gcs-store.ts). Each provider reads its credential from the
 * credential file (credential-file.ts) or its own environment variables.
 */
import { ServerError } from '../../core/errors';
import { cloudScheme, type ObjectStore } from './object-store';
import { openS3Store } from './s3-store';
import { openAzureStore } from './azure-store';
import { azureCredentialFromEntry } from './azure-target';
import { gcsCredentialFromEntry, openGcsStore } from './gcs-store';
import { credentialFor } from './credential-file';

export { cloudScheme };

export function openObjectStore(url: string): ObjectStore {
  switch (cloudScheme(url)) {
    case 's3':
      return openS3Store(url);
    case 'as': {
      const m = credentialFor(url);
      return openAzureStore(url, m && azureCredentialFromEntry(m.entry, m.source));
    }
    case 'gs': {
      const m = credentialFor(url);
      return openGcsStore(url, m && gcsCredentialFromEntry(m.entry, m.source));
    }
    default:
      throw new ServerError('INVALID_ARG', `'${url}' is not a cloud repository URL (s3://, as:// or gs://)`);
  }
}
