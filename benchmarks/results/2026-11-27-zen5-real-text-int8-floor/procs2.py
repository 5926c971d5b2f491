import os, sys, time, warnings, multiprocessing as mp
def worker(idx, nproc, barrier, q, direction):
    import torch
    sys.path.insert(0, "/work/main/benchmarks"); warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    from bleu_int8 import translate_ids
    from zhen import ZhenForConditionalGeneration, ZhenTokenizerFast
    from zhen.data import load_parallel
    from zhen.evaluation import parallel_columns
    from zhen.fast_generation import FastDecoder
    from zhen.quantization import quantize_dynamic
    M="/tmp/rt/small/model"
    model = ZhenForConditionalGeneration.from_pretrained(M, dtype=torch.float32).eval()
    tok = ZhenTokenizerFast.from_pretrained(M)
    cols = parallel_columns(load_parallel("/work/shared/data/tatoeba/valid.jsonl.gz"), 500)
    qm = quantize_dynamic(model)
    mnt = lambda n: max(1, min(int(1.5*n)+10, 512))
    src,tgt=direction
    def run():
        with torch.inference_mode(), FastDecoder(qm, weights="auto") as dec:
            def tb(batches):
                return [dec.generate(**kw) if i % nproc == idx else torch.zeros((len(kw["input_ids"]),1),dtype=torch.long) for i,kw in enumerate(batches)]
            translate_ids(tb, tok, cols[src], src, tgt, 64, 4, mnt)
    run(); run()
    for r in range(4):
        barrier.wait(); t=time.perf_counter(); run(); q.put((r, idx, time.perf_counter()-t))
if __name__=="__main__":
    ctx=mp.get_context("spawn")
    for direction in (("en","zh"),("zh","en")):
        for nproc in (2,):
            b=ctx.Barrier(nproc); q=ctx.Queue()
            ps=[ctx.Process(target=worker, args=(i,nproc,b,q,direction)) for i in range(nproc)]
            for p in ps: p.start()
            res=[q.get() for _ in range(4*nproc)]
            for p in ps: p.join()
            for r in range(4):
                wall=max(t for rr,i,t in res if rr==r)
                print(direction, nproc, "procs round", r, f"{500/wall:.0f} sent/s")
