"""CTranslate2 export: greedy outputs of the converted model equal the PyTorch model's for every position type and
norm placement, from memory and from a saved checkpoint with its tokenizer; int8 stays close."""

import pytest
import torch

from zhen import ZhenConfig, ZhenForConditionalGeneration
from zhen.fast_generation import generate


ctranslate2 = pytest.importorskip("ctranslate2")
from zhen.commands.export_ct2 import main as export_main  # noqa: E402
from zhen.convert_ctranslate2 import CTranslate2Generator, convert  # noqa: E402


EOS, EN, ZH = 2, 4, 5


def sources(vocab_size, lengths=(9, 7, 4, 2, 9, 5)):
    generator = torch.Generator().manual_seed(0)
    width = max(lengths) + 2
    input_ids = torch.zeros(len(lengths), width, dtype=torch.long)
    for row, n in enumerate(lengths):
        ids = torch.randint(6, vocab_size, (n,), generator=generator)
        input_ids[row, : n + 2] = torch.cat([torch.tensor([EN]), ids, torch.tensor([EOS])])
    return input_ids, input_ids.ne(0).long()


@pytest.mark.parametrize("position_embedding_type", ["sinusoidal", "learned", "rope"])
@pytest.mark.parametrize("normalize_before", [True, False])
def test_greedy_outputs_equal_pytorch(tmp_path, position_embedding_type, normalize_before):
    torch.manual_seed(0)
    config = ZhenConfig.from_preset(
        "tiny", vocab_size=12, position_embedding_type=position_embedding_type, normalize_before=normalize_before
    )
    model = ZhenForConditionalGeneration(config).eval()
    ct2 = CTranslate2Generator(convert(model, tmp_path / "ct2"))
    input_ids, attention_mask = sources(12)
    for min_new_tokens, max_new_tokens in [(0, 12), (12, 12)]:
        kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=max_new_tokens, min_new_tokens=min_new_tokens)
        expected = generate(model, input_ids, attention_mask, **kwargs)
        assert torch.equal(ct2.generate(input_ids, attention_mask, **kwargs), expected)


def test_batches_submitted_asynchronously_translate_as_one_by_one(tmp_path):
    torch.manual_seed(0)
    model = ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=12)).eval()
    output = convert(model, tmp_path / "ct2")
    input_ids, attention_mask = sources(12)
    kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=12, num_beams=2)
    expected = [CTranslate2Generator(output).generate(input_ids[i::2], attention_mask[i::2], **kwargs) for i in (0, 1)]
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        parallel = CTranslate2Generator(output, inter_threads=2, intra_threads=1)
        assert torch.get_num_threads() == 2  # CTranslate2's threads are its own: PyTorch keeps the process's
        waits = [parallel.generate(input_ids[i::2], attention_mask[i::2], asynchronous=True, **kwargs) for i in (0, 1)]
        assert all(torch.equal(wait(), ids) for wait, ids in zip(waits, expected))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)


def test_checkpoint_export_command_translates_like_pytorch(tiny_checkpoint, tiny_model, tiny_tokenizer, tiny_pairs,
                                                            tmp_path):  # fmt: skip
    output = export_main([str(tiny_checkpoint), str(tmp_path / "ct2")])
    tiny_tokenizer.src_lang = "en"
    batch = tiny_tokenizer([en for en, _ in tiny_pairs], padding=True, return_tensors="pt")
    kwargs = dict(forced_bos_token_id=tiny_tokenizer.get_lang_id("zh"), max_new_tokens=40)
    expected = tiny_model.generate(**batch, **kwargs)
    assert torch.equal(CTranslate2Generator(output).generate(batch["input_ids"], batch["attention_mask"], **kwargs),
                       expected)  # fmt: skip

    int8 = CTranslate2Generator(export_main([str(tiny_checkpoint), str(tmp_path / "int8"), "--quantization", "int8"]))
    texts = tiny_tokenizer.batch_decode(int8.generate(batch["input_ids"], batch["attention_mask"], **kwargs),
                                        skip_special_tokens=True)  # fmt: skip
    reference = tiny_tokenizer.batch_decode(expected, skip_special_tokens=True)
    assert sum(a == b for a, b in zip(texts, reference)) >= len(reference) - 2


def test_untied_embeddings_and_bfloat16_model_convert(tmp_path):
    torch.manual_seed(0)
    model = ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=40, tie_word_embeddings=False))
    model.eval()
    input_ids, attention_mask = sources(40)
    kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=8, min_new_tokens=8)
    expected = generate(model, input_ids, attention_mask, **kwargs)
    ct2 = CTranslate2Generator(convert(model.to(torch.bfloat16), tmp_path / "ct2"))  # exported as float32
    assert model.dtype == torch.bfloat16  # the caller's model is left as it was
    assert torch.equal(ct2.generate(input_ids, attention_mask, **kwargs), expected)


def test_a_vocabulary_rounded_up_past_the_tokenizer_exports(tiny_tokenizer, tmp_path):
    torch.manual_seed(0)
    vocab_size = -(-(len(tiny_tokenizer) + 1) // 8) * 8  # as zhen-train rounds it, with at least one spare row
    model = ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=vocab_size)).eval()
    model.save_pretrained(tmp_path / "model")
    tiny_tokenizer.save_pretrained(tmp_path / "model")
    ct2 = CTranslate2Generator(export_main([str(tmp_path / "model"), str(tmp_path / "ct2")]))
    assert len(ct2.tokens) == vocab_size and ct2.tokens[-1] == f"<unused_{vocab_size - 1}>"
    input_ids, attention_mask = sources(len(tiny_tokenizer))
    kwargs = dict(forced_bos_token_id=ZH, max_new_tokens=10, min_new_tokens=10)
    assert torch.equal(ct2.generate(input_ids, attention_mask, **kwargs), generate(model, input_ids, attention_mask,
                                                                                    **kwargs))  # fmt: skip


def test_a_tokenizer_larger_than_the_model_is_refused(tiny_tokenizer, tmp_path, capsys):
    model = ZhenForConditionalGeneration(ZhenConfig.from_preset("tiny", vocab_size=len(tiny_tokenizer) - 8))
    model.save_pretrained(tmp_path / "model")
    tiny_tokenizer.save_pretrained(tmp_path / "model")
    with pytest.raises(ValueError, match="does not belong to this model"):
        convert(str(tmp_path / "model"), tmp_path / "ct2")
    with pytest.raises(SystemExit) as exit_info:
        export_main([str(tmp_path / "model"), str(tmp_path / "ct2")])
    assert exit_info.value.code == 2 and "does not belong to this model" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model"]  # no half-written export left behind
