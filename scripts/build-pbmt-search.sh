#!/usr/bin/env bash
# Builds the compiled phrase-based search (pipeline/smt/pbmt_search.cpp) into pipeline/smt/_pbmt_search.so,
# linked with KenLM's query code compiled from the kenlm sdist on PyPI (the version of constraints.txt; the same
# sources as scripts/build-kenlm.sh). KenLM's objects are kept in TOOLS_DIR/kenlm/search-obj, so a change of the
# search recompiles only the search. Safe to run twice.
set -euo pipefail
tools_dir=${1:?usage: build-pbmt-search.sh TOOLS_DIR PYTHON}
python=${2:?usage: build-pbmt-search.sh TOOLS_DIR PYTHON}
version=$(grep -E '^kenlm==' constraints.txt | cut -d= -f3)
src="$tools_dir/src"
tree="$src/kenlm-$version"
if [ ! -f "$tree/lm/model.cc" ]; then
  mkdir -p "$src"
  "$python" -m pip download -q --no-deps --no-binary kenlm -d "$src" "kenlm==$version"
  rm -rf "$tree"
  tar -xzf "$src/kenlm-$version.tar.gz" -C "$src"
fi
cxx=${CXX:-g++}
# No -ffast-math and no contraction into fused multiply-adds: the search must round as Python does.
flags=(-O2 -fPIC -DNDEBUG -DKENLM_MAX_ORDER=6 -DHAVE_CLOCKGETTIME -std=c++17 -ffp-contract=off -I"$tree")
obj="$tools_dir/kenlm/search-obj"
mkdir -p "$obj"
sources=$(cd "$tree" && ls util/double-conversion/*.cc util/*.cc lm/*.cc | grep -v -e 'main\.cc$' -e 'test\.cc$')
missing=()
for s in $sources; do
  o="$obj/$(echo "${s%.cc}" | tr / _).o"
  [ -f "$o" ] || missing+=("$s")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "compiling ${#missing[@]} KenLM sources for the compiled PBMT search into $obj"
  printf '%s\n' "${missing[@]}" | xargs -P "$(nproc)" -I{} sh -c \
    'o="$0/$(echo "${1%.cc}" | tr / _).o"; '"$cxx"' '"${flags[*]}"' -w -c "$2/$1" -o "$o.tmp" && mv "$o.tmp" "$o"' \
    "$obj" {} "$tree"
fi
out=pipeline/smt/_pbmt_search.so
echo "building $out"
"$cxx" "${flags[@]}" -shared pipeline/smt/pbmt_search.cpp "$obj"/*.o -o "$out.tmp.$$" -lrt
mv "$out.tmp.$$" "$out"
