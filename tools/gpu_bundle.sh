#!/usr/bin/env bash
# Packs what the GPU checks need into one archive for a GPU machine that has CUDA 13 and
# PyTorch but none of this project's Debian libraries (the lent device machine's image):
# the CUDA-built test_cuda, bench_gpt and deepcee, every shared library they load that is
# neither glibc's, the compiler's runtime nor CUDA's (the GPU machine's own are used), and a
# text corpus. tools/gpu_check.sh unpacks and runs it there.
#
#   tools/gpu_bundle.sh [BUILD_DIR] [ARCHIVE]   (defaults: build, .gpu/bundle.tar.xz)
set -euo pipefail

build=${1:-build}
archive=${2:-.gpu/bundle.tar.xz}
binaries=("$build/tests/test_cuda" "$build/bench/bench_gpt" "$build/tools/deepcee")
corpus=/usr/share/games/fortunes

for b in "${binaries[@]}"; do
  [[ -x $b ]] || { echo "gpu_bundle: $b is missing: build with nvcc found first (./dev build)" >&2; exit 2; }
done
if ! ldd "$build/tests/test_cuda" | grep -q libcudart; then
  echo "gpu_bundle: $build/tests/test_cuda was built without CUDA (no nvcc found)" >&2
  exit 2
fi
[[ -d $corpus ]] || { echo "gpu_bundle: no corpus at $corpus (./setup.sh installs fortunes)" >&2; exit 2; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/corpus"
cp "${binaries[@]}" "$stage/bin/"
strip "$stage/bin/"*

# Loaded from the GPU machine itself: glibc, the C++ runtime, and CUDA's libraries.
base='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+)\.'
ldd "${binaries[@]}" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
  while read -r name path; do
    [[ $name =~ $base || $path == /usr/local/cuda* ]] && continue
    cp -L "$path" "$stage/lib/$name"
  done
find "$corpus" -maxdepth 1 -type f ! -name '*.dat' ! -name '*.u8' -exec cp {} "$stage/corpus/" \;

mkdir -p "$(dirname "$archive")"
tar -C "$stage" -cJf "$archive.tmp" bin lib corpus
mv "$archive.tmp" "$archive"
echo "gpu_bundle: $archive ($(du -h "$archive" | cut -f1)): $(ls "$stage/lib" | tr '\n' ' ')"
