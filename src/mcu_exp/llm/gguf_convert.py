"""A GGUF de-quantised straight into a model folder, without transformers' GGUF model loader.

transformers' own GGUF load (``from_pretrained(gguf_file=...)``) parses the whole metadata,
vocabulary included, three times (config, tokenizer, model) with the ``gguf`` package's
element-by-element reader, and rebuilds the GGUF→transformers tensor name map once per module
of the model: about 20 s of a 22–25 s cold load of SmolLM2-135M on a quiet 2-core machine.
This module does the same conversion once: the metadata from transformers' fast GGUF reader
(the vocabulary only for the tokenizer), one name map, the ``gguf`` package's NumPy kernels to
de-quantise, transformers' own tensor processor (the Llama q/k reverse permutation) and its own
GGUF tokenizer builder; the tensors go to safetensors without building a model.

The result is the folder :func:`mcu_exp.llm.converted.write` writes from a model loaded the
slow way, bit for bit (tensors, config, generation config, tokenizer files; checked in
``tests/llm/test_local_converted.py``). Only the architectures listed in :data:`ARCHITECTURES`
take this path; any other file, or a transformers without the fast reader, raises
:class:`Unsupported` and the caller loads the GGUF the slow way.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ARCHITECTURES = ("llama",)  # checked bit for bit against transformers' loader
TOKENS_KEY = "tokenizer.ggml.tokens"


class Unsupported(Exception):
    """This GGUF (or the installed transformers) is not one this converter reproduces exactly."""


def _library() -> dict[str, Any]:
    """The pieces of transformers this converter uses; :class:`Unsupported` when this
    transformers lacks one (before 5.x: no fast GGUF reader, no GGUF tokenizer builder)."""
    try:
        from transformers.integrations.ggml import GGUF_CONFIG_DEFAULTS_MAPPING, GGUF_CONFIG_MAPPING
        from transformers.integrations.gguf import GgufHeader, read_gguf_metadata  # type: ignore[attr-defined]
        from transformers.modeling_gguf_pytorch_utils import TENSOR_PROCESSORS, TensorProcessor
        from transformers.tokenization_utils_tokenizers import TokenizersBackend
    except ImportError as exc:
        raise Unsupported(f"this transformers lacks what the converter uses ({exc})") from None
    return {
        "defaults": GGUF_CONFIG_DEFAULTS_MAPPING,
        "renames": GGUF_CONFIG_MAPPING,
        "header": GgufHeader,
        "read_metadata": read_gguf_metadata,
        "processors": TENSOR_PROCESSORS,
        "processor": TensorProcessor,
        "tokenizer": TokenizersBackend,
    }


def check(gguf: Path) -> None:
    """Raise :class:`Unsupported` unless :func:`convert` handles ``gguf`` (reads the metadata
    only, without the vocabulary: milliseconds)."""
    try:
        metadata, tensor_names = _library()["read_metadata"](str(gguf))
    except (ValueError, KeyError, IndexError) as exc:  # not a GGUF this reader knows: transformers says why
        raise Unsupported(f"unreadable metadata ({exc})") from None
    config_dict(metadata, tensor_names)


def config_dict(metadata: dict[str, Any], tensor_names: tuple[str, ...]) -> dict[str, Any]:
    """The config transformers derives from a GGUF's metadata (its legacy loader's mapping,
    applied to the fast reader's values): renamed keys, defaults, tied embeddings when the file
    has no ``output.weight``, the vocabulary size from the token list when not stated."""
    library = _library()
    architecture = metadata["general.architecture"]
    if architecture not in ARCHITECTURES:
        raise Unsupported(f"architecture {architecture!r} (converted here: {', '.join(ARCHITECTURES)})")
    names = metadata.get("general.name")
    if "mistral" in (names if isinstance(names, list) else [names]):  # transformers renames those
        raise Unsupported("a Mistral model in a llama GGUF")
    config: dict[str, Any] = {"tie_word_embeddings": "output.weight" not in tensor_names}
    for key, value in library["defaults"].get(architecture, {}).items():
        config.setdefault(key, value)
    for key, value in metadata.items():
        prefix, _, rest = key.partition(".")
        renamed = library["renames"].get(prefix, {}).get(rest)
        if renamed is None or renamed == -1:
            continue
        config[renamed] = value[0] if isinstance(value, list) and len(value) == 1 else value
    if "vocab_size" not in config and isinstance(metadata.get(TOKENS_KEY), int):
        config["vocab_size"] = metadata[TOKENS_KEY]  # the fast reader counts unread string arrays
    return config


def _name_map(parameters: list[str], architecture: str, layers: int) -> dict[str, str]:
    """GGUF tensor name → transformers parameter name, from one ``gguf`` name map (transformers
    builds one per module)."""
    from gguf import MODEL_ARCH_NAMES, get_tensor_name_map

    arch = next((a for a, name in MODEL_ARCH_NAMES.items() if name == architecture), None)
    if arch is None:
        raise Unsupported(f"gguf does not know architecture {architecture!r}")
    name_map = get_tensor_name_map(arch, layers)
    mapping: dict[str, str] = {}
    for hf_name in parameters:
        stem, dot, suffix = hf_name.rpartition(".")
        if suffix not in ("weight", "bias"):
            stem, dot, suffix = hf_name, "", ""
        gguf_name = name_map.get_name(stem)
        if gguf_name is not None:
            mapping[gguf_name + dot + suffix] = hf_name
    return mapping


def _dequantize(raw: Any, qtype: Any, shape: tuple[int, ...]) -> Any:
    """One tensor de-quantised to float32 by the ``gguf`` package's kernel for its type, run on
    blocks of about 4M values: ``gguf.dequantize`` runs it 16 rows at a time, the same numbers
    (element-wise arithmetic) for three times the CPU on small rows."""
    import numpy as np
    from gguf import GGMLQuantizationType, dequantize, quants

    kernel = getattr(quants, qtype.name, None)
    if (
        kernel is None
        or qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16)
        or not hasattr(kernel, "dequantize_rows")
    ):
        return dequantize(raw, qtype)
    kernel.init_grid()  # the lookup tables of the i-quants; nothing for the others
    rows = raw.reshape(-1, raw.shape[-1])
    out = np.empty((rows.shape[0], shape[-1]), dtype=np.float32)
    step = max(1, (1 << 22) // shape[-1])
    for first in range(0, rows.shape[0], step):
        out[first : first + step] = kernel.dequantize_rows(rows[first : first + step])
    return out.reshape(shape)


def tensors(gguf: Path, header: Any, parameters: list[str], raw_config: dict[str, Any], dtype: Any) -> dict[str, Any]:
    """The de-quantised, renamed tensors of the GGUF in ``dtype`` (the ``gguf`` package's
    kernels; transformers' tensor processor for the q/k permutation), each one fresh array."""
    import numpy as np
    import torch
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    library = _library()
    processor = library["processors"].get(header.architecture, library["processor"])(config=raw_config)
    mapping = _name_map(parameters, header.architecture, int(raw_config["num_hidden_layers"]))
    # A plain array over the mapped file: NumPy's memmap subclass costs a second per load in
    # bookkeeping on the kernels' many small slices.
    blob = np.asarray(np.memmap(gguf, mode="r", dtype=np.uint8))

    def one(info: Any) -> Any:
        qtype = GGMLQuantizationType(info.ggml_type)
        block, block_bytes = GGML_QUANT_SIZES[qtype]
        start = header.data_start + info.offset
        raw = blob[start : start + info.nbytes].reshape(*info.shape[:-1], info.shape[-1] // block * block_bytes)
        weights = processor.process(weights=_dequantize(raw, qtype, info.shape), name=info.name).weights
        weights = np.ascontiguousarray(weights, dtype=np.float32)
        if np.may_share_memory(weights, blob):  # a plain F32 tensor is a view of the file: copy it once
            weights = weights.copy()
        tensor = torch.from_numpy(weights)
        return tensor if dtype == torch.float32 else tensor.to(dtype)

    # NumPy's kernels release the GIL: the tensors de-quantise on torch's threads (one on a busy machine).
    wanted = [info for info in header.tensors if info.name in mapping]
    with ThreadPoolExecutor(max_workers=max(1, torch.get_num_threads())) as pool:
        return {mapping[info.name]: tensor for info, tensor in zip(wanted, pool.map(one, wanted))}


class Prepared:
    """A GGUF de-quantised in memory: its config, tensors and tokenizer, ready to be written as a
    model folder (:meth:`write_small`, then :meth:`write_weights`) or built into a model."""

    def __init__(self, config: Any, weights: dict[str, Any], tokenizer: Any) -> None:
        self.config = config
        self.weights = weights
        self.tokenizer = tokenizer

    def write_small(self, folder: Path) -> None:
        """Everything but the weights: config, generation config, tokenizer and chat template
        (a few hundred milliseconds)."""
        from transformers import GenerationConfig

        self.config.save_pretrained(folder)
        GenerationConfig.from_model_config(self.config).save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)

    def write_weights(self, folder: Path) -> None:
        """``model.safetensors``: the tensors (the slow part, hundreds of MB)."""
        from safetensors.torch import save_file

        save_file(self.weights, str(folder / "model.safetensors"), metadata={"format": "pt"})


def prepare(gguf: Path, dtype_name: str) -> Prepared:
    """The model folder's contents of ``gguf`` in ``dtype_name``, in memory."""
    import torch
    from transformers import CONFIG_MAPPING, AutoModelForCausalLM

    library = _library()
    header = library["header"].from_file(str(gguf))
    metadata, tensor_names = library["read_metadata"](str(gguf))
    raw = config_dict(metadata, tensor_names)
    config = CONFIG_MAPPING[raw["model_type"]].from_dict(dict(raw))
    with torch.device("meta"):  # the parameter names and the class, no memory
        skeleton = AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]
    dtype = getattr(torch, dtype_name)
    weights = tensors(gguf, header, list(skeleton.state_dict()), raw, dtype)
    config.architectures = [type(skeleton).__name__]
    config.dtype = dtype
    tokenizer = library["tokenizer"].from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    return Prepared(config, weights, tokenizer)


def convert(gguf: Path, dtype_name: str, folder: Path) -> None:
    """Write the model folder of ``gguf`` in ``dtype_name`` into the existing ``folder``: weights
    (``model.safetensors``), config, generation config, tokenizer and chat template."""
    prepared = prepare(gguf, dtype_name)
    prepared.write_weights(folder)
    prepared.write_small(folder)
