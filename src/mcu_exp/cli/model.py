"""``mcu-exp model convert [OVERRIDES…]``: write a GGUF model as a Hugging Face folder.

The model section is composed as a job composes it (``model=smollm2-135m``, the default, and
any ``model.*`` override); its GGUF file is de-quantised once and written to the user cache
(:mod:`mcu_exp.llm.converted`), the folder every later load of that model uses. The folder's
path is the only line on stdout, so that ``vllm serve "$(mcu-exp model convert)"`` or
``AutoModelForCausalLM.from_pretrained(path)`` can take it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mcu_exp.interrupts import raise_if_interrupted
from mcu_exp.llm import converted
from mcu_exp.user_cache import CACHE_ENV

if TYPE_CHECKING:
    from mcu_exp.config import ModelConfig

PROG = "mcu-exp model"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The command's arguments (``convert`` is its one action)."""
    root = converted.converted_root()
    parser = argparse.ArgumentParser(prog=prog, description="Manage the local models' converted copies.")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    convert = actions.add_parser(
        "convert",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="write a GGUF model as a Hugging Face folder in the user cache and print its path",
        description=(
            "De-quantise the model's GGUF file once and write it as a Hugging Face folder (safetensors,\n"
            "config, tokenizer, chat template) that transformers loads as it is (vLLM's layout too); local\n"
            "loads of the model then use it. Prints the folder's path (an existing folder is reused).\n\n"
            f"Folders live in {root}/<GGUF name>-<sha256>-<dtype>/\n"
            f"(${CACHE_ENV}, else $XDG_CACHE_HOME/mcu_exp, else ~/.cache/mcu_exp; then converted/).\n"
            f"Deleting them is safe (rm -r {root}): the next load converts again.\n"
            f"{converted.CONVERT_ENV}=0 makes model loads use the GGUF without writing anything."
        ),
        epilog="example: mcu-exp model convert model=smollm2-135m model.dtype=bfloat16",
    )
    convert.add_argument(
        "overrides",
        nargs="*",
        metavar="OVERRIDE",
        help="Hydra overrides of the model section (default: model=smollm2-135m as in a job)",
    )
    return parser


def model_config(config_dir: str, overrides: Sequence[str]) -> ModelConfig:
    """The typed ``model`` section composed from ``config_dir`` with ``overrides``."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=config_dir, version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return OmegaConf.to_object(cfg.model)  # type: ignore[return-value]


def convert(cfg: ModelConfig) -> Path:
    """The converted folder of ``cfg``'s GGUF model, written now unless it exists."""
    from mcu_exp import console
    from mcu_exp.llm.errors import BackendError
    from mcu_exp.llm.threads import choose_threads
    from mcu_exp.llm.weights import load_message, load_pretrained, locate_weights, resolve_device, resolve_dtype

    if str(cfg.backend) != "local" or not cfg.gguf_file:
        raise BackendError(
            f"model {cfg.name!r} (backend {cfg.backend}) has no GGUF file to convert: "
            "model.gguf_file is unset; pick a GGUF model, e.g. model=smollm2-135m"
        )
    weights = locate_weights(cfg)
    # An explicit dtype names the folder without asking torch about GPUs (torch's import: seconds).
    dtype_name = resolve_dtype(cfg, "cpu" if str(cfg.dtype) != "auto" else resolve_device(cfg))
    folder = converted.find(weights, dtype_name)
    if folder is not None:
        return folder
    import torch

    from mcu_exp.llm import gguf_convert

    choose_threads(torch, cfg.num_threads)
    try:
        gguf_convert.check(weights.folder / str(weights.gguf_file))
    except gguf_convert.Unsupported:
        pass  # transformers loads it below, and the folder is written from that model
    else:
        with console.step(f"Converting {weights.gguf_file} into a model folder"):
            return converted.convert(weights, dtype_name)
    with console.step(load_message(cfg, weights, "cpu", torch.get_num_threads())):
        tokenizer, model = load_pretrained(weights.folder, getattr(torch, dtype_name), weights.gguf_file)
    with console.step("Writing the converted model"):
        return converted.write(model, tokenizer, weights, dtype_name)


def main(argv: Sequence[str] | None = None, config_dir: str | None = None) -> None:
    """Console entry: ``mcu-exp model convert [OVERRIDE…]``."""
    from omegaconf.errors import OmegaConfBaseException

    from mcu_exp.llm.errors import BackendError

    args = build_parser().parse_args(argv)
    if config_dir is None:
        raise SystemExit(f"{PROG}: no config folder given")
    try:
        import hydra.errors

        folder = convert(model_config(config_dir, args.overrides))
    except (BackendError, OmegaConfBaseException, hydra.errors.HydraException, OSError) as exc:
        raise_if_interrupted(exc)
        message = " | ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__
        print(f"{PROG} {args.action}: error: {message}", file=sys.stderr)
        raise SystemExit(1) from None
    print(folder)
