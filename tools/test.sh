#!/usr/bin/env bash
# Builds mlusim and runs its tests: the README's test command (and what CI runs).
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: tools/test.sh [--help]

Builds and tests mlusim from the repository root:
  1. build/       RelWithDebInfo build of everything; runs all tests (ctest).
  2. build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer) build of the
                  sim and driver test programs (sim_*_tests, driver_*_tests); runs them.
Both folders are reused between runs, so a second run only rebuilds what changed.
Prints one summary line at the end; the exit status is non-zero if any step failed.

Environment:
  MLUSIM_SKIP_SANITIZE=1   skip step 2
  MLUSIM_JOBS=N            parallel build and test jobs (default: nproc)
  MLUSIM_VENV=DIR          the project venv, if not .venv/ (as for tools/install-deps.sh):
                           passed to cmake as -DMLUSIM_PYTHON=DIR/bin/python

Dependencies come from tools/install-deps.sh: Debian 12 packages and the project venv .venv/
(Debian's python3 with the pinned PyPI packages of tools/requirements/torch.txt: torch,
torchvision, transformers, timm, pytest). The build compiles the PyTorch layer against the
venv's torch, and ctest runs the pytest suites with the venv's python.
EOF
}

case "${1:-}" in
  "") ;;
  -h | --help) usage; exit 0 ;;
  *) echo "test.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
esac

# The venv's python for the torch layer (cmake's default is .venv/bin/python); a relative
# MLUSIM_VENV is relative to the caller's folder, as in tools/install-deps.sh.
cmake_python=()
if [[ -n "${MLUSIM_VENV:-}" ]]; then
  cmake_python=("-DMLUSIM_PYTHON=$(realpath -m -- "$MLUSIM_VENV")/bin/python")
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs="${MLUSIM_JOBS:-$(nproc)}"
started=$SECONDS
stage="setup"
done_stages=()

elapsed() {
  local s=$((SECONDS - started))
  printf '%dm%02ds' $((s / 60)) $((s % 60))
}
on_exit() {
  local rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "tools/test.sh: FAILED in stage '$stage' after $(elapsed) (passed: ${done_stages[*]:-none})" >&2
  fi
}
trap on_exit EXIT
step() {
  stage="$1"
  echo "==> tools/test.sh: $stage"
}

# 1. Everything, optimised with debug info.
step "configure build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_python[@]}"
step "build build"
cmake --build build -j "$jobs"
step "test build"
ctest --test-dir build --output-on-failure --no-tests=error -j "$jobs"
done_stages+=("build")

# 2. The sim and driver layers under ASan + UBSan + LSan.
if [[ "${MLUSIM_SKIP_SANITIZE:-0}" != 1 ]]; then
  # LeakSanitizer is on: the simulator re-registers the thread's real stack with ASan after every
  # sc_start (libsystemc's coroutines leave it registered with a coroutine's bounds otherwise).
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

  step "configure build-asan"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMLUSIM_SANITIZE=ON -DMLUSIM_BUILD_BENCH=OFF "${cmake_python[@]}"
  mapfile -t sanitized_targets < <(ninja -C build-asan -t targets all | grep -oE '^(sim|driver)_[a-z0-9_]+_tests:' | tr -d : | sort -u)
  if [[ ${#sanitized_targets[@]} -eq 0 ]]; then
    echo "tools/test.sh: no sim_*_tests or driver_*_tests targets found in build-asan" >&2
    exit 1
  fi
  step "build build-asan (${sanitized_targets[*]})"
  cmake --build build-asan -j "$jobs" --target "${sanitized_targets[@]}"
  step "test build-asan"
  # The C example programs are exercised by the normal build only (-LE examples).
  ctest --test-dir build-asan --output-on-failure --no-tests=error -j "$jobs" -L '^(sim|driver)$' -LE '^examples$'
  done_stages+=("build-asan")
else
  echo "==> tools/test.sh: sanitizer build skipped (MLUSIM_SKIP_SANITIZE=1)"
fi

stage="done"
echo "tools/test.sh: PASSED (${done_stages[*]}) in $(elapsed)"
