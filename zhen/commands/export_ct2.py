# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""`zhen-export-ct2`: convert a zhen checkpoint to a CTranslate2 model directory.

Example:

```bash
zhen-export-ct2 checkpoints/zhen-base zhen-base-ct2 --quantization int8
```

Then translate with `ctranslate2.Translator("zhen-base-ct2")`, giving tokenized sources (`__en__ … </s>`) and the target
language code as prefix, `target_prefix=[["__zh__"]]`; or with `zhen.convert_ctranslate2.CTranslate2Generator`, which
takes and returns token ids. Needs `pip install "zhen-transformer[bench]"`.

The export is written to a temporary folder and renamed into place when complete. The output folder may not be the
checkpoint folder, lie inside it or contain it; `--force` replaces only an earlier CTranslate2 export, never a folder
that holds anything else.
"""

from ._cli import command, make_parser


QUANTIZATIONS = ["float32", "int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16", "bfloat16"]


def parse_args(argv=None):
    parser = make_parser(
        "zhen-export-ct2",
        "Convert a zhen checkpoint (model and tokenizer saved with save_pretrained) to CTranslate2.",
    )
    parser.add_argument("model", help="Checkpoint folder (or Hub id) with config.json, model.safetensors, tokenizer.")
    parser.add_argument("output_dir", help="New folder to write the CTranslate2 model to.")
    parser.add_argument(
        "--quantization",
        choices=QUANTIZATIONS,
        default=None,
        help="Weight type of the exported model (default: float32). int8 is the fast choice on CPUs.",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="Replace output_dir if it holds an earlier CTranslate2 export (never a folder with other files).",
    )
    return parser.parse_args(argv)


@command("zhen-export-ct2")
def main(argv=None) -> str:
    args = parse_args(argv)
    from ..convert_ctranslate2 import convert

    output_dir = convert(args.model, args.output_dir, quantization=args.quantization, force=args.force)
    print(f"CTranslate2 model written to {output_dir}")
    return output_dir


if __name__ == "__main__":
    main()
