/**
 * Reading a FIL model file by its `model_type` (Triton FIL's names and
 * default file names), with a load error that names the file, what is
 * wrong and what to do. A file that is plainly of another type than the
 * one configured says which `model_type` it looks like.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ServerError } from '../../core/errors';
import { FIL_MODEL_FILES, type FilModelType } from '../../repository/config/backend-resolution';
import type { Forest } from './forest';
import { FilModelError } from './fil-model-error';
import { forestFromLightGBMText } from './lightgbm-text';
import { decodeUbjson } from './ubjson';
import { forestFromXGBoostBinary } from './xgboost-binary';
import { forestFromXGBoostDocument } from './xgboost-model';

export { FIL_MODEL_FILES, type FilModelType };

export const FIL_MODEL_TYPES = Object.keys(FIL_MODEL_FILES) as FilModelType[];

const FORMAT_NAMES: Record<FilModelType, string> = {
  xgboost: 'an XGBoost binary model',
  xgboost_json: 'an XGBoost JSON model',
  xgboost_ubj: 'an XGBoost UBJSON model',
  lightgbm: 'a LightGBM text model',
  treelite_checkpoint: 'a Treelite checkpoint',
};

/** Which model_type the first bytes of a file look like, if any is plain. */
export function sniffModelType(head: Uint8Array): FilModelType | undefined {
  const text = Buffer.from(head.buffer, head.byteOffset, Math.min(head.length, 64)).toString('latin1');
  if (text.startsWith('tree\n') || text.startsWith('tree\r\n')) return 'lightgbm';
  if (/^\s*\{\s*"/.test(text)) return 'xgboost_json';
  // UBJSON object: '{', then a key length ('U', 'i', 'I', 'l') and a key such as "learner" or "version".
  if (head[0] === 0x7b && [0x55, 0x69, 0x49, 0x6c, 0x24, 0x23].includes(head[1] ?? 0)) return 'xgboost_ubj';
  if (text.startsWith('binf')) return 'xgboost';
  return undefined;
}

/** The forest in `file`, read as `modelType`; INVALID_ARG naming the model, the file and the fix otherwise. */
export function readForest(model: string, file: string, modelType: FilModelType): Forest {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const have = listing(path.dirname(file));
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${model}': cannot read its ${modelType} file ${file} (${code ?? (err as Error).message}). ` +
        `Triton's FIL backend looks for ${FIL_MODEL_FILES[modelType]} for model_type '${modelType}'; ` +
        `the version folder holds ${have}. Name the file in default_model_filename, or set model_type to the file's format`,
    );
  }
  const looks = sniffModelType(bytes);
  if (looks !== undefined && looks !== modelType) {
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${model}': parameter model_type is '${modelType}', but ${file} is ${FORMAT_NAMES[looks]}: ` +
        `set model_type to '${looks}' (or point default_model_filename at ${FORMAT_NAMES[modelType]})`,
    );
  }
  try {
    return parse(bytes, modelType);
  } catch (err) {
    if (!(err instanceof FilModelError) && !(err instanceof SyntaxError) && !(err instanceof RangeError)) throw err;
    throw new ServerError(
      'INVALID_ARG',
      `unable to load model '${model}': Model failed to load into Treelite with error: ${file} is not ${FORMAT_NAMES[modelType]}: ` +
        `${err.message}. ${fixFor(modelType)}`,
    );
  }
}

function parse(bytes: Buffer, modelType: FilModelType): Forest {
  switch (modelType) {
    case 'xgboost_json':
      return forestFromXGBoostDocument(parseXGBoostJson(bytes.toString('utf8')));
    case 'xgboost_ubj':
      return forestFromXGBoostDocument(decodeUbjson(bytes));
    case 'xgboost':
      return forestFromXGBoostBinary(bytes);
    case 'lightgbm':
      return forestFromLightGBMText(bytes.toString('utf8'));
    case 'treelite_checkpoint':
      throw new FilModelError('nodetron does not read Treelite checkpoints (their layout changes with each Treelite release)');
  }
}

/** XGBoost writes NaN and Infinity as bare words (the split conditions of categorical nodes): JSON.parse takes them as null and 1e999. */
export function parseXGBoostJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const fixed = text.replace(
      /([[,:]\s*)(-?)(NaN|Infinity)(?=\s*[,\]}])/g,
      (_m, pre: string, sign: string, word: string) => `${pre}${word === 'NaN' ? 'null' : `${sign}1e999`}`,
    );
    if (fixed === text) throw err;
    return JSON.parse(fixed);
  }
}

function fixFor(modelType: FilModelType): string {
  switch (modelType) {
    case 'xgboost':
      return "Save it again with Booster.save_model(\"xgboost.json\") and set model_type to 'xgboost_json' (JSON is XGBoost's stable format)";
    case 'xgboost_json':
    case 'xgboost_ubj':
      return `Save it again with Booster.save_model("${FIL_MODEL_FILES[modelType]}")`;
    case 'lightgbm':
      return 'Save it again with Booster.save_model("model.txt")';
    case 'treelite_checkpoint':
      return 'Serve the XGBoost or LightGBM model it was made from (model_type xgboost_json, xgboost_ubj or lightgbm)';
  }
}

function listing(dir: string): string {
  try {
    const names = fs.readdirSync(dir);
    return names.length === 0 ? 'no files' : names.slice(0, 10).join(', ');
  } catch {
    return 'nothing (it cannot be read)';
  }
}
