/**
 * The texts a small shared-memory mount gets (src/python-backend/shm-space.ts):
 * the start-up warning only below 256 MiB, naming the mount, its size, what is
 * free and the fix; the grow error with Triton's sentence first, then how much
 * more of which mount, then the same fix.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SHM_FIX, ShmSpaceError, smallShmWarning } from '../../src/python-backend/shm-space';

const MiB = 1024 * 1024;

const warnings: { what: string; total: number; free: number; expected: string | undefined }[] = [
  {
    what: "Docker's default 64 MiB",
    total: 64 * MiB,
    free: 60 * MiB,
    expected: `/dev/shm is 64.0 MiB (60.0 MiB free): tensors to and from Python models travel through it, so a larger request or response takes the slower path through the stub's pipe, or fails. ${SHM_FIX}`,
  },
  {
    what: 'just under the bound',
    total: 256 * MiB - 4096,
    free: 1,
    expected: `/dev/shm is 256.0 MiB (0.0 MiB free): tensors to and from Python models travel through it, so a larger request or response takes the slower path through the stub's pipe, or fails. ${SHM_FIX}`,
  },
  { what: 'at the bound', total: 256 * MiB, free: 256 * MiB, expected: undefined },
  { what: 'a host-sized /dev/shm', total: 12 * 1024 * MiB, free: 12 * 1024 * MiB, expected: undefined },
];

for (const w of warnings) {
  test(`small /dev/shm warning: ${w.what}`, () => {
    assert.equal(smallShmWarning({ mount: '/dev/shm', totalBytes: w.total, freeBytes: w.free }), w.expected);
  });
}

test('no warning when the mount cannot be read', () => {
  assert.equal(smallShmWarning(undefined), undefined);
});

test("the grow error: Triton's text, then how much more of which mount, then the fix; UNAVAILABLE", () => {
  const e = new ShmSpaceError(
    '/dev/shm/nodetron_1_h2s',
    34 * MiB,
    33 * MiB,
    { mount: '/dev/shm', totalBytes: 64 * MiB, freeBytes: 20 * MiB },
    'ENOSPC on write',
  );
  assert.equal(e.code, 'UNAVAILABLE');
  assert.equal(
    e.message,
    `Failed to increase the shared memory pool size for key '/dev/shm/nodetron_1_h2s' to ${34 * MiB} bytes. ` +
      `It needs ${33 * MiB} bytes more of /dev/shm (64.0 MiB, 20.0 MiB free) (ENOSPC on write). ${SHM_FIX}`,
  );
});
