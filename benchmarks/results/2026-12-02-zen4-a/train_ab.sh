#!/bin/bash
# 400 steps of the README's small-cpu command on both threads, today's code and the code of 2026-11-30 (the 4,289-step
# run's) alternated; target tokens/s in windows of 50 steps from each history.json.
# train_ab.sh [STEPS] [RUNS]: 400 "new old new2 old2" first, then 200 "old3 new3 old4 new4 old5 new5".
STEPS=${1:-400}
RUNS=${2:-new old new2 old2}
cd /tmp/s59/run
ARGS="--config small-cpu --train-files /work/shared/data/tatoeba/train.jsonl.gz /work/shared/data/news/train.jsonl.gz --train-weights tatoeba=4 --valid-files tatoeba=/work/shared/data/tatoeba/valid.jsonl.gz news=/work/shared/data/news/valid.jsonl.gz --tokenizer /tmp/s59/small-cpu/tokenizer --max-minutes 100000 --max-steps $STEPS --eval-steps 100000 --eval-bleu-samples 0 --save-steps 100000 --average-last 0 --logging-steps 50"
for run in $RUNS; do
  case $run in new*) tree=/work/main;; old*) tree=/tmp/s59/old;; esac
  rm -rf /tmp/s59/ab-$run
  PYTHONPATH=$tree /work/main/.venv/bin/python $tree/scripts/train.py $ARGS --output-dir /tmp/s59/ab-$run > /tmp/s59/ab-$run.log 2>&1
  echo "$run done $(date +%T)"
done
