"""KenLM n-gram language models: training with the real ``lmplz``/``build_binary`` and perplexity.

The training tools are KenLM's command-line programs (built by ``make install`` into
``tools/kenlm/bin``); scoring uses the ``kenlm`` Python module. Scores are log10 throughout.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable

log = logging.getLogger(__name__)

ARPA_NAME = "lm.arpa"
BINARY_NAME = "lm.bin"
_BINARY_TYPES = ("probing", "trie")
_STDERR_TAIL = 20


@dataclass(frozen=True)
class KenlmTools:
    """Paths of KenLM's ``lmplz`` and ``build_binary`` executables."""

    lmplz: Path
    build_binary: Path

    @classmethod
    def locate(cls, tools_dir: Path | None) -> "KenlmTools":
        """Find both tools in ``tools_dir/kenlm/bin``, else on ``PATH``.

        Raises FileNotFoundError naming every place looked when either is missing.
        """
        names = ("lmplz", "build_binary")
        looked: list[str] = []
        if tools_dir is not None:
            bin_dir = Path(tools_dir) / "kenlm" / "bin"
            looked.append(str(bin_dir))
            if all(_is_executable(bin_dir / n) for n in names):
                return cls(lmplz=bin_dir / "lmplz", build_binary=bin_dir / "build_binary")
        path_dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
        looked.append("PATH (" + (os.pathsep.join(path_dirs) if path_dirs else "empty") + ")")
        found = [shutil.which(n, path=os.pathsep.join(path_dirs)) if path_dirs else None
                 for n in names]
        if found[0] and found[1]:
            return cls(lmplz=Path(found[0]), build_binary=Path(found[1]))
        raise FileNotFoundError(
            "KenLM's lmplz and build_binary were not both found; looked in: "
            + "; ".join(looked) + ". Run `make install` to build them into tools/kenlm/bin.")


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


@dataclass(frozen=True)
class LmResult:
    """A trained model: its ARPA and binary files, order, n-gram counts and training time."""

    arpa: Path
    binary: Path
    order: int
    ngram_counts: dict[int, int] = field(hash=False)
    seconds: float

    def to_dict(self) -> dict:
        """JSON-friendly form."""
        return {"arpa": str(self.arpa), "binary": str(self.binary), "order": self.order,
                "ngram_counts": {str(k): v for k, v in self.ngram_counts.items()},
                "seconds": self.seconds}


def read_arpa_counts(arpa: Path) -> dict[int, int]:
    """The ``ngram N=COUNT`` lines of an ARPA file's ``\\data\\`` header, as ``{N: COUNT}``."""
    counts: dict[int, int] = {}
    in_header = False
    with open(arpa, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if line == "\\data\\":
                in_header = True
            elif in_header and line.startswith("ngram "):
                n, count = line[len("ngram "):].split("=")
                counts[int(n)] = int(count)
            elif in_header and (line.startswith("\\") or (not line and counts)):
                break
    if not counts:
        raise ValueError(f"{arpa}: no \\data\\ header with ngram counts")
    return counts


def train_lm(text_lines: Iterable[str], out_dir: Path, order: int, tools: KenlmTools, *,
             memory: str = "1G", tmp_dir: Path | None = None, discount_fallback: bool = False,
             binary_type: str = "probing") -> LmResult:
    """Train an ORDER-gram LM on tokenized lines with ``lmplz``; write ``lm.arpa`` and ``lm.bin``.

    Both files are written under temporary names in ``out_dir`` and renamed into place only after
    both tools succeed, so a failure leaves no new ``lm.arpa``/``lm.bin``. Raises RuntimeError with
    the command line and the tail of its stderr when a tool fails.
    """
    if binary_type not in _BINARY_TYPES:
        raise ValueError(f"binary_type must be one of {_BINARY_TYPES}, got {binary_type!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    arpa, binary = out_dir / ARPA_NAME, out_dir / BINARY_NAME
    tmp_arpa = _temp_name(out_dir, ARPA_NAME)
    tmp_binary = _temp_name(out_dir, BINARY_NAME)
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix=".lmplz-", dir=tmp_dir or out_dir) as sort_dir:
            cmd = [str(tools.lmplz), "-o", str(order), "-S", memory, "-T", sort_dir + os.sep]
            if discount_fallback:
                cmd.append("--discount_fallback")
            with open(tmp_arpa, "wb") as arpa_out:
                _run_tool(cmd, stdin_lines=text_lines, stdout=arpa_out)
        _run_tool([str(tools.build_binary), binary_type, str(tmp_arpa), str(tmp_binary)])
        _fsync(tmp_arpa)
        _fsync(tmp_binary)
        counts = read_arpa_counts(tmp_arpa)
        os.replace(tmp_arpa, arpa)
        os.replace(tmp_binary, binary)
    finally:
        for p in (tmp_arpa, tmp_binary):
            p.unlink(missing_ok=True)
    seconds = time.perf_counter() - start
    log.info("trained %d-gram LM %s in %.2f s: %s", order, arpa, seconds, counts)
    return LmResult(arpa=arpa, binary=binary, order=order, ngram_counts=counts, seconds=seconds)


def _fsync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _temp_name(out_dir: Path, name: str) -> Path:
    fd, path = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=out_dir)
    os.close(fd)
    return Path(path)


def _run_tool(cmd: list[str], *, stdin_lines: Iterable[str] | None = None,
              stdout: IO[bytes] | None = None) -> None:
    """Run CMD, feeding lines to stdin; log stderr at DEBUG; RuntimeError on failure."""
    cmd_line = subprocess.list2cmdline(cmd)
    log.debug("running %s", cmd_line)
    # stderr goes to a file (not a pipe) so a chatty tool can never block while we write stdin.
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin_lines is not None
                                    else subprocess.DEVNULL,
                                    stdout=stdout if stdout is not None else subprocess.DEVNULL,
                                    stderr=err)
        except OSError as e:
            raise RuntimeError(f"could not start `{cmd_line}`: {e}") from e
        broken_pipe = False
        if stdin_lines is not None:
            assert proc.stdin is not None
            try:
                for line in stdin_lines:
                    proc.stdin.write(line.rstrip("\n").encode("utf-8") + b"\n")
            except BrokenPipeError:
                broken_pipe = True  # the tool exited early; its exit status says why
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            finally:
                try:
                    proc.stdin.close()
                except BrokenPipeError:
                    broken_pipe = True
        returncode = proc.wait()
        err.seek(0)
        stderr = err.read().decode("utf-8", errors="replace")
    for line in stderr.splitlines():
        log.debug("%s: %s", Path(cmd[0]).name, line)
    if returncode != 0 or broken_pipe:
        tail = "\n".join(deque(stderr.splitlines(), maxlen=_STDERR_TAIL))
        raise RuntimeError(f"`{cmd_line}` failed with exit status {returncode}"
                           f"{' (closed its input early)' if broken_pipe else ''}; "
                           f"last {_STDERR_TAIL} lines of stderr:\n{tail}")


def perplexity(model_path: Path, lines: Iterable[str]) -> float:
    """Corpus perplexity under a KenLM model (ARPA or binary), KenLM's convention.

    ``10 ** (-sum(log10 p) / (words + sentences))``: every sentence's ``</s>`` is a token, ``<s>``
    is not; an empty line contributes only its ``</s>``.
    """
    import kenlm  # imported here so the rest of the module works without the Python binding

    model = kenlm.Model(str(model_path))
    total_log10 = 0.0
    tokens = 0
    for line in lines:
        sentence = " ".join(line.split())
        total_log10 += model.score(sentence, bos=True, eos=True)
        tokens += len(sentence.split()) + 1
    if tokens == 0:
        raise ValueError("perplexity of an empty corpus (no lines)")
    return 10.0 ** (-total_log10 / tokens)
