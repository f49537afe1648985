#!/usr/bin/env python3
"""Peer of bench/python-add-sub.ts: a hand-written FastAPI + numpy service
with the KServe v2 infer route (JSON and binary tensors) for two models,
add_sub (OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1) and identity
(OUTPUT0 = INPUT0). One uvicorn worker. Needs: fastapi, uvicorn, numpy.

Usage: python3 bench/peers/fastapi_add_sub.py PORT
"""
import json
import sys

import numpy as np
import uvicorn
from fastapi import FastAPI, Request, Response

TYPES = {"FP32": np.float32, "INT32": np.int32}
TYPE_NAMES = {np.dtype(t): n for n, t in TYPES.items()}
app = FastAPI()

MODELS = {
    "add_sub": lambda x: {"OUTPUT0": x["INPUT0"] + x["INPUT1"], "OUTPUT1": x["INPUT0"] - x["INPUT1"]},
    "identity": lambda x: {"OUTPUT0": x["INPUT0"]},
}


@app.get("/v2/health/ready")
async def ready():
    return Response()


@app.post("/v2/models/{name}/infer")
async def infer(name: str, request: Request):
    fn = MODELS.get(name)
    if fn is None:
        return Response(status_code=404, content=json.dumps({"error": "unknown model '%s'" % name}))
    body = await request.body()
    header_len = request.headers.get("inference-header-content-length")
    split = int(header_len) if header_len is not None else len(body)
    head = json.loads(body[:split])
    tensors, pos = {}, split
    for t in head["inputs"]:
        size = (t.get("parameters") or {}).get("binary_data_size")
        dtype = TYPES[t["datatype"]]
        if size is None:
            tensors[t["name"]] = np.asarray(t["data"], dtype=dtype).reshape(t["shape"])
        else:
            tensors[t["name"]] = np.frombuffer(body, dtype=dtype, count=size // np.dtype(dtype).itemsize,
                                               offset=pos).reshape(t["shape"])
            pos += size
    outputs = fn(tensors)
    if not (head.get("parameters") or {}).get("binary_data_output", False):
        return Response(media_type="application/json", content=json.dumps({"model_name": name, "outputs": [
            {"name": k, "datatype": TYPE_NAMES[v.dtype], "shape": list(v.shape), "data": v.ravel().tolist()}
            for k, v in outputs.items()]}))
    blobs = [np.ascontiguousarray(v).tobytes() for v in outputs.values()]
    out_head = json.dumps({"model_name": name, "outputs": [
        {"name": k, "datatype": TYPE_NAMES[v.dtype], "shape": list(v.shape), "parameters": {"binary_data_size": len(b)}}
        for (k, v), b in zip(outputs.items(), blobs)]}).encode()
    return Response(media_type="application/octet-stream", content=out_head + b"".join(blobs),
                    headers={"Inference-Header-Content-Length": str(len(out_head))})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
