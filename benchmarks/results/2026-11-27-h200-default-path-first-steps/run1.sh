S=$(date +%s); source .gpu/setup.sh
t setup; nvidia-smi -L; python3 -c "import torch, transformers, datasets, pyarrow, zhen; print(torch.__version__, torch.version.cuda, transformers.__version__, datasets.__version__, pyarrow.__version__, torch.cuda.get_device_name())"
python3 -c "import zhen.hardware as h; print(h.describe() if hasattr(h,'describe') else '')" 2>&1 | tail -2
t gpu tests; timeout 170 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py 2>&1 | tee $OUT/gpu_tests.txt | grep -vE "^\s*$" | tail -15
t base random; python3 .gpu/mkbase.py .gpu/tok /tmp/base-random 2>&1 | tail -1
BP="python3 benchmarks/bench_pipeline.py --device cuda --model /tmp/base-random --test .gpu/data/tatoeba/valid.jsonl.gz --directions en-zh --threads 4 --rounds 2"
t per call; timeout 70 $BP --limit 12 --per-call 1 --num-beams 1,4 --systems generate-bf16,generate-fp32,pipeline,translate 2>&1 | tee $OUT/pipeline_per_call.txt | grep -v '^{' | tail -12
t one call; timeout 60 $BP --limit 256 --batch-size 64 --num-beams 1,4 --systems generate-bf16,generate-fp32,pipeline,translate 2>&1 | tee $OUT/pipeline_256.txt | grep -v '^{' | tail -12
t generate; timeout 70 python3 benchmarks/bench_generate.py --device cuda --sizes base --beams 1,4 --sentences 128 --threads 4 --systems marian-sdpa-fp32,marian-sdpa-bf16,zhen-fast-fp32 2>&1 | tee $OUT/bench_generate.txt | grep -v '^{' | cut -c1-120 | tail -14
t end
