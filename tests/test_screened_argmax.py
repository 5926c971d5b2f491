"""`zhen.screened_argmax`: greedy search's next token found by screening the vocabulary with an int8 product must be
the full float32 product's argmax (ties: the first token), never a banned token, and decline (None) rather than guess;
a float32 decoding session uses it by default on a CPU, in both machine classes, and decodes exactly as without it."""

import os
import sys
import textwrap

import pytest
import torch

from zhen import ZhenConfig, ZhenForConditionalGeneration, decoder_steps, fast_generation, hardware
from zhen.fast_generation import FastDecoder
from zhen.screened_argmax import CHUNK, FEW_ROWS, VNNI_FEW_ROWS, ScreenedArgmax, fbgemm_rows, screen_works
from zhen.session_modules import Bf16Linear, PackedLinear, ScreenedBf16Head, ScreenedHead


pytestmark = pytest.mark.skipif(not screen_works(), reason="this PyTorch has no int8 matrix product on the CPU")


@pytest.fixture(autouse=True)
def screen_every_product(monkeypatch):
    """The tests' products are small: screen them all the same."""
    monkeypatch.setattr("zhen.screened_argmax.MIN_PRODUCT", 0)


PAD, EOS, EN, ZH = 0, 2, 4, 5


def head(vocab: int, width: int, bias: bool = False, seed: int = 0) -> torch.nn.Linear:
    torch.manual_seed(seed)
    linear = torch.nn.Linear(width, vocab, bias=bias)
    torch.nn.init.normal_(linear.weight, std=0.05)
    return linear


def peaked_hidden(linear: torch.nn.Linear, rows: int, seed: int = 1) -> torch.Tensor:
    """Hidden states pointing at a token each, as a trained model's mostly do: a clear argmax, few close rivals."""
    generator = torch.Generator().manual_seed(seed)
    targets = torch.randint(0, linear.out_features, (rows,), generator=generator)
    noise = torch.randn(rows, linear.in_features, generator=generator)
    return linear.weight.detach()[targets] * 40 + noise


@pytest.fixture(params=["on", "off"])
def int8_matmul(request):
    """Both ways the screen multiplies many rows: `torch._int_mm` (fast where it has kernels) or, where that is a plain
    loop (AVX2: Zen 3), FBGEMM's packed weight for every row count."""
    if request.param == "off" and hardware.detected().fbgemm == "off":
        pytest.skip("this PyTorch has no FBGEMM")
    with hardware.forced(int8_matmul=request.param):
        yield request.param


def full_argmax(linear: torch.nn.Linear, hidden: torch.Tensor, banned: int | None = None) -> torch.Tensor:
    logits = linear(hidden)
    if banned is not None:
        logits[:, banned] = -torch.inf
    return logits.argmax(-1)


@pytest.mark.parametrize("vocab,width", [(4096, 64), (1000, 30), (CHUNK * 37 + 5, 24)])
@pytest.mark.parametrize("rows", [1, 7, 64])
@pytest.mark.parametrize("bias", [False, True])
@torch.inference_mode()
def test_the_screen_finds_the_full_products_argmax(vocab, width, rows, bias, int8_matmul):
    linear = head(vocab, width, bias)
    hidden = peaked_hidden(linear, rows)
    tokens = ScreenedArgmax(linear)(hidden)
    assert tokens is not None and torch.equal(tokens, full_argmax(linear, hidden))


@torch.inference_mode()
def test_flat_logits_are_still_right_or_declined(int8_matmul):
    """Untrained weights give logits with many near rivals: the screen keeps every token its bound cannot rule out,
    so it answers the argmax or, with too many candidates, declines."""
    linear = head(4096, 64)
    hidden = torch.nn.functional.layer_norm(torch.randn(64, 64, generator=torch.Generator().manual_seed(2)), (64,))
    tokens = ScreenedArgmax(linear)(hidden)
    assert tokens is None or torch.equal(tokens, full_argmax(linear, hidden))
    assert ScreenedArgmax(head(CHUNK * 100, 64))(torch.zeros(3, 64)) is None  # every logit 0: every token a candidate
    assert ScreenedArgmax(head(CHUNK * 10, 64))(torch.zeros(3, 64)).tolist() == [0, 0, 0]  # few blocks: all ties
    assert ScreenedArgmax(linear)(torch.full((2, 64), torch.nan)) is None
    assert ScreenedArgmax(linear)(torch.empty(0, 64)) is None


@torch.inference_mode()
def test_ties_go_to_the_first_token_and_banned_tokens_are_never_chosen(int8_matmul):
    linear = head(512, 32)
    with torch.no_grad():
        linear.weight[300] = linear.weight[7]  # two tokens with the same logits everywhere
    hidden = linear.weight.detach()[[7, 7]] * 40
    screen = ScreenedArgmax(linear)
    assert screen(hidden).tolist() == [7, 7] == full_argmax(linear, hidden).tolist()
    assert screen(hidden, banned=7).tolist() == [300, 300] == full_argmax(linear, hidden, banned=7).tolist()
    hidden = peaked_hidden(linear, 16)
    banned = int(full_argmax(linear, hidden)[0])
    tokens = screen(hidden, banned=banned)
    assert banned not in tokens.tolist() and torch.equal(tokens, full_argmax(linear, hidden, banned))


@pytest.mark.parametrize("bias", [False, True])
@torch.inference_mode()
def test_one_row_is_screened_as_in_a_batch(bias, int8_matmul):
    """A step of one sentence takes its own path (`one_row`): the same tokens as the batch's path and the full
    product, ties to the first token, banned tokens never, declines where it cannot tell."""
    linear = head(CHUNK * 37 + 5, 24, bias)
    screen = ScreenedArgmax(linear)
    hidden = torch.cat([peaked_hidden(linear, 24), torch.randn(8, 24, generator=torch.Generator().manual_seed(3))])
    for banned in (None, int(full_argmax(linear, hidden[:1])[0])):
        batch = screen(hidden, banned)
        for i in range(len(hidden)):
            one = screen(hidden[i : i + 1], banned)
            expected = full_argmax(linear, hidden[i : i + 1], banned)
            assert (one is None or torch.equal(one, expected)) and (batch is None or batch[i] == expected), i
            many = screen.many_rows(hidden[i : i + 1], banned)
            assert one is None or many is None or torch.equal(one, many), i
            assert one is not None or i >= 24  # peaked rows are always answered
    tied = head(512, 32, bias)
    with torch.no_grad():
        tied.weight[300] = tied.weight[7]
        if bias:
            tied.bias[300] = tied.bias[7]
    assert ScreenedArgmax(tied)(tied.weight.detach()[[7]] * 40).tolist() == [7]
    assert ScreenedArgmax(tied)(tied.weight.detach()[[7]] * 40, banned=7).tolist() == [300]
    flat = head(4096, 64, bias)  # untrained: many near rivals, where only the bound keeps the argmax a candidate
    rows = torch.nn.functional.layer_norm(torch.randn(64, 64, generator=torch.Generator().manual_seed(2)), (64,))
    answers = [ScreenedArgmax(flat)(rows[i : i + 1]) for i in range(len(rows))]
    assert all(a is None or torch.equal(a, full_argmax(flat, rows[i : i + 1])) for i, a in enumerate(answers))
    assert screen(torch.full((1, 24), torch.nan)) is None
    assert ScreenedArgmax(head(CHUNK * 100, 64))(torch.zeros(1, 64)) is None  # every token a candidate
    assert ScreenedArgmax(head(CHUNK * 10, 64))(torch.zeros(1, 64)).tolist() == [0]


@pytest.mark.parametrize("rows", [2, 5, FEW_ROWS, FEW_ROWS + 1, VNNI_FEW_ROWS + 1])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("full_range", ["on", "off"])
@torch.inference_mode()
def test_a_few_rows_multiply_by_a_weight_fbgemm_packed_once(monkeypatch, rows, bias, full_range):
    """Up to `few_rows` rows ([`fbgemm_rows`]) the screen multiplies hidden values of 8 bits where the int8 kernels
    sum them exactly (`int8_full_range`), else of 7, by the int8 weight FBGEMM packed once, after `PACK_AFTER` such
    screens by `torch._int_mm` (which packs it anew each call): the tokens of `_int_mm`'s path and of the full
    product, ties to the first token, banned tokens never. With FBGEMM off (`zhen.hardware`), `_int_mm` alone."""
    import zhen.screened_argmax as screened_argmax

    if full_range == "on" and hardware.detected().int8_full_range == "off":
        pytest.skip("this CPU's int8 kernels add pairs of 8-bit products in int16")
    monkeypatch.setattr(screened_argmax, "FEW_ROWS_MIN_WEIGHT", 0)
    monkeypatch.setattr(screened_argmax, "PACK_AFTER", 2)
    linear = head(CHUNK * 37 + 5, 24, bias)
    with torch.no_grad():
        linear.weight[300] = linear.weight[7]
        if bias:
            linear.bias[300] = linear.bias[7]
    hidden = torch.cat([peaked_hidden(linear, rows - 1), linear.weight.detach()[[7]] * 40])
    products = []
    sums = screened_argmax.fbgemm_sums
    monkeypatch.setattr(screened_argmax, "fbgemm_sums", lambda *args: products.append(1) or sums(*args))
    for fbgemm in ("on", "off"):
        with hardware.forced(fbgemm=fbgemm, int8_full_range=full_range, int8_matmul="on"):
            screen = ScreenedArgmax(linear)
            for _ in range(2):  # `_int_mm` until the screen has run `PACK_AFTER` few-row screens, then FBGEMM
                products.clear()
                assert torch.equal(screen(hidden), full_argmax(linear, hidden)) and not products
            assert (screen.fbgemm_weight is not None) == (fbgemm == "on" == hardware.detected().fbgemm)
            assert screen.fbgemm_levels == (127 if full_range == "on" else screened_argmax.FBGEMM_LEVELS)
            for banned in (None, int(full_argmax(linear, hidden[:1])[0]), 7):
                products.clear()
                tokens = screen(hidden, banned)
                assert tokens is not None and torch.equal(tokens, full_argmax(linear, hidden, banned))
                fbgemm_ran = fbgemm == "on" and rows <= screen.few_rows and hardware.detected().fbgemm == "on"
                assert len(products) == fbgemm_ran
            assert tokens[-1] == 300 and screen(hidden)[-1] == 7  # the tied pair: the first unless banned
    assert screen(torch.full((rows, 24), torch.nan)) is None
    monkeypatch.setattr(screened_argmax, "FEW_ROWS_MIN_WEIGHT", linear.weight.numel() + 1)
    with hardware.forced(int8_full_range=full_range, int8_matmul="on"):  # this small: for 7 bits `_int_mm` always
        small = ScreenedArgmax(linear).fbgemm_weight
    assert (small is not None) == (full_range == "on" == hardware.detected().fbgemm)


@pytest.mark.parametrize("amx_int8", ["on", "off"])
@pytest.mark.parametrize("full_range", ["on", "off"])
@pytest.mark.parametrize("int8_matmul", ["on", "off"])
def test_vnni_without_amx_sends_more_rows_to_fbgemm(full_range, amx_int8, int8_matmul):
    """FBGEMM's VNNI kernels beat `torch._int_mm` (which packs the weight anew each call) well past a few rows, the
    more so at wider hidden states; with AMX, `_int_mm` may multiply in its tiles, and without VNNI FBGEMM's kernels
    are slower from 8 rows: `FEW_ROWS` there; but where `_int_mm` is a plain loop (AVX2: Zen 3), every row."""
    with hardware.forced(int8_full_range=full_range, amx_int8=amx_int8, int8_matmul=int8_matmul) as machine:
        vnni = full_range == "on" and amx_int8 == "off"
        few_rows = {256: VNNI_FEW_ROWS if vnni else FEW_ROWS, 512: 64 if vnni else FEW_ROWS}
        for width in (256, 512):
            assert fbgemm_rows(width, machine) == (few_rows[width] if int8_matmul == "on" else sys.maxsize)
        assert ScreenedArgmax(head(CHUNK * 4, 512)).few_rows == fbgemm_rows(512, machine)


@pytest.mark.skipif(hardware.detected().fbgemm == "off", reason="this PyTorch has no FBGEMM")
@pytest.mark.parametrize("instructions", ["AVX2", "AVX512", "AVX512_E1"])
def test_fbgemm_sums_are_int_mms_with_each_of_fbgemms_kernels(run_fresh_python, instructions):
    """FBGEMM's kernels without VNNI add pairs of uint8 x int8 products in int16, which 8-bit inputs overflow (shown
    here); the screen's 7-bit values give `torch._int_mm`'s exact sums with every kernel set FBGEMM has, and its 8-bit
    values wherever `zhen.hardware` detects `int8_full_range` under that kernel set (`FBGEMM_ENABLE_INSTRUCTIONS`
    forces one; a set this CPU lacks falls back to one it has)."""
    code = textwrap.dedent("""
        import torch
        from zhen import hardware
        from zhen.screened_argmax import FBGEMM_LEVELS, fbgemm_packed, fbgemm_sums
        torch.manual_seed(0)
        full_range = hardware.detected().int8_full_range == "on"
        exact_at = {}
        for levels in (FBGEMM_LEVELS, 127):
            for width, vocab in ((512, 1024), (24, 200)):
                weight = torch.randint(-127, 128, (vocab, width), dtype=torch.int8)
                weight[:8], weight[8:16] = 127, -127
                packed = fbgemm_packed(weight, levels)
                for rows in (1, 2, 8):
                    hidden = torch.randint(-levels, levels + 1, (rows, width)).float()
                    hidden[0], hidden[-1] = levels, -levels
                    exact = torch._int_mm(hidden.to(torch.int8), weight.t()).float()
                    same = torch.equal(fbgemm_sums(hidden, packed, levels), exact)
                    exact_at[levels] = exact_at.get(levels, True) and same
        assert exact_at[FBGEMM_LEVELS]
        assert exact_at[127] or not full_range
        print("8-bit exact:", exact_at[127], "full range detected:", full_range)
    """)
    env = {**os.environ, "FBGEMM_ENABLE_INSTRUCTIONS": instructions}
    printed = run_fresh_python(code, env=env)
    if instructions == "AVX2":  # why the screen gives FBGEMM 7 bits there
        assert "8-bit exact: False full range detected: False" in printed


def tiny_model(seed=0, vocab_size=3000) -> ZhenForConditionalGeneration:
    torch.manual_seed(seed)
    return ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=vocab_size)).eval()


def sources(vocab_size=3000, rows=6):
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(6, vocab_size, (rows, 9), generator=generator)
    input_ids[:, 0], input_ids[:, -1] = EN, EOS
    input_ids[rows // 2 :, 6:] = PAD
    input_ids[rows // 2 :, 5] = EOS
    return input_ids, input_ids.ne(PAD).long()


@pytest.fixture
def screen_calls(monkeypatch):
    """How often the screen answered and declined in sessions opened within the test."""
    calls = {"answered": 0, "declined": 0}
    original = ScreenedArgmax.__call__

    def counted(self, hidden, banned=None):
        tokens = original(self, hidden, banned)
        calls["declined" if tokens is None else "answered"] += 1
        return tokens

    monkeypatch.setattr(ScreenedArgmax, "__call__", counted)
    return calls


@pytest.mark.parametrize("cpu_bf16", ["emulated", "native"])
@pytest.mark.parametrize("min_new_tokens", [0, 6])
def test_a_float32_session_decodes_greedily_through_the_screen_as_without_it(cpu_bf16, min_new_tokens, screen_calls,
                                                                            int8_matmul):  # fmt: skip
    """Forced to each machine class: a float32 session (the default on a CPU without bf16 instructions) screens each
    greedy step, by `torch._int_mm` or FBGEMM alone, and returns exactly `model.generate`'s tokens;
    `screen_argmax=False` turns it off."""
    model = tiny_model()
    input_ids, attention_mask = sources()
    options = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=12, min_new_tokens=min_new_tokens)
    expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, do_sample=False, **options)
    with hardware.forced(cpu_bf16=cpu_bf16):
        with FastDecoder(model, weights="packed") as decoder:
            assert isinstance(model.lm_head, ScreenedHead)
            screened = decoder.generate(input_ids, attention_mask, **options)
        answered = screen_calls["answered"]
        with FastDecoder(model, weights="packed", screen_argmax=False) as decoder:
            assert not isinstance(model.lm_head, ScreenedHead)
            plain = decoder.generate(input_ids, attention_mask, **options)
    assert answered >= 10 and screen_calls["answered"] == answered  # every step but the forced first; none unscreened
    assert torch.equal(screened, expected) and torch.equal(plain, expected)
    assert type(model.lm_head) is torch.nn.Linear  # the model as it was


@pytest.mark.parametrize(
    "machine, head_class",
    [
        (dict(cpu_bf16="emulated"), ScreenedHead),
        (dict(cpu_bf16="emulated", int8_matmul="off"), ScreenedHead),  # AVX2 (Zen 3): FBGEMM's product alone
        (dict(cpu_bf16="emulated", int8_matmul="off", fbgemm="off"), PackedLinear),  # no fast int8 product at all
        (dict(cpu_bf16="native", int8_full_range="on", amx_int8="off"), ScreenedBf16Head),  # AVX512-BF16 and VNNI
        (dict(cpu_bf16="native", int8_full_range="on", amx_int8="on"), Bf16Linear),  # bf16 in AMX tiles
        (dict(cpu_bf16="native", int8_full_range="off", amx_int8="off"), Bf16Linear),  # no VNNI
    ],
)
def test_the_default_session_screens_where_int8_outruns_its_products(machine, head_class, screen_calls, monkeypatch):
    """A float32 session screens where it has a fast int8 product (`torch._int_mm`'s kernels or FBGEMM's); a bf16
    one where the CPU's int8 products outrun its bf16 ones (VNNI without AMX) and the LM head is large
    (`BF16_MIN_WEIGHT`); `screen_argmax` forces either way."""
    model = tiny_model()
    with hardware.forced(**machine), FastDecoder(model) as decoder:
        assert type(model.lm_head) is (Bf16Linear if head_class is ScreenedBf16Head else head_class)  # a small head
    monkeypatch.setattr(fast_generation, "BF16_MIN_WEIGHT", model.lm_head.weight.numel())
    with hardware.forced(**machine), FastDecoder(model) as decoder:
        assert decoder.weights == ("packed" if machine["cpu_bf16"] == "emulated" else "bf16")
        assert type(model.lm_head) is head_class
    with hardware.forced(**machine), FastDecoder(model, screen_argmax=False):
        assert type(model.lm_head) in (PackedLinear, Bf16Linear)
    with hardware.forced(**machine), FastDecoder(model, screen_argmax=True):
        assert type(model.lm_head) in (ScreenedHead, ScreenedBf16Head)


@pytest.mark.parametrize("min_new_tokens", [0, 12])
def test_a_screened_bf16_session_takes_the_float32_argmax_of_its_hidden_states(min_new_tokens, monkeypatch):
    """Forced to a CPU with AVX512-BF16 and VNNI: every greedy step of a bf16 session (but the forced first) is
    answered by the screen, with the argmax of the float32 logits of the step's hidden states, `</s>` banned until
    `min_new_tokens`; beam search, which needs every logit, is the unscreened session's."""
    model = tiny_model()
    input_ids, attention_mask = sources()
    options = dict(forced_bos_token_id=ZH, max_new_tokens=12, min_new_tokens=min_new_tokens)
    answers = []
    original = ScreenedBf16Head.next_tokens

    def recorded(self, hidden_states, banned=None):
        tokens = original(self, hidden_states, banned)
        answers.append((hidden_states.clone(), banned, tokens))
        return tokens

    monkeypatch.setattr(ScreenedBf16Head, "next_tokens", recorded)
    monkeypatch.setattr(fast_generation, "BF16_MIN_WEIGHT", 0)
    machine = dict(cpu_bf16="native", int8_full_range="on", amx_int8="off")
    with hardware.forced(**machine), FastDecoder(model) as decoder:
        greedy = decoder.generate(input_ids, attention_mask, num_beams=1, **options)
        beams = decoder.generate(input_ids, attention_mask, num_beams=4, **options)
    with hardware.forced(**machine), FastDecoder(model, screen_argmax=False) as decoder:
        assert torch.equal(decoder.generate(input_ids, attention_mask, num_beams=4, **options), beams)
    assert type(model.lm_head) is torch.nn.Linear
    assert len(answers) == greedy.shape[1] - 2  # after the decoder start and the forced language code
    for step, (hidden, banned, tokens) in enumerate(answers):
        with torch.no_grad():
            assert tokens is not None and torch.equal(tokens, full_argmax(model.lm_head, hidden.clone(), banned))
        if min_new_tokens:  # every row runs every step: the step's tokens are the output's column
            assert banned == model.config.eos_token_id and torch.equal(tokens, greedy[:, step + 2])
        else:
            assert banned is None


def test_a_batch_stops_screening_after_the_screen_declines(monkeypatch, screen_calls):
    """A screen that declines step after step (logits too flat for its bound) costs a batch a few int8 products, then
    the batch goes on with the full product alone; the tokens are the same."""
    model = tiny_model()
    input_ids, attention_mask = sources()
    options = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=12, min_new_tokens=12)
    expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, do_sample=False, **options)
    monkeypatch.setattr("zhen.screened_argmax.MAX_CANDIDATE_BLOCKS", 0)
    with FastDecoder(model, weights="packed") as decoder:
        assert torch.equal(decoder.generate(input_ids, attention_mask, **options), expected)
        assert screen_calls["declined"] == decoder_steps.SCREEN_PATIENCE and screen_calls["answered"] == 0


@pytest.mark.parametrize("edit", ["in-place", "in-place-through-data", "new-parameter"])
@torch.inference_mode(False)
def test_a_kept_screen_never_serves_a_changed_weight(edit):
    model = ZhenForConditionalGeneration(
        ZhenConfig.from_preset("tiny", vocab_size=3000, tie_word_embeddings=False)
    ).eval()
    input_ids, attention_mask = sources()
    options = dict(forced_bos_token_id=ZH, num_beams=1, max_new_tokens=10)
    with FastDecoder(model, weights="packed") as decoder:
        before = decoder.generate(input_ids, attention_mask, **options)
    noise = torch.randn(model.lm_head.weight.shape, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        if edit == "in-place":
            model.lm_head.weight.add_(noise)
        elif edit == "in-place-through-data":
            model.lm_head.weight.data.add_(noise)
        else:
            model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight + noise)
    expected = model.generate(input_ids=input_ids, attention_mask=attention_mask, do_sample=False, **options)
    with FastDecoder(model, weights="packed") as decoder:
        after = decoder.generate(input_ids, attention_mask, **options)
    assert torch.equal(after, expected) and not torch.equal(after, before)


@torch.inference_mode()
def test_products_too_small_to_pay_are_left_to_the_full_product(monkeypatch):
    """Under 2^23 multiply-adds the full product runs, unless the weight is large enough (`MIN_WEIGHT`) that reading
    a quarter of it pays at any number of rows (a step of one sentence reads the whole weight)."""
    monkeypatch.setattr("zhen.screened_argmax.MIN_PRODUCT", 1 << 23)
    linear = head(4096, 64)
    hidden = peaked_hidden(linear, 8)
    assert ScreenedArgmax(linear)(hidden) is None  # 8 x 4096 x 64 multiply-adds: under 2^23
    assert torch.equal(
        ScreenedArgmax(linear)(peaked_hidden(linear, 40)), full_argmax(linear, peaked_hidden(linear, 40))
    )
    monkeypatch.setattr("zhen.screened_argmax.MIN_WEIGHT", 4096 * 64)
    assert torch.equal(ScreenedArgmax(linear)(hidden), full_argmax(linear, hidden))


@pytest.mark.parametrize("weights", ["bf16", "packed"])
@pytest.mark.parametrize("amx_int8", ["on", "off"])
def test_only_a_session_that_would_screen_probes_for_the_int8_product(weights, amx_int8, monkeypatch):
    """Probing whether PyTorch multiplies int8 matrices costs a process's first int8 product: a bf16 session on a
    CPU whose bf16 products run in AMX tiles, which never screens, does not probe; a float32 session, and a bf16 one
    where int8 outruns bf16, probe and screen."""
    probes = []
    monkeypatch.setattr("zhen.screened_argmax.screen_works", lambda: probes.append(1) or True)
    monkeypatch.setattr(fast_generation, "BF16_MIN_WEIGHT", 0)
    model = tiny_model()
    machine = dict(cpu_bf16="native", int8_full_range="on", amx_int8=amx_int8)  # the AMX machine's, on every CPU
    with hardware.forced(**machine), FastDecoder(model, weights=weights):
        screened = isinstance(model.lm_head, (ScreenedHead, ScreenedBf16Head))
    expected = weights == "packed" or amx_int8 == "off"
    assert screened == expected and len(probes) == expected
