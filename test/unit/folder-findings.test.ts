import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { meantVersion, missingModelFileHint, noVersionReason, versionFolderFix } from '../../src/repository/folder-findings';
import { closestName } from '../../src/core/spelling';

const MEANT: [string, string | undefined][] = [
  ['v1', '1'],
  ['V2', '2'],
  ['version_3', '3'],
  ['007', '7'],
  ['1.0', undefined],
  ['abc', undefined],
  ['1a', '1'],
];
for (const [folder, meant] of MEANT) {
  test(`meantVersion(${folder}) = ${String(meant)}`, () => assert.equal(meantVersion(folder), meant));
}

const FIX: [string, string][] = [
  ['v1', "Model 'm' loads only version folders named by an integer (1/, 2/, ...): rename v1 to 1 (m/1/)."],
  ['model.onnx', "Model 'm' loads only version folders named by an integer (1/, 2/, ...): move model.onnx into a folder named 1/ (m/1/model.onnx)."],
  [
    'abc',
    "Model 'm' loads only version folders named by an integer (1/, 2/, ...): if 'abc' holds a version, rename it to an integer such as 1; otherwise move it out of the model folder.",
  ],
];
for (const [folder, text] of FIX) {
  test(`versionFolderFix(${folder})`, () => assert.equal(versionFolderFix('m', folder), text));
}

const T = "at least one version must be available under the version policy of model 'm'";
const REASONS: [string, Parameters<typeof noVersionReason>, string][] = [
  ['skipped v1', ['m', ['v1'], []], `${T}: no version folder, 'v1' is not an integer: rename v1 to 1.`],
  ['misplaced file', ['m', [], ['model.onnx']], `${T}: no version folder: move model.onnx into a folder named 1/ (m/1/model.onnx).`],
  ['nothing', ['m', [], []], `${T}: no version folder: put the model file in a folder named 1/ (m/1/).`],
  [
    'policy',
    ['m', [], [], { present: [1, 2], missing: [3] }],
    `${T}: version_policy asks for version 3, but the version folders are 1, 2: add the folder or change version_policy in config.pbtxt.`,
  ],
];
for (const [name, args, text] of REASONS) {
  test(`noVersionReason: ${name}`, () => assert.equal(noVersionReason(...args), text));
}

const CLOSEST: [string, string[], string | undefined][] = [
  ['model_repositry', ['models', 'model_repository'], 'model_repository'],
  ['onnx', ['onnxruntime', 'python'], undefined],
  ['onnxruntim', ['onnxruntime', 'python'], 'onnxruntime'],
  ['pyton', ['onnxruntime', 'python'], 'python'],
  ['x', ['y'], 'y'],
];
for (const [name, candidates, want] of CLOSEST) {
  test(`closestName(${name})`, () => assert.equal(closestName(name, candidates), want));
}

const HINTS: [string, string[], string | undefined][] = [
  [
    'other onnx name',
    ['labels.txt', 'resnet50.onnx'],
    'm/1/ holds labels.txt, resnet50.onnx: rename resnet50.onnx to model.onnx, or set default_model_filename: "resnet50.onnx" in config.pbtxt.',
  ],
  ['empty', [], 'm/1/ is empty: put model.onnx there.'],
];
for (const [name, files, want] of HINTS) {
  test(`missingModelFileHint: ${name}`, () => {
    const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hint-')), 'm', '1');
    fs.mkdirSync(dir, { recursive: true });
    for (const f of files) fs.writeFileSync(path.join(dir, f), '');
    assert.equal(missingModelFileHint(path.join(dir, 'model.onnx'), 'm'), want);
  });
}

test('missingModelFileHint: no version folder, no hint', () => {
  assert.equal(missingModelFileHint(path.join(os.tmpdir(), 'no-such-model-dir', '1', 'model.onnx'), 'm'), undefined);
});
