#!/usr/bin/env python3
"""Generate the example tree models of model_repository/ for the FIL backend.

    python3 scripts/gen_fil_models.py lightgbm [--out model_repository]
    /usr/bin/python3 scripts/gen_fil_models.py xgboost [--out model_repository]

(scripts/gen_models.py runs both when lightgbm and Debian's python3-xgboost
are there.) Needs numpy and lightgbm, or numpy and xgboost. Deterministic:
fixed seeds, one thread. Models written:

  fil_lightgbm/  LightGBM text (model.txt): 3-class classifier of FP32
                 input__0 [4] (an iris-like synthetic set), output__0 [3]
                 class probabilities (predict_proba)
  fil_xgboost/   XGBoost JSON (xgboost.json): binary classifier of FP32
                 input__0 [4], output__0 [1] the class (threshold 0.5),
                 NaN as a missing value
"""
import argparse
import os

import numpy as np

FEATURES = 4


def iris_like(seed, n=300):
    """Three clusters of four measurements, like the iris flowers."""
    rng = np.random.default_rng(seed)
    centres = np.array([[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.6, 2.0]], np.float32)
    y = rng.integers(0, 3, size=n)
    x = (centres[y] + rng.normal(scale=0.35, size=(n, FEATURES))).astype(np.float32)
    return x, y


def config(name, model_type, out_dims, params):
    lines = [
        f'name: "{name}"', 'backend: "fil"', 'max_batch_size: 1024',
        f'input [{{ name: "input__0" data_type: TYPE_FP32 dims: [ {FEATURES} ] }}]',
        f'output [{{ name: "output__0" data_type: TYPE_FP32 dims: [ {out_dims} ] }}]',
        'instance_group [{ kind: KIND_CPU count: 2 }]', 'dynamic_batching {}',
        'parameters [',
        ',\n'.join(f'  {{ key: "{k}" value: {{ string_value: "{v}" }} }}' for k, v in [('model_type', model_type), *params]),
        ']', '']
    return '\n'.join(lines)


def write(out, name, text, filename, save):
    os.makedirs(os.path.join(out, name, '1'), exist_ok=True)
    with open(os.path.join(out, name, 'config.pbtxt'), 'w') as f:
        f.write(text)
    save(os.path.join(out, name, '1', filename))


def gen_lightgbm(out):
    import lightgbm as lgb
    x, y = iris_like(7)
    params = {'objective': 'multiclass', 'num_class': 3, 'num_leaves': 4, 'learning_rate': 0.3, 'verbose': -1,
              'num_threads': 1, 'deterministic': True, 'seed': 7}
    m = lgb.train(params, lgb.Dataset(x, y), 8)
    write(out, 'fil_lightgbm', config('fil_lightgbm', 'lightgbm', 3, [('output_class', 'true'), ('predict_proba', 'true')]),
          'model.txt', lambda p: m.save_model(p))


def gen_xgboost(out):
    import xgboost as xgb
    x, y = iris_like(8)
    x[np.random.default_rng(9).random(size=x.shape) < 0.05] = np.nan
    m = xgb.train({'objective': 'binary:logistic', 'max_depth': 3, 'nthread': 1, 'seed': 8}, xgb.DMatrix(x, (y == 2).astype(int)), 8)
    write(out, 'fil_xgboost', config('fil_xgboost', 'xgboost_json', 1, [('output_class', 'true'), ('threshold', '0.5')]),
          'xgboost.json', m.save_model)


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('lib', choices=['lightgbm', 'xgboost'])
    ap.add_argument('--out', default='model_repository')
    args = ap.parse_args()
    (gen_lightgbm if args.lib == 'lightgbm' else gen_xgboost)(args.out)
