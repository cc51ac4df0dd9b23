#!/usr/bin/env bash
# Builds a seedable eflomal aligner from the eflomal sdist on PyPI into TOOLS_DIR/eflomal/bin/eflomal.
# eflomal 2.0.0 seeds its samplers from /dev/urandom, and its parallel samplers take their random states in the
# order the OpenMP threads arrive, so two runs align differently. Two small source changes make it reproducible:
# random_system_state() reads the seed from $EFLOMAL_SEED when it is set, and the sampler states are split off
# in sampler order before each parallel loop. Nothing else changes (same sampler, same options).
# Safe to run twice: it does nothing when the seedable binary is there.
set -euo pipefail
tools_dir=${1:?usage: build-eflomal.sh TOOLS_DIR PYTHON}
python=${2:?usage: build-eflomal.sh TOOLS_DIR PYTHON}
bin="$tools_dir/eflomal/bin"
works() { [ -x "$bin/eflomal" ] && grep -q EFLOMAL_SEED "$bin/eflomal" && { "$bin/eflomal" -h 2>&1 || true; } | grep -q "Usage"; }
if works; then
  exit 0
fi
version=$(grep -E '^eflomal==' constraints.txt | cut -d= -f3)
src="$tools_dir/src"
mkdir -p "$src"
echo "building a seedable eflomal $version into $bin"
"$python" -m pip download -q --no-deps --no-binary eflomal -d "$src" "eflomal==$version"
rm -rf "$src/eflomal-$version"
tar -xzf "$src/eflomal-$version.tar.gz" -C "$src"
"$python" - "$src/eflomal-$version/src" <<'PY'
import sys
from pathlib import Path

root = Path(sys.argv[1])


def patch(name: str, old: str, new: str, count: int = 1) -> None:
    path = root / name
    text = path.read_text()
    if text.count(old) != count:
        sys.exit(f"error: {path}: expected {count} copies of the patched code, found {text.count(old)}")
    path.write_text(text.replace(old, new))


patch("random.c", "static int random_system_state(random_state *state) {\n",
      "static int random_system_state(random_state *state) {\n"
      "    const char *seed = getenv(\"EFLOMAL_SEED\");\n"
      "    if (seed != NULL && *seed != '\\0') {\n"
      "        *state = hash_u64_u64(strtoull(seed, NULL, 10) + 0x9e3779b97f4a7c15ULL);\n"
      "        if (*state == 0) *state = 1;\n"
      "        return 0;\n"
      "    }\n")
for indent in ("    ", "            "):
    inner = indent + "    "
    patch("eflomal.c",
          f"#pragma omp parallel for\n{indent}for (int i=0; i<n_samplers; i++) {{\n"
          f"{inner}random_state local_state;\n#pragma omp critical\n{inner}{{\n"
          f"{inner}    local_state = random_split_state(&state);\n{inner}}}\n",
          f"{indent}random_state sampler_states[n_samplers];\n"
          f"{indent}for (int i=0; i<n_samplers; i++)\n{indent}    sampler_states[i] = random_split_state(&state);\n"
          f"#pragma omp parallel for\n{indent}for (int i=0; i<n_samplers; i++) {{\n"
          f"{inner}random_state local_state = sampler_states[i];\n")
PY
make -C "$src/eflomal-$version/src" eflomal >"$src/eflomal-make.log" 2>&1 \
  || { echo "error: make failed, see $src/eflomal-make.log" >&2; exit 1; }
mkdir -p "$bin.tmp.$$"
cp "$src/eflomal-$version/src/eflomal" "$bin.tmp.$$/"
rm -rf "$bin" && mv "$bin.tmp.$$" "$bin"
rm -rf "$src/eflomal-$version"
works || { echo "error: $bin/eflomal does not run" >&2; exit 1; }
