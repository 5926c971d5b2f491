"""`zhen.draft_decoding`: greedy search of one sentence or a few in step, and beam search of one, drafted by an int8
copy of the decoder return the search's own tokens (forced, banned and last tokens included) whether the draft is
right or wrong, check every drafted token or beam, take fewer passes of the float32 model where the draft is right,
and never serve a draft of changed weights; a float32 session drafts by default only where the decoder is large
enough to pay."""

import contextlib
import random

import pytest
import torch

from zhen import ZhenConfig, ZhenForConditionalGeneration, draft_decoding, fast_generation, hardware
from zhen.decoder_steps import DecoderSteps
from zhen.decoding_cache import Workspace
from zhen.draft_decoding import (
    MAX_DRAFTED_SENTENCES,
    drafted_beam_search,
    drafted_greedy_search,
    int8_draft,
    tree_origins,
)
from zhen.fast_generation import FastDecoder
from zhen.quantization import DynamicInt8Linear, is_quantized
from zhen.search import beam_search, greedy_search


PAD, EOS, EN, ZH = 0, 2, 4, 5
VOCAB = 50


class RuleSteps:
    """Decoder steps of a made-up model whose next token in row `r` is `rules[r](prefix)`: what the search loops see
    of a decoder (`step`, `steps`, `next_tokens`; one row a sentence), counting the passes they make."""

    def __init__(self, *rules):
        self.rules, self.device, self.passes = rules, torch.device("cpu"), 0
        self.inputs = [{} for _ in rules]

    def step(self, tokens, position):
        return self.steps(tokens.view(len(self.rules), 1), position)

    def steps(self, tokens, position):
        self.passes += 1
        tokens = tokens.view(len(self.rules), -1)
        for inputs, row in zip(self.inputs, tokens.tolist()):
            for offset, token in enumerate(row):
                inputs[position + offset] = token
        positions = torch.arange(position, position + tokens.shape[1])
        return torch.cat([row * 1000 + positions for row in range(len(self.rules))])  # "hidden state": row, position

    def next_tokens(self, states, banned=None):
        chosen = []
        for state in states.tolist():
            row, position = divmod(state, 1000)
            token = self.rules[row](tuple(self.inputs[row][p] for p in range(position + 1)))
            chosen.append(token if token != banned else (token + 1) % VOCAB)
        return torch.tensor(chosen)


def rule_of(seed: int, eos_share: float):
    """A deterministic next token for each prefix, `</s>` with probability `eos_share`."""

    def rule(prefix):
        generator = random.Random(hash((seed, prefix)))
        return EOS if generator.random() < eos_share else generator.randrange(6, VOCAB)

    return rule


def wrong_at(rule, share: float, seed: int):
    """`rule`, but another token for a `share` of prefixes."""

    def draft(prefix):
        token = rule(prefix)
        return (token + 7) % VOCAB if random.Random(hash((seed, "wrong", prefix))).random() < share else token

    return draft


OPTIONS = dict(eos=EOS, pad=PAD, start=EOS, forced_bos=ZH, forced_eos=None, min_new_tokens=0, max_length=24)


@pytest.mark.parametrize("wrong", [0.0, 0.2, 0.6, 1.0])
@pytest.mark.parametrize("options", [
    {},
    {"min_new_tokens": 9},
    {"forced_eos": EOS},
    {"forced_bos": None, "max_length": 3},
    {"eos": None},
])  # fmt: skip
@pytest.mark.parametrize("batch", [1, 3])
def test_drafted_search_returns_greedy_searchs_tokens(wrong, options, batch):
    """Whatever share of the drafted tokens is wrong: the tokens of greedy search (forced first and last tokens,
    `</s>` banned before `min_new_tokens`, `max_length`, no `</s>` at all); of several sentences in step, each
    sentence's own, padded after its `</s>` until all have ended."""
    options = {**OPTIONS, **options}
    for seed in range(30):
        rules = [rule_of(seed * 10 + row, eos_share=0.04) for row in range(batch)]
        own = [greedy_search(RuleSteps(rule), 1, **options)[0].tolist() for rule in rules]
        expected = [row + [PAD] * (max(map(len, own)) - len(row)) for row in own]
        drafts = [wrong_at(rule, wrong, seed) for rule in rules]
        drafted = drafted_greedy_search(RuleSteps(*rules), RuleSteps(*drafts), **options, batch=batch)
        assert drafted.tolist() == expected, seed


def test_a_right_draft_saves_passes_and_a_wrong_one_costs_none():
    """A check that keeps every drafted token drafts two more next time (up to `MAX_DRAFT_TOKENS`), one that does not
    one fewer (down to 1): with every drafted token right a pass of the model yields all of them and its own next
    one; with every one wrong, one token a pass, as greedy search, and the draft shrinks to one token. The forced
    language code costs no pass of its own."""
    rule = rule_of(0, eos_share=0.0)
    options = {**OPTIONS, "max_length": 42}
    right, wrong = RuleSteps(rule), RuleSteps(rule)
    drafted_greedy_search(right, RuleSteps(rule), **options)
    shrunk = draft_decoding.DraftLength()
    drafted_greedy_search(wrong, RuleSteps(wrong_at(rule, 1.0, 0)), **options, draft_length=shrunk)
    length, passes, count = 2, 0, draft_decoding.DRAFT_TOKENS  # the start token and the forced language code
    while length < options["max_length"]:
        drafted = min(count, options["max_length"] - 1 - length)
        length, passes = length + max(drafted, 0) + 1, passes + 1
        count = min(draft_decoding.MAX_DRAFT_TOKENS, count + 2)
    assert right.passes == passes < 10
    assert wrong.passes == options["max_length"] - 2 and shrunk.tokens == 1  # a forced token costs no pass


@pytest.mark.parametrize("batch", [1, 3])
def test_the_draft_stops_once_every_sentence_going_has_drafted_its_end(batch):
    """No token after a sentence's `</s>` is ever kept: the draft stops drafting once every sentence still going has
    drafted `</s>`, and is never fed a `</s>` of a sentence of one; the tokens are greedy search's."""
    options = {**OPTIONS, "max_length": 40}
    for seed in range(30):
        rules = [rule_of(seed * 10 + row, eos_share=0.15) for row in range(batch)]
        draft = RuleSteps(*rules)
        drafted = drafted_greedy_search(RuleSteps(*rules), draft, **options, batch=batch)
        own = [greedy_search(RuleSteps(rule), 1, **options)[0].tolist() for rule in rules]
        assert drafted.tolist() == [row + [PAD] * (max(map(len, own)) - len(row)) for row in own], seed
        last_fed = max(max(inputs) for inputs in draft.inputs)
        assert last_fed < drafted.shape[1] - 1, seed  # not a position past the last sentence's `</s>`
        if batch == 1:
            assert EOS not in [token for position, token in draft.inputs[0].items() if position > 0], seed


MODEL_VARIANTS = [  # every position type, pre- and post-norm
    {},
    {"position_embedding_type": "rope"},
    {"position_embedding_type": "learned", "normalize_before": False},
]


def tiny_model(seed=0, **overrides) -> ZhenForConditionalGeneration:
    torch.manual_seed(seed)
    config = ZhenConfig.from_preset("tiny", vocab_size=3000, decoder_layers=2, encoder_layers=2, **overrides)
    return ZhenForConditionalGeneration(config).eval()


def source(seed=0, length=9):
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(6, 3000, (1, length), generator=generator)
    input_ids[:, 0], input_ids[:, -1] = EN, EOS
    return input_ids


@pytest.mark.parametrize("overrides", MODEL_VARIANTS)
@pytest.mark.parametrize("weights", ["packed", "plain"])
def test_a_session_drafting_decodes_one_text_as_generate(overrides, weights):
    model = tiny_model(**overrides)
    options = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=20)
    with FastDecoder(model, weights=weights, drafts=True) as decoder:
        for seed in range(4):
            input_ids = source(seed, length=6 + seed)
            expected = model.generate(input_ids=input_ids, do_sample=False, **options)
            assert torch.equal(decoder.generate(input_ids, **options), expected)
            min_tokens = model.generate(input_ids=input_ids, do_sample=False, min_new_tokens=8, **options)
            assert torch.equal(decoder.generate(input_ids, min_new_tokens=8, **options), min_tokens)
        assert decoder.draft_session is not None
    assert 1 <= int8_draft(model).draft_length.tokens <= draft_decoding.MAX_DRAFT_TOKENS  # kept with the draft
    assert decoder.draft_session is None and type(model.lm_head) is torch.nn.Linear  # closed, the model as it was


@pytest.mark.parametrize("due", [False, True])
def test_the_draft_compiles_its_program_when_the_model_does(due, monkeypatch):
    """A drafted call runs the draft's layers' program as it runs the model's: in Python over a model's first seconds
    of decoding, compiled after them ([`zhen.fast_generation.scripting_due`])."""
    monkeypatch.setattr(fast_generation, "SCRIPT_AFTER_SECONDS", 0.0 if due else 3600.0)
    model = tiny_model()
    with FastDecoder(model, weights="packed", drafts=True) as decoder:
        decoder.generate(source(), forced_bos_token_id=ZH, max_new_tokens=6)
        programs = [dict(decoder.programs), dict(decoder.draft_session.programs)]
    decoders = [found for kept in programs for key, found in kept.items() if key[0] in (True, False)]
    assert len(decoders) == 2 and all(isinstance(found, torch.jit.ScriptModule) == due for found in decoders)


@pytest.mark.parametrize("program", ["scripted", "in Python", "layers' forwards"])
@torch.inference_mode()
def test_several_positions_in_one_pass_are_those_steps_compute(program):
    """`DecoderSteps.steps` (the check of drafted tokens) gives the hidden states of as many `step`s, and leaves the
    cache as they do: the next step after it is the next step after them; through the layers' program, compiled or
    not, and through their forwards."""
    model = tiny_model(position_embedding_type="rope")
    input_ids = source()
    tokens = torch.tensor([EOS, ZH, 17, 933, 41, 7])
    inline, script = program != "layers' forwards", program == "scripted"
    with FastDecoder(model, weights="packed", inline_layers=inline, script_layers=script) as decoder:
        one_by_one = decoder.decoder_steps(input_ids, torch.ones_like(input_ids), 1, 12)
        expected = torch.cat([one_by_one.step(tokens[i : i + 1], i) for i in range(6)])
        expected_next = one_by_one.step(torch.tensor([99]), 6)
        at_once = decoder.decoder_steps(input_ids, torch.ones_like(input_ids), 1, 12)
        assert at_once.step(tokens[:1], 0).shape == (1, model.config.d_model)
        found = torch.cat([at_once.step(tokens[:1], 0), at_once.steps(tokens[1:], 1)])
        torch.testing.assert_close(found, expected, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(at_once.step(torch.tensor([99]), 6), expected_next, rtol=1e-5, atol=1e-5)


def test_the_draft_keeps_8_bit_weights_where_the_kernels_lack_vnni():
    """A draft multiplies one text's rows a step, whose activations have nearly a scale of their own: without VNNI
    (forced) its products keep 8-bit weights and 7-bit activations, not a batch model's 7-bit weights."""
    with hardware.forced(int8_full_range="off"):
        draft = int8_draft(tiny_model())
    int8 = [m for m in draft.modules() if isinstance(m, DynamicInt8Linear)]
    assert int8 and all((m.weight_bits, m.reduce_range) == (8, True) for m in int8)


def test_the_draft_is_int8_shares_the_rest_and_leaves_the_model_as_it_was():
    model = tiny_model()
    state = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    with hardware.forced(amx_int8="on"):
        draft = int8_draft(model)
    assert is_quantized(draft.get_decoder()) and is_quantized(draft.lm_head)
    int8 = [m for m in draft.modules() if isinstance(m, torch.ao.nn.quantized.dynamic.Linear)]
    assert all(type(m) is DynamicInt8Linear for m in int8)  # a few rows a step: FBGEMM's, on AMX too
    assert not is_quantized(draft.get_encoder()) and not is_quantized(model)
    assert draft.get_encoder().layers[0].mlp.fc1.weight is model.get_encoder().layers[0].mlp.fc1.weight
    assert draft.get_decoder().embed_tokens.weight is model.get_decoder().embed_tokens.weight
    layer = draft.get_decoder().layers[0]
    assert all(is_quantized(m) for m in (layer.self_attn.qkv_proj, layer.encoder_attn.q_proj, layer.mlp.fc2))
    source_projection = layer.encoder_attn.kv_proj  # the model's keys and values of the source serve
    assert source_projection.weight is model.get_decoder().layers[0].encoder_attn.kv_proj.weight
    assert all(torch.equal(tensor, state[name]) for name, tensor in model.state_dict().items())
    assert not any(hasattr(module, "qconfig") for module in model.modules())


@torch.inference_mode(False)
def test_a_kept_draft_never_serves_changed_weights():
    """The draft is made once per model; a change to a decoder or head weight makes a new one (a stale draft would
    not change the tokens, only slow them: this checks it is not kept)."""
    model = tiny_model()
    with FastDecoder(model, drafts=True) as decoder:
        decoder.generate(source(), forced_bos_token_id=ZH, num_beams=1, max_new_tokens=6)
        first = decoder.draft_session.model
    assert int8_draft(model) is first
    with torch.no_grad():
        model.get_decoder().layers[1].mlp.fc2.weight.mul_(1.5)
    assert int8_draft(model) is not first


def test_drafting_is_on_by_default_for_a_large_decoder_only_beams_in_float32_only(monkeypatch):
    """Greedy search drafts in a float32 or bf16 session, beam search in a float32 session only; neither where the
    decoder is small (its steps cost their calls) or FBGEMM is off (the copy's int8 products)."""
    model = tiny_model()

    def drafted_searches(**forced):
        with hardware.forced(**forced), FastDecoder(model) as decoder:
            return decoder.weights, decoder.drafts, decoder.drafts_beams

    assert drafted_searches(cpu_bf16="emulated") == ("packed", False, False)
    assert drafted_searches(cpu_bf16="native") == ("bf16", False, False)
    monkeypatch.setattr(draft_decoding, "MIN_DECODER_WEIGHTS", 0)
    assert drafted_searches(cpu_bf16="emulated") == ("packed", True, True)
    assert drafted_searches(cpu_bf16="native") == ("bf16", True, False)
    assert drafted_searches(cpu_bf16="emulated", fbgemm="off") == ("packed", False, False)
    assert drafted_searches(cpu_bf16="native", fbgemm="off") == ("bf16", False, False)


@pytest.mark.parametrize("cpu_bf16, expected", [
    ("emulated", [False, False, False, True, True, True, True]),  # a float32 session: every one-text call counts
    ("native", [False] * 6 + [True]),  # a bf16 session drafts greedy calls only, and counts those
])  # fmt: skip
def test_by_default_a_model_drafts_from_its_draft_after_th_one_text_call(monkeypatch, cpu_bf16, expected):
    """Making the draft costs what tens of drafted calls save: a one-off call never drafts; `drafts=True` does.
    Greedy and beam search calls count alike where both draft."""
    model = tiny_model(seed=1)
    monkeypatch.setattr(draft_decoding, "MIN_DECODER_WEIGHTS", 0)
    monkeypatch.setattr(draft_decoding, "DRAFT_AFTER", 3)
    drafted = []
    for call in range(7):
        with hardware.forced(cpu_bf16=cpu_bf16), FastDecoder(model) as decoder:
            decoder.generate(source(call), forced_bos_token_id=ZH, num_beams=1 + 3 * (call % 2), max_new_tokens=6)
            drafted.append(decoder.draft_session is not None)
    assert drafted == expected
    options = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=6)
    with FastDecoder(tiny_model(seed=2), drafts=True) as decoder:
        decoder.generate(source(), **options)
        assert decoder.draft_session is not None


def padded_batch(seed: int, sentences: int):
    """`sentences` sources of different lengths, right-padded, and their attention mask."""
    sources = [source(seed * 10 + i, length=5 + 2 * i + seed) for i in range(sentences)]
    input_ids = torch.zeros((sentences, max(len(s[0]) for s in sources)), dtype=torch.long)
    attention_mask = torch.zeros_like(input_ids)
    for row, ids in enumerate(sources):
        input_ids[row, : ids.shape[1]], attention_mask[row, : ids.shape[1]] = ids, 1
    return input_ids, attention_mask


@pytest.mark.parametrize("overrides", MODEL_VARIANTS)
@pytest.mark.parametrize("weights", ["packed", "plain"])
def test_a_session_drafting_decodes_a_few_texts_in_step_as_generate(overrides, weights):
    """Greedy search of 2 to `MAX_DRAFTED_SENTENCES` padded sources, drafted in step: `generate`'s tokens, `</s>`
    banned before `min_new_tokens` too."""
    model = tiny_model(**overrides)
    options = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=20)
    batches = [padded_batch(seed, sentences) for seed in range(2) for sentences in (2, MAX_DRAFTED_SENTENCES)]
    expected = [model.generate(input_ids=ids, attention_mask=mask, do_sample=False, **options) for ids, mask in batches]
    min_tokens = [
        model.generate(input_ids=ids, attention_mask=mask, do_sample=False, min_new_tokens=8, **options)
        for ids, mask in batches
    ]  # fmt: skip
    with FastDecoder(model, weights=weights, drafts=True) as decoder:
        for (ids, mask), greedy, banned in zip(batches, expected, min_tokens):
            assert torch.equal(decoder.generate(ids, mask, **options), greedy)
            assert torch.equal(decoder.generate(ids, mask, min_new_tokens=8, **options), banned)
        assert decoder.draft_session is not None


def test_more_texts_than_drafted_and_beams_of_several_are_not_drafted(monkeypatch):
    """Greedy search drafts up to `MAX_DRAFTED_SENTENCES` sentences a call, beam search one: more go undrafted."""
    model = tiny_model()
    calls = []
    monkeypatch.setattr("zhen.fast_generation.drafted_greedy_search", lambda *a, **k: calls.append(1))
    monkeypatch.setattr("zhen.fast_generation.drafted_beam_search", lambda *a, **k: calls.append(1))
    input_ids = torch.cat([source(seed) for seed in range(MAX_DRAFTED_SENTENCES + 1)])
    with FastDecoder(model, drafts=True) as decoder:
        decoder.generate(input_ids, forced_bos_token_id=ZH, num_beams=1, max_new_tokens=6)
        decoder.generate(input_ids[:2], forced_bos_token_id=ZH, num_beams=4, max_new_tokens=6)
        assert decoder.draft_session is None and not calls
        decoder.generate(input_ids[:MAX_DRAFTED_SENTENCES], forced_bos_token_id=ZH, num_beams=1, max_new_tokens=6)
        assert calls == [1]
    calls.clear()
    expected = model.generate(input_ids=input_ids[:1], forced_bos_token_id=ZH, num_beams=1, max_new_tokens=6)
    with FastDecoder(model, drafts=True, cuda_graphs=True) as decoder:  # static steps: as on a GPU, never drafted
        assert torch.equal(
            decoder.generate(input_ids[:1], forced_bos_token_id=ZH, num_beams=1, max_new_tokens=6), expected
        )
        assert decoder.draft_session is None and not calls


def test_drafting_on_a_gpu_or_from_bf16_weights_is_refused():
    with pytest.raises(ValueError, match="CPU only"):
        FastDecoder(tiny_model().to("meta"), drafts=True)
    with pytest.raises(ValueError, match="float32 weights"):
        FastDecoder(tiny_model().to(torch.bfloat16), drafts=True)
    with FastDecoder(tiny_model().to(torch.bfloat16)) as decoder:
        assert not decoder.drafts


BEAM_OPTIONS = [
    {},
    {"min_new_tokens": 8},
    {"length_penalty": 0.6, "early_stopping": True},
    {"length_penalty": 1.3, "early_stopping": "never"},
    {"num_return_sequences": 2, "max_new_tokens": 9},
    {"max_new_tokens": 1},
    {"max_new_tokens": 3, "num_beams": 2},
    {"num_beams": 5, "num_return_sequences": 5, "max_new_tokens": 6},
]


@pytest.mark.parametrize("overrides", MODEL_VARIANTS)
@pytest.mark.parametrize("weights", ["packed", "plain"])
def test_a_session_drafting_beam_search_of_one_text_returns_generates_beams(overrides, weights):
    model = tiny_model(**overrides)
    with FastDecoder(model, weights=weights, drafts=True) as decoder:
        for seed, options in enumerate(BEAM_OPTIONS):
            options = {"forced_bos_token_id": ZH, "num_beams": 4, "max_new_tokens": 20, **options}
            input_ids = source(seed, length=6 + seed)
            expected = model.generate(input_ids=input_ids, do_sample=False, **options)
            assert torch.equal(decoder.generate(input_ids, **options), expected), options
        assert decoder.draft_session is not None
    assert 1 <= int8_draft(model).beam_draft_length.tokens <= draft_decoding.MAX_DRAFT_TOKENS


@pytest.mark.parametrize("overrides", MODEL_VARIANTS)
@pytest.mark.parametrize("cpu_bf16", ["native", "emulated"])
def test_a_bf16_session_drafting_decodes_one_text_as_the_bf16_session(overrides, cpu_bf16, monkeypatch):
    """A bf16 session checks the int8 copy's tokens with its own products: its own greedy search's output. The
    copy's products are all int8 (the MLP the session swaps in whole too) and its layers' program computes in
    float32, although the session encodes under bf16 autocast. Its beams are never drafted, even when asked."""
    model = tiny_model(**overrides)
    trees = []
    monkeypatch.setattr("zhen.fast_generation.drafted_beam_search", lambda *args, **kwargs: trees.append(args))
    with hardware.forced(cpu_bf16=cpu_bf16):
        for seed, options in enumerate([{"num_beams": 1}, {"num_beams": 1, "min_new_tokens": 8}, *BEAM_OPTIONS[:4]]):
            options = {"forced_bos_token_id": ZH, "num_beams": 4, "max_new_tokens": 20, **options}
            input_ids = source(seed, length=6 + seed)
            with FastDecoder(model, weights="bf16", drafts=False) as decoder:
                expected = decoder.generate(input_ids, **options)
            with FastDecoder(model, weights="bf16", drafts=True) as decoder:
                assert torch.equal(decoder.generate(input_ids, **options), expected), options
                if options["num_beams"] == 1:
                    draft_layer = decoder.draft_session.model.get_decoder().layers[0]
    assert all(is_quantized(m) for m in (draft_layer.mlp.fc1, draft_layer.mlp.fc2, draft_layer.self_attn.qkv_proj))
    assert not trees


class CountedSteps(DecoderSteps):
    """Decoder steps counting the passes over the decoder (`step` or `steps`), and the last position a `step` ran."""

    passes, last_step = 0, 0

    def step(self, tokens, position):
        self.passes, self.last_step = self.passes + 1, max(self.last_step, position)
        return super().step(tokens, position)

    def steps(self, tokens, position, origins=None):
        self.passes += 1
        return super().steps(tokens, position, origins)


def beam_steps(decoder, model, input_ids, num_beams, max_length, target=None):
    """Counted steps of `model` over `input_ids` in `decoder`'s session; with `target`, a draft of it: `model`'s
    steps attending to `target`'s keys and values of the source."""
    mask = torch.ones_like(input_ids)
    encoded = decoder.encode(input_ids, mask)
    sources = None if target is None else [(layer.keys, layer.values) for layer in target.cache.layers]
    return CountedSteps(model, encoded, mask, num_beams, max_length, None, Workspace(), None, sources)


@pytest.mark.parametrize("draft_kind", ["right", "another model", "int8"])
@pytest.mark.parametrize("options", [
    {},
    {"min_new_tokens": 9},
    {"forced_eos": EOS},
    {"forced_bos": None},
    {"eos": None},
    {"length_penalty": 0.5, "early_stopping": True},
    {"length_penalty": 2.0, "early_stopping": "never", "num_return_sequences": 3},
])  # fmt: skip
@torch.inference_mode()
def test_drafted_beam_search_returns_beam_searchs_beams(draft_kind, options):
    """Whether the draft's beams are all right (the model itself), mostly wrong (another model) or as int8 makes
    them: the beams of beam search (forced first and last tokens, `</s>` banned before `min_new_tokens`, no `</s>`,
    length penalties and stopping rules, several returned); a right draft saves passes of the model."""
    model = tiny_model(seed=3)
    drafts = {"right": model, "another model": tiny_model(seed=4), "int8": int8_draft(model)}
    search = dict(num_beams=3, length_penalty=1.0, early_stopping=False, num_return_sequences=1)
    search.update({k: options.pop(k) for k in list(options) if k in search})
    options = {**OPTIONS, **options}
    beams, length = search["num_beams"], options["max_length"]
    with FastDecoder(model, weights="packed") as decoder, contextlib.ExitStack() as sessions:
        if draft_kind != "right":
            sessions.enter_context(FastDecoder(drafts[draft_kind], weights="packed"))
        for seed in range(3):
            input_ids = source(seed, length=5 + seed)
            plain = beam_steps(decoder, model, input_ids, beams, length)
            expected = beam_search(plain, 1, **search, **options)
            target = beam_steps(decoder, model, input_ids, beams, length)
            draft = beam_steps(decoder, drafts[draft_kind], input_ids, beams, length, target)
            assert torch.equal(drafted_beam_search(target, draft, **search, **options), expected), seed
            if draft_kind == "right" and expected.shape[1] > 8:
                assert target.passes < plain.passes / 2


@pytest.mark.parametrize("min_new_tokens", [4, 7])
@torch.inference_mode()
def test_a_right_draft_steps_no_further_than_the_search_it_drafts_for(min_new_tokens):
    """A draft's tree ends where its own search ends (no beam can improve the finished set): a right draft takes no
    step past the last the search itself takes, and the beams are beam search's."""
    model = tiny_model(seed=3)
    with torch.no_grad():  # `</s>` the likeliest token wherever it is allowed: the search ends soon after
        eos_row = model.get_output_embeddings().weight[EOS]
        model.get_decoder().layer_norm.bias.add_(eos_row / eos_row.norm() ** 2 * 12)  # its logit 12 higher
    search = dict(num_beams=3, length_penalty=1.0, early_stopping=False, num_return_sequences=1)
    options = {**OPTIONS, "min_new_tokens": min_new_tokens}
    with FastDecoder(model, weights="packed") as decoder:
        for seed in range(3):
            input_ids = source(seed, length=5 + seed)
            plain = beam_steps(decoder, model, input_ids, 3, options["max_length"])
            expected = beam_search(plain, 1, **search, **options)
            target = beam_steps(decoder, model, input_ids, 3, options["max_length"])
            draft = beam_steps(decoder, model, input_ids, 3, options["max_length"], target)
            assert torch.equal(drafted_beam_search(target, draft, **search, **options), expected), seed
            assert expected.shape[1] < options["max_length"] - 4 and draft.last_step <= plain.last_step, seed


def test_tree_origins_give_each_node_its_history_its_ancestors_and_itself():
    history = torch.tensor([[0, 1], [0, 0]])  # two beams' slots at positions 0 and 1
    parents = [torch.tensor([1, 1]), torch.tensor([0, 1])]  # level 1's nodes both continue slot 1 of level 0
    origins = tree_origins(history, parents)
    assert origins.tolist() == [
        [0, 1, 0, 0, 0],  # level 0 (position 2): the beams' histories, then their own slots
        [0, 0, 1, 1, 1],
        [0, 0, 1, 0, 0],  # level 1 (position 3): beam 1's history and node 1 of level 0, then its own slot
        [0, 0, 1, 1, 1],
        [0, 0, 1, 0, 0],  # level 2 (position 4): node 0 of level 1 (its history), then its own slot
        [0, 0, 1, 1, 1],
    ]


@pytest.mark.parametrize("program", ["scripted", "in Python", "layers' forwards"])
@torch.inference_mode()
def test_a_tree_of_beams_in_one_pass_is_what_beam_steps_compute(program):
    """`DecoderSteps.steps` over a tree of beams (the check of drafted beams) gives the hidden states of the steps
    that beam search takes along it, reorders included, and leaves their keys and values where the beams' later
    steps find them."""
    model = tiny_model(position_embedding_type="rope")
    input_ids = source()
    inline, script = program != "layers' forwards", program == "scripted"
    levels = [torch.tensor([20, 21, 22, 23]), torch.tensor([30, 31, 32, 33]), torch.tensor([40, 41, 42, 43])]
    parents = [torch.tensor([2, 0, 2, 3]), torch.tensor([3, 3, 1, 0])]
    with FastDecoder(model, weights="packed", inline_layers=inline, script_layers=script) as decoder:

        def started():
            steps = decoder.decoder_steps(input_ids, torch.ones_like(input_ids), 4, 12)
            steps.one_row_per_sentence()
            steps.steps(torch.tensor([EOS, ZH]), 0)
            steps.expand(torch.zeros(4, dtype=torch.long), 2)
            steps.step(torch.tensor([10, 11, 12, 13]), 2)
            steps.reorder(torch.tensor([1, 1, 3, 0]), 3)
            return steps

        one_by_one, expected = started(), []
        for level, tokens in enumerate(levels):
            if level:
                one_by_one.reorder(parents[level - 1], 3 + level)
            expected.append(one_by_one.step(tokens, 3 + level))
        one_by_one.reorder(torch.tensor([0, 0, 2, 1]), 6)
        expected_next = one_by_one.step(torch.tensor([50, 51, 52, 53]), 6)
        tree = started()
        origins = tree_origins(tree.cache.origins[:, :3].clone(), parents)
        found = tree.steps(torch.cat(levels), 3, origins)
        torch.testing.assert_close(found, torch.cat(expected), rtol=1e-5, atol=1e-5)
        tree.cache.follow(origins[8:][torch.tensor([0, 0, 2, 1])], 6)  # the beams after level 2's nodes 0, 0, 2, 1
        torch.testing.assert_close(tree.step(torch.tensor([50, 51, 52, 53]), 6), expected_next, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("num_beams", [1, 4])
def test_a_forced_first_token_costs_one_text_no_pass_of_its_own(num_beams, monkeypatch):
    """The language code is forced: its position is computed with the next token's, one pass for both, and the
    tokens are `generate`'s."""
    model = tiny_model()
    passes = []
    for name in ("step", "steps"):
        original = getattr(DecoderSteps, name)
        monkeypatch.setattr(DecoderSteps, name, lambda self, *a, f=original, n=name: (passes.append(n), f(self, *a))[1])
    options = dict(forced_bos_token_id=ZH, num_beams=num_beams, max_new_tokens=6, min_new_tokens=6)
    with FastDecoder(model, drafts=False) as decoder:
        found = decoder.generate(source(), **options)
    assert torch.equal(found, model.generate(input_ids=source(), do_sample=False, **options))
    assert passes[0] == "steps" and len(passes) == found.shape[1] - 2  # start and language code in one pass
