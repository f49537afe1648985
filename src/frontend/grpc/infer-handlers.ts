/**
 * ModelInfer (unary) and ModelStreamInfer (bidi) over the shared runner
 * (infer-runner.ts), protocol.md §2.3, §2.4.
 *
 * Stream rules kept here: each request read is an independent inference;
 * responses of non-decoupled requests are written in request order (a FIFO
 * per stream whose head alone may write, as Triton does), decoupled ones as
 * they come; a failed request answers `error_message` and the stream stays
 * open, unless the stream was opened with metadata `triton_grpc_error: true`,
 * where the first error ends it with the mapped status. A message that did
 * not parse (a MalformedRequest, malformed-request.ts) is a request refused
 * with INVALID_ARGUMENT, answered in its place. After the client
 * half-closes, the stream ends once every request was answered. A call
 * that is cancelled, or whose deadline passes, cancels its requests still
 * in flight (grpc-js reports both as 'cancelled'). While the client does not
 * read its responses, or the stream holds STREAM_MAX_HELD requests, no
 * further request is read from it (backpressure).
 */
import type * as grpc from '@grpc/grpc-js';
import { ServerError, fromErrorInfo, toErrorInfo } from '../../core/errors';
import { checkRestricted, toStatus } from './grpc-context';
import type { GrpcContext } from './grpc-context';
import { encodeModelInferResponseBytes, encodeModelStreamInferResponseBytes } from './infer-response-wire';
import { reportRefused, startInfer } from './infer-runner';
import { MalformedRequest } from './malformed-request';
import type { InferResult, StartedInfer } from './infer-runner';
import type { ModelInferRequestMsg, ModelStreamInferResponseOut } from './proto-types';

/** What the request deserializer hands the handlers (grpc-protos.ts). */
type ReadRequest = ModelInferRequestMsg | MalformedRequest;

export function modelInferHandler(ctx: GrpcContext): grpc.handleUnaryCall<ReadRequest, Buffer> {
  return (call, callback) => {
    let answered = false;
    const answer = (err: unknown, body?: Buffer): void => {
      if (answered) return;
      answered = true;
      if (err !== undefined) callback(toStatus(err));
      else callback(null, body);
    };
    const client = ctx.access === undefined ? undefined : call.getPeer();
    try {
      checkRestricted(ctx, 'inference', call.metadata);
      // call-guard.ts answers a malformed unary request before it gets here; this is the backstop.
      if (call.request instanceof MalformedRequest) throw call.request.error();
      const started = startInfer(
        ctx,
        call.request,
        false,
        (result) => {
          if (!result.final) return; // non-decoupled models answer once, with the final response
          if (!result.ok) return answer(fromErrorInfo(result.error));
          try {
            answer(undefined, encodeModelInferResponseBytes(result.response));
          } catch (err) {
            answer(err);
          }
        },
        client,
        call.metadata,
      );
      // Also emitted once the answer is sent: the request is over then, and cancel() does nothing.
      call.on('cancelled', () => started.cancel());
    } catch (err) {
      reportRefused(ctx, client, call.request, err);
      answer(err);
    }
  };
}

/**
 * Requests of one ModelStreamInfer stream the server holds at once (read and
 * not yet answered, each counted while in flight and while its response
 * waits its turn in the FIFO); at this many, no further request is read from
 * the stream until some are answered. A burst of hundreds is still taken,
 * a few at a time, and answered in order.
 */
export const STREAM_MAX_HELD = 256;

/** One request of a stream, in arrival order. */
interface Slot {
  /** Encoded responses waiting for this slot to reach the head of the queue. */
  pending: Buffer[];
  done: boolean;
  /** Error mode: the error that ends the stream once this slot reaches the head. */
  failure?: unknown;
}

export interface StreamRegistry {
  /** Streams currently open, so stop() can end the idle ones. */
  add(stream: { endIfIdle(): void }): void;
  remove(stream: { endIfIdle(): void }): void;
}

export function modelStreamInferHandler(ctx: GrpcContext, registry: StreamRegistry): grpc.handleBidiStreamingCall<ReadRequest, Buffer> {
  return (call) => {
    const errorMode = call.metadata.get('triton_grpc_error').some((v) => String(v).toLowerCase() === 'true');
    const client = ctx.access === undefined ? undefined : call.getPeer();
    const queue: Slot[] = [];
    let inflight = 0;
    let halfClosed = false;
    let closed = false;
    const stream = { endIfIdle: () => maybeEnd(true) };
    registry.add(stream);
    /** Requests of this stream whose final result has not come: cancelled if the stream ends first. */
    const live = new Set<StartedInfer>();

    const finish = (): void => {
      if (closed) return;
      closed = true;
      registry.remove(stream);
      cancelLive(live);
    };
    call.on('cancelled', finish);
    call.on('error', finish);

    // Backpressure: a stream whose client does not read its responses fills
    // the call's write buffer (grpc-js holds what HTTP/2 flow control does
    // not let out), and a burst fills the stream's FIFO; either way no
    // further request is read from the stream until they drain, so the
    // client's flow-control window fills and it cannot send more. What the
    // server holds for one stream stays bounded: STREAM_MAX_HELD requests
    // and their responses, plus the call's write buffer.
    let paused = false;
    const updateFlow = (): void => {
      if (closed) return;
      const hold = queue.length + inflight >= STREAM_MAX_HELD || call.writableNeedDrain;
      if (hold === paused) return;
      paused = hold;
      if (hold) call.pause();
      else call.resume();
    };
    call.on('drain', updateFlow);
    const write = (body: Buffer): void => {
      if (!closed) call.write(body);
    };
    const flush = (): void => {
      while (queue.length > 0) {
        const head = queue[0];
        for (const b of head.pending) write(b);
        head.pending.length = 0;
        if (head.failure !== undefined) return fail(head.failure);
        if (!head.done) break;
        queue.shift();
      }
      updateFlow();
    };
    function maybeEnd(stopping: boolean): void {
      if (closed || inflight > 0 || queue.length > 0) return;
      if (!halfClosed && !stopping) return;
      finish();
      call.end();
    }
    const fail = (err: unknown): void => {
      // Error mode: the first error ends the stream with the mapped status.
      if (closed) return;
      finish();
      call.emit('error', toStatus(err));
    };
    const encode = (msg: ModelStreamInferResponseOut): Buffer => encodeModelStreamInferResponseBytes(msg);
    const errorResponse = (id: string, message: string, info: StartedInfer | undefined): Buffer =>
      encode({
        error_message: message,
        infer_response: {
          id,
          model_name: info?.modelName ?? '',
          model_version: info?.modelVersion ?? '',
          parameters: info !== undefined ? { triton_final_response: { bool_param: true } } : {},
          outputs: [],
          raw_output_contents: [],
        },
      });

    call.on('data', (msg: ReadRequest) => {
      if (closed) return;
      const slot: Slot = { pending: [], done: false };
      let ordered = true;
      let finalSeen = false;
      const onResult = (result: InferResult, info: StartedInfer): void => {
        if (result.final) live.delete(info);
        if (closed) return;
        if (result.final && !finalSeen) {
          finalSeen = true;
          inflight--;
        }
        ordered = !info.decoupled;
        if (!result.ok && errorMode) {
          if (!ordered) return fail(fromErrorInfo(result.error));
          slot.failure = fromErrorInfo(result.error);
          slot.done = true;
          return flush();
        }
        let body: Buffer | undefined;
        try {
          body = toBody(result, info, msg.id ?? '');
        } catch (err) {
          if (errorMode && !ordered) return fail(err);
          if (errorMode) {
            slot.failure = err;
            slot.done = true;
            return flush();
          }
          body = errorResponse(msg.id ?? '', toErrorInfo(err).message, info);
        }
        if (!ordered) {
          if (body !== undefined) write(body);
          updateFlow();
        } else {
          if (body !== undefined) slot.pending.push(body);
          if (result.final) slot.done = true;
          flush();
        }
        maybeEnd(ctx.stopping());
      };
      const toBody = (result: InferResult, info: StartedInfer, id: string): Buffer | undefined => {
        if (!result.ok) return errorResponse(id, result.error.message, info);
        const r = result.response;
        // Decoupled: an empty final response is only a completion flag, sent on request.
        if (info.decoupled && result.final && r.outputs.length === 0 && !info.enableEmptyFinalResponse) return undefined;
        r.parameters.triton_final_response = { bool_param: result.final };
        return encode({ error_message: '', infer_response: r });
      };

      queue.push(slot);
      inflight++;
      updateFlow();
      try {
        checkRestricted(ctx, 'inference', call.metadata);
        // A message that did not parse is answered in its place, like any refused request.
        if (msg instanceof MalformedRequest) throw msg.error();
        const info = startInfer(ctx, msg, true, onResult, client, call.metadata);
        if (!finalSeen) live.add(info);
        if (info.decoupled) {
          // Decoupled responses bypass the FIFO; drop this slot so it cannot block later ones.
          const k = queue.indexOf(slot);
          if (k >= 0 && slot.pending.length === 0) queue.splice(k, 1);
          flush();
        }
      } catch (err) {
        reportRefused(ctx, client, msg, err);
        inflight--;
        slot.done = true;
        if (errorMode) {
          slot.failure = err;
          return flush();
        }
        slot.pending.push(errorResponse(msg.id ?? '', toErrorInfo(err).message, undefined));
        flush();
        maybeEnd(ctx.stopping());
      }
    });
    call.on('end', () => {
      halfClosed = true;
      maybeEnd(false);
    });
    if (ctx.stopping()) fail(new ServerError('UNAVAILABLE', 'GRPC server is shutting down and has stopped accepting new requests.'));
  };
}

/** The stream ended (cancelled, failed, or its deadline passed) with these requests in flight: cancel them. */
function cancelLive(live: Set<StartedInfer>): void {
  const requests = [...live];
  live.clear();
  for (const r of requests) r.cancel();
}
