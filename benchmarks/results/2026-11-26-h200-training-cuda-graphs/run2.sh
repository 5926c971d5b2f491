source .gpu/setup.sh
S=$(date +%s); t() { echo "[t=$(( $(date +%s) - S ))s] $*"; }
left() { echo $(( $1 - ($(date +%s) - S) )); }
t gpu tests; timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py 2>&1 | tee $OUT/gpu_tests.txt | grep -vE "^\s*$" | tail -12
BT="python3 benchmarks/bench_train.py --device cuda --interleave --threads 4 --steps 6 --warmup 2"
t base4k; timeout 100 $BT --precisions bf16 --sizes base --max-tokens 4096 --systems marian-sdpa-bf16,zhen-prenorm-bf16,zhen-prenorm-bf16-graphs,zhen-prenorm-bf16-plain 2>&1 | tee $OUT/base4k.txt | grep -v '^{' | cut -c1-110
t base16k; timeout 90 $BT --precisions bf16 --sizes base --max-tokens 16384 --systems marian-sdpa-bf16,zhen-prenorm-bf16,zhen-prenorm-bf16-graphs,zhen-prenorm-bf16-plain 2>&1 | tee $OUT/base16k.txt | grep -v '^{' | cut -c1-110
t fp32; timeout $(left 340) $BT --precisions fp32 --sizes base --max-tokens 4096 --systems marian-sdpa-fp32,zhen-prenorm-fp32,zhen-prenorm-fp32-plain 2>&1 | tee $OUT/fp32.txt | grep -v '^{' | cut -c1-110
t tiny4k; timeout $(left 395) $BT --precisions bf16 --sizes tiny --max-tokens 4096 --systems marian-sdpa-bf16,zhen-prenorm-bf16,zhen-postnorm-bf16 2>&1 | tee $OUT/tiny4k.txt | grep -v '^{' | cut -c1-110
t end
