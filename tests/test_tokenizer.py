"""Tests of `zhen.tokenization_zhen`: lossless round trips, language codes, batching, save/load and remote code."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer

from zhen import ZhenConfig  # importing zhen registers ZhenTokenizerFast with AutoTokenizer
from zhen.tokenization_zhen import (
    BYTE_TOKENS,
    LANGUAGE_CODES,
    SPECIAL_TOKENS,
    ZhenTokenizerFast,
    normalize_lang,
    normalize_text,
)
from zhen.tokenizer_training import train_tokenizer


SUBJECTS = [("I", "我"), ("You", "你"), ("He", "他"), ("She", "她"), ("We", "我们"), ("They", "他们"), ("Tom", "汤姆")]
VERBS = [("liked", "喜欢"), ("wanted", "想要"), ("saw", "看见了"), ("bought", "买了")]
OBJECTS = [("books", "书"), ("tea", "茶"), ("the red car", "那辆红色的汽车"), ("Chinese food", "中国菜")]
EXTRA_PAIRS = [
    ("I use Python to write code.", "我用 Python 写代码。"),
    ("The iPhone 15 is expensive!", "iPhone 15 很贵！"),
    ("This novel is boring.", "這本小說很無聊。"),
    ("It happened on March 15, 2024.", "这件事发生在2024年3月15日。"),
    ("What? Really?", "什么？真的吗？"),
]
CORPUS = [(f"{s} {v} {o}.", f"{zs}{zv}{zo}。") for s, zs in SUBJECTS for v, zv in VERBS for o, zo in OBJECTS]
CORPUS += EXTRA_PAIRS * 3

HARD_CASES = [
    "Hello, world!",
    "Tom didn't know what to do.",
    "  leading and trailing spaces  ",
    "multiple   spaces,\ttabs\tand\nnew\nlines\r\n",
    "",
    " ",
    "\n\n",
    "我爱大自然。",
    "這本小說很無聊。",
    "我用 Python 写代码",
    "iPhone 15 很贵",
    "Mixed中文English混合",
    "全角标点：，！？；（）「」《》、……——",
    "half-width punctuation: ,!?;() [] {} <> ...",
    "１２３ＡＢＣ full-width digits and letters",
    "2024年3月15日，价格是$1,299.99（约¥9,400）",
    "😀👍🏽 👨‍👩‍👧‍👦 🇨🇳🇺🇸 🏳️‍🌈 ❤️",
    "rare CJK 𠀀𪚥𰻞 and Ext-A 㐀",
    "café naïve e\u0301 Ångström",
    "zero\u200bwidth\u200dspace\ufeff",
    "▁ is just a character ▁",
    "<0x41> is not a byte token",
    "Ελληνικά Русский 한국어 日本語のテキスト العربية",
    "ideographic\u3000space and no-break\u00a0space",
    "\x00\x1f control \x7f chars",
    "“引号”和‘单引号’ \"quotes\" 'single'",
    "\uf900 compatibility ideograph (NFC maps it to U+8C48)",
    # special-token strings in user text are text (issue 16)
    "Type <unk> here",
    "a<s>b",
    "use __zh__ please",
    "<s>struck</s> <pad> __en__</s>",
    "__zh__ at the start, </s> at the end </s>",
]


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(CORPUS, vocab_size=1000, show_progress=False)


@pytest.fixture(scope="module")
def saved_dir(tokenizer, tmp_path_factory):
    folder = tmp_path_factory.mktemp("zhen_tokenizer")
    tokenizer.save_pretrained(folder)
    return folder


def round_trip(tokenizer, text: str) -> str:
    return tokenizer.decode(tokenizer(text)["input_ids"], skip_special_tokens=True)


# ---------------------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("text", HARD_CASES)
def test_round_trip_hard_cases(tokenizer, text):
    assert round_trip(tokenizer, text) == normalize_text(text)


def test_round_trip_batch(tokenizer):
    batch = tokenizer(HARD_CASES, padding=True)
    assert tokenizer.batch_decode(batch["input_ids"], skip_special_tokens=True) == list(map(normalize_text, HARD_CASES))


def test_no_unk_and_bytes_only_for_rare_characters(tokenizer):
    ids = [i for text in HARD_CASES for i in tokenizer(text)["input_ids"]]
    assert tokenizer.unk_token_id not in ids
    assert tokenizer.tokenize("𠀀") == ["<0xF0>", "<0xA0>", "<0x80>", "<0x80>"]
    assert all(token not in BYTE_TOKENS for token in tokenizer.tokenize("我喜欢中国菜。"))


def test_normalization_is_nfc_and_keeps_fullwidth_punctuation(tokenizer):
    assert normalize_text("e\u0301") == "é"
    assert normalize_text("，！？：；（）") == "，！？：；（）"  # NFKC would turn these into ASCII
    assert tokenizer.backend_tokenizer.normalizer.normalize_str("Hi，！") == " Hi，！"
    assert tokenizer.decode(tokenizer.encode("Case Is KEPT"), skip_special_tokens=True) == "Case Is KEPT"


def test_spacing(tokenizer):
    tokens = tokenizer.tokenize("我用 Python 写代码")
    assert "".join(tokens) == "我用 Python 写代码"  # no space added between Chinese characters
    assert tokens[0] == "我用" and tokens[-2:] == [" ", "写代码"]
    assert not any(" " in token for token in tokenizer.tokenize("我喜欢中国菜"))
    # The first word gets the same token as inside a sentence: "Tom" is encoded as " Tom".
    assert tokenizer.tokenize("Tom")[0] == tokenizer.tokenize("I saw Tom")[-1] == " Tom"


ENGLISH = st.text(
    st.sampled_from(list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?'\"-()\n\t"))
)
CHINESE = st.text(
    st.one_of(
        st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), st.sampled_from(list("，。！？：；（）「」《》、 "))
    )
)
SYMBOLS = st.text(st.characters(categories=["S", "P", "Z", "Cc", "Cf", "Mn"]))
SPECIAL_STRINGS = st.sampled_from(SPECIAL_TOKENS + ["<s", "s>", "</", "__", "<0x41>"])
MIXED = st.lists(st.one_of(ENGLISH, CHINESE, SYMBOLS, SPECIAL_STRINGS), max_size=5).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(ENGLISH, CHINESE, SYMBOLS, MIXED, st.text()))
def test_round_trip_property(tokenizer, text):
    ids = tokenizer(text)["input_ids"]
    assert tokenizer.unk_token_id not in ids
    assert not set(ids[1:-1]) & set(tokenizer.all_special_ids)  # special-token strings in the text are text
    assert tokenizer.decode(ids, skip_special_tokens=True) == normalize_text(text)


# ---------------------------------------------------------------------------------------------- special tokens


def test_special_token_ids(tokenizer):
    assert tokenizer.convert_tokens_to_ids(SPECIAL_TOKENS) == [0, 1, 2, 3, 4, 5]
    assert (tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (
        0,
        1,
        2,
        3,
    )
    assert tokenizer.extra_special_tokens == ["__en__", "__zh__"]
    assert tokenizer.convert_tokens_to_ids(BYTE_TOKENS) == list(range(6, 262))
    assert not set(BYTE_TOKENS) & set(tokenizer.all_special_tokens)  # so skip_special_tokens keeps them


def test_untrained_tokenizer_spells_bytes():
    tokenizer = ZhenTokenizerFast()
    assert len(tokenizer) == 262
    assert round_trip(tokenizer, "Hi 你好 🇨🇳") == "Hi 你好 🇨🇳"


def test_foreign_vocabulary_is_rejected():
    with pytest.raises(ValueError, match="fixed ids"):
        ZhenTokenizerFast(vocab={"<s>": 0, "a": 1}, merges=[])


# ---------------------------------------------------------------------------------------------- languages


def test_source_and_target_layout(tokenizer):
    tokenizer.src_lang, tokenizer.tgt_lang = "en", "zh"
    encoded = tokenizer("I liked tea.", text_target="我喜欢茶。")
    en, zh, eos = tokenizer.get_lang_id("en"), tokenizer.get_lang_id("zh"), tokenizer.eos_token_id
    assert encoded["input_ids"][0] == en and encoded["input_ids"][-1] == eos
    assert encoded["labels"][0] == zh and encoded["labels"][-1] == eos
    assert tokenizer.decode(encoded["labels"], skip_special_tokens=True) == "我喜欢茶。"
    assert tokenizer("again")["input_ids"][0] == en  # back to input mode after text_target

    tokenizer.src_lang, tokenizer.tgt_lang = "zh", "en"
    encoded = tokenizer("我喜欢茶。", text_target="I liked tea.")
    assert (encoded["input_ids"][0], encoded["labels"][0]) == (zh, en)
    tokenizer.src_lang, tokenizer.tgt_lang = "en", "zh"


def test_build_translation_inputs(tokenizer):
    inputs = tokenizer._build_translation_inputs(
        ["我喜欢茶。", "你好"], "pt", src_lang="zh-CN", tgt_lang="english", padding=True
    )
    assert inputs["forced_bos_token_id"] == tokenizer.get_lang_id("en") == 4
    assert inputs["input_ids"][:, 0].tolist() == [5, 5]
    with pytest.raises(ValueError, match="src_lang"):
        tokenizer._build_translation_inputs("Hi", None, src_lang=None, tgt_lang="zh")
    tokenizer.src_lang, tokenizer.tgt_lang = "en", "zh"


ALIASES = {
    "en": ["en", "EN", "en-US", "en_GB", "eng", "eng_Latn", "English", " english ", "__en__", "英文"],
    "zh": [
        "zh",
        "zh-CN",
        "zh_Hans",
        "zh-Hant",
        "zh-TW",
        "zh-Hant-HK",
        "cmn",
        "zho",
        "chi",
        "Chinese",
        "中文",
        "__zh__",
    ],
}


@pytest.mark.parametrize("lang, alias", [(lang, alias) for lang, aliases in ALIASES.items() for alias in aliases])
def test_language_aliases(tokenizer, lang, alias):
    assert normalize_lang(alias) == lang
    assert tokenizer.get_lang_id(alias) == tokenizer.lang_code_to_id[lang] == SPECIAL_TOKENS.index(LANGUAGE_CODES[lang])


@pytest.mark.parametrize("code", ["fr", "de-DE", "jpn", "", "chinglish", "yue"])
def test_unknown_language_raises_with_valid_codes(tokenizer, code):
    with pytest.raises(ValueError, match=r"valid codes are \['en', 'zh'\]"):
        normalize_lang(code)
    with pytest.raises(ValueError, match="Unknown language code"):
        tokenizer.src_lang = code
    with pytest.raises(ValueError, match="Unknown language code"):
        tokenizer.get_lang_id(code)
    assert tokenizer.src_lang == "en"


# ---------------------------------------------------------------------------------------------- batches


def test_padding_and_truncation_keep_eos(tokenizer):
    sources = ["They bought the red car.", "Hi", "我们喜欢中国菜。" * 5]
    batch = tokenizer(
        sources,
        text_target=["他们买了那辆红色的汽车。", "嗨", "We liked Chinese food. " * 5],
        padding=True,
        truncation=True,
        max_length=6,
        return_tensors="pt",
    )
    for key in ("input_ids", "labels"):
        assert batch[key].shape[1] == 6
    for ids, mask in zip(batch["input_ids"].tolist(), batch["attention_mask"].tolist()):
        length = sum(mask)
        assert ids[length - 1] == tokenizer.eos_token_id and ids[0] == 4
        assert ids[length:] == [tokenizer.pad_token_id] * (6 - length)
    assert all(row[0] == 5 and tokenizer.eos_token_id in row for row in batch["labels"].tolist())
    assert tokenizer.batch_decode(batch["input_ids"], skip_special_tokens=True)[1] == "Hi"


# ---------------------------------------------------------------------------------------------- save / load


def pipeline_of(tokenizer) -> dict:
    state = json.loads(tokenizer.backend_tokenizer.to_str())
    return {key: state[key] for key in ("normalizer", "pre_tokenizer", "decoder", "model")}


def test_save_writes_remote_code(saved_dir):
    config = json.loads((saved_dir / "tokenizer_config.json").read_text())
    assert config["auto_map"]["AutoTokenizer"] == [None, "tokenization_zhen.ZhenTokenizerFast"]
    assert (config["src_lang"], config["tgt_lang"]) == ("en", "zh")
    assert (saved_dir / "tokenization_zhen.py").is_file()


def test_auto_tokenizer_reload(tokenizer, saved_dir):
    reloaded = AutoTokenizer.from_pretrained(saved_dir)
    assert type(reloaded) is ZhenTokenizerFast
    assert pipeline_of(reloaded) == pipeline_of(tokenizer)  # the __init__ trap would drop normalizer & co.
    assert reloaded.all_special_tokens == tokenizer.all_special_tokens
    assert reloaded.all_special_ids == tokenizer.all_special_ids
    for text in HARD_CASES:
        assert reloaded(text, text_target=text) == tokenizer(text, text_target=text)
        assert round_trip(reloaded, text) == normalize_text(text)
    reloaded_zh = AutoTokenizer.from_pretrained(saved_dir, src_lang="zh", tgt_lang="en")
    assert reloaded_zh("你好", text_target="Hi")["labels"][0] == 4


def test_auto_tokenizer_from_model_folder(tokenizer, saved_dir, tmp_path):
    folder = shutil.copytree(saved_dir, tmp_path / "model")
    ZhenConfig(vocab_size=len(tokenizer)).save_pretrained(folder)
    reloaded = AutoTokenizer.from_pretrained(folder)
    assert type(reloaded) is ZhenTokenizerFast
    assert reloaded("我用 Python 写代码")["input_ids"] == tokenizer("我用 Python 写代码")["input_ids"]


def test_trust_remote_code_without_zhen(tokenizer, saved_dir, tmp_path):
    folder = shutil.copytree(saved_dir, tmp_path / "tokenizer")
    script = (
        "import json, sys\n"
        "sys.modules['zhen'] = None  # zhen is installed in this venv: make `import zhen` fail\n"
        "from transformers import AutoTokenizer\n"
        "tok = AutoTokenizer.from_pretrained('tokenizer', trust_remote_code=True)\n"
        "texts = json.loads(sys.stdin.read())\n"
        "print(json.dumps({'module': type(tok).__module__, 'ids': [tok(t, text_target=t)['input_ids'] for t in texts],"
        " 'labels': [tok(t, text_target=t)['labels'] for t in texts],"
        " 'decoded': tok.batch_decode(tok(texts)['input_ids'], skip_special_tokens=True)}))\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(tmp_path / "modules"))
    result = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(HARD_CASES),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    remote = json.loads(result.stdout.strip().splitlines()[-1])
    assert remote["module"].startswith("transformers_modules.")
    assert folder.is_dir()
    assert remote["ids"] == [tokenizer(text)["input_ids"] for text in HARD_CASES]
    assert remote["labels"] == [tokenizer(text, text_target=text)["labels"] for text in HARD_CASES]
    assert remote["decoded"] == list(map(normalize_text, HARD_CASES))
