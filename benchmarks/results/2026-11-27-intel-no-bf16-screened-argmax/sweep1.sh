for hw in "" "onednn_packing=off" "onednn_packing=off,mkl_packing=off"; do
  echo "=== ZHEN_HARDWARE=$hw"
  ZHEN_HARDWARE=$hw .venv/bin/python benchmarks/bench_generate.py --sizes base --beams 1 --rounds 2 --threads 2 --sentences 256 --batch-size 64 --systems marian-eager-fp32,zhen-streams-fp32,zhen-fast-fp32 2>&1 | grep -v '^{' | grep '|'
done
