/**
 * S3 repository URLs as Triton reads them (protocol.md §3.1, Triton's
 * s3.h): `s3://bucket/path` on AWS, and `s3://[http://|https://]host:port/
 * bucket/path` for S3-compatible servers (MinIO and the like), which are
 * reached at that endpoint with path-style addressing, over HTTP unless
 * `https://` is written. Repeated slashes collapse; a trailing one is
 * ignored.
 */
import { ServerError } from '../../core/errors';

export interface S3Location {
  readonly bucket: string;
  /** Key prefix of the repository root without leading or trailing '/'; '' for the whole bucket. */
  readonly prefix: string;
  /** `http://host:port` (or https) for the host:port form; undefined for AWS. */
  readonly endpoint?: string;
}

const HOST_PORT = /^([0-9a-zA-Z.-]+):([0-9]+)$/;

export function parseS3Url(url: string): S3Location {
  if (!url.startsWith('s3://')) throw new ServerError('INVALID_ARG', `'${url}' is not an S3 path: it must start with s3://`);
  let rest = url.slice('s3://'.length);
  let protocol = 'http';
  const scheme = /^(https?):\/\//.exec(rest);
  if (scheme) {
    protocol = scheme[1];
    rest = rest.slice(scheme[0].length);
  }
  const parts = rest.split('/').filter((p) => p !== '');
  if (parts.length === 0) {
    throw new ServerError(
      'INVALID_ARG',
      `Invalid bucket name: '${rest}' in ${url}. Write s3://<bucket>/<path>, or s3://<host>:<port>/<bucket>/<path> for an S3-compatible server.`,
    );
  }
  const hostPort = HOST_PORT.exec(parts[0]);
  if (hostPort) {
    if (parts.length < 2) {
      throw new ServerError(
        'INVALID_ARG',
        `No bucket name found in path: ${url}. After the endpoint ${parts[0]} write the bucket: s3://${parts[0]}/<bucket>/<path>.`,
      );
    }
    return { endpoint: `${protocol}://${hostPort[1]}:${hostPort[2]}`, bucket: parts[1], prefix: parts.slice(2).join('/') };
  }
  if (scheme) {
    throw new ServerError(
      'INVALID_ARG',
      `${url} names ${protocol}:// without a port: an S3-compatible endpoint is written s3://${protocol}://<host>:<port>/<bucket>/<path>.`,
    );
  }
  return { bucket: parts[0], prefix: parts.slice(1).join('/') };
}
