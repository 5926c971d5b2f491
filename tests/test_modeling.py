"""Model tests on tiny configs: save/load, ties, every position type × norm placement learning a task, cache, masks,
attention backends, gradient checkpointing, RoPE properties, parity with reference implementations, the loss."""

import itertools

import pytest
import torch
from safetensors import safe_open
from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

from zhen import ZhenConfig, ZhenForConditionalGeneration, ZhenModel, modeling_zhen
from zhen.modeling_zhen import (
    ChunkedLinearCrossEntropy,
    ZhenAttention,
    ZhenPreTrainedModel,
    ZhenRotaryEmbedding,
    ZhenSinusoidalPositionalEmbedding,
    apply_rotary_pos_emb,
)


VARIANTS = list(itertools.product(["sinusoidal", "learned", "rope"], [True, False]))
PAD, BOS, EOS, ZH = 0, 1, 2, 5


def tiny_config(**overrides) -> ZhenConfig:
    return ZhenConfig.from_preset("tiny", vocab_size=40, **overrides)


def tiny_model(seed=0, **overrides) -> ZhenForConditionalGeneration:
    torch.manual_seed(seed)
    return ZhenForConditionalGeneration(tiny_config(**overrides)).eval()


def padded_batch():
    input_ids = torch.tensor([[4, 10, 11, 12, 13, EOS], [4, 14, 15, EOS, PAD, PAD], [4, 16, EOS, PAD, PAD, PAD]])
    labels = torch.tensor([[ZH, 20, 21, EOS], [ZH, 22, EOS, -100], [ZH, 23, 24, EOS]])
    return input_ids, input_ids.ne(PAD).long(), labels


# --- save / load / ties --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("position_embedding_type", ["sinusoidal", "learned", "rope"])
def test_save_load_through_auto_classes_gives_identical_logits(tmp_path, position_embedding_type):
    model = tiny_model(position_embedding_type=position_embedding_type)
    input_ids, attention_mask, labels = padded_batch()
    expected = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).logits
    model.save_pretrained(tmp_path)

    assert (tmp_path / "model.safetensors").exists() and not (tmp_path / "pytorch_model.bin").exists()
    assert isinstance(AutoConfig.from_pretrained(tmp_path), ZhenConfig)
    reloaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    assert isinstance(reloaded, ZhenForConditionalGeneration)
    torch.testing.assert_close(
        reloaded(input_ids=input_ids, attention_mask=attention_mask, labels=labels).logits, expected, rtol=0, atol=0
    )
    bare = AutoModel.from_pretrained(tmp_path).eval()
    assert isinstance(bare, ZhenModel)
    hidden = model.model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=labels.clamp(min=0))
    torch.testing.assert_close(
        bare(
            input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=labels.clamp(min=0)
        ).last_hidden_state,
        hidden.last_hidden_state,
    )


def test_saved_config_has_complete_auto_map(tmp_path):
    tiny_model().save_pretrained(tmp_path)
    config = AutoConfig.from_pretrained(tmp_path)
    assert set(config.auto_map) == {"AutoConfig", "AutoModel", "AutoModelForSeq2SeqLM"}
    assert (tmp_path / "modeling_zhen.py").exists() and (tmp_path / "configuration_zhen.py").exists()


def test_embeddings_are_tied_and_stored_once(tmp_path):
    model = tiny_model()
    shared = model.model.encoder.embed_tokens.weight
    assert model.model.decoder.embed_tokens.weight is shared and model.lm_head.weight is shared
    model.save_pretrained(tmp_path)
    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        embedding_keys = [k for k in f.keys() if "embed_tokens" in k or "lm_head" in k]
    assert embedding_keys == ["model.encoder.embed_tokens.weight"]
    reloaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    assert reloaded.lm_head.weight is reloaded.model.encoder.embed_tokens.weight
    assert reloaded.model.decoder.embed_tokens.weight is reloaded.model.encoder.embed_tokens.weight


def test_untied_embeddings_are_independent(tmp_path):
    model = tiny_model(tie_word_embeddings=False)
    weights = [model.model.encoder.embed_tokens.weight, model.model.decoder.embed_tokens.weight, model.lm_head.weight]
    assert len({w.data_ptr() for w in weights}) == 3
    model.train()
    input_ids, attention_mask, labels = padded_batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss.backward()
    optimizer.step()
    assert not torch.equal(weights[0], weights[2]) and not torch.equal(weights[1], weights[2])
    model.save_pretrained(tmp_path)
    with safe_open(tmp_path / "model.safetensors", "pt") as f:
        keys = set(f.keys())
    assert {"lm_head.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"} <= keys
    reloaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    torch.testing.assert_close(reloaded.lm_head.weight, model.lm_head.weight)
    assert reloaded.lm_head.weight is not reloaded.model.encoder.embed_tokens.weight


@pytest.mark.parametrize("tie", [True, False])
def test_resize_token_embeddings(tie):
    model = tiny_model(tie_word_embeddings=tie)
    model.resize_token_embeddings(48)
    assert model.config.vocab_size == 48
    for module in (model.model.encoder.embed_tokens, model.model.decoder.embed_tokens, model.lm_head):
        assert module.weight.shape[0] == 48
    assert (model.lm_head.weight is model.model.encoder.embed_tokens.weight) == tie
    input_ids, attention_mask, labels = padded_batch()
    assert model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).logits.shape[-1] == 48


# --- every position type x norm placement learns a task ------------------------------------------------------------


def reverse_task_batch(generator, batch_size=32, vocab=range(6, 22)):
    """Source `[__en__] a b c ... </s>`, target `[__zh__] ... c b a </s>` with random lengths 3-7."""
    lengths = torch.randint(3, 8, (batch_size,), generator=generator)
    seqs = [torch.tensor(vocab)[torch.randint(0, len(vocab), (int(n),), generator=generator)] for n in lengths]
    width = int(lengths.max()) + 2
    input_ids = torch.full((batch_size, width), PAD)
    labels = torch.full((batch_size, width), -100)
    for i, seq in enumerate(seqs):
        input_ids[i, : len(seq) + 2] = torch.cat([torch.tensor([4]), seq, torch.tensor([EOS])])
        labels[i, : len(seq) + 2] = torch.cat([torch.tensor([ZH]), seq.flip(0), torch.tensor([EOS])])
    return input_ids, input_ids.ne(PAD).long(), labels


@pytest.mark.parametrize("position_embedding_type,normalize_before", VARIANTS)
def test_tiny_model_learns_to_reverse(position_embedding_type, normalize_before):
    """Reversing needs working positions on both sides and working cross-attention; greedy decoding must then
    reproduce the reversed sequences exactly, not merely lower the loss."""
    torch.manual_seed(0)
    config = tiny_config(position_embedding_type=position_embedding_type, normalize_before=normalize_before)
    model = ZhenForConditionalGeneration(config).train()
    steps, warmup = 300, 30
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, foreach=True)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / warmup, (steps - s) / steps))
    generator = torch.Generator().manual_seed(0)
    for _ in range(steps):
        input_ids, attention_mask, labels = reverse_task_batch(generator)
        loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        schedule.step()

    model.eval()
    input_ids, attention_mask, labels = reverse_task_batch(torch.Generator().manual_seed(123))
    generated = model.generate(
        input_ids=input_ids, attention_mask=attention_mask, forced_bos_token_id=ZH, max_new_tokens=10, do_sample=False
    )
    correct = 0
    for row, target in zip(generated, labels):
        target = target[target != -100].tolist()
        correct += row[1 : 1 + len(target)].tolist() == target
    assert correct >= 30, f"only {correct}/32 sequences reversed exactly (final training loss {loss.item():.3f})"


# --- cache, masks, attention backends ------------------------------------------------------------------------------


@pytest.mark.parametrize("position_embedding_type,normalize_before", VARIANTS)
@pytest.mark.parametrize("num_beams", [1, 4])
def test_cached_generation_equals_uncached(position_embedding_type, normalize_before, num_beams):
    model = tiny_model(position_embedding_type=position_embedding_type, normalize_before=normalize_before)
    input_ids, attention_mask, _ = padded_batch()
    kwargs = dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        forced_bos_token_id=ZH,
        num_beams=num_beams,
        max_new_tokens=12,
        min_new_tokens=12,
        do_sample=False,
        output_scores=True,
        return_dict_in_generate=True,
    )
    cached = model.generate(use_cache=True, **kwargs)
    uncached = model.generate(use_cache=False, **kwargs)
    assert torch.equal(cached.sequences, uncached.sequences)
    for a, b in zip(cached.scores, uncached.scores):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_cross_attention_keys_and_values_are_computed_once_per_generate():
    model = tiny_model()
    calls = []
    for layer in model.model.decoder.layers:
        layer.encoder_attn.kv_proj.register_forward_hook(lambda *args: calls.append(1))
    input_ids, attention_mask, _ = padded_batch()
    model.generate(
        input_ids=input_ids,
        attention_mask=attention_mask,
        forced_bos_token_id=ZH,
        max_new_tokens=8,
        min_new_tokens=8,
        do_sample=False,
    )
    assert len(calls) == model.config.decoder_layers


@pytest.mark.parametrize("position_embedding_type", ["sinusoidal", "learned", "rope"])
def test_eager_equals_sdpa(tmp_path, position_embedding_type):
    tiny_model(position_embedding_type=position_embedding_type).save_pretrained(tmp_path)
    eager = ZhenForConditionalGeneration.from_pretrained(tmp_path, attn_implementation="eager").eval()
    sdpa = ZhenForConditionalGeneration.from_pretrained(tmp_path, attn_implementation="sdpa").eval()
    assert eager.config._attn_implementation == "eager" and sdpa.config._attn_implementation == "sdpa"
    input_ids, attention_mask, labels = padded_batch()
    decoder_attention_mask = labels.ne(-100).long()
    kwargs = dict(
        input_ids=input_ids,
        attention_mask=attention_mask,
        labels=labels,
        decoder_attention_mask=decoder_attention_mask,
    )
    torch.testing.assert_close(eager(**kwargs).logits, sdpa(**kwargs).logits, rtol=1e-5, atol=1e-5)
    gen = dict(input_ids=input_ids, attention_mask=attention_mask, forced_bos_token_id=ZH, max_new_tokens=8)
    assert torch.equal(eager.generate(**gen), sdpa.generate(**gen))


@pytest.mark.parametrize("attn_implementation", ["eager", "sdpa"])
@pytest.mark.parametrize("position_embedding_type", ["sinusoidal", "rope"])
def test_padded_batch_equals_each_row_alone(tmp_path, attn_implementation, position_embedding_type):
    tiny_model(position_embedding_type=position_embedding_type).save_pretrained(tmp_path)
    model = ZhenForConditionalGeneration.from_pretrained(tmp_path, attn_implementation=attn_implementation).eval()
    input_ids, attention_mask, labels = padded_batch()
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels)
    decoder_attention_mask = labels.ne(-100).long()
    batch_logits = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        decoder_input_ids=decoder_input_ids,
        decoder_attention_mask=decoder_attention_mask,
    ).logits
    batch_generated = model.generate(
        input_ids=input_ids, attention_mask=attention_mask, forced_bos_token_id=ZH, max_new_tokens=8, min_new_tokens=8
    )
    for i in range(len(input_ids)):
        src, tgt = attention_mask[i].bool(), decoder_attention_mask[i].bool()
        row_logits = model(
            input_ids=input_ids[i : i + 1, src], decoder_input_ids=decoder_input_ids[i : i + 1, tgt]
        ).logits
        torch.testing.assert_close(row_logits[0], batch_logits[i, tgt], rtol=1e-4, atol=1e-5)
        row_generated = model.generate(
            input_ids=input_ids[i : i + 1, src], forced_bos_token_id=ZH, max_new_tokens=8, min_new_tokens=8
        )
        assert torch.equal(row_generated[0], batch_generated[i])


def test_left_padding_equals_right_padding():
    model = tiny_model()
    right = torch.tensor([[4, 10, 11, EOS], [4, 12, EOS, PAD]])
    left = torch.tensor([[4, 10, 11, EOS], [PAD, 4, 12, EOS]])
    encode = model.get_encoder()
    out_right = encode(input_ids=right, attention_mask=right.ne(PAD).long()).last_hidden_state
    out_left = encode(input_ids=left, attention_mask=left.ne(PAD).long()).last_hidden_state
    torch.testing.assert_close(out_right[1, :3], out_left[1, 1:])


def test_output_attentions_and_hidden_states_shapes(tmp_path):
    tiny_model().save_pretrained(tmp_path)
    model = ZhenForConditionalGeneration.from_pretrained(tmp_path, attn_implementation="eager").eval()
    config = model.config
    input_ids, attention_mask, labels = padded_batch()
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        labels=labels,
        output_attentions=True,
        output_hidden_states=True,
    )
    batch, src_len, tgt_len = input_ids.shape[0], input_ids.shape[1], labels.shape[1]
    assert len(out.encoder_attentions) == config.encoder_layers
    assert len(out.decoder_attentions) == len(out.cross_attentions) == config.decoder_layers
    assert out.encoder_attentions[0].shape == (batch, config.encoder_attention_heads, src_len, src_len)
    assert out.decoder_attentions[0].shape == (batch, config.decoder_attention_heads, tgt_len, tgt_len)
    assert out.cross_attentions[0].shape == (batch, config.decoder_attention_heads, tgt_len, src_len)
    assert len(out.encoder_hidden_states) == config.encoder_layers + 1
    assert len(out.decoder_hidden_states) == config.decoder_layers + 1
    assert out.encoder_hidden_states[-1].shape == (batch, src_len, config.d_model)
    torch.testing.assert_close(out.encoder_hidden_states[-1], out.encoder_last_hidden_state)
    # causal: no weight on future target positions; no weight on source padding
    assert out.decoder_attentions[0][..., 0, 1:].abs().max() == 0
    assert out.cross_attentions[0][2, :, :, 3:].abs().max() == 0
    torch.testing.assert_close(out.cross_attentions[0].sum(-1), torch.ones(batch, 4, tgt_len))


@pytest.mark.parametrize("normalize_before", [True, False])
def test_gradient_checkpointing_gives_the_same_gradients(normalize_before):
    def gradients(checkpointing: bool):
        model = tiny_model(seed=1, normalize_before=normalize_before, position_embedding_type="rope").train()
        if checkpointing:
            model.activation_checkpointing_enable()
        input_ids, attention_mask, labels = padded_batch()
        model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss.backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    plain, checkpointed = gradients(False), gradients(True)
    assert plain.keys() == checkpointed.keys() and len(plain) > 20
    for name in plain:
        torch.testing.assert_close(plain[name], checkpointed[name], msg=name)


# --- positions -----------------------------------------------------------------------------------------------------


def test_rope_scores_depend_only_on_relative_position():
    rotary = ZhenRotaryEmbedding(head_dim=16, theta=10000.0)
    torch.manual_seed(0)
    q, k = torch.randn(1, 2, 6, 16), torch.randn(1, 2, 6, 16)

    def scores(offset):
        positions = torch.arange(offset, offset + 6)[None]
        cos, sin = rotary(q, positions)
        q_rot, k_rot = apply_rotary_pos_emb(q, k, cos, sin)
        return q_rot @ k_rot.transpose(-1, -2)

    torch.testing.assert_close(scores(0), scores(37), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(scores(0), scores(1000), rtol=1e-3, atol=1e-3)
    assert not torch.allclose(scores(0), q @ k.transpose(-1, -2), atol=1e-2)


def test_rope_model_output_is_shift_invariant_in_the_encoder():
    """With RoPE, the encoder sees only relative positions: left padding (which shifts nothing, positions count
    real tokens) and an explicit shift of all positions give the same output."""
    model = tiny_model(position_embedding_type="rope")
    encoder = model.get_encoder()
    input_ids = torch.tensor([[4, 10, 11, 12, EOS]])
    base = encoder(input_ids=input_ids).last_hidden_state
    original = encoder.rotary_emb.forward

    def shifted(x, position_ids):
        return original(x, position_ids + 50)

    encoder.rotary_emb.forward = shifted
    torch.testing.assert_close(encoder(input_ids=input_ids).last_hidden_state, base, rtol=1e-4, atol=1e-4)


def test_rope_decodes_past_max_position_embeddings():
    model = tiny_model(position_embedding_type="rope", max_position_embeddings=8)
    input_ids = torch.tensor([[4] + list(range(6, 26)) + [EOS]])  # 22 source tokens > 8
    out = model.generate(input_ids=input_ids, forced_bos_token_id=ZH, max_new_tokens=20, min_new_tokens=20)
    assert out.shape == (1, 21)  # <s> + 20 new tokens, 21 decoder positions > 8


@pytest.mark.parametrize("position_embedding_type", ["sinusoidal", "learned"])
def test_position_table_overflow_raises_clear_error(position_embedding_type):
    model = tiny_model(position_embedding_type=position_embedding_type, max_position_embeddings=8)
    with pytest.raises(ValueError, match="max_position_embeddings=8"):
        model(input_ids=torch.ones(1, 9, dtype=torch.long), decoder_input_ids=torch.ones(1, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="max_position_embeddings=8"):
        model.generate(input_ids=torch.ones(1, 4, dtype=torch.long), max_new_tokens=12, min_new_tokens=12)


def test_sinusoidal_table_matches_marian():
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding

    for dim in (64, 512):
        ours = ZhenSinusoidalPositionalEmbedding(128, dim).create_weight()
        marian = MarianSinusoidalPositionalEmbedding(128, dim).create_weight()
        torch.testing.assert_close(ours, marian.float())


def test_sinusoidal_table_survives_from_pretrained(tmp_path):
    """The table is a non-persistent buffer; `from_pretrained` builds on meta and must rebuild it."""
    tiny_model().save_pretrained(tmp_path)
    reloaded = ZhenForConditionalGeneration.from_pretrained(tmp_path)
    table = reloaded.model.encoder.embed_positions
    torch.testing.assert_close(table.weight, table.create_weight())
    rope = ZhenForConditionalGeneration.from_pretrained(tmp_path, position_embedding_type="rope")
    torch.testing.assert_close(rope.model.decoder.rotary_emb.inv_freq, rope.model.decoder.rotary_emb.compute_inv_freq())


def test_rotary_matches_transformers_llama_rotary():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb as llama_apply

    llama = LlamaRotaryEmbedding(LlamaConfig(hidden_size=64, num_attention_heads=4, rope_theta=5000.0))
    ours = ZhenRotaryEmbedding(head_dim=16, theta=5000.0)
    torch.manual_seed(0)
    q, k = torch.randn(2, 4, 9, 16), torch.randn(2, 4, 9, 16)
    positions = torch.arange(3, 12)[None].expand(2, -1)
    cos, sin = ours(q, positions)
    llama_cos, llama_sin = llama(q, positions)
    torch.testing.assert_close(cos, llama_cos)
    torch.testing.assert_close(sin, llama_sin)
    for a, b in zip(apply_rotary_pos_emb(q, k, cos, sin), llama_apply(q, k, llama_cos, llama_sin)):
        torch.testing.assert_close(a, b)


# --- loss ----------------------------------------------------------------------------------------------------------


def test_loss_ignores_minus_100_and_applies_label_smoothing():
    model = tiny_model()
    input_ids, attention_mask, labels = padded_batch()
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    expected = torch.nn.functional.cross_entropy(out.logits.view(-1, 40), labels.view(-1), ignore_index=-100)
    torch.testing.assert_close(out.loss, expected)

    model.config.label_smoothing = 0.1
    smoothed = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    expected = torch.nn.functional.cross_entropy(out.logits.view(-1, 40), labels.view(-1), label_smoothing=0.1)
    torch.testing.assert_close(smoothed, expected)


def test_num_items_in_batch_makes_accumulated_gradients_equal_the_full_batch():
    """Trainer passes the token count of all micro-batches; two half-batches must then sum to the full batch."""
    input_ids, attention_mask, labels = padded_batch()
    n_items = labels.ne(-100).sum()

    def grads(micro_batches):
        model = tiny_model(seed=3).train()
        for rows in micro_batches:
            model(
                input_ids=input_ids[rows],
                attention_mask=attention_mask[rows],
                labels=labels[rows],
                num_items_in_batch=n_items,
            ).loss.backward()
        return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])

    full = grads([slice(0, 3)])
    accumulated = grads([slice(0, 1), slice(1, 3)])
    torch.testing.assert_close(accumulated, full, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("position_embedding_type,normalize_before", VARIANTS)
@pytest.mark.parametrize("loss_chunk_size,attention_groups", [(None, 1), (4, 3)])
def test_training_skips_padding_with_the_same_loss_and_gradients(
    monkeypatch, position_embedding_type, normalize_before, loss_chunk_size, attention_groups
):
    """Training passes run projections, feed-forward layers and norms on real tokens only: source padding, and target
    positions after a row's last label (a -100 inside a row is kept); attention runs per group of rows of similar
    source length, each padded to its longest row only. Loss and gradients must equal the padded layout's, and the
    layers must really see fewer rows."""
    input_ids, attention_mask, _ = padded_batch()
    labels = torch.tensor([[ZH, 20, 21, EOS, -100], [ZH, 22, EOS, -100, -100], [ZH, -100, 24, EOS, -100]])
    monkeypatch.setattr(modeling_zhen, "MIN_GROUP_ROWS", 1)
    monkeypatch.setattr(ZhenPreTrainedModel, "attention_groups", attention_groups)
    widths_seen, attend = [], ZhenAttention._attend

    def recording_attend(self, query, key, *args, **kwargs):
        widths_seen.append(key.shape[2])
        return attend(self, query, key, *args, **kwargs)

    monkeypatch.setattr(ZhenAttention, "_attend", recording_attend)
    rows_seen = {}

    def run(skip_padding):
        monkeypatch.setattr(ZhenPreTrainedModel, "skip_padding", skip_padding)
        model = tiny_model(
            seed=4, dropout=0.0, label_smoothing=0.1, position_embedding_type=position_embedding_type,
            normalize_before=normalize_before,
        ).train()  # fmt: skip
        model.loss_chunk_size = loss_chunk_size
        for stack in ("encoder", "decoder"):
            fc1 = getattr(model.model, stack).layers[0].mlp.fc1
            fc1.register_forward_hook(lambda m, args, out, stack=stack: rows_seen.__setitem__(stack, args[0].shape))
        loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        loss.backward()
        return loss, {name: p.grad for name, p in model.named_parameters() if p.grad is not None}

    padded_loss, padded_grads = run(False)
    assert rows_seen == {"encoder": (3, 6, 64), "decoder": (3, 5, 64)}
    widths_seen.clear()
    loss, grads = run(True)
    assert rows_seen == {"encoder": (6 + 4 + 3, 64), "decoder": (4 + 3 + 4, 64)}
    # encoder self-attention keys: the source rows, sorted by length (3, 4, 6); grouped: each group its own width
    assert widths_seen[0:attention_groups] == ([6] if attention_groups == 1 else [3, 4, 6])
    torch.testing.assert_close(loss, padded_loss)
    assert grads.keys() == padded_grads.keys()
    for name in grads:
        torch.testing.assert_close(grads[name], padded_grads[name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize("tie_word_embeddings", [True, False])
def test_one_embedding_lookup_for_source_and_target_gives_the_same_gradients(monkeypatch, tie_word_embeddings):
    """Training embeds source and target with one lookup of a shared table; loss and gradients must not change."""
    input_ids, attention_mask, labels = padded_batch()
    lookups = []

    def loss_and_gradients(one_lookup):
        monkeypatch.setattr(ZhenModel, "shares_one_lookup", lambda self, *args: one_lookup and original(self, *args))
        model = tiny_model(seed=6, dropout=0.0, tie_word_embeddings=tie_word_embeddings).train()
        model.model.encoder.embed_tokens.register_forward_hook(lambda m, args, out: lookups.append(args[0].shape))
        loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        loss.backward()
        return loss, {name: p.grad for name, p in model.named_parameters() if p.grad is not None}

    original = ZhenModel.shares_one_lookup
    (two_loss, two_grads), (one_loss, one_grads) = loss_and_gradients(False), loss_and_gradients(True)
    # the encoder's table: for the source, then (tied) once for source and target together
    assert lookups == [(3, 6), (18 + 12,) if tie_word_embeddings else (3, 6)]
    torch.testing.assert_close(one_loss, two_loss)
    assert one_grads.keys() == two_grads.keys()
    for name in one_grads:
        torch.testing.assert_close(one_grads[name], two_grads[name], rtol=1e-5, atol=1e-7, msg=name)


def test_attention_groups_handle_a_row_without_labels(monkeypatch):
    """A row whose labels are all -100 has no decoder tokens at all; alone in its attention group it is skipped."""
    monkeypatch.setattr(modeling_zhen, "MIN_GROUP_ROWS", 1)
    monkeypatch.setattr(ZhenPreTrainedModel, "attention_groups", 3)
    input_ids, attention_mask, labels = padded_batch()
    labels[2] = -100  # the shortest source: a group of its own

    def loss_and_gradient(skip_padding):
        monkeypatch.setattr(ZhenPreTrainedModel, "skip_padding", skip_padding)
        model = tiny_model(seed=5, dropout=0.0).train()
        loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        loss.backward()
        return loss, model.model.encoder.layers[0].self_attn.qkv_proj.weight.grad

    padded, unpadded = loss_and_gradient(False), loss_and_gradient(True)
    torch.testing.assert_close(unpadded[0], padded[0])
    torch.testing.assert_close(unpadded[1], padded[1], rtol=1e-4, atol=1e-6)


def test_skipping_padding_keeps_padded_outputs():
    """Training outputs keep the (batch, seq) layout, recorded per-layer states included; eval passes are untouched."""
    model = tiny_model(dropout=0.0).train()
    input_ids, attention_mask, labels = padded_batch()
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, output_hidden_states=True)
    assert out.encoder_last_hidden_state.shape == (3, 6, 64)
    assert all(h.shape == (3, 6, 64) for h in out.encoder_hidden_states)
    assert all(h.shape == (3, 4, 64) for h in out.decoder_hidden_states)
    encoder_out = model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    torch.testing.assert_close(encoder_out[attention_mask.bool()], out.encoder_last_hidden_state[attention_mask.bool()])
    assert encoder_out[~attention_mask.bool()].eq(0).all()  # zeros where nothing was computed


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("tie_word_embeddings", [True, False])
def test_chunked_loss_gives_the_same_loss_and_gradients(label_smoothing, tie_word_embeddings):
    """`loss_chunk_size` computes the LM head and loss chunk by chunk in training; loss and every gradient must equal
    the plain path's, padding (-100) and `num_items_in_batch` included, and no logits are returned."""
    input_ids, attention_mask, labels = padded_batch()

    def loss_and_gradients(chunk_size):
        model = tiny_model(seed=2, label_smoothing=label_smoothing, tie_word_embeddings=tie_word_embeddings).train()
        model.loss_chunk_size = chunk_size
        out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, num_items_in_batch=20)
        out.loss.backward()
        return out, {n: p.grad for n, p in model.named_parameters() if p.grad is not None}

    (plain, plain_grads), (chunked, chunked_grads) = loss_and_gradients(None), loss_and_gradients(4)
    assert plain.logits is not None and chunked.logits is None
    torch.testing.assert_close(chunked.loss, plain.loss)
    assert plain_grads.keys() == chunked_grads.keys()
    for name in plain_grads:
        torch.testing.assert_close(chunked_grads[name], plain_grads[name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize(
    "labelled,autocast,native_bf16",
    [(slice(None), False, True), (slice(0), False, True), (slice(None), True, True), (slice(None), True, False)],
    ids=["fp32", "none", "bf16", "bf16-emulated"],
)
def test_fused_loss_matches_lm_head_plus_cross_entropy(monkeypatch, labelled, autocast, native_bf16):
    """The fused LM head + loss against `hidden @ weight.T` and `cross_entropy`: several chunks (the first writes the
    weight gradient, the rest add to it), a batch without any labelled row, and bfloat16 autocast on a CPU with and
    without bfloat16 instructions (without, the products run in float32)."""
    monkeypatch.setattr(modeling_zhen, "cpu_has_bf16", lambda: native_bf16)
    torch.manual_seed(0)
    hidden, weight = torch.randn(11, 16, requires_grad=True), torch.randn(37, 16, requires_grad=True)
    labels = torch.full((11,), -100)
    labels[labelled] = torch.randint(0, 37, (11,))[labelled]
    labels[3] = -100

    def loss_and_gradients(fused):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            if fused:
                loss = ChunkedLinearCrossEntropy.apply(hidden, weight, labels, 0.1, 4)
            else:
                logits = (hidden @ weight.t()).float()
                loss = torch.nn.functional.cross_entropy(logits, labels, reduction="sum", label_smoothing=0.1)
        (2 * loss).backward()
        grads = hidden.grad.clone(), weight.grad.clone()
        hidden.grad = weight.grad = None
        return loss, *grads

    tolerance = dict(rtol=2e-2, atol=2e-2) if autocast else dict(rtol=1e-5, atol=1e-5)
    for fused, reference in zip(loss_and_gradients(True), loss_and_gradients(False)):
        torch.testing.assert_close(fused.float(), reference.float(), **tolerance)


def test_chunked_loss_is_off_in_eval_and_without_gradients():
    model = tiny_model()
    model.loss_chunk_size = 4
    input_ids, attention_mask, labels = padded_batch()
    assert model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).logits is not None  # eval mode
    with torch.no_grad():
        assert model.train()(input_ids=input_ids, attention_mask=attention_mask, labels=labels).logits is not None


def test_chunked_loss_refuses_a_second_backward_clearly():
    """The fused loss scales its precomputed gradients in place; backpropagating it twice must say so and how to
    avoid it, not fail on a modified saved tensor or return wrong gradients."""
    model = tiny_model().train()
    model.loss_chunk_size = 4
    input_ids, attention_mask, labels = padded_batch()
    loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="loss_chunk_size = None"):
        loss.backward()


@pytest.mark.parametrize("native_bf16", [False, True])
def test_bf16_training_attention_runs_in_float32_where_the_cpu_emulates_bf16(monkeypatch, native_bf16):
    """Under bfloat16 autocast on a CPU without bfloat16 instructions, training attention (SDPA) runs in float32,
    where its backward is 3-4x faster; on a CPU with them, and without gradients, it stays bfloat16. The loss stays
    that of float32 training within bfloat16's precision."""
    monkeypatch.setattr(modeling_zhen, "cpu_has_bf16", lambda: native_bf16)
    dtypes, sdpa = [], torch.nn.functional.scaled_dot_product_attention

    def recording_sdpa(query, *args, **kwargs):
        dtypes.append(query.dtype)
        return sdpa(query, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", recording_sdpa)
    input_ids, attention_mask, labels = padded_batch()
    model = tiny_model(seed=3, dropout=0.0).train()
    batch = dict(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = model(**batch).loss
    loss.backward()
    assert dtypes and set(dtypes) == {torch.bfloat16 if native_bf16 else torch.float32}
    assert all(p.grad.isfinite().all() for p in model.parameters() if p.grad is not None)
    torch.testing.assert_close(loss.float(), model(**batch).loss, rtol=2e-2, atol=2e-2)
    dtypes.clear()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        model(**batch)
    assert set(dtypes) == {torch.bfloat16}


@pytest.mark.parametrize("autocast", [True, False], ids=["bf16-autocast", "bf16-weights"])
def test_bf16_linear_where_the_cpu_emulates_bf16_does_bf16_arithmetic_in_float32(monkeypatch, autocast):
    """Without bfloat16 instructions, `ZhenLinear`'s bf16 products run as float32 GEMMs of the bf16 values: the same
    arithmetic as the bf16 GEMM (exact products, float32 sums), so outputs and gradients equal those of `nn.Linear`
    under autocast up to the order of summation, in the same dtypes."""
    torch.manual_seed(0)
    linear = modeling_zhen.ZhenLinear(64, 96)
    if not autocast:
        linear.bfloat16()
    x = torch.randn(10, 7, 64, dtype=linear.weight.dtype, requires_grad=True)  # 70 rows: enough for float32 GEMMs
    in_float32, apply = [], modeling_zhen.Bf16LinearInFloat32.apply

    def recording_apply(*args):
        in_float32.append(True)
        return apply(*args)

    monkeypatch.setattr(modeling_zhen.Bf16LinearInFloat32, "apply", recording_apply)

    def output_and_gradients(native_bf16):
        monkeypatch.setattr(modeling_zhen, "cpu_has_bf16", lambda: native_bf16)
        x.grad = None
        linear.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            y = linear(x)
        (y.float() * torch.linspace(-1, 1, 96)).sum().backward()
        return y, x.grad, linear.weight.grad, linear.bias.grad

    native = output_and_gradients(True)
    assert not in_float32
    emulated = output_and_gradients(False)
    assert in_float32 == [True]
    for got, expected in zip(emulated, native):
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected, rtol=8e-3, atol=1e-2)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):  # a few rows (decoding) stay nn.Linear's
        linear(x[:1])
    assert in_float32 == [True]
    assert not modeling_zhen.emulates_bf16(x.float(), linear.weight.float())  # float32 stays nn.Linear's


def test_bf16_training_where_the_cpu_emulates_bf16_is_as_precise_as_native_bf16(monkeypatch):
    """A bf16 autocast training step of the whole model (fused loss included) on a CPU without bfloat16 instructions
    is as close to float32 training as PyTorch's own bf16 path: same loss, gradients as far from float32's."""
    monkeypatch.setattr(modeling_zhen.ZhenLinear, "FLOAT32_GEMM_MIN_ROWS", 1)  # this small batch's products too
    input_ids, attention_mask, labels = padded_batch()
    model = tiny_model(seed=3, dropout=0.0).train()
    model.loss_chunk_size = 4

    def loss_and_gradients(native_bf16, autocast=True):
        monkeypatch.setattr(modeling_zhen, "cpu_has_bf16", lambda: native_bf16)
        model.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        loss.backward()
        return loss, {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}

    float32_loss, float32_grads = loss_and_gradients(True, autocast=False)
    (native_loss, native_grads), (loss, grads) = loss_and_gradients(True), loss_and_gradients(False)
    torch.testing.assert_close(loss, native_loss, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(loss, float32_loss, rtol=1e-2, atol=1e-2)

    def relative_errors(gradients):
        assert gradients.keys() == float32_grads.keys()
        return torch.stack(
            [(g - float32_grads[n]).abs().max() / float32_grads[n].abs().max() for n, g in gradients.items()]
        )

    errors, native_errors = relative_errors(grads), relative_errors(native_grads)
    assert errors.max() < 0.1 and errors.mean() <= 1.25 * native_errors.mean()


# --- config --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides,field",
    [
        (dict(d_model=100, encoder_attention_heads=8), "encoder_attention_heads"),
        (dict(d_model=96, decoder_attention_heads=5), "decoder_attention_heads"),
        (
            dict(position_embedding_type="rope", d_model=36, encoder_attention_heads=12, decoder_attention_heads=6),
            "encoder_attention_heads",
        ),
        (dict(position_embedding_type="alibi"), "position_embedding_type"),
        (dict(activation_function="swishy"), "activation_function"),
        (dict(d_model=0), "d_model"),
        (dict(encoder_layers=0), "encoder_layers"),
        (dict(decoder_layers=-1), "decoder_layers"),
        (dict(encoder_ffn_dim=0), "encoder_ffn_dim"),
        (dict(max_position_embeddings=0), "max_position_embeddings"),
        (dict(dropout=1.0), "dropout"),
        (dict(attention_dropout=-0.1), "attention_dropout"),
        (dict(activation_dropout=1.5), "activation_dropout"),
        (dict(vocab_size=4), "vocab_size"),
        (dict(label_smoothing=1.0), "label_smoothing"),
        (dict(pad_token_id=50000), "pad_token_id"),
        (
            dict(position_embedding_type="rope", rope_parameters={"rope_type": "yarn", "factor": 2.0}),
            "rope_parameters",
        ),
    ],
)
def test_invalid_config_raises_value_error_naming_the_field(overrides, field):
    with pytest.raises(ValueError, match=rf"ZhenConfig\.{field}="):
        ZhenConfig(**overrides)


def test_presets_and_attribute_map():
    base = ZhenConfig.from_preset("base")
    assert (
        base.d_model,
        base.encoder_attention_heads,
        base.encoder_ffn_dim,
        base.encoder_layers,
        base.decoder_layers,
    ) == (512, 8, 2048, 6, 6)
    small = ZhenConfig.from_preset("small")
    assert 256 <= small.d_model <= 384 and 3 <= small.encoder_layers <= 6 and 3 <= small.decoder_layers <= 6
    assert base.hidden_size == 512 and base.num_attention_heads == 8 and base.num_hidden_layers == 6
    assert ZhenConfig(rope_theta=500.0).rope_parameters == {"rope_type": "default", "rope_theta": 500.0}
    with pytest.raises(ValueError, match="Unknown preset"):
        ZhenConfig.from_preset("huge")


@pytest.mark.parametrize("p", [0.1, 0.3])
def test_cpu_dropout_drops_p_and_keeps_expectations(p):
    """zhen's CPU dropout draws its mask from 15-bit integers: the drop rate must be p, kept values scaled so that the
    expectation is unchanged, the gradient masked the same way, and the mask reproducible from the seed."""
    from zhen.modeling_zhen import dropout

    x = (torch.rand(400, 501) + 1).requires_grad_()
    torch.manual_seed(0)
    y = dropout(x, p, training=True)
    kept = y != 0
    assert abs((1 - kept.float().mean()).item() - p) < 0.005
    for lane in range(4):  # four 15-bit draws per 64-bit integer: each must drop at rate p
        assert abs((1 - kept.flatten()[lane::4].float().mean()).item() - p) < 0.008
    rounded_p = round(p * 32768) / 32768
    torch.testing.assert_close(y[kept], x[kept] / (1 - rounded_p))
    assert abs((y.sum() / x.sum()).item() - 1) < 0.01
    y.backward(torch.ones_like(y))
    torch.testing.assert_close(x.grad, kept / (1 - rounded_p))
    torch.manual_seed(0)
    assert torch.equal(dropout(x, p, training=True) != 0, kept)
    assert dropout(x, p, training=False) is x
    # with a residual: the same mask, the residual added in the same pass and its gradient passed through
    residual, x.grad = torch.randn(400, 501, requires_grad=True), None
    torch.manual_seed(0)
    out = dropout(x, p, training=True, residual=residual)
    torch.testing.assert_close(out, residual + y)
    out.backward(torch.ones_like(out))
    torch.testing.assert_close(x.grad, kept / (1 - rounded_p))
    assert torch.equal(residual.grad, torch.ones_like(residual))
    torch.testing.assert_close(dropout(x, p, training=False, residual=residual), residual + x)
    # bfloat16 keeps the exact float32 scale (a bfloat16 mask would round it)
    x16 = x.detach().bfloat16()
    torch.manual_seed(0)
    y16 = dropout(x16, p, training=True)
    assert torch.equal(y16 != 0, kept)
    torch.testing.assert_close(y16[kept], (x16[kept].float() / (1 - rounded_p)).bfloat16())
