# Teacher-forced agreement: each int8 variant's logits on the float32 model's own greedy outputs, against float32's.
exec(open("benchmarks/results/2026-12-02-zen3-h/w7.py").read().split("for src, tgt in")[0])
for src, tgt in [tuple(p.split("-")) for p in (sys.argv[4] if len(sys.argv) > 4 else "en-zh,zh-en").split(",")]:
    rows, batches = make_batches(tok, cols[src], src, tgt, 64, 1, mnt)
    with FastDecoder(model, weights="auto") as d:
        outs = [d.generate(**b) for b in batches]
    stats = {name: [0, 0, 0.0, 0.0] for name in variants}
    with torch.inference_mode():
        for b, o in zip(batches, outs):
            dec_in = o[:, :-1]
            mask = (o[:, 1:] != tok.pad_token_id)
            ref = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"], decoder_input_ids=dec_in).logits[mask]
            for name, q in variants.items():
                lg = q(input_ids=b["input_ids"], attention_mask=b["attention_mask"], decoder_input_ids=dec_in).logits[mask]
                s = stats[name]
                s[0] += int((lg.argmax(-1) == ref.argmax(-1)).sum()); s[1] += len(ref)
                s[2] += float(((lg - ref) ** 2).sum()); s[3] += float((ref ** 2).sum())
    for name, (agree, n, err, norm) in stats.items():
        print(src, tgt, name, "top-1 agreement %.3f%%  relative logit error %.4f  (%d tokens)" % (100 * agree / n, (err / norm) ** 0.5, n), flush=True)
