# Copyright 2026 The zhen developers. Licensed under the Apache License, Version 2.0.
"""`zhen-push`: upload an exported zhen folder to the Hugging Face Hub.

Example:

```bash
hf auth login                       # or pass --token / set HF_TOKEN
zhen-push zhen-small your-name/zhen-small --private --commit-message "First release"
```

The folder must be a complete Hub repository (what `zhen-train`/`zhen-finetune` export, or
`zhen.hub.save_for_hub`/`make_hub_ready` write): the command refuses anything else and says what is missing. It creates
the model repository if needed (`create_repo(exist_ok=True)`) and uploads the folder in one commit (`upload_folder`).
"""

from ..hub import missing_hub_files, push_to_hub
from ._cli import command, make_parser


def parse_args(argv=None):
    parser = make_parser(
        "zhen-push",
        "Upload a complete zhen checkpoint folder (model, tokenizer, code, model card) to a Hub model repository, "
        "creating it if needed.",
    )
    parser.add_argument("folder", help="The exported checkpoint folder.")
    parser.add_argument("repo_id", help="Hub repository, e.g. your-name/zhen-small.")
    parser.add_argument("--private", action="store_true", help="Create the repository as private.")
    parser.add_argument("--token", help="Hub token with write access (default: the logged-in one or HF_TOKEN).")
    parser.add_argument("--commit-message", default="Upload zhen model", help="Commit message.")
    parser.add_argument("--revision", help="Branch to push to (default: main).")
    args = parser.parse_args(argv)
    problems = missing_hub_files(args.folder)
    if problems:
        parser.error(
            f"{args.folder} is not a complete zhen Hub repository: {'; '.join(problems)}. Export it with "
            "zhen.hub.save_for_hub(model, tokenizer, folder), or complete a save_pretrained folder with "
            "zhen.hub.make_hub_ready(folder)."
        )
    return args


@command("zhen-push")
def main(argv=None) -> None:
    args = parse_args(argv)
    url = push_to_hub(
        args.folder,
        args.repo_id,
        private=args.private,
        token=args.token,
        commit_message=args.commit_message,
        revision=args.revision,
    )
    print(f"Uploaded {args.folder} to {args.repo_id}: {url}")


if __name__ == "__main__":
    main()
