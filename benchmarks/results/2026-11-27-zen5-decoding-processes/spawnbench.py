# Spawned workers (fresh interpreters, each building the same model and session) against the streams' threads
import os, sys, time, torch, warnings, multiprocessing as mp
warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
_W = {}
def build(precision):
    from common import zhen_model, source_batches
    from zhen.fast_generation import FastDecoder
    model = zhen_model("base", "prenorm", "sdpa", 0.0).eval()
    if precision == "int8":
        from zhen.quantization import quantize_dynamic
        model = quantize_dynamic(model)
    order = sorted(source_batches(256, 32, 32000), key=lambda b: -b["input_ids"].numel())
    return FastDecoder(model).__enter__(), order
def init(precision):
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    _W["dec"], _W["order"] = build(precision)
def child(args):
    i, beams = args
    b = _W["order"][i]
    with torch.inference_mode():
        return _W["dec"].generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
if __name__ == "__main__":
    precision, beams = sys.argv[1], int(sys.argv[2])
    torch.set_num_threads(2)
    dec, order = build(precision)
    one = lambda b: dec.generate(b["input_ids"], b["attention_mask"], forced_bos_token_id=5, num_beams=beams, max_new_tokens=32, min_new_tokens=32)
    pool = mp.get_context("spawn").Pool(2, initializer=init, initargs=(precision,))
    runs = {"threads": lambda: list(dec.map(one, order, 2)), "spawned": lambda: pool.map(child, [(i, beams) for i in range(len(order))], chunksize=1)}
    with torch.inference_mode():
        for f in runs.values(): f(); f()
        res = {k: [] for k in runs}
        for _ in range(4):
            for k, f in runs.items():
                t = time.perf_counter(); f(); res[k].append(256 * 32 / (time.perf_counter() - t))
    print(precision, "beam", beams, "; ".join(f"{k}: " + "/".join(f"{v:.0f}" for v in vs) for k, vs in res.items()), flush=True)
    pool.terminate()
