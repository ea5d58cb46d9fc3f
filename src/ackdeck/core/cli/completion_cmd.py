"""`ackdeck completion bash|zsh|fish`: print a completion script generated from the parsers
(core/cli/completion.py); `--names runs` lists what the scripts complete dynamically."""

from __future__ import annotations

import argparse

from ackdeck.core.cli._output import emit_text


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description='bash: eval "$(ackdeck completion bash)" in ~/.bashrc; zsh: eval "$(ackdeck '
        'completion zsh)" in ~/.zshrc after compinit; fish: ackdeck completion fish > '
        "~/.config/fish/completions/ackdeck.fish. Commands, subcommands, options and their "
        "choices come from ackdeck's own parsers; room paths complete as files, run names "
        "from the home (--home on the line counts).",
    )
    p.add_argument("shell", nargs="?", choices=("bash", "zsh", "fish"), help="the shell")
    p.add_argument(
        "--names",
        choices=("runs",),
        default=None,
        help="print the run names under the home, one per line (what the scripts complete)",
    )
    p.set_defaults(handler=_completion)


def _completion(args: argparse.Namespace) -> int:
    if args.names == "runs":
        from ackdeck.core.service.procs import run_names

        emit_text("".join(f"{name}\n" for name in run_names(args.home)))
        return 0
    if args.shell is None:
        from ackdeck.core.errors import UsageError

        raise UsageError("completion: name a shell: bash, zsh or fish (see --help)")
    from ackdeck.core.cli._parsers import build_parser
    from ackdeck.core.cli.completion import script

    emit_text(script(args.shell, build_parser(None)))
    return 0
