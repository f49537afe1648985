/**
 * GPUs visible to this process. nodetron's bundled onnxruntime-node is the
 * CPU build, so a GPU only matters for pinning child processes; we count the
 * NVIDIA devices the kernel driver exposes, restricted by CUDA_VISIBLE_DEVICES.
 */
import fs from 'node:fs';

export function detectGpuIds(): number[] {
  let count = 0;
  try {
    count = fs.readdirSync('/proc/driver/nvidia/gpus').length;
  } catch {
    return [];
  }
  let ids = Array.from({ length: count }, (_, i) => i);
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  if (visible !== undefined) {
    const allowed = visible
      .split(',')
      .map((s) => s.trim())
      .filter((s) => /^[0-9]+$/.test(s))
      .map(Number);
    ids = ids.filter((i) => allowed.includes(i));
  }
  return ids;
}
