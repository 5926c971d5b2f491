S=$(date +%s); source .gpu/setup.sh
D=.gpu/data
t zhen-train loop; timeout 150 python3 -m zhen.commands.train --train-files $D/tatoeba/train.jsonl.gz $D/news/train.jsonl.gz --valid-files tatoeba=$D/tatoeba/valid.jsonl.gz --tokenizer .gpu/tok --preset base --directions both --max-tokens 4096 --mixed-precision bf16 --max-steps 800 --logging-steps 100 --eval-steps 100000 --save-steps 100000 --eval-bleu-samples 0 --train-weights tatoeba=4 --num-proc 8 --output-dir /tmp/loop 2>&1 | tr '\r' '\n' > $OUT/zhen_train_loop.txt
grep -E "Device|Training path|batches per|graphs|Error|error" $OUT/zhen_train_loop.txt | head -8; grep -E "it/s|s/it" $OUT/zhen_train_loop.txt | tail -2
python3 -c "import json; h=json.load(open('/tmp/loop/history.json')); [print(e) for e in h if e.get('type')=='train']" | tee $OUT/loop_history.txt | tail -9
t bench_train; timeout 110 python3 benchmarks/bench_train.py --device cuda --interleave --threads 4 --steps 6 --warmup 2 --precisions bf16 --sizes base --max-tokens 4096 --systems marian-sdpa-bf16,zhen-prenorm-bf16 2>&1 | tee $OUT/bench_train_base4k.txt | grep -v '^{' | cut -c1-130 | tail -8
t end
