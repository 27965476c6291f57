#!/usr/bin/env bash
# Builds mlusim and runs its tests: the README's test command (and what CI runs).
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: tools/test.sh [--help]

Builds and tests mlusim from the repository root:
  1. build/       RelWithDebInfo build of everything with line tables only (-O2 -g1: a crash's
                  backtrace still names file and line; full -g costs ~35% more compile time and
                  4x the object size); runs all tests (ctest).
  2. build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer) build of the
                  sim and driver test programs (sim_*_tests, driver_*_tests) at -O0 -g1 (half the
                  compile time of -O1 with the sanitizers, which instrument unoptimised code the
                  same way; the tests run slower but in well under a minute); runs them.
     build-fuzz/  then the libFuzzer targets of tests/fuzz/ (clang-14, ASan + UBSan, no torch,
                  only the libraries they need): each runs MLUSIM_FUZZ_SECONDS seconds on its
                  corpus in build-fuzz/fuzz/<target>/corpus (the seeds of tests/fuzz/corpus/<target>
                  plus what earlier runs found; the checked-in seeds are never written), with
                  -timeout=10 -rss_limit_mb=2048. One line per target: executions, exec/s,
                  coverage (cov: edges, ft: features), corpus size. A crash, leak, timeout or
                  sanitizer report fails the step and prints the reproducer's path and the command
                  that replays it (docs/fuzzing.md).
The folders are reused between runs, so a second run only rebuilds what changed.
Prints one summary line at the end; the exit status is non-zero if any step failed.

Environment:
  MLUSIM_SKIP_SANITIZE=1   skip step 2 (the fuzz targets included)
  MLUSIM_SKIP_FUZZ=1       skip the fuzz targets only
  MLUSIM_FUZZ_SECONDS=N    seconds each fuzz target runs (default 20)
  MLUSIM_FUZZ_SEED=N       libFuzzer's random seed (default 1, repeatable; 0 = a new one each run)
  MLUSIM_JOBS=N            parallel build and test jobs (default: nproc)
  MLUSIM_VENV=DIR          the project venv, if not .venv/ (as for tools/install-deps.sh):
                           passed to cmake as -DMLUSIM_PYTHON=DIR/bin/python

Dependencies come from tools/install-deps.sh: Debian 12 packages (clang-14 and libclang-rt-14-dev
for the fuzz targets) and the project venv .venv/
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

# Runs every fuzz target of build-fuzz for $1 seconds (see usage) and prints one line per target;
# returns non-zero after all targets have run if any of them found something.
run_fuzz_targets() {
  local seconds=$1 failed=() src seed target work log dict rc line done_line execs rate reproducer
  for src in tests/fuzz/*_fuzz.cpp; do
    target=$(basename "$src" .cpp)
    work=$PWD/build-fuzz/fuzz/$target  # absolute: run_options_fuzz changes its directory
    log=$work/fuzz.log
    if [[ ! -x build-fuzz/tests/fuzz/$target ]]; then
      echo "tools/test.sh: build-fuzz/tests/fuzz/$target was not built" >&2
      failed+=("$target")
      continue
    fi
    mkdir -p "$work/corpus" "$work/artifacts"
    rm -f "$work/artifacts/"*
    for seed in tests/fuzz/corpus/"$target"/*; do
      if [[ -f $seed && ! -e $work/corpus/${seed##*/} ]]; then cp "$seed" "$work/corpus/"; fi
    done
    dict=()
    if [[ -f tests/fuzz/$target.dict ]]; then
      dict=("-dict=$PWD/tests/fuzz/$target.dict")
    fi
    rc=0
    # The outer timeout only guards against a fuzzer that does not stop by itself.
    # A fixed -seed: the same mutations in the same order on every run (CI stays repeatable; how far
    # a run gets still depends on the machine's speed). MLUSIM_FUZZ_SEED=0 lets libFuzzer choose.
    timeout --signal=KILL $((seconds + 300)) build-fuzz/tests/fuzz/"$target" -max_total_time="$seconds" -timeout=10 \
      -seed="${MLUSIM_FUZZ_SEED:-1}" \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/" "${dict[@]}" "$work/corpus" \
      >"$log" 2>&1 || rc=$?
    done_line=$(grep -a -E '^#[0-9]+[[:space:]]+DONE ' "$log" | tail -n 1 || true)
    execs=$(grep -a -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n 1 || true)
    rate=$(grep -a -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n 1 || true)
    if [[ $rc -eq 0 && -n $done_line ]]; then
      line=$(sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+)\/([0-9]+[a-zA-Z]*).*/cov \1, ft \2, corpus \3 inputs (\4)/' <<<"$done_line")
      printf 'fuzz: %-20s %9s runs, %6s exec/s, %s\n' "$target" "${execs:-?}" "${rate:-?}" "$line"
      continue
    fi
    failed+=("$target")
    reproducer=$(grep -a -oE 'Test unit written to [^ ]+' "$log" | tail -n 1 | sed 's/^Test unit written to //' || true)
    echo "fuzz: $target FAILED (exit status $rc) after ${execs:-?} runs; its output: $log" >&2
    grep -a -E 'FINDING|^SUMMARY|ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|runtime error' "$log" \
      | head -n 8 | cut -c1-400 >&2 || true
    if [[ -n $reproducer ]]; then
      echo "fuzz: reproducer: $reproducer" >&2
      echo "fuzz: replay it with: $PWD/build-fuzz/tests/fuzz/$target $reproducer" >&2
    else
      tail -n 20 "$log" >&2
    fi
  done
  if [[ ${#failed[@]} -ne 0 ]]; then
    echo "tools/test.sh: fuzz targets with findings: ${failed[*]}" >&2
    return 1
  fi
}

# Compile flags of the two RelWithDebInfo builds (CMake's default for it is -O2 -g -DNDEBUG):
# line tables only, which keep file:line in backtraces and sanitizer reports at a fraction of the
# compile and link time of full debug info (measured on torch_bridge/src/ops/reduce_ops.cpp: 20 s vs 34 s of CPU; ASan at -O1 -g1: 20 s vs 31 s on loader_test.cpp).
flags_lines=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
# The sanitizer build at -O0: with ASan + UBSan, -O1 doubles the compile time (sim's vector_math.cpp,
# Eigen: 69 s of CPU at -O1, 32 s at -O0) for faster test runs, and the tests are a small part of it.
flags_asan=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1 -DNDEBUG")

# 1. Everything, optimised, with line tables.
step "configure build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${flags_lines[@]}" "${cmake_python[@]}"
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
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${flags_asan[@]}" \
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

  # The libFuzzer targets (tests/fuzz/, docs/fuzzing.md): a clang build of only what they link.
  if [[ "${MLUSIM_SKIP_FUZZ:-0}" != 1 ]]; then
    fuzz_seconds="${MLUSIM_FUZZ_SECONDS:-20}"
    if ! [[ $fuzz_seconds =~ ^[1-9][0-9]*$ ]]; then
      echo "tools/test.sh: MLUSIM_FUZZ_SECONDS must be a whole number of seconds > 0, got '$fuzz_seconds'" >&2
      exit 2
    fi
    fuzz_started=$SECONDS
    step "configure build-fuzz"
    for tool in clang-14 clang++-14; do
      if ! command -v "$tool" >/dev/null 2>&1; then
        echo "tools/test.sh: $tool not found: the fuzz targets need clang-14 and libclang-rt-14-dev (tools/install-deps.sh), or set MLUSIM_SKIP_FUZZ=1" >&2
        exit 1
      fi
    done
    CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Fuzz \
      -DMLUSIM_FUZZ=ON -DMLUSIM_WITH_TORCH=OFF -DMLUSIM_BUILD_TESTS=OFF -DMLUSIM_BUILD_BENCH=OFF
    step "build build-fuzz (mlusim_fuzzers)"
    cmake --build build-fuzz -j "$jobs" --target mlusim_fuzzers
    fuzz_built=$SECONDS
    step "fuzz (${fuzz_seconds} s per target)"
    run_fuzz_targets "$fuzz_seconds"
    echo "==> tools/test.sh: fuzz step took $((SECONDS - fuzz_started)) s (build $((fuzz_built - fuzz_started)) s, runs $((SECONDS - fuzz_built)) s)"
    done_stages+=("fuzz")
  else
    echo "==> tools/test.sh: fuzz targets skipped (MLUSIM_SKIP_FUZZ=1)"
  fi
else
  echo "==> tools/test.sh: sanitizer build skipped (MLUSIM_SKIP_SANITIZE=1)"
fi

stage="done"
echo "tools/test.sh: PASSED (${done_stages[*]}) in $(elapsed)"
