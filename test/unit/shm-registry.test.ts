import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { ServerError } from '../../src/core/errors';
import { SHM_DISABLED, ShmRegistry } from '../../src/frontend/shm-registry';
import { readShm, resolveShm, shmPath, writeShm, writeShmOutputs } from '../../src/request/shm-regions';

const NAME = `nodetron_unit_${process.pid}`;
const FILE = `/dev/shm/${NAME}`;
fs.writeFileSync(FILE, Buffer.from(Array.from({ length: 64 }, (_, i) => i)));
after(() => fs.rmSync(FILE, { force: true }));

function throwsCode(fn: () => unknown, code: string, message: string): void {
  assert.throws(fn, (e: ServerError) => e.code === code && e.message === message);
}

test('shmPath strips leading slashes', () => {
  assert.equal(shmPath('/abc'), '/dev/shm/abc');
  assert.equal(shmPath('//abc'), '/dev/shm/abc');
});

test('a key names one object in /dev/shm: keys that would leave it are refused before any file is opened', () => {
  const reg = new ShmRegistry(true);
  const why = ": a key names one object in /dev/shm, so after its leading '/' it must not contain '/', be '.' or '..', or hold a NUL byte";
  const table: [key: string, message: string][] = [
    ['/../../etc/hostname', "cannot register shared memory region 'r' - invalid shm key '/../../etc/hostname'" + why],
    ['/sub/dir', "cannot register shared memory region 'r' - invalid shm key '/sub/dir'" + why],
    ['/..', "cannot register shared memory region 'r' - invalid shm key '/..'" + why],
    ['.', "cannot register shared memory region 'r' - invalid shm key '.'" + why],
    ['/a\0b', "cannot register shared memory region 'r' - invalid shm key '/a\0b'" + why],
    ['/', "cannot register shared memory region 'r' - invalid shm key '/'"],
  ];
  for (const [key, message] of table) throwsCode(() => reg.register('r', key, 0, 4), 'INVALID_ARG', message);
  assert.deepEqual(reg.status(), []);
  // Defence in depth: a key that slipped past registration still opens nothing outside /dev/shm.
  for (const key of ['/../etc/hostname', '/', '..']) assert.throws(() => shmPath(key), { code: 'INVALID_ARG' }, key);
});

test('register / status / unregister with change notices', () => {
  let changes = 0;
  const reg = new ShmRegistry(true, () => changes++);
  reg.register('a', `/${NAME}`, 16, 32);
  assert.deepEqual(reg.status(), [{ name: 'a', key: `/${NAME}`, offset: 16, byte_size: 32 }]);
  assert.deepEqual(reg.table().a, { name: 'a', key: `/${NAME}`, offset: 16, byteSize: 32 });
  const cases: [() => void, string, string][] = [
    [() => reg.register('a', `/${NAME}`, 0, 8), 'ALREADY_EXISTS', "shared memory region 'a' already in manager"],
    [() => reg.register('b', '///', 0, 8), 'INVALID_ARG', "cannot register shared memory region 'b' - invalid shm key '///'"],
    [() => reg.register('b', '/nodetron_missing_key', 0, 8), 'INTERNAL', "Unable to open shared memory region: '/nodetron_missing_key'"],
    [() => reg.register('b', `/${NAME}`, 60, 8), 'INVALID_ARG', "failed to register shared memory region 'b': invalid args"],
    [() => reg.status('zz'), 'NOT_FOUND', "Unable to find system shared memory region: 'zz'"],
  ];
  for (const [fn, code, message] of cases) throwsCode(fn, code, message);
  reg.unregister('zz');
  assert.equal(changes, 1, 'an unknown name changes nothing');
  reg.unregister();
  assert.deepEqual(reg.status(), []);
  assert.equal(changes, 2);
});

test('a registry with client shm disabled refuses changes but answers status', () => {
  const reg = new ShmRegistry(false);
  throwsCode(() => reg.register('a', `/${NAME}`, 0, 8), 'UNSUPPORTED', SHM_DISABLED);
  throwsCode(() => reg.unregister(), 'UNSUPPORTED', SHM_DISABLED);
  assert.deepEqual(reg.status(), []);
});

test('resolve, read and write inside a region', () => {
  const table = { r: { name: 'r', key: `/${NAME}`, offset: 16, byteSize: 32 } };
  const cases: [number, number, string, string][] = [
    [0, 4, '', ''],
    [32, 4, 'INVALID_ARG', "Invalid offset for shared memory region: 'r'"],
    [30, 4, 'INVALID_ARG', "Invalid offset + byte size for shared memory region: 'r'"],
  ];
  for (const [offset, size, code, message] of cases) {
    if (code === '') resolveShm(table, 'r', offset, size);
    else throwsCode(() => resolveShm(table, 'r', offset, size), code, message);
  }
  throwsCode(() => resolveShm(undefined, 'r', 0, 4), 'NOT_FOUND', "Unable to find shared memory region: 'r'");
  assert.deepEqual([...readShm(resolveShm(table, 'r', 2, 3))], [18, 19, 20]);
  writeShm(resolveShm(table, 'r', 0, 2), 'O', Uint8Array.of(200, 201));
  assert.deepEqual([...fs.readFileSync(FILE).subarray(16, 18)], [200, 201]);
  throwsCode(
    () => writeShmOutputs([{ name: 'O', data: new Uint8Array(8) }], [{ name: 'O', shm: resolveShm(table, 'r', 0, 4) }]),
    'INTERNAL',
    "shared memory size specified with the request for output 'O' (4 bytes) should be at least 8 bytes to hold the results",
  );
});
