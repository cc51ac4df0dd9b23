#!/usr/bin/env bash
# pynini's wheel unpacks to ~700 MB, almost all debug info; stripping it leaves ~38 MB that works the same.
# A library that has no debug sections left is not touched, and a stripped copy replaces the original by rename:
# processes that have the library loaded keep their pages (an in-place rewrite crashes them; a reinstall of the
# venv while a run is going must not).
set -euo pipefail
site=$("${1:?usage: strip-pynini.sh PYTHON}" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
shopt -s nullglob
for file in "$site"/pynini.libs/*.so* "$site"/_pynini*.so "$site"/_pywrapfst*.so; do
  readelf -S --wide "$file" | grep -q '\.debug_' || continue
  strip --strip-debug -o "$file.stripped" "$file"
  chmod --reference="$file" "$file.stripped"
  mv -f "$file.stripped" "$file"
done
