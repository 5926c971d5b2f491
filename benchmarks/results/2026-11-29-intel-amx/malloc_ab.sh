cd /work/main
for i in 1 2 3 4; do
  echo "default $(.venv/bin/python benchmarks/bench_train.py --sizes base --precisions bf16 --threads 2 --systems zhen-prenorm-bf16 --steps 3 2>&1 | grep 'zhen-prenorm-bf16 ')"
  echo "heap-only $(MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=1073741824 .venv/bin/python benchmarks/bench_train.py --sizes base --precisions bf16 --threads 2 --systems zhen-prenorm-bf16 --steps 3 2>&1 | grep 'zhen-prenorm-bf16 ')"
done
