# source .gpu/setup.sh: the carried wheels (Transformers 5.24, datasets 5.2, OpenCC) over the image's packages
if [ ! -d /tmp/site/transformers ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
S=${S:-$(date +%s)}; t() { echo "[t=$(( $(date +%s) - S ))s] $*"; }
