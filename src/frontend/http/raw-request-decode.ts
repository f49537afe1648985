/**
 * Raw binary request (`Inference-Header-Content-Length: 0`, protocol.md
 * §1.8.7): the whole body is the data of the model's only input; its shape is
 * deduced from the config dims, and every output is returned binary.
 */
import { ELEMENT_SIZE } from '../../core/datatypes';
import { ServerError, requestIdPrefix } from '../../core/errors';
import type { DecodedRequest } from '../../request/decoded-request';
import type { ValidationPlan } from '../../request/validation-plan';

export function decodeRawRequest(body: Buffer, plan: ValidationPlan, maxInputSize: number): DecodedRequest {
  if (body.length > maxInputSize) {
    throw new ServerError(
      'INVALID_ARG',
      `Raw input has a byte_size (${body.length} bytes) that exceeds the maximum allowed value of ${maxInputSize} bytes. Use --http-max-input-size to increase the limit.`,
    );
  }
  const rid = requestIdPrefix(''); // a raw request has no id
  const model = plan.modelName;
  if (plan.inputs.length !== 1) {
    throw new ServerError(
      'INVALID_ARG',
      `${rid}Raw request must only have 1 input (found 1) to be deduced but got ${plan.inputs.length} inputs in '${model}' model configuration`,
    );
  }
  const cfg = plan.inputs[0];
  const shape: number[] = plan.maxBatchSize > 0 ? [1] : [];
  let dynamicAxis = -1;
  let fixedCount = 1;
  for (const dim of cfg.dims) {
    if (dim === -1) {
      if (dynamicAxis !== -1) {
        throw new ServerError(
          'INVALID_ARG',
          `${rid}The shape of the raw input '${cfg.name}' can not be deduced because there are more than one variable-sized dimension`,
        );
      }
      dynamicAxis = shape.length;
    } else {
      fixedCount *= dim;
    }
    shape.push(dim);
  }

  let data: Uint8Array = body;
  if (cfg.datatype === 'BYTES') {
    if (dynamicAxis !== -1 || fixedCount !== 1) {
      throw new ServerError('INVALID_ARG', `${rid}For BYTE datatype raw input '${cfg.name}', the model must have input shape [1]`);
    }
    // The client sends the bare bytes; the server adds the element's length prefix.
    const withLength = Buffer.allocUnsafe(4 + body.length);
    withLength.writeUInt32LE(body.length, 0);
    body.copy(withLength, 4);
    data = withLength;
  } else if (dynamicAxis !== -1) {
    const per = cfg.datatype === '<invalid>' ? 0 : fixedCount * ELEMENT_SIZE[cfg.datatype];
    shape[dynamicAxis] = per > 0 ? Math.floor(body.length / per) : 0;
  }
  return {
    id: '',
    inputs: [{ name: cfg.name, datatype: cfg.datatype, shape, data, parameters: {} }],
    outputs: null,
    parameters: {},
    binaryDataOutput: true,
  };
}
