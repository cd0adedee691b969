#!/usr/bin/env bash
# The sm_90 machine code of the catalog's add_*_l2keep kernel at packet-multiple sizes
# (AddOnePassKernel<T, 1|2, kL2Keep, kTail = false>, kernels/cuda/add_kernels.cu) must stay the
# code of bench/l2_probe.cu's VecKernel<T, kKeep, 1|2>, which the H200 timed 3% faster than the
# catalog's kernel before they were made the same (2026-11-30). Compiles both to sm_90 cubins and
# compares the kernels' .text bytes (tests/kernels/cubin_text.py); no GPU needed, nvcc is.
#   l2keep_codegen_test.sh SOURCE_DIR NVCC
set -euo pipefail
src=$1 nvcc=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-O3 -std=c++17 -arch=sm_90 -cubin --expt-relaxed-constexpr)
"$nvcc" "${flags[@]}" -I"$src" -o "$work/catalog.cubin" "$src/kernels/cuda/add_kernels.cu"
"$nvcc" "${flags[@]}" -o "$work/probe.cubin" "$src/bench/l2_probe.cu"
text() { python3 "$src/tests/kernels/cubin_text.py" "$1" --filter="$2"; }
failed=0
# catalog dtype (mangled) : probe DType enumerator
for pair in "f:0" "6__half:1" "13__nv_bfloat16:2"; do
  for unroll in 1 2; do
    catalog=$(text "$work/catalog.cubin" "AddOnePassKernelI${pair%%:*}Li${unroll}ELNS0_11CachePolicyE2ELb0E")
    probe=$(text "$work/probe.cubin" "VecKernelIL5DType${pair##*:}EL6Policy3ELi${unroll}E")
    [[ -n $catalog && -n $probe ]] || { echo "FAIL: kernel not found (${pair%%:*} x$unroll)"; failed=1; continue; }
    if [[ $(cut -d' ' -f1,2 <<< "$catalog") == $(cut -d' ' -f1,2 <<< "$probe") ]]; then
      echo "same code: $(cut -d' ' -f1,2 <<< "$catalog") (instructions, sha1) ${pair%%:*} x$unroll"
    else
      echo "FAIL: ${pair%%:*} x$unroll differs: catalog $catalog / probe $probe"; failed=1
    fi
  done
done
exit $failed
