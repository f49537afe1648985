"""Models and native timings for bench/fil.ts and bench/fil-evaluators.ts.

    python3 fil_bench_models.py lightgbm <dir>          # <dir>/lgb_bench (LightGBM binary, 100 trees, 31 leaves, 32 features)
    /usr/bin/python3 fil_bench_models.py xgboost <dir>  # <dir>/xgb_bench (XGBoost binary, 100 trees, depth 6, 32 features)
    python3 fil_bench_models.py native <lib> <model file> <batch> <seconds> <threads>
        rows/s of the native library's predict() on the same rows, in a loop (JSON on stdout)
    python3 fil_bench_models.py onnx <forest.json> <out.onnx>
        an ai.onnx.ml TreeEnsembleRegressor of the same trees (fil-evaluators.ts writes forest.json)
"""
import json
import os
import sys
import time

import numpy as np

FEATURES = 32


def data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEATURES)).astype(np.float32)
    y = ((x[:, 0] + x[:, 1] * x[:, 2] - x[:, 3] + 0.3 * rng.normal(size=n)) > 0).astype(int)
    return x, y


def config(name, model_type, filename):
    return '\n'.join([
        f'name: "{name}"', 'backend: "fil"', 'max_batch_size: 1024',
        f'input [{{ name: "input__0" data_type: TYPE_FP32 dims: [ {FEATURES} ] }}]',
        'output [{ name: "output__0" data_type: TYPE_FP32 dims: [ 1 ] }]',
        'dynamic_batching {}',
        f'parameters [{{ key: "model_type" value: {{ string_value: "{model_type}" }} }}, '
        '{ key: "output_class" value: { string_value: "false" } }]',
        f'default_model_filename: "{filename}"', '']), filename


def place(root, name, model_type, filename, save):
    os.makedirs(os.path.join(root, name, '1'), exist_ok=True)
    text, fname = config(name, model_type, filename)
    with open(os.path.join(root, name, 'config.pbtxt'), 'w') as f:
        f.write(text)
    save(os.path.join(root, name, '1', fname))


def make_lightgbm(root):
    import lightgbm as lgb
    x, y = data(20000, 1)
    m = lgb.train({'objective': 'binary', 'num_leaves': 31, 'verbose': -1}, lgb.Dataset(x, y), 100)
    place(root, 'lgb_bench', 'lightgbm', 'model.txt', lambda p: m.save_model(p))


def make_xgboost(root):
    import xgboost as xgb
    x, y = data(20000, 1)
    m = xgb.train({'objective': 'binary:logistic', 'max_depth': 6}, xgb.DMatrix(x, y), 100)
    place(root, 'xgb_bench', 'xgboost_json', 'xgboost.json', m.save_model)


def native(lib, path, batch, seconds, threads):
    x, _ = data(batch, 2)
    if lib == 'lightgbm':
        import lightgbm as lgb
        m = lgb.Booster(model_file=path)
        run = lambda: m.predict(x, num_threads=threads)
    else:
        import xgboost as xgb
        m = xgb.Booster(model_file=path)
        m.set_param({'nthread': threads})
        run = lambda: m.inplace_predict(x)
    end = time.perf_counter() + 0.5
    while time.perf_counter() < end:
        run()
    calls = 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        run()
        calls += 1
    elapsed = time.perf_counter() - t0
    print(json.dumps({'rows_per_s': calls * batch / elapsed, 'calls': calls}))


def to_onnx(forest_json, out):
    import onnx
    from onnx import helper, TensorProto
    f = json.load(open(forest_json))
    node = helper.make_node(
        'TreeEnsembleRegressor', ['X'], ['Y'], domain='ai.onnx.ml', n_targets=1, aggregate_function='SUM',
        nodes_treeids=f['treeids'], nodes_nodeids=f['nodeids'], nodes_featureids=f['featureids'],
        nodes_values=f['values'], nodes_modes=f['modes'], nodes_truenodeids=f['trueids'], nodes_falsenodeids=f['falseids'],
        nodes_missing_value_tracks_true=f['missing_true'],
        target_treeids=f['target_treeids'], target_nodeids=f['target_nodeids'], target_ids=[0] * len(f['target_nodeids']),
        target_weights=f['target_weights'])
    graph = helper.make_graph([node], 'forest', [helper.make_tensor_value_info('X', TensorProto.FLOAT, [None, f['features']])],
                              [helper.make_tensor_value_info('Y', TensorProto.FLOAT, [None, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17), helper.make_opsetid('ai.onnx.ml', 3)])
    model.ir_version = 8
    onnx.save(model, out)


if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'lightgbm':
        make_lightgbm(sys.argv[2])
    elif cmd == 'xgboost':
        make_xgboost(sys.argv[2])
    elif cmd == 'native':
        native(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]))
    elif cmd == 'onnx':
        to_onnx(sys.argv[2], sys.argv[3])
