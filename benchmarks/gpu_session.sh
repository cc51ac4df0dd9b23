#!/usr/bin/env bash
# The decoder and training benchmarks on a lent GPU machine (the paper's setting), plus the CUDA-only tests.
# Run from the repository root on a machine with python3, torch (CUDA) and the project's pure-Python needs;
# writes JSON under ${OUT:-results/benchmarks/gpu}. Models are random weights / synthetic data at the profiles' sizes.
# A bare device machine lacks sacremoses (pipeline.text imports it): copy sacremoses, click, joblib and a regex wheel
# for its Python into a git-excluded folder, carry it and put it on PYTHONPATH. The paper Transformer's decoding
# sweep needs about 250 s.
set -u
out=${OUT:-results/benchmarks/gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 TQDM_DISABLE=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -m pytest -q -p no:cacheprovider -k "cuda or half or fp16 or bf16" \
    tests/pipeline/decode/test_beam_search.py tests/pipeline/nmt/test_precision.py 2>&1 | tail -15
for profile in medium paper; do
  timeout 90 python3 benchmarks/nmt_train.py --device cuda --profile "$profile" --runs 3 --warmup 5 --updates 15 \
      --work-dir /nonexistent --synthetic-vocab 50000 --out "$out/nmt_train_$profile.json"
done
for arch in gru transformer; do
  vocab=$([ $arch = gru ] && echo 50000 || echo 30000)
  timeout 280 python3 benchmarks/beam_speed.py --device cuda --profile paper --architecture $arch \
      --random-vocab $vocab --figures a,b --sentences-a 24 --sentences-b 96 --beams 1,4,8,12 \
      --batch-sizes 1,4,16,32,64 --runs 2 --out "$out/beam_speed_paper_$arch.json"
done
