# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""Tokenization class for zhen: one BPE vocabulary shared by English and Chinese.

This file is self-contained (it imports only the standard library, `tokenizers` and `transformers`) because
`save_pretrained` copies it next to `tokenizer.json`, so that `AutoTokenizer.from_pretrained(folder,
trust_remote_code=True)` works where zhen is not installed.

Design decisions
----------------

**Model.** BPE with byte fallback (as in Llama 2 / SentencePiece `byte_fallback`). Frequent characters are the alphabet,
frequent words and pieces are merges, and any other character is spelled as its UTF-8 bytes with the tokens
`<0x00>`…`<0xFF>`. So `<unk>` is never produced for real text (rare CJK such as 𠀀, emoji, ZWJ sequences, flags,
control characters…), and vocabulary entries stay readable (`" hello"`, `"中国"`), which also makes the
per-script vocabulary report of `zhen.tokenizer_training` exact.

**Normalization: NFC only.** NFC merges combining sequences (`"e\\u0301"` → `"é"`) so equal-looking text tokenizes
equally. NFKC is *not* used: it folds Chinese full-width punctuation `，！？：；（）` to ASCII `,!?:;()`, which would
corrupt Chinese targets and the BLEU score against Chinese references. Case, full-width forms, traditional and
simplified characters are all kept as they are. Use [`normalize_text`] to get the text a round trip gives back:
`tokenizer.decode(tokenizer.encode(x), skip_special_tokens=True) == normalize_text(x)` for any string `x`, including
ones that contain special-token strings (see below).

**Whitespace: lossless.** Spaces are kept as ordinary characters inside tokens (no `▁` marker), so leading, trailing
and repeated spaces, tabs, newlines and the character `▁` itself all survive a round trip. A word of a spaced script
(Latin…) carries the space before it (`" world"`); a run of Chinese characters never does (Chinese is written without
spaces, so `"我用 Python 写代码"` is `"我用" " Python" " " "写代码"` and decodes with exactly the spacing it had). To
let the first English word use the same token as the others, a space is prepended when the text starts with a space
or a non-Han letter (`"Hello"` is encoded as `" Hello"`), and the decoder removes one leading space. That rule is
reversible, so it loses nothing; text that starts with a Chinese character, digit or punctuation mark is left alone.
Decoding a slice that starts inside a sentence drops one leading space, as with SentencePiece.

**Pre-tokenization.** Splits between scripts, so a token never mixes Chinese characters with Latin letters, digits or
punctuation: words with their leading space, runs of Chinese characters, numbers, runs of punctuation and symbols,
whitespace, plus the English contractions `'s 't 're 've 'm 'll 'd`.

**Special tokens** have fixed ids that the model config relies on: 0 `<pad>`, 1 `<s>` (bos, the decoder start
token), 2 `</s>` (eos), 3 `<unk>` (kept for compatibility, never produced), 4 `__en__` and 5 `__zh__` (language codes,
registered as `extra_special_tokens`), then the 256 byte tokens (ids 6–261).

**User text is text.** Only the tokenizer's template puts special tokens into an encoding (the language code first,
`</s>` last); the same strings inside a text are encoded as ordinary characters. `"Type <unk> here"`, an HTML
`<s>` tag or a literal `__zh__` in a sentence never become control tokens, and decode back as they were. This is
`split_special_tokens=True` (the `tokenizers` option `encode_special_tokens`), which this class makes the default, so
it holds for every tokenizer saved and reloaded (also through `trust_remote_code`). `decode(ids,
skip_special_tokens=True)` still drops the real special tokens of an encoding or a generation. Pass
`split_special_tokens=False` to a call (or to the constructor) to have special-token strings parsed as tokens.

**Language codes.** Adapted from transformers' `NllbTokenizer` (`models/nllb/tokenization_nllb.py`): as in NLLB and
M2M100, a source text is `[src code] text [</s>]` and a target is `[tgt code] text [</s>]`. The model shifts the
target right behind `<s>` to build its decoder inputs, and `generate` starts from `<s>` and must force the target
code first (`forced_bos_token_id`). zhen translates between exactly two languages, `"en"` and `"zh"`;
[`normalize_lang`] also accepts what people commonly type: BCP-47 / ISO 639 tags with any region or script subtag
(`en-US`, `en_GB`, `eng`, `eng_Latn`, `zh-CN`, `zh_Hans`, `zh-Hant`, `zh-TW`, `cmn`, `zho`, `chi`), English names
(`english`, `chinese`, `mandarin`), a few Chinese names (`英文`, `中文`…) and the code tokens themselves (`__en__`),
case-insensitively. Simplified and Traditional Chinese share the one code `"zh"`: the training data mixes both
scripts and nothing is converted, so the script tag is accepted but carries no meaning.
"""

from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import BPE
from transformers.tokenization_utils_tokenizers import TokenizersBackend
from transformers.utils import logging


logger = logging.get_logger(__name__)

VOCAB_FILES_NAMES = {"tokenizer_file": "tokenizer.json"}

PAD_TOKEN, BOS_TOKEN, EOS_TOKEN, UNK_TOKEN = "<pad>", "<s>", "</s>", "<unk>"
LANGUAGE_CODES = {"en": "__en__", "zh": "__zh__"}
SPECIAL_TOKENS = [PAD_TOKEN, BOS_TOKEN, EOS_TOKEN, UNK_TOKEN, *LANGUAGE_CODES.values()]  # ids 0-5
BYTE_TOKENS = [f"<0x{byte:02X}>" for byte in range(256)]  # ids 6-261, spelled as in Llama / SentencePiece
RESERVED_TOKENS = SPECIAL_TOKENS + BYTE_TOKENS

LANGUAGE_ALIASES = {
    "en": "en", "eng": "en", "english": "en", "英文": "en", "英语": "en", "英語": "en",
    "zh": "zh", "zho": "zh", "chi": "zh", "cmn": "zh", "chinese": "zh", "mandarin": "zh",
    "中文": "zh", "汉语": "zh", "漢語": "zh", "普通话": "zh",
}  # fmt: skip

# A space goes before the text when it starts with a space or a non-Han letter; the decoder strips it again.
_PREFIX_SPACE_PATTERN = r"\A(?=[ \p{L}&&[^\p{Han}]])"
PRE_TOKENIZER_PATTERN = (
    r"['’](?i:[sdmt]|ll|ve|re)"  # English contractions
    r"| ?[^\s\p{Han}\p{N}\p{P}\p{S}]+"  # a word of a spaced script, with the space before it
    r"|\p{Han}+"  # a run of Chinese characters, never with a space
    r"| ?\p{N}+"  # a number
    r"| ?[\p{P}\p{S}]+"  # punctuation and symbols (emoji included)
    r"|\s+(?!\S)|\s+"  # whitespace; a single space before a word stays with the word
)
_NFC = normalizers.NFC()


def normalize_lang(code: str) -> str:
    """
    Map a language code or alias to `"en"` or `"zh"` (see the module docstring for what is accepted).

    Raises:
        `ValueError`: for a language other than English or Chinese, with the list of valid codes.
        `TypeError`: if `code` is not a string.
    """
    if not isinstance(code, str):
        raise TypeError(f"A language code must be a string such as 'en' or 'zh', got {code!r}.")
    key = code.strip().lower()
    for lang, token in LANGUAGE_CODES.items():
        if key == token:
            return lang
    key = key.replace("_", "-")
    lang = LANGUAGE_ALIASES.get(key) or LANGUAGE_ALIASES.get(key.split("-")[0])
    if lang is None:
        raise ValueError(
            f"Unknown language code {code!r}. zhen translates between English and Chinese; valid codes are "
            f"{sorted(LANGUAGE_CODES)}, also accepted (case-insensitive, with any region or script subtag such as "
            f"'en-US' or 'zh-Hant'): {sorted(LANGUAGE_ALIASES)}."
        )
    return lang


def normalize_text(text: str) -> str:
    """
    The text a round trip through [`ZhenTokenizerFast`] gives back: Unicode NFC, nothing else.

    This is the NFC of `tokenizers`, not `unicodedata.normalize("NFC", text)`: their Unicode versions differ, which
    matters for the order of a few recently added combining marks.
    """
    return _NFC.normalize_str(text)


def build_backend_tokenizer(vocab: dict[str, int] | None = None, merges: list | None = None) -> Tokenizer:
    """
    Build the `tokenizers.Tokenizer` pipeline of zhen (normalizer, pre-tokenizer, byte-fallback BPE, decoder).

    Args:
        vocab (`dict[str, int]`, *optional*):
            Token to id. Must hold the special and byte tokens at their fixed ids 0-261. Defaults to just those, which
            is an untrained tokenizer that spells everything as bytes (what `zhen.tokenizer_training.train_tokenizer`
            starts from).
        merges (`list[tuple[str, str]]`, *optional*):
            BPE merges, in order.
    """
    vocab = dict(vocab) if vocab is not None else {token: index for index, token in enumerate(RESERVED_TOKENS)}
    misplaced = [token for index, token in enumerate(RESERVED_TOKENS) if vocab.get(token) != index]
    if misplaced:
        raise ValueError(
            f"This vocabulary is not a zhen vocabulary: {misplaced[:8]} are not at their fixed ids (0-5 for "
            f"{SPECIAL_TOKENS}, then 6-261 for the byte tokens <0x00>…<0xFF>). Train one with "
            "`zhen.tokenizer_training.train_tokenizer`."
        )
    merges = merges or []
    if any(isinstance(merge, str) for merge in merges):
        raise ValueError(
            "merges must be (left, right) pairs: zhen tokens contain spaces, so 'left right' is ambiguous."
        )
    tokenizer = Tokenizer(
        BPE(
            vocab=vocab,
            merges=[tuple(merge) for merge in merges],
            unk_token=UNK_TOKEN,
            byte_fallback=True,
            fuse_unk=False,
        )
    )
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.NFC(), normalizers.Replace(Regex(_PREFIX_SPACE_PATTERN), " ")]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(PRE_TOKENIZER_PATTERN), behavior="isolated")
    tokenizer.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    return tokenizer


class ZhenTokenizerFast(TokenizersBackend):
    """
    Construct the zhen English–Chinese tokenizer (backed by HuggingFace's *tokenizers* library): a byte-fallback
    [BPE](https://huggingface.co/docs/tokenizers/api/models#tokenizers.models.BPE) vocabulary shared by both
    languages. See the module docstring for the normalization, whitespace and language-code conventions.

    This tokenizer inherits from [`TokenizersBackend`] which contains most of the main methods. Users should refer to
    this superclass for more information regarding those methods.

    Source texts are encoded as `[src_lang code] tokens [</s>]` and targets as `[tgt_lang code] tokens [</s>]`.

    Examples:

    ```python
    >>> from zhen.tokenization_zhen import ZhenTokenizerFast

    >>> tokenizer = ZhenTokenizerFast.from_pretrained("path/to/tokenizer", src_lang="en", tgt_lang="zh")
    >>> inputs = tokenizer("I love nature.", text_target="我爱大自然。", return_tensors="pt")
    >>> tokenizer.decode(inputs["labels"][0], skip_special_tokens=True)
    '我爱大自然。'
    ```

    Args:
        vocab (`dict[str, int]`, *optional*):
            Token to id, with the special and byte tokens at their fixed ids. Defaults to those tokens only.
        merges (`list[tuple[str, str]]`, *optional*):
            BPE merges, in order.
        src_lang (`str`, *optional*, defaults to `"en"`):
            The source language, `"en"` or `"zh"` (or an alias such as `"en-US"` or `"zh-Hant"`).
        tgt_lang (`str`, *optional*, defaults to `"zh"`):
            The target language, used for `text_target`.
        bos_token (`str`, *optional*, defaults to `"<s>"`):
            The beginning of sequence token; the decoder start token of the model.
        eos_token (`str`, *optional*, defaults to `"</s>"`):
            The end of sequence token.
        unk_token (`str`, *optional*, defaults to `"<unk>"`):
            The unknown token. Byte fallback means it is never produced for real text.
        pad_token (`str`, *optional*, defaults to `"<pad>"`):
            The token used for padding.
        extra_special_tokens (`list[str]`, *optional*, defaults to `["__en__", "__zh__"]`):
            The language code tokens.
        split_special_tokens (`bool`, *optional*, defaults to `True`):
            Encode special-token strings that occur in a text (`"<s>"`, `"__zh__"`, ...) as ordinary text, so user
            text never produces control tokens. The template still adds the language code and `</s>`.
    """

    vocab_files_names = VOCAB_FILES_NAMES
    model_input_names = ["input_ids", "attention_mask"]
    model = BPE

    def __init__(
        self,
        vocab: dict[str, int] | None = None,
        merges: list | None = None,
        src_lang: str = "en",
        tgt_lang: str = "zh",
        bos_token: str = BOS_TOKEN,
        eos_token: str = EOS_TOKEN,
        unk_token: str = UNK_TOKEN,
        pad_token: str = PAD_TOKEN,
        extra_special_tokens: list[str] | None = None,
        **kwargs,
    ):
        # `from_pretrained` hands a subclass with its own `__init__` the raw vocab and merges of tokenizer.json, not the
        # file, so the whole pipeline is rebuilt here (as `NllbTokenizer` does): this is what keeps the normalizer,
        # pre-tokenizer and decoder intact after a reload.
        if kwargs.get("tokenizer_object") is None and kwargs.get("tokenizer_file") is None:
            self._tokenizer = build_backend_tokenizer(vocab, merges)
        self._src_lang, self._tgt_lang = normalize_lang(src_lang), normalize_lang(tgt_lang)
        kwargs.setdefault("clean_up_tokenization_spaces", False)
        kwargs.setdefault("split_special_tokens", True)
        super().__init__(
            bos_token=bos_token,
            eos_token=eos_token,
            unk_token=unk_token,
            pad_token=pad_token,
            extra_special_tokens=extra_special_tokens or list(LANGUAGE_CODES.values()),
            src_lang=self._src_lang,
            tgt_lang=self._tgt_lang,
            **kwargs,
        )
        self._check_special_token_ids()
        self.set_lang_special_tokens(self._src_lang)

    def _check_special_token_ids(self):
        misplaced = {token: self.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS}
        misplaced = {token: index for token, index in misplaced.items() if index != SPECIAL_TOKENS.index(token)}
        if misplaced:
            raise ValueError(
                f"Special tokens are not at their fixed ids: {misplaced}. zhen needs {dict(enumerate(SPECIAL_TOKENS))}"
                "; the model config relies on them."
            )

    @property
    def src_lang(self) -> str:
        """The source language, `"en"` or `"zh"`. Setting it (aliases accepted) switches the input template."""
        return self._src_lang

    @src_lang.setter
    def src_lang(self, lang: str) -> None:
        self._src_lang = normalize_lang(lang)
        self.set_lang_special_tokens(self._src_lang)

    @property
    def tgt_lang(self) -> str:
        """The target language, `"en"` or `"zh"`, used for `text_target`."""
        return self._tgt_lang

    @tgt_lang.setter
    def tgt_lang(self, lang: str) -> None:
        self._tgt_lang = normalize_lang(lang)

    @property
    def lang_code_to_id(self) -> dict[str, int]:
        """Language (`"en"`, `"zh"`) to the id of its code token."""
        return {lang: self.convert_tokens_to_ids(token) for lang, token in LANGUAGE_CODES.items()}

    def get_lang_id(self, lang: str) -> int:
        """The id of the code token of `lang` (aliases accepted): what `generate` must force first for that target."""
        return self.convert_tokens_to_ids(LANGUAGE_CODES[normalize_lang(lang)])

    def set_lang_special_tokens(self, lang: str) -> None:
        """Make every encoded sequence `[lang code] tokens [</s>]`."""
        code = LANGUAGE_CODES[normalize_lang(lang)]
        self._tokenizer.post_processor = processors.TemplateProcessing(
            single=[code, "$A", self.eos_token],
            pair=[code, "$A", "$B", self.eos_token],
            special_tokens=[(code, self.convert_tokens_to_ids(code)), (self.eos_token, self.eos_token_id)],
        )

    def _switch_to_input_mode(self):
        self.set_lang_special_tokens(self.src_lang)

    def _switch_to_target_mode(self):
        self.set_lang_special_tokens(self.tgt_lang)

    def _build_translation_inputs(
        self, raw_inputs, return_tensors: str | None, src_lang: str | None, tgt_lang: str | None, **extra_kwargs
    ):
        """
        Encode `raw_inputs` as `src_lang` source text for a translation into `tgt_lang`, as pipelines do.

        Sets `self.src_lang` and `self.tgt_lang`, and returns the encodings plus `forced_bos_token_id`, the code token
        of `tgt_lang` that `generate` must produce first (after the decoder start token `<s>`).
        """
        if src_lang is None or tgt_lang is None:
            raise ValueError("Translation needs both `src_lang` and `tgt_lang`, each 'en' or 'zh'.")
        self.src_lang, self.tgt_lang = src_lang, tgt_lang
        inputs = self(raw_inputs, add_special_tokens=True, return_tensors=return_tensors, **extra_kwargs)
        inputs["forced_bos_token_id"] = self.get_lang_id(tgt_lang)
        return inputs


ZhenTokenizerFast.register_for_auto_class("AutoTokenizer")


__all__ = ["ZhenTokenizerFast", "build_backend_tokenizer", "normalize_lang", "normalize_text"]
