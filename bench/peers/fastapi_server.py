#!/usr/bin/env python3
"""Peer for the side-by-side bench: what a Python developer writes first.

FastAPI + uvicorn (one worker) + onnxruntime (intra-op threads = cores), the
KServe v2 infer route with JSON and binary tensor bodies, plus `add_vectors`
in plain numpy (the peer of nodetron's Python backend model).

Usage: python3 bench/peers/fastapi_server.py PORT name=path.onnx ... [add_vectors]
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort
import uvicorn
from fastapi import FastAPI, Request, Response

DTYPES = {'FP32': np.float32, 'INT32': np.int32, 'FP64': np.float64, 'INT8': np.int8, 'UINT8': np.uint8}
NAMES = {np.dtype(v): k for k, v in DTYPES.items()}

app = FastAPI()
models = {}


def add_vectors(feeds):
    return {'OUTPUT': feeds['INPUT0'] + feeds['INPUT1']}


@app.get('/v2/health/ready')
async def ready():
    return Response()


@app.post('/v2/models/{name}/infer')
async def infer(name: str, request: Request):
    model = models.get(name)
    if model is None:
        return Response(status_code=404, content='{"error":"unknown model"}')
    body = await request.body()
    hl = request.headers.get('inference-header-content-length')
    end = int(hl) if hl is not None else len(body)
    header = json.loads(body[:end])
    feeds, offset = {}, end
    for t in header['inputs']:
        size = (t.get('parameters') or {}).get('binary_data_size')
        if size is not None:
            arr = np.frombuffer(body[offset:offset + size], dtype=DTYPES[t['datatype']])
            offset += size
        else:
            arr = np.array(t['data'], dtype=DTYPES[t['datatype']])
        feeds[t['name']] = arr.reshape(t['shape'])
    if callable(model):
        outs = model(feeds)
    else:
        names = [o.name for o in model.get_outputs()]
        outs = dict(zip(names, model.run(names, feeds)))
    binary = (header.get('parameters') or {}).get('binary_data_output', False)
    if not binary:
        return Response(media_type='application/json', content=json.dumps({'model_name': name, 'outputs': [
            {'name': k, 'datatype': NAMES[v.dtype], 'shape': list(v.shape), 'data': v.ravel().tolist()} for k, v in outs.items()]}))
    blobs = [np.ascontiguousarray(v).tobytes() for v in outs.values()]
    head = json.dumps({'model_name': name, 'outputs': [
        {'name': k, 'datatype': NAMES[v.dtype], 'shape': list(v.shape), 'parameters': {'binary_data_size': len(b)}}
        for (k, v), b in zip(outs.items(), blobs)]}).encode()
    return Response(media_type='application/octet-stream', content=head + b''.join(blobs),
                    headers={'Inference-Header-Content-Length': str(len(head))})


def main():
    port = int(sys.argv[1])
    for spec in sys.argv[2:]:
        if spec == 'add_vectors':
            models['add_vectors'] = add_vectors
            continue
        name, path = spec.split('=', 1)
        so = ort.SessionOptions()
        so.intra_op_num_threads = os.cpu_count() or 1
        so.inter_op_num_threads = 1
        models[name] = ort.InferenceSession(path, so, providers=['CPUExecutionProvider'])
    uvicorn.run(app, host='127.0.0.1', port=port, log_level='warning', access_log=False)


if __name__ == '__main__':
    main()
