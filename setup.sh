#!/usr/bin/env bash
# Installs deepcee's dependencies from Debian's packages. Idempotent: packages already
# present are not installed again. Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang-format
  libcaf-dev capnproto libcapnp-dev libspdlog-dev libfmt-dev libboost-test-dev
  libtomlplusplus-dev libcli11-dev nlohmann-json3-dev libopenblas-dev libxxhash-dev fortunes
  libcpp-httplib-dev libssl-dev openssl xxd libjs-chart.js gnuplot-nox tmux chromium fonts-dejavu-core
  iproute2 procps
)
# PyTorch is only the benchmark's reference (bench/); DEEPCEE_WITH_TORCH=1 installs it.
if [[ "${DEEPCEE_WITH_TORCH:-0}" == 1 ]]; then packages+=(python3-torch); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) != 0 ]]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
