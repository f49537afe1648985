/**
 * The HTTP port, opened once on the main thread. Each HTTP thread listens on
 * a descriptor of its own of that one socket (`net.Server.listen({ fd })`),
 * and the kernel hands each new connection to one of them. Own descriptors,
 * not one shared number: a thread that dies closes its descriptor, and the
 * others, and the one a replacement gets, stay valid.
 *
 * Node 20 cannot duplicate a descriptor itself (and has no SO_REUSEPORT
 * option), but passing a handle to a child process and back over its IPC
 * channel does (SCM_RIGHTS both ways): `duplicate` runs a tiny node child for
 * the length of one exchange. Main keeps one descriptor ("spare", never
 * polled) from which a restarted thread's is made. Bound as node binds:
 * with SO_REUSEADDR, so a port whose old connections sit in TIME_WAIT binds.
 */
import { spawn } from 'node:child_process';
import net from 'node:net';
import { ServerError, socketInUseText } from '../../core/errors';

/** A TCP handle object (node's internal wrap) as it comes over IPC: its descriptor and close. */
interface RawHandle {
  fd: number;
  close(): void;
}

const DUP_CHILD = "process.on('message',(m,h)=>process.send(m,h,()=>h.close()));process.on('disconnect',()=>process.exit(0));";

/** `count` new descriptors of the socket behind `handle` (a round trip through a child process). */
function duplicate(handle: unknown, count: number): Promise<RawHandle[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', DUP_CHILD], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const got: RawHandle[] = [];
    const fail = (why: string): void => {
      for (const h of got) h.close();
      child.kill();
      reject(new ServerError('INTERNAL', `could not share the HTTP listen socket with the HTTP threads: ${why}`));
    };
    child.once('error', (err) => fail(err.message));
    child.once('exit', (code) => {
      if (got.length < count) fail(`the helper process exited (code ${code}) before handing the socket back`);
    });
    child.on('message', (_m, h) => {
      got.push(h as unknown as RawHandle);
      if (got.length === count) {
        child.disconnect();
        resolve(got);
      }
    });
    for (let i = 0; i < count; i++) child.send(i, handle as net.Server);
  });
}

export class ListenSocket {
  /**
   * The threads' descriptors as handle objects: kept referenced, never closed
   * here (each thread's server closes its own descriptor).
   */
  private readonly given: RawHandle[] = [];

  private constructor(
    private readonly spare: RawHandle,
    readonly port: number,
  ) {}

  /** Bind and listen on `address:port` (0 = a free port). */
  static async open(address: string, port: number): Promise<ListenSocket> {
    // Main never serves on it: the rare connection accepted in the moment
    // before the descriptors are copied (at start, before the server says it
    // listens) is closed.
    const server = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        reject(
          new ServerError(
            'UNAVAILABLE',
            err.code === 'EADDRINUSE' ? socketInUseText(`${address}:${port}`) : `could not listen on '${address}:${port}': ${err.message}`,
          ),
        );
      });
      server.listen({ host: address, port, backlog: 1024 }, () => resolve());
    });
    const bound = (server.address() as net.AddressInfo).port;
    try {
      const [spare] = await duplicate((server as unknown as { _handle: unknown })._handle, 1);
      return new ListenSocket(spare, bound);
    } finally {
      server.close();
    }
  }

  /** `count` descriptors for threads to listen on; each thread's net.Server owns (and closes) its own. */
  async descriptors(count: number): Promise<number[]> {
    const handles = await duplicate(this.spare, count);
    this.given.push(...handles);
    return handles.map((h) => h.fd);
  }

  close(): void {
    this.spare.close();
  }
}
