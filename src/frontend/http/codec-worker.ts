/**
 * Entry of a codec pool thread (codec-pool.ts): one per HTTP thread, run by
 * piscina. Thin on purpose: the work is codec-tasks.ts, the same functions
 * the HTTP thread runs inline; this file only names the thread, attaches the
 * shared arena (responses are read from it in place) and hands the results'
 * buffers to piscina for transfer.
 */
import { Piscina } from 'piscina';
import { Arena } from '../../dataplane/arena';
import { nameThisThread } from '../../dataplane/thread-name';
import type { BodyDecodeTask } from './request-body-decode';
import type { ResponseEncodeTask } from './response-body';
import { runDecodeTask, runEncodeTask, type Packed } from './codec-tasks';
import type { CodecWorkerData } from './codec-pool';

const data = Piscina.workerData as CodecWorkerData;
nameThisThread(`nt:codec-${data.index}`);
// A reader: pool threads come and go, and only read outputs in place.
const arena = Arena.reader(data.arena);

function move<T>(packed: Packed<T>): unknown {
  return Piscina.move({ [Piscina.transferableSymbol]: packed.transfer, [Piscina.valueSymbol]: packed.result } as never);
}

export function decode(task: BodyDecodeTask): unknown {
  return move(runDecodeTask(task));
}

export function encode(task: ResponseEncodeTask): unknown {
  return move(runEncodeTask(arena, task));
}
