# zhen int8 in two spawned workers, in two thread streams, and CTranslate2 int8 with inter_threads=2, alternating
import os, sys, time, tempfile, torch, warnings, multiprocessing as mp
warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ZH = 5
_W = {}
def build():
    from common import zhen_model, source_batches
    from zhen.fast_generation import FastDecoder
    from zhen.quantization import quantize_dynamic
    model = quantize_dynamic(zhen_model("base", "prenorm", "sdpa", 0.0).eval())
    order = sorted(source_batches(256, 32, 32000), key=lambda b: -b["input_ids"].numel())
    return FastDecoder(model).__enter__(), order
def init():
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    _W["dec"], _W["order"] = build()
def child(args):
    i, beams = args
    b = _W["order"][i]
    with torch.inference_mode():
        return _W["dec"].generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=ZH, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
if __name__ == "__main__":
    beams = int(sys.argv[1])
    torch.set_num_threads(2)
    dec, order = build()
    from common import zhen_model
    from zhen.convert_ctranslate2 import CTranslate2Generator, convert
    out = os.path.join(tempfile.mkdtemp(), "ct2")
    torch.manual_seed(0)
    convert(zhen_model("base", "prenorm", dropout=0.0).eval(), out, quantization="int8", force=True)
    ct2 = CTranslate2Generator(out, compute_type="int8", device="cpu", inter_threads=2, intra_threads=1)
    one = lambda b: dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=ZH, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
    pool = mp.get_context("spawn").Pool(2, initializer=init)
    runs = {
        "zhen threads": lambda: list(dec.map(one, order, 2)),
        "zhen spawned workers": lambda: pool.map(child, [(i, beams) for i in range(len(order))], chunksize=1),
        "ct2 inter_threads=2": lambda: [w() for w in [ct2.generate(b["input_ids"], b["attention_mask"], ZH, num_beams=beams, max_new_tokens=32, min_new_tokens=32, asynchronous=True) for b in order]],
    }
    with torch.inference_mode():
        for f in runs.values(): f(); f()
        res = {k: [] for k in runs}
        for _ in range(4):
            for k, f in runs.items():
                t = time.perf_counter(); f(); res[k].append(256 * 32 / (time.perf_counter() - t))
    print("int8 beam", beams, "; ".join(f"{k}: " + "/".join(f"{v:.0f}" for v in vs) for k, vs in res.items()), flush=True)
    pool.terminate()
