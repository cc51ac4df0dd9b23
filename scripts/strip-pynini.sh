#!/usr/bin/env bash
# pynini's wheel unpacks to ~700 MB, almost all debug info; stripping it leaves ~38 MB that works the same.
set -euo pipefail
site=$("${1:?usage: strip-pynini.sh PYTHON}" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
shopt -s nullglob
files=("$site"/pynini.libs/*.so* "$site"/_pynini*.so "$site"/_pywrapfst*.so)
[ ${#files[@]} -eq 0 ] || strip --strip-debug "${files[@]}"
