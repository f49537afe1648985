import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { lintCloudRootText, repositoryPathProblem } from '../../src/repository/repository-paths';
import { misnamedConfigWarning } from '../../src/repository/folder-findings';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'repo-paths-'));
fs.mkdirSync(path.join(root, 'model_repository'));
fs.writeFileSync(path.join(root, 'notes.txt'), 'x');
const STAT = 'check the spelling of --model-repository, which names the folder holding one folder per model.';

const CASES: [string, string, string | undefined][] = [
  ['an existing folder', path.join(root, 'model_repository'), undefined],
  ['missing', path.join(root, 'nothing_like_it'), `Internal: failed to stat file ${root}/nothing_like_it. No such folder: ${STAT}`],
  [
    'misspelt',
    path.join(root, 'model_repositry'),
    `Internal: failed to stat file ${root}/model_repositry. No such folder: ${STAT} Did you mean --model-repository=${root}/model_repository?`,
  ],
  [
    'relative',
    'model_repositry',
    `Internal: failed to stat file model_repositry. No such folder (${root}/model_repositry, relative to ${root}): ${STAT} Did you mean --model-repository=${root}/model_repository?`,
  ],
  [
    'a file',
    path.join(root, 'notes.txt'),
    `Internal: model repository '${root}/notes.txt' is a file, not a folder: pass --model-repository the folder that holds one folder per model (each with its config.pbtxt and version folders 1/, 2/, ...).`,
  ],
  [
    'through a file',
    path.join(root, 'notes.txt', 'x'),
    `Internal: failed to stat file ${root}/notes.txt/x. A part of the path is a file, not a folder: pass --model-repository the folder that holds one folder per model.`,
  ],
];
for (const [name, p, want] of CASES) {
  test(`repositoryPathProblem: ${name}`, () => {
    const e = repositoryPathProblem(p, root);
    assert.equal(e === undefined ? undefined : `${e.code === 'INTERNAL' ? 'Internal' : e.code}: ${e.message}`, want);
  });
}

test('repositoryPathProblem leaves cloud roots to repository-roots.ts; lint says it reads local folders only', () => {
  for (const p of ['s3://b/m', 'gs://b/m', 'as://a/c']) {
    assert.equal(repositoryPathProblem(p, root), undefined, p);
    assert.match(lintCloudRootText(p) ?? '', /^nodetron lint reads local folders only/, p);
  }
  assert.equal(lintCloudRootText(root), undefined);
});

const MISNAMED: [string, string[], string | undefined][] = [
  ['config.txt', ['config.txt', '1'], "model 'm' has no config.pbtxt but has 'config.txt', which is not read: rename it to config.pbtxt (m/config.pbtxt)."],
  ['model.pbtxt', ['model.pbtxt'], "model 'm' has no config.pbtxt but has 'model.pbtxt', which is not read: rename it to config.pbtxt (m/config.pbtxt)."],
  ['Config.pbtxt', ['Config.pbtxt'], "model 'm' has no config.pbtxt but has 'Config.pbtxt', which is not read: rename it to config.pbtxt (m/config.pbtxt)."],
  ['nothing like it', ['1', 'labels.txt'], undefined],
];
for (const [name, files, want] of MISNAMED) {
  test(`misnamedConfigWarning: ${name}`, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'misnamed-'));
    for (const f of files) fs.writeFileSync(path.join(dir, f), '');
    assert.equal(misnamedConfigWarning('m', dir, path.join(dir, 'config.pbtxt')), want);
  });
}
