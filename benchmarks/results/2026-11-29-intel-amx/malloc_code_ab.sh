cd /work/main
for i in 1 2 3; do
  echo "off $(ZHEN_HARDWARE=glibc_malloc=off .venv/bin/python benchmarks/bench_train.py --sizes base --precisions bf16 --threads 2 --systems zhen-prenorm-bf16 --steps 3 2>&1 | grep 'zhen-prenorm-bf16 ')"
  echo "on  $(.venv/bin/python benchmarks/bench_train.py --sizes base --precisions bf16 --threads 2 --systems zhen-prenorm-bf16 --steps 3 2>&1 | grep 'zhen-prenorm-bf16 ')"
done
