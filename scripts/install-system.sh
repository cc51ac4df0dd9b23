#!/usr/bin/env bash
# Installs the Debian packages needed to build KenLM's lmplz and build_binary and the compiled search, if any is
# missing; with --test, Chromium instead (the headless browser of the server page's test; `make test` asks for both).
# Safe to run twice: it does nothing when every package is already there.
set -euo pipefail
packages=(cmake build-essential libboost-program-options-dev libboost-system-dev libboost-thread-dev
          libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev binutils)
if [ "${1:-}" = "--test" ]; then
  packages=(chromium)
elif [ $# -gt 0 ]; then
  echo "usage: $0 [--test]" >&2
  exit 2
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing Debian packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "error: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
