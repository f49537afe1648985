/**
 * What a model folder holds that Triton passes over in silence, each with a
 * sentence that names the fix (the server logs them, `nodetron lint` prints
 * them): version folders that are not integers, model files beside
 * config.pbtxt instead of inside a version folder, and the reason a model
 * with no version folder at all is not loaded.
 */
import fs from 'node:fs';
import path from 'node:path';

/** File names a backend loads from a version folder (backend-resolution.ts's defaults). */
export const MODEL_FILE_NAMES: readonly string[] = [
  'model.onnx',
  'model.py',
  'model.plan',
  'model.pt',
  'model.pt2',
  'model.savedmodel',
  'model.graphdef',
  'model.xml',
];

/** The integer folder name a non-integer one most likely meant: `v1` → `1`, `007` → `7`; undefined for `abc`. */
export function meantVersion(folder: string): string | undefined {
  const digits = /^\D*0*(\d+)\D*$/.exec(folder)?.[1];
  if (digits === undefined) return undefined;
  return digits === '' ? '0' : digits;
}

/** The sentence after Triton's "ignore version directory '<f>' ..." warning. */
export function versionFolderFix(model: string, folder: string): string {
  const meant = meantVersion(folder);
  const serves = `Model '${model}' loads only version folders named by an integer (1/, 2/, ...)`;
  if (meant !== undefined) return `${serves}: rename ${folder} to ${meant} (${model}/${meant}/).`;
  if (MODEL_FILE_NAMES.includes(folder)) return `${serves}: move ${folder} into a folder named 1/ (${model}/1/${folder}).`;
  return `${serves}: if '${folder}' holds a version, rename it to an integer such as 1; otherwise move it out of the model folder.`;
}

/** Model files lying directly in the model folder, where no backend reads them. */
export function misplacedModelFiles(modelDir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(modelDir);
  } catch {
    return [];
  }
  return names.filter((n) => MODEL_FILE_NAMES.includes(n)).sort();
}

export function misplacedFileWarning(model: string, file: string): string {
  return `model file '${file}' of model '${model}' is beside config.pbtxt, where it is not read: move it into a folder named 1/ (${model}/1/${file}).`;
}

/**
 * Why a model with no integer version folder is not loaded: Triton's text,
 * then what to do (rename the folder that was skipped, move the file that
 * was misplaced, or make a version folder).
 */
export function noVersionReason(
  model: string,
  ignoredFolders: readonly string[],
  misplaced: readonly string[],
  policy: { present: readonly number[]; missing: readonly number[] } = { present: [], missing: [] },
): string {
  const triton = `at least one version must be available under the version policy of model '${model}'`;
  if (policy.present.length > 0) {
    return `${triton}: version_policy asks for version ${policy.missing.join(', ')}, but the version folders are ${policy.present.join(', ')}: add the folder or change version_policy in config.pbtxt.`;
  }
  if (ignoredFolders.length > 0) {
    const f = ignoredFolders[0];
    const meant = meantVersion(f);
    const fix = meant !== undefined ? `rename ${f} to ${meant}` : `put the model file in a folder named 1/ (${model}/1/)`;
    return `${triton}: no version folder, '${f}' is not an integer: ${fix}.`;
  }
  if (misplaced.length > 0) return `${triton}: no version folder: move ${misplaced[0]} into a folder named 1/ (${model}/1/${misplaced[0]}).`;
  return `${triton}: no version folder: put the model file in a folder named 1/ (${model}/1/).`;
}

/** The folder name for messages: the model folder's own name. */
export function modelNameOf(modelDir: string): string {
  return path.basename(modelDir);
}

/**
 * A file that looks like a misnamed config.pbtxt (`config.txt`,
 * `config.pbtx`, `model.pbtxt`) when there is no config.pbtxt: the server
 * would otherwise auto-complete an empty config in silence.
 */
export function misnamedConfigWarning(model: string, modelDir: string, configFile: string): string | undefined {
  let names: string[];
  try {
    names = fs.readdirSync(modelDir);
  } catch {
    return undefined;
  }
  const wanted = path.basename(configFile);
  const look = names.find((n) => n !== wanted && (/\.pbtxt$/i.test(n) || /^config(\.|$)/i.test(n) || n.toLowerCase() === wanted.toLowerCase()));
  if (look === undefined) return undefined;
  return `model '${model}' has no ${wanted} but has '${look}', which is not read: rename it to ${wanted} (${model}/${wanted}).`;
}

/**
 * The sentence after "failed to stat file <version>/<model file>": what the
 * version folder holds instead (a model file under another name, or
 * nothing) and what to do, or undefined when the folder itself is missing.
 */
export function missingModelFileHint(modelPath: string, model: string): string | undefined {
  const folder = path.dirname(modelPath);
  const wanted = path.basename(modelPath);
  let names: string[];
  try {
    names = fs.readdirSync(folder).filter((n) => !n.startsWith('.'));
  } catch {
    return undefined;
  }
  const where = `${model}/${path.basename(folder)}/`;
  if (names.length === 0) return `${where} is empty: put ${wanted} there.`;
  const ext = path.extname(wanted);
  const alike = names.filter((n) => ext !== '' && n.endsWith(ext));
  const other = alike[0] ?? names[0]!;
  return `${where} holds ${names.join(', ')}: rename ${other} to ${wanted}, or set default_model_filename: "${other}" in config.pbtxt.`;
}

/** Adds missingModelFileHint to a "failed to stat file" message about `modelPath`. */
export function withModelFileHint(message: string, modelPath: string, model: string): string {
  if (!message.startsWith(`failed to stat file ${modelPath}`)) return message;
  const hint = missingModelFileHint(modelPath, model);
  return hint === undefined ? message : `${message}. ${hint}`;
}
