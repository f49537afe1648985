/**
 * The one model-name check every API uses (request/model-name.ts): what can
 * be a model's folder name and what is refused, with Triton's text.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkModelName, modelNameProblem } from '../../src/request/model-name';

const REFUSED = (name: string): string => `invalid model name '${name}', model name must not contain path traversal characters`;

test('names that cannot be one folder of the repository are refused, the rest pass', () => {
  const table: [name: string, refused: boolean][] = [
    ['simple', false],
    ['ok.name-1', false],
    ['...', false], // a legal folder name
    ['.hidden', false],
    ['a..b', false],
    ['densenet_onnx', false],
    ['名前', false],
    ['.', true],
    ['..', true],
    ['../x', true],
    ['a/b', true],
    ['/etc', true],
    ['/', true],
    ['a\\b', true],
    ['..\\..\\x', true],
    ['a\0b', true],
    ['\0', true],
  ];
  for (const [name, refused] of table) {
    const problem = modelNameProblem(name);
    assert.equal(problem?.message, refused ? REFUSED(name) : undefined, JSON.stringify(name));
    if (refused) {
      assert.equal(problem?.code, 'INVALID_ARG', JSON.stringify(name));
      assert.throws(() => checkModelName(name), { message: REFUSED(name) });
    } else {
      assert.doesNotThrow(() => checkModelName(name));
    }
  }
});
