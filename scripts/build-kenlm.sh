#!/usr/bin/env bash
# Builds KenLM's lmplz and build_binary from the kenlm sdist on PyPI into TOOLS_DIR/kenlm/bin.
# Safe to run twice: it does nothing when both binaries are there and run.
set -euo pipefail
tools_dir=${1:?usage: build-kenlm.sh TOOLS_DIR PYTHON}
python=${2:?usage: build-kenlm.sh TOOLS_DIR PYTHON}
bin="$tools_dir/kenlm/bin"
# lmplz --help exits 1, so a working binary is recognised by what it prints.
works() { [ -x "$bin/lmplz" ] && [ -x "$bin/build_binary" ] && { "$bin/lmplz" --help 2>&1 || true; } | grep -q "Kneser-Ney"; }
if works; then
  exit 0
fi
version=$(grep -E '^kenlm==' constraints.txt | cut -d= -f3)
src="$tools_dir/src"
mkdir -p "$src" "$bin"
echo "building KenLM $version lmplz/build_binary into $bin"
# --no-binary kenlm (not :all:): only kenlm from source, so pip does not compile CMake itself.
"$python" -m pip download -q --no-deps --no-binary kenlm -d "$src" "kenlm==$version"
archive=$(ls "$src"/kenlm-"$version".tar.gz)
rm -rf "$src/kenlm-$version"
tar -xzf "$archive" -C "$src"
build="$src/kenlm-$version/build"
cmake -S "$src/kenlm-$version" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$src/cmake.log" 2>&1 \
  || { echo "error: cmake failed, see $src/cmake.log" >&2; exit 1; }
make -C "$build" -j"$(nproc)" lmplz build_binary >"$src/make.log" 2>&1 \
  || { echo "error: make failed, see $src/make.log" >&2; exit 1; }
mkdir -p "$bin.tmp.$$"
cp "$build/bin/lmplz" "$build/bin/build_binary" "$bin.tmp.$$/"
rm -rf "$bin" && mv "$bin.tmp.$$" "$bin"
rm -rf "$build"
works || { echo "error: $bin/lmplz does not run" >&2; exit 1; }
