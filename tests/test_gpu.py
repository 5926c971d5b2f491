"""GPU checks: the same model, masks, cache and training step on CUDA, in bf16 and with the GPU attention kernels.
Skipped where no GPU is present (as in CI); run with `pytest tests/test_gpu.py` on a GPU machine."""

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
    ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=64, **overrides)).save_pretrained(tmp_path)
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


def test_fast_training_equals_the_plain_model_on_gpu(tmp_path):
    """Packed batches with grouped SDPA and the fused loss on CUDA: the plain model's loss and gradients; bf16 runs."""
    from zhen.batching import Seq2SeqCollator
    from zhen.fast_training import FastTraining

    model = model_on_gpu(tmp_path, "sdpa", dropout=0.0).train()
    input_ids, attention_mask, labels = padded_batch("cpu")
    examples = [
        {"input_ids": ids[mask.bool()].tolist(), "labels": row[row != -100].tolist()}
        for ids, mask, row in zip(input_ids, attention_mask, labels)
    ]
    batch = Seq2SeqCollator(PAD)(examples)

    def loss_and_gradients(compute):
        model.zero_grad()
        loss = compute()
        loss.backward()
        return loss, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    plain = loss_and_gradients(lambda: model(**{k: v.cuda() for k, v in batch.items()}).loss)
    fast = FastTraining(model)
    assert "CpuDropout" not in fast.describe()
    loss, grads = loss_and_gradients(lambda: fast.loss(model, batch))
    torch.testing.assert_close(loss, plain[0], rtol=1e-4, atol=1e-5)
    for name in grads:
        torch.testing.assert_close(grads[name], plain[1][name], rtol=1e-3, atol=1e-5, msg=name)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        assert torch.isfinite(fast.loss(model, batch))


def test_fast_decoder_equals_generate_on_gpu(tmp_path):
    from zhen.fast_generation import FastDecoder

    model = model_on_gpu(tmp_path, "sdpa", position_embedding_type="rope")
    input_ids, attention_mask, _ = padded_batch("cuda")
    for num_beams in (1, 3):
        kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=10, num_beams=num_beams)
        expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        with FastDecoder(model) as decoder:
            assert torch.equal(decoder.generate(input_ids, attention_mask, **kwargs), expected)
