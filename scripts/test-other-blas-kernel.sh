#!/usr/bin/env bash
# Run the BLAS-sensitive tests again under another OpenBLAS kernel than this machine's own.
#
# OpenBLAS (inside the numpy and scipy wheels) picks its kernels by processor at run time, and
# kernels of other processors sum in other orders: results differ in the last bits. Bit-for-bit
# promises (persistence, determinism, batch = sequential) hold within one machine and one
# numpy/BLAS build; tests that compare with values made elsewhere must use stored values or a
# stated tolerance. Running these tests under a second OPENBLAS_CORETYPE finds a test that
# silently depends on the kernel of the machine it was written on.
#
# The second core type is one every x86-64 processor runs (never one that needs AVX-512):
# Sandybridge (AVX), or Prescott (SSE3) where this machine's own kernel already is Sandybridge.
# On other architectures the core names differ and the script says so and exits 0.
# Called by .ci/run after the README's test command; extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

case "$(uname -m)" in
    x86_64|amd64) ;;
    *) echo "test-other-blas-kernel: $(uname -m) is not x86-64; OPENBLAS_CORETYPE names differ, skipped"
       exit 0 ;;
esac

own=$(OPENBLAS_VERBOSE=2 python -c "import numpy as np; np.ones((4, 4)) @ np.ones((4, 4))" 2>&1 \
      | sed -n 's/^Core: //p' | head -n 1)
second=Sandybridge
if [[ "$own" == "$second" ]]; then
    second=Prescott
fi
echo "test-other-blas-kernel: this machine's OpenBLAS kernel is ${own:-unknown}; running the" \
     "BLAS-sensitive tests under OPENBLAS_CORETYPE=$second"
export OPENBLAS_CORETYPE=$second
# check that the core type took effect, so the run cannot silently repeat the first one
took=$(OPENBLAS_VERBOSE=2 python -c "import numpy as np; np.ones((4, 4)) @ np.ones((4, 4))" 2>&1 \
       | sed -n 's/^Core: //p' | head -n 1)
if [[ "$took" != "$second" ]]; then
    echo "test-other-blas-kernel: OPENBLAS_CORETYPE=$second was not taken (OpenBLAS says ${took:-nothing})" >&2
    exit 1
fi
# persistence (files written elsewhere, save/load bit for bit), determinism (seeds, common
# checks, simulation), batch = sequential, the estimators and policies they rest on, the
# experiment pipeline's stored numbers, the service walkthrough's shown outputs (a served
# policy's explanation, an offline replay) and the replay of another feature schema; then
# the doctests, which print numbers. Two runs:
# collected together, the doctest collector would import two folders' conftest.py as one
# module "conftest".
python -m pytest -p no:cacheprovider -q -o addopts="" \
    tests/persistence tests/batch tests/estimation tests/policies tests/properties \
    tests/test_common.py tests/test_simulation.py tests/test_families.py tests/test_theory.py \
    tests/experiments tests/evaluation tests/environments \
    tests/service/test_service_walkthrough.py tests/cli/test_cli_replay_features.py "$@"
python -m pytest -p no:cacheprovider -q src/glmbandits "$@"
