# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""`zhen-export-onnx`: export a zhen checkpoint to ONNX for onnxruntime.

Example:

```bash
zhen-export-onnx runs/small/model runs/small-onnx
```

writes `encoder_model.onnx`, `decoder_model.onnx` and `decoder_with_past_model.onnx` (Optimum's layout for Marian),
with the config, generation config and tokenizer, checks each graph against PyTorch on onnxruntime and prints the
largest differences. Translate with `zhen.onnx_export.OnnxTranslator("runs/small-onnx").translate(texts,
tgt_lang="zh")`. Needs `pip install "zhen-transformer[onnx]"`.
"""

import argparse


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="zhen-export-onnx",
        description="Export a zhen checkpoint to ONNX (encoder, decoder and decoder-with-past graphs) for onnxruntime.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("model", help="Checkpoint folder or Hub id (config.json, model.safetensors, tokenizer).")
    parser.add_argument("output_dir", help="Folder to write the ONNX graphs, config and tokenizer to.")
    parser.add_argument("--opset", type=int, default=None, help="ONNX opset version; None: torch.onnx's default.")
    parser.add_argument(
        "--atol", type=float, default=1e-3, help="Largest difference from PyTorch accepted when checking the graphs."
    )
    parser.add_argument("--no-check", action="store_true", help="Skip running the graphs against PyTorch.")
    return parser.parse_args(argv)


def main(argv=None) -> str:
    args = parse_args(argv)
    from ..onnx_export import compare_with_pytorch, export_onnx
    from ..translation import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer(args.model)
    output_dir = export_onnx(model, args.output_dir, tokenizer, opset_version=args.opset, check=False)
    print(f"ONNX model written to {output_dir}")
    if not args.no_check:
        differences = compare_with_pytorch(model, output_dir)
        for name, difference in differences.items():
            print(f"  {name}: largest difference from PyTorch {difference:.2e}")
        failed = [name for name, difference in differences.items() if not difference <= args.atol]
        if failed:
            raise SystemExit(f"zhen-export-onnx: {', '.join(failed)} differ from PyTorch by more than {args.atol}.")
    return str(output_dir)


if __name__ == "__main__":
    main()
