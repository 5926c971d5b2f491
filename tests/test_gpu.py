"""GPU checks: the same model, masks, cache and training step on CUDA, in bf16 and with the GPU attention kernels.
Skipped where no GPU is present (as in CI); run with `pytest tests/test_gpu.py` on a GPU machine."""

import copy

import pytest
import torch

from zhen import ZhenConfig, ZhenForConditionalGeneration


pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

PAD, EOS, ZH = 0, 2, 5


def padded_batch(device):
    input_ids = torch.tensor([[4, 10, 11, 12, 13, EOS], [4, 14, 15, EOS, PAD, PAD], [4, 16, EOS, PAD, PAD, PAD]])
    labels = torch.tensor([[ZH, 20, 21, EOS], [ZH, 22, EOS, -100], [ZH, 23, 24, EOS]])
    return input_ids.to(device), input_ids.ne(PAD).long().to(device), labels.to(device)


def model_on_gpu(tmp_path, attn_implementation, dtype=torch.float32, **overrides):
    torch.manual_seed(0)
    overrides = {"vocab_size": 64, **overrides}
    ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", **overrides)).save_pretrained(tmp_path)
    model = ZhenForConditionalGeneration.from_pretrained(tmp_path, attn_implementation=attn_implementation, dtype=dtype)
    return model.to("cuda").eval()


@pytest.mark.parametrize("position_embedding_type", ["sinusoidal", "rope"])
def test_sdpa_equals_eager_on_gpu(tmp_path, position_embedding_type):
    eager = model_on_gpu(tmp_path / "e", "eager", position_embedding_type=position_embedding_type)
    sdpa = model_on_gpu(tmp_path / "s", "sdpa", position_embedding_type=position_embedding_type)
    input_ids, attention_mask, labels = padded_batch("cuda")
    kwargs = dict(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    torch.testing.assert_close(eager(**kwargs).logits, sdpa(**kwargs).logits, rtol=1e-4, atol=1e-4)


def test_bf16_generation_cached_equals_uncached_and_padding_is_masked(tmp_path):
    model = model_on_gpu(tmp_path, "sdpa", dtype=torch.bfloat16, position_embedding_type="rope")
    input_ids, attention_mask, _ = padded_batch("cuda")
    kwargs = dict(input_ids=input_ids, attention_mask=attention_mask, forced_bos_token_id=ZH, max_new_tokens=10)
    assert torch.equal(model.generate(use_cache=True, **kwargs), model.generate(use_cache=False, **kwargs))
    row = model.generate(input_ids=input_ids[1:2, :4], forced_bos_token_id=ZH, max_new_tokens=10)
    assert torch.equal(row[0], model.generate(**kwargs)[1])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_mixed_precision_training_step_on_gpu(tmp_path, dtype):
    model = model_on_gpu(tmp_path, "sdpa").train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    scaler = torch.amp.GradScaler(enabled=dtype == torch.float16)
    input_ids, attention_mask, labels = padded_batch("cuda")
    losses = []
    for _ in range(20):
        with torch.autocast("cuda", dtype=dtype):
            loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert all(torch.isfinite(torch.tensor(losses))) and losses[-1] < losses[0] * 0.7


def test_flash_attention_matches_sdpa_with_padded_sources(tmp_path):
    pytest.importorskip("flash_attn")
    sdpa = model_on_gpu(tmp_path / "s", "sdpa", dtype=torch.bfloat16)
    flash = model_on_gpu(tmp_path / "f", "flash_attention_2", dtype=torch.bfloat16)
    input_ids, attention_mask, labels = padded_batch("cuda")
    kwargs = dict(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    torch.testing.assert_close(flash(**kwargs).logits.float(), sdpa(**kwargs).logits.float(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("batch_device", ["cpu", "cuda"])  # zhen-train collates on the CPU; a GPU data loader does not
def test_fast_training_equals_the_plain_model_on_gpu(tmp_path, batch_device):
    """On CUDA zhen trains the plain model by default; packed batches with grouped SDPA and the fused loss, asked for,
    give the plain model's loss and gradients there too; bf16 runs."""
    from zhen.batching import Seq2SeqCollator
    from zhen.fast_training import FastTraining

    model = model_on_gpu(tmp_path, "sdpa", dropout=0.0).train()
    input_ids, attention_mask, labels = padded_batch("cpu")
    examples = [
        {"input_ids": ids[mask.bool()].tolist(), "labels": row[row != -100].tolist()}
        for ids, mask, row in zip(input_ids, attention_mask, labels)
    ]
    batch = {key: value.to(batch_device) for key, value in Seq2SeqCollator(PAD)(examples).items()}

    def loss_and_gradients(compute):
        model.zero_grad()
        loss = compute()
        loss.backward()
        return loss, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    plain = loss_and_gradients(lambda: model(**{k: v.cuda() for k, v in batch.items()}).loss)
    default = FastTraining(model)
    # faster on a GPU: README, Performance
    assert default.describe() == "the plain model (padded batches, logits) in CUDA graphs where faster"
    torch.testing.assert_close(loss_and_gradients(lambda: default.loss(model, batch))[0], plain[0])
    default.remove()
    fast = FastTraining(model, packing=True, fused_loss=True)
    assert "CpuDropout" not in fast.describe()
    loss, grads = loss_and_gradients(lambda: fast.loss(model, batch))
    torch.testing.assert_close(loss, plain[0], rtol=1e-4, atol=1e-5)
    for name in grads:
        torch.testing.assert_close(grads[name], plain[1][name], rtol=1e-3, atol=1e-5, msg=name)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert torch.isfinite(fast.loss(model, batch))


def collated(lengths, seed=0):
    """A batch as zhen-train's collator gives it, on the CPU: sources and targets of the given lengths."""
    from zhen.batching import Seq2SeqCollator

    generator = torch.Generator().manual_seed(seed)
    examples = [
        {"input_ids": [*torch.randint(6, 64, (s,), generator=generator).tolist(), EOS],
         "labels": [ZH, *torch.randint(6, 64, (t,), generator=generator).tolist(), EOS]}
        for s, t in lengths
    ]  # fmt: skip
    return Seq2SeqCollator(PAD)(examples)


@pytest.mark.parametrize("mixed_precision", ["no", "bf16"])
@pytest.mark.parametrize("cuda_graphs", [True, None])
def test_training_in_cuda_graphs_equals_eager_training_on_gpu(tmp_path, mixed_precision, cuda_graphs):
    """zhen's GPU training step through CUDA graphs trains as the eager plain model does: batches of three shapes
    give the eager losses step after step and the same weights, whether every shape is replayed (`True`: captured at
    its first batch) or each keeps what measured faster (the default: eager, eager timed, captured, replayed timed);
    an optimizer's `zero_grad(set_to_none=True)` is undone."""
    from zhen.fast_training import FastTraining

    model = model_on_gpu(tmp_path, "sdpa", dropout=0.0).train()
    eager = copy.deepcopy(model)
    fast = FastTraining(model, mixed_precision=mixed_precision, cuda_graphs=cuda_graphs)
    assert fast.graphs is not None and "CUDA graphs" in fast.describe()
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-3, fused=True) for m in (model, eager)]
    autocast = torch.autocast("cuda", torch.bfloat16, enabled=mixed_precision == "bf16")
    batches = [collated([(5, 3), (2, 6), (7, 1)]), collated([(20, 9), (3, 3)], 1), collated([(4, 18)] * 17, 2)]
    tolerance = dict(rtol=1e-4, atol=1e-5) if mixed_precision == "no" else dict(rtol=3e-2, atol=3e-2)
    passes = 2 if cuda_graphs else 5
    for i, batch in enumerate(batches * passes):
        graphed_loss = fast.graphs(model, batch)
        with autocast:
            eager_loss = eager(**{k: v.cuda() for k, v in batch.items()}).loss
        eager_loss.backward()
        for m, optimizer in zip((model, eager), optimizers):
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=i % 2 == 0)
        torch.testing.assert_close(graphed_loss, eager_loss.detach(), **tolerance, msg=f"step {i}")
    shapes = fast.graphs.shapes.values()
    assert len(shapes) == 3 and fast.graphs.eager_steps + fast.graphs.replayed_steps == 3 * passes - 3
    if cuda_graphs:
        assert all(shape.graph is not None for shape in shapes) and fast.graphs.eager_steps == 0
    else:
        assert all(shape.replays == (shape.graph is not None) for shape in shapes), fast.graphs.describe()
    for (name, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=5e-3 if mixed_precision == "no" else 2e-2, msg=name)


@pytest.mark.parametrize("short_of_memory", [False, True])
def test_a_training_capture_keeps_the_allocators_cache_unless_the_gpu_is_short_of_memory(monkeypatch, short_of_memory):
    """`torch.cuda.graph` empties the allocator's cache before every capture (after which eager steps allocate from
    the driver anew); zhen's capture keeps it, and empties it only where the GPU is short of memory."""
    from zhen import fast_training

    monkeypatch.setattr(fast_training, "LOW_GPU_MEMORY", 1.0 if short_of_memory else 0.0)
    device = torch.device("cuda")
    x = torch.arange(4.0, device=device)
    torch.empty(64 * 2**20, device=device)  # 256 MiB, freed into the cache at once
    reserved = torch.cuda.memory_reserved(device)
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with fast_training.capturing(graph, None, stream):
        y = x * 2
    torch.cuda.current_stream(device).wait_stream(stream)
    x += 1
    graph.replay()
    torch.cuda.synchronize(device)
    assert y.tolist() == [2.0, 4.0, 6.0, 8.0]
    assert (torch.cuda.memory_reserved(device) < reserved) == short_of_memory


def test_the_training_loop_runs_at_most_one_step_ahead_of_the_gpu():
    """zhen-train collates the next batch while the GPU runs the step just launched, and then waits for that step."""
    from zhen.training import wait_for_the_step_before

    device = torch.device("cuda")
    assert wait_for_the_step_before(None, torch.device("cpu")) is None
    x = torch.randn(4096, 4096, device=device)
    for _ in range(20):  # a "step" of ~50 ms of float32 products, launched in well under that
        x = x @ x / 64
    first = wait_for_the_step_before(None, device)  # nothing before it: returns at once
    assert not first.query()
    second = wait_for_the_step_before(first, device)
    assert first.query() and isinstance(second, torch.cuda.Event)


def test_cuda_graph_replays_draw_fresh_dropout(tmp_path):
    from zhen.fast_training import FastTraining

    model = model_on_gpu(tmp_path, "sdpa", dropout=0.3).train()
    graphs = FastTraining(model, cuda_graphs=True).graphs
    batch = collated([(6, 5), (3, 4)])
    losses = [float(graphs(model, batch)) for _ in range(4)]  # eager (and captured), then three replays
    assert len(set(losses)) == 4, losses


@pytest.mark.parametrize("position_embedding_type", ["sinusoidal", "learned", "rope"])
@pytest.mark.parametrize("cuda_graphs", [True, False])
def test_fast_decoder_equals_generate_on_gpu(tmp_path, position_embedding_type, cuda_graphs):
    """Float32 weights: the token ids of `generate`, with each step replayed as a CUDA graph or launched eagerly."""
    from zhen.fast_generation import FastDecoder

    model = model_on_gpu(tmp_path, "sdpa", position_embedding_type=position_embedding_type)
    input_ids, attention_mask, _ = padded_batch("cuda")
    for num_beams in (1, 3):
        kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=10, num_beams=num_beams)
        expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        with FastDecoder(model, weights="plain", cuda_graphs=cuda_graphs) as decoder:
            assert decoder.cuda_graphs == cuda_graphs
            assert torch.equal(decoder.generate(input_ids, attention_mask, **kwargs), expected)


@pytest.mark.parametrize("cuda_graphs", [True, False])
def test_finished_sentences_leave_the_batch_on_gpu(tiny_model, tiny_tokenizer, tiny_pairs, cuda_graphs, monkeypatch):
    """A trained model's translations end at different lengths: rows leave the batch (and graphs are captured again
    for the smaller batch), and every sentence still gets what `generate` gives it."""
    from zhen.decoder_steps import DecoderSteps
    from zhen.fast_generation import FastDecoder

    kept, keep = [], DecoderSteps.keep
    monkeypatch.setattr(DecoderSteps, "keep", lambda self, *args: kept.append(1) or keep(self, *args))
    model = copy.deepcopy(tiny_model).cuda()
    texts = sorted(en for en, _ in tiny_pairs)
    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer(sorted(texts, key=len)[::3] + sorted(texts, key=len)[-3:], padding=True, return_tensors="pt")
    input_ids, attention_mask = batch["input_ids"].cuda(), batch["attention_mask"].cuda()
    for num_beams in (1, 4):
        kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), max_new_tokens=40, num_beams=num_beams)
        expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        with FastDecoder(model, weights="plain", cuda_graphs=cuda_graphs) as decoder:
            assert torch.equal(decoder.generate(input_ids, attention_mask, **kwargs), expected)
    assert kept, "no row left the batch"


@pytest.mark.parametrize("num_beams", [1, 4])
def test_the_pipelines_lists_decode_on_gpu_as_translate_decodes(tiny_model, tiny_tokenizer, tiny_pairs, num_beams):
    """A list given to a pipeline on the GPU is batched and decoded as `zhen.translate` decodes it there (the default
    session: bf16 copies, CUDA graphs), its token ids handed back on the CPU."""
    from zhen import ZhenTranslationPipeline, translate

    model = copy.deepcopy(tiny_model).cuda()
    translator = ZhenTranslationPipeline(model=model, tokenizer=tiny_tokenizer, device=0, tgt_lang="zh")
    texts = [en for en, _ in tiny_pairs]
    listed = translator(texts, batch_size=4, num_beams=num_beams, return_text=True, return_tensors=True)
    expected = translate(texts, model, tiny_tokenizer, tgt_lang="zh", batch_size=4, num_beams=num_beams)
    assert [record["translation_text"] for record in listed] == expected
    assert all(record["translation_token_ids"].device.type == "cpu" for record in listed)


def test_default_gpu_session_decodes_in_bf16_with_cuda_graphs(tmp_path):
    """On a GPU with bf16, `FastDecoder(model)` (what `zhen.translate` opens) multiplies by bf16 copies of the
    decoder's weights and replays CUDA graphs; its translations mostly agree with float32 `generate` (random weights,
    so near-ties flip some tokens), and the model's own weights stay float32."""
    from zhen.fast_generation import FastDecoder

    model = model_on_gpu(tmp_path, "sdpa", position_embedding_type="rope")
    input_ids, attention_mask, _ = padded_batch("cuda")
    kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=12, min_new_tokens=12)
    expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
    with FastDecoder(model) as decoder:
        assert decoder.weights == "bf16" and decoder.cuda_graphs
        out = decoder.generate(input_ids, attention_mask, **kwargs)
    assert out.shape == expected.shape and (out == expected).float().mean() > 0.5
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_dynamic_rope_decodes_without_cuda_graphs(tmp_path):
    from zhen.fast_generation import FastDecoder

    model = model_on_gpu(tmp_path, "sdpa", position_embedding_type="rope",
                         rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0})  # fmt: skip
    input_ids, attention_mask, _ = padded_batch("cuda")
    kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=10)
    with FastDecoder(model, weights="plain") as decoder:
        assert not decoder.cuda_graphs
        expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        assert torch.equal(decoder.generate(input_ids, attention_mask, **kwargs), expected)
    with pytest.raises(ValueError, match="cuda_graphs=False"):
        FastDecoder(model, cuda_graphs=True)


def test_sample_recipe_end_to_end_on_gpu(tmp_path, fresh_accelerator_state, monkeypatch):
    """The README's first command (shortened) on a GPU: `--mixed-precision auto` trains in bf16 there, the batches
    the CPU collates train the plain model in CUDA graphs on the GPU (decided for the accelerator's device, not for
    the CPU the model is built on), and the exported model translates on the GPU with the default decoding session
    (bf16 session weights, CUDA graphs)."""
    from accelerate.state import AcceleratorState

    import zhen
    import zhen.training
    from zhen.commands.train import resolve_config
    from zhen.fast_training import FastTraining
    from zhen.training import train
    from zhen.translation import load_model_and_tokenizer

    made = []
    monkeypatch.setattr(zhen.training, "FastTraining", lambda *a, **k: made.append(FastTraining(*a, **k)) or made[-1])

    args = ["--output-dir", str(tmp_path), "--max-steps", "8", "--eval-steps", "4", "--save-steps", "8",
            "--eval-bleu-samples", "8", "--mixed-precision", "auto"]  # fmt: skip
    export = train(resolve_config(args))
    assert AcceleratorState().mixed_precision == "bf16" and AcceleratorState().device.type == "cuda"
    [fast] = made
    assert not fast.packing and fast.graphs is not None and fast.graphs.shapes
    model, tokenizer = load_model_and_tokenizer(export, device="cuda")
    [output] = zhen.translate(["I like tea."], model=model, tokenizer=tokenizer, src_lang="en", tgt_lang="zh")
    assert isinstance(output, str)
