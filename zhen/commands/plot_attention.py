# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""`zhen-plot-attention`: draw the cross-attention of a zhen checkpoint translating one sentence.

Example:

```bash
zhen-plot-attention --model zhen-small --src en --tgt zh "The meeting starts at nine." -o attention.png
zhen-plot-attention --model zhen-small --tgt en "会议九点开始。" --layer -1 --head 0 -o last-layer-head0.png
```

It translates greedily, reruns the model with eager attention on the generated tokens and writes a PNG heatmap
(source tokens across, generated tokens down), averaged over decoder layers and heads unless `--layer`/`--head` pick
one. Chinese labels need a CJK font (e.g. `apt-get install fonts-noto-cjk`); without one it warns and draws boxes. The
image is written under a temporary name and renamed when complete; an image path that is a file of the checkpoint is
refused.
"""

import os

from ..safe_io import atomic_path, check_output_file
from ..text_checks import check_text
from ..translation import load_model_and_tokenizer
from ..visualization import plot_attention
from ._cli import command, default_device, device_argument, language_argument, make_parser


def parse_args(argv=None):
    parser = make_parser(
        "zhen-plot-attention",
        "Translate one sentence and save a heatmap of the decoder's cross-attention over the source.",
    )
    parser.add_argument("text", help="The sentence to translate.")
    parser.add_argument("--model", required=True, help="Checkpoint folder or Hub id (owner/name).")
    parser.add_argument("--tokenizer", help="Tokenizer folder, if not the model's.")
    parser.add_argument("--src", type=language_argument, help="Source language, en or zh (default: not --tgt).")
    parser.add_argument("--tgt", type=language_argument, required=True, help="Target language, en or zh.")
    parser.add_argument("-o", "--output", default="attention.png", help="Image file; its extension picks the format.")
    parser.add_argument("--layer", type=int, help="Decoder layer, 0-based, -1 = last (default: mean over layers).")
    parser.add_argument("--head", type=int, help="Attention head, 0-based (default: mean over heads).")
    parser.add_argument("--device", type=device_argument, default=default_device(), help="cpu, cuda, ...")
    args = parser.parse_args(argv)
    if args.src is not None and args.src == args.tgt:
        parser.error(f"--src and --tgt are both {args.src!r}; zhen translates between en and zh.")
    if not os.path.splitext(args.output)[1]:
        parser.error(f"-o {args.output}: give the image file an extension (.png, .pdf, .svg, ...).")
    return args


@command("zhen-plot-attention")
def main(argv=None) -> None:
    args = parse_args(argv)
    check_text(args.text, "The sentence")
    check_output_file(args.output, [], [args.model, args.tokenizer], flag="-o/--output")
    model, tokenizer = load_model_and_tokenizer(args.model, args.tokenizer, device=args.device)
    with atomic_path(args.output) as image:
        attention = plot_attention(
            model,
            tokenizer,
            args.text,
            image,
            src_lang=args.src,
            tgt_lang=args.tgt,
            layer=args.layer,
            head=args.head,
        )
    print(
        f"{attention.translation}\nSaved the cross-attention of {len(attention.target_tokens)} generated tokens to "
        f"{args.output}"
    )


if __name__ == "__main__":
    main()
