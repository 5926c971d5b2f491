# One line through zhen-translate in a fresh process, as it is and compiling at its first call (the previous default),
# three runs each taking turns: wall seconds of the whole command (imports, loading, the call).
# Usage (from the repository root): bash cli_one_line.sh CHECKPOINT
for run in 1 2 3; do
  for system in default compile-at-once; do
    start=$(date +%s.%N)
    echo "The weather is nice today." | python -c "
import sys
from zhen import fast_generation
if sys.argv[1] == 'compile-at-once':
    fast_generation.SCRIPT_AFTER_SECONDS = 0.0
from zhen.commands.translate import main
sys.argv = ['zhen-translate', '--model', sys.argv[2], '--src', 'en', '--tgt', 'zh', '--no-progress']
main()" $system "$1" > /dev/null 2>&1
    echo "run $run $system: $(echo "$(date +%s.%N) - $start" | bc) s"
  done
done
