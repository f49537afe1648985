/**
 * Where a version's ONNX model lives. The model path is either the .onnx file
 * or, as Triton's ONNX Runtime backend allows (models with external weight
 * files), a directory holding `model.onnx`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ServerError } from '../../core/errors';

/** File name looked for inside a model directory. */
export const ONNX_FILE_IN_DIRECTORY = 'model.onnx';

/** The .onnx file for a model path; INTERNAL `failed to stat file <path>` (Triton's text) when it is missing. */
export function resolveOnnxModelFile(modelPath: string): string {
  const stat = statOrThrow(modelPath);
  if (!stat.isDirectory()) return modelPath;
  const inner = path.join(modelPath, ONNX_FILE_IN_DIRECTORY);
  statOrThrow(inner);
  return inner;
}

function statOrThrow(p: string): fs.Stats {
  try {
    return fs.statSync(p);
  } catch {
    throw new ServerError('INTERNAL', `failed to stat file ${p}`);
  }
}
