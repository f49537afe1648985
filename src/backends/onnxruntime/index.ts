/**
 * The ONNX Runtime backend. This module is the main-thread side and does not
 * load onnxruntime-node: config completion reads the model file itself; the
 * runtime is loaded only by instance threads, through `instanceModule`.
 */
import path from 'node:path';
import type { Backend } from '../backend';
import { completeOnnxConfig } from './complete-config';

export const onnxruntimeBackend: Backend = {
  name: 'onnxruntime',
  defaultModelFilename: 'model.onnx',
  platform: 'onnxruntime_onnx',
  completeConfig: completeOnnxConfig,
  instanceModule: path.join(__dirname, 'onnxruntime-instance.js'),
};
