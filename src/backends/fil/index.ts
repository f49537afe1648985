/**
 * The FIL backend (Triton's `backend: "fil"`): XGBoost (JSON, UBJSON,
 * legacy binary) and LightGBM (text) tree models, evaluated in TypeScript
 * over flat typed arrays in worker-thread instances, as ONNX models run.
 * This is the main-thread side: config completion reads the model file
 * itself; `fil-instance.ts` runs in the instance threads.
 */
import path from 'node:path';
import type { Backend } from '../backend';
import { completeFilConfig } from './complete-config';
import { filParameterWarnings } from './fil-params';

export const filBackend: Backend = {
  name: 'fil',
  // Triton FIL's default for its default model_type ('xgboost'); backend-resolution.ts fills the one of the config's model_type.
  defaultModelFilename: 'xgboost.model',
  platform: '',
  completeConfig: (config, modelPath, autoComplete) => completeFilConfig(config, modelPath, autoComplete),
  instanceModule: path.join(__dirname, 'fil-instance.js'),
  configWarnings: filParameterWarnings,
};
