"""Model tests on tiny configs: save/load, ties, every position type × norm placement learning a task, cache, masks,
attention backends, gradient checkpointing, RoPE properties, parity with reference implementations, the loss."""

import itertools

import pytest
import torch
from safetensors import safe_open
from transformers import AutoConfig, AutoModel, AutoModelForSeq2SeqLM

from zhen import ZhenConfig, ZhenForConditionalGeneration, ZhenModel
from zhen.modeling_zhen import CACHE_FIELD, ZhenRotaryEmbedding, ZhenSinusoidalPositionalEmbedding, apply_rotary_pos_emb


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


@pytest.mark.parametrize("cache_name", ["cache", "past_key_values"])
def test_step_by_step_decoding_under_either_cache_name(cache_name):
    """Transformers 5.24 passes the cache as `cache`, 5.23 as `past_key_values`: a checkpoint's code meets both."""
    model = tiny_model(position_embedding_type="rope")
    input_ids, attention_mask, labels = padded_batch()
    decoder_input_ids = model.prepare_decoder_input_ids_from_labels(labels.clamp(min=0))
    full = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids).logits
    encoder_outputs = model.get_encoder()(input_ids=input_ids, attention_mask=attention_mask)
    cache, steps = None, []
    for t in range(decoder_input_ids.shape[1]):
        out = model(encoder_outputs=encoder_outputs, attention_mask=attention_mask, use_cache=True,
                    decoder_input_ids=decoder_input_ids[:, t : t + 1], **{cache_name: cache})  # fmt: skip
        cache = out[CACHE_FIELD]
        steps.append(out.logits)
    assert cache.get_seq_length() == decoder_input_ids.shape[1]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-4, atol=1e-4)


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


def rope_config(**rope) -> ZhenConfig:
    return tiny_config(position_embedding_type="rope", rope_parameters=rope or None)


def test_rope_scores_depend_only_on_relative_position():
    rotary = ZhenRotaryEmbedding(rope_config(), head_dim=16)
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
    tiny_model(position_embedding_type="rope", rope_parameters={"rope_type": "linear", "factor": 2.0}).save_pretrained(
        tmp_path / "rope"
    )
    rotary = ZhenForConditionalGeneration.from_pretrained(tmp_path / "rope").model.decoder.rotary_emb
    expected = 1.0 / (10000.0 ** (torch.arange(0, 16, 2).float() / 16)) / 2.0
    torch.testing.assert_close(rotary.inv_freq, expected)
    torch.testing.assert_close(rotary.original_inv_freq, expected)


def test_rotary_matches_transformers_llama_rotary():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb as llama_apply

    llama = LlamaRotaryEmbedding(LlamaConfig(hidden_size=64, num_attention_heads=4, rope_theta=5000.0))
    ours = ZhenRotaryEmbedding(rope_config(rope_type="default", rope_theta=5000.0), head_dim=16)
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
        (dict(position_embedding_type="rope", rope_parameters={"rope_type": "spiral"}), "rope_parameters"),
        (dict(position_embedding_type="rope", rope_parameters={"rope_theta": -1.0}), "rope_parameters"),
        (dict(position_embedding_type="sinusoidal", rope_parameters={"rope_type": "linear"}), "rope_parameters"),
        (dict(position_embedding_type="learned", rope_theta=500.0), "rope_parameters"),
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
    rope = ZhenConfig(position_embedding_type="rope", rope_theta=500.0)
    assert rope.rope_parameters == {"rope_type": "default", "rope_theta": 500.0}
    with pytest.raises(ValueError, match="Unknown preset"):
        ZhenConfig.from_preset("huge")


def test_only_rope_configs_carry_rope_parameters(tmp_path):
    """Sinusoidal and learned configs have no RoPE fields that the model would ignore; configs saved by zhen 0.1 (which
    wrote the default RoPE settings for every position type) still load."""
    for position_embedding_type in ("sinusoidal", "learned"):
        config = tiny_config(position_embedding_type=position_embedding_type)
        assert config.rope_parameters is None
        config.save_pretrained(tmp_path)
        assert AutoConfig.from_pretrained(tmp_path).rope_parameters is None
        legacy = ZhenConfig(**{**config.to_dict(), "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}})
        assert legacy.rope_parameters is None
    config = tiny_config()
    config.rope_parameters = {"rope_type": "linear", "factor": 2.0}  # set afterwards: refused when the model is built
    with pytest.raises(ValueError, match="position_embedding_type='rope'"):
        ZhenForConditionalGeneration(config)


def encoder_outputs_for(config, input_ids) -> torch.Tensor:
    torch.manual_seed(0)
    return ZhenModel(config).eval().get_encoder()(input_ids=input_ids).last_hidden_state


@pytest.mark.parametrize("scaling_type", ["linear", "dynamic", "yarn"])
@pytest.mark.parametrize("set_afterwards", [False, True], ids=["at-construction", "set-afterwards"])
def test_rope_scaling_changes_outputs_as_transformers_expects(scaling_type, set_afterwards):
    """As Transformers' `test_model_rope_scaling_from_config`: a RoPE type from `rope_parameters`, given at
    construction or set on the config afterwards (also through the legacy `rope_scaling`), changes the outputs of
    short inputs (linear, yarn) or only of inputs longer than `max_position_embeddings` (dynamic)."""
    short_input = torch.randint(6, 40, (1, 10))
    long_input = torch.randint(6, 40, (1, int(1.5 * 256)))  # the tiny preset is sized for 256 positions
    original = tiny_config(position_embedding_type="rope")
    rope = {"rope_type": scaling_type, "factor": 10.0}
    if set_afterwards:
        scaled = tiny_config(position_embedding_type="rope")
        if scaling_type == "yarn":
            scaled.rope_scaling = {"type": scaling_type, "factor": 10.0}  # the legacy alias, standardized on set
        else:
            scaled.rope_parameters = rope
    else:
        scaled = tiny_config(position_embedding_type="rope", rope_parameters=rope)
    original_short, original_long = (encoder_outputs_for(original, x) for x in (short_input, long_input))
    scaled_short, scaled_long = (encoder_outputs_for(scaled, x) for x in (short_input, long_input))
    if scaling_type == "dynamic":
        torch.testing.assert_close(scaled_short, original_short, rtol=1e-5, atol=1e-5)
    else:
        assert not torch.allclose(scaled_short, original_short, atol=1e-5)
    assert not torch.allclose(scaled_long, original_long, atol=1e-5)


def test_rope_scaling_survives_save_and_load(tmp_path):
    model = tiny_model(position_embedding_type="rope", rope_parameters={"rope_type": "dynamic", "factor": 4.0})
    model.save_pretrained(tmp_path)
    reloaded = ZhenForConditionalGeneration.from_pretrained(tmp_path).eval()
    assert reloaded.model.encoder.rotary_emb.rope_type == "dynamic"
    long_input = torch.randint(6, 40, (1, 300))
    torch.testing.assert_close(
        reloaded.get_encoder()(input_ids=long_input).last_hidden_state,
        model.get_encoder()(input_ids=long_input).last_hidden_state,
    )


def test_missing_or_unexpected_weights_are_an_error(tmp_path):
    """A checkpoint whose config.json no longer matches its weights (here: decoder_layers edited from 2 to 1) must not
    load silently with half a decoder."""
    import json

    tiny_model().save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "decoder_layers": 1}))
    with pytest.raises(ValueError, match=r"do not match its configuration .*unexpected keys.*decoder\.layers\.1"):
        AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    model = ZhenForConditionalGeneration.from_pretrained(tmp_path, strict=False)  # on purpose: allowed
    assert len(model.model.decoder.layers) == 1
    (tmp_path / "config.json").write_text(json.dumps({**config, "decoder_layers": 3}))
    with pytest.raises(ValueError, match=r"missing keys.*decoder\.layers\.2"):
        ZhenForConditionalGeneration.from_pretrained(tmp_path)


def test_save_pretrained_writes_the_pipeline_code(tmp_path):
    """A plain `save_pretrained` gives a folder the `translation` pipeline can load as custom code."""
    import json

    tiny_model().save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["custom_pipelines"]["translation"]["impl"] == "pipeline_zhen.ZhenTranslationPipeline"
    assert (tmp_path / "pipeline_zhen.py").read_text().startswith("# Copyright")


# --- torch.compile -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("position_embedding_type", ["sinusoidal", "learned", "rope"])
def test_compiled_model_trains_like_the_eager_model(position_embedding_type):
    """`torch.compile(model)` in train mode: forward and backward on a padded batch of 32 sentences, with one graph
    (fullgraph) and the eager model's loss and gradients."""
    torch._dynamo.reset()
    generator = torch.Generator().manual_seed(0)
    input_ids, attention_mask, labels = reverse_task_batch(generator, batch_size=32)

    def loss_and_gradients(compiled: bool):
        model = tiny_model(seed=2, dropout=0.0, position_embedding_type=position_embedding_type).train()
        forward = torch.compile(model, backend="aot_eager", fullgraph=True) if compiled else model
        loss = forward(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        loss.backward()
        return loss, {name: p.grad for name, p in model.named_parameters() if p.grad is not None}

    (loss, grads), (compiled_loss, compiled_grads) = loss_and_gradients(False), loss_and_gradients(True)
    torch.testing.assert_close(compiled_loss, loss)
    for name in grads:
        torch.testing.assert_close(compiled_grads[name], grads[name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize("position_embedding_type", ["sinusoidal", "learned", "rope"])
def test_generate_with_a_compiled_forward(position_embedding_type):
    """As Transformers' `test_generate_compile_model_forward_fullgraph`: generation with a static cache and the
    forward compiled in one graph gives the eager model's tokens."""
    from transformers import CompileConfig

    torch._dynamo.reset()
    model = tiny_model(position_embedding_type=position_embedding_type)
    input_ids, attention_mask, _ = padded_batch()
    kwargs = dict(input_ids=input_ids, attention_mask=attention_mask, forced_bos_token_id=ZH, max_new_tokens=6,
                  min_new_tokens=6, do_sample=False)  # fmt: skip
    expected = model.generate(**kwargs)
    compile_config = CompileConfig(fullgraph=True, backend="aot_eager", dynamic=False)
    compile_config._compile_all_devices = True  # compile on the CPU too
    model.generation_config.compile_config = compile_config
    compiled = model.generate(**kwargs, cache_implementation="static")
    assert model._compiled_call is not None  # the forward really ran compiled
    assert torch.equal(compiled, expected)


def test_xavier_initialisation_as_fairseq():
    """`init_method="xavier"`: Xavier-uniform projections (the fused query/key/value matrix then gets fairseq's
    per-projection bound with gain 1/√2), embeddings N(0, d_model^-0.5) with a zero padding row, zero biases."""
    d = 64
    model = tiny_model(init_method="xavier")
    embedding = model.model.encoder.embed_tokens.weight
    assert abs(embedding[1:].std().item() - d**-0.5) < 0.15 * d**-0.5 and embedding[PAD].abs().max() == 0
    qkv = model.model.encoder.layers[0].self_attn.qkv_proj
    fc1 = model.model.encoder.layers[0].mlp.fc1
    assert qkv.weight.abs().max() <= (6 / (4 * d)) ** 0.5 and qkv.weight.abs().max() > 0.95 * (6 / (4 * d)) ** 0.5
    assert fc1.weight.abs().max() <= (6 / (d + 128)) ** 0.5 and qkv.bias.abs().max() == 0
    normal = tiny_model()  # the tiny preset's init_std
    assert abs(normal.model.encoder.layers[0].mlp.fc1.weight.std().item() - 0.1) < 0.01


def test_hidden_states_of_encoder_and_decoder_of_different_depths():
    """Each stack counts its own layers, also for a selected (negative) index: the last decoder state is the decoder's
    output whatever the encoder's depth."""
    model = tiny_model(encoder_layers=3, decoder_layers=1)
    input_ids, attention_mask, labels = padded_batch()
    out = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, output_hidden_states=True)
    assert len(out.encoder_hidden_states) == 4 and len(out.decoder_hidden_states) == 2
    last = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, output_hidden_states=-1)
    decoder_output = model.model(input_ids=input_ids, attention_mask=attention_mask,
                                 decoder_input_ids=model.prepare_decoder_input_ids_from_labels(labels))  # fmt: skip
    torch.testing.assert_close(last.decoder_hidden_states[-1], decoder_output.last_hidden_state)
    torch.testing.assert_close(last.encoder_hidden_states[-1], out.encoder_last_hidden_state)
