S=$(date +%s); source .gpu/setup.sh
D=.gpu/data
t setup; python3 -c "import torch; print(torch.cuda.get_device_name())"
t gpu graph tests; timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "capture or cuda_graphs or graph" 2>&1 | tee $OUT/gpu_tests_graphs.txt | grep -vE "^\s*$" | tail -4
t graph_warmup; timeout 200 python3 benchmarks/graph_warmup.py --train-files $D/tatoeba/train.jsonl.gz $D/news/train.jsonl.gz --tokenizer .gpu/tok --steps 250 --rounds 2 2>&1 | tee $OUT/graph_warmup.txt | grep -v '^{' | tail -6
t zhen-train loop; timeout 110 python3 -m zhen.commands.train --train-files $D/tatoeba/train.jsonl.gz $D/news/train.jsonl.gz --valid-files tatoeba=$D/tatoeba/valid.jsonl.gz --tokenizer .gpu/tok --preset base --directions both --max-tokens 4096 --mixed-precision bf16 --max-steps 800 --logging-steps 100 --eval-steps 100000 --save-steps 100000 --eval-bleu-samples 0 --train-weights tatoeba=4 --num-proc 8 --output-dir /tmp/loop3 2>&1 | tr '\r' '\n' > $OUT/zhen_train_loop.txt
grep -E "it/s|s/it" $OUT/zhen_train_loop.txt | tail -1
python3 -c "import json; h=json.load(open('/tmp/loop3/history.json')); [print(e['step'], round(e['target_tokens_per_second'])) for e in h if e.get('type')=='train']" | tee $OUT/loop_history.txt | tr '\n' ' '
t end
