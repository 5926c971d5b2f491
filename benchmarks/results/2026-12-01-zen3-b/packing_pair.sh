cd /work/main
B="benchmarks/bench_generate.py --sizes base --beams ${BEAMS:-1} --threads 2 --sentences 512 --batch-size 64 --rounds 1"
for i in 1 2 3; do
  for p in onednn mkl; do
    echo "== $p round $i"; ZHEN_HARDWARE=float32_packing=$p .venv/bin/python $B --systems zhen-streams-fp32 2>&1 | grep "^| zhen"
  done
done
