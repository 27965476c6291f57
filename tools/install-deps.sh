#!/usr/bin/env bash
# Installs the Debian 12 (bookworm) packages mlusim needs to build and test.
#
# Idempotent: checks which packages are missing and only then runs apt-get update and installs
# those, without recommended packages. Works on a minimal Debian 12 (debootstrap
# --variant=minbase bookworm) as root; run it again at any time.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: tools/install-deps.sh [--check | --list | --help]

Installs the Debian 12 packages mlusim needs (compiler and CMake included) with
  apt-get install -y --no-install-recommends
Only missing packages are installed, and `apt-get update` runs only if something is missing.
Installing needs root; when everything is present it succeeds as any user.

Options:
  --check   only report missing packages; exit status 1 if any are missing
  --list    print the package list and exit
  --help    print this help and exit

Environment:
  MLUSIM_WITH_TORCH=0   skip the PyTorch bridge and Python packages (libtorch-dev,
                        python3-torch, pybind11-dev, python3-torchvision, python3-pytest).
                        Default 1: the bridge is part of the build (cmake option
                        MLUSIM_WITH_TORCH, default ON).
EOF
}

# Base packages: everything the C++ layers, their tests and benchmarks need.
PACKAGES=(
  # Toolchain and build system
  build-essential g++ cmake ninja-build pkg-config
  # Source control and HTTPS certificates (CMake/git over https)
  git ca-certificates
  # SystemC 2.3.4: the simulation kernel
  libsystemc-dev
  # YAML hardware configs
  libyaml-cpp-dev
  # Boost 1.74 headers (Intrusive: the caching allocator's block lists)
  libboost-dev
  # Eigen: tile arithmetic (header-only; no OpenBLAS on purpose, see DESIGN.md)
  libeigen3-dev
  # JSON reports and traces
  nlohmann-json3-dev
  # Command-line parsing for the mlusim CLI
  libcli11-dev
  # Tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # Headless browser for the test of `mlusim report`'s HTML page (renders, no script errors)
  chromium
  # Build-time scripts
  python3
)

# The PyTorch PrivateUse1 bridge and its Python package, built-in TorchScript models and the
# Python tests. Installed unless MLUSIM_WITH_TORCH=0 (match the cmake option of the same name).
TORCH_PACKAGES=(
  # libtorch 1.13.1 (C++) and the matching Python torch
  libtorch-dev python3-torch
  # Python bindings of torch_mlu
  pybind11-dev
  # Built-in models (resnet, mobilenet) generated at build time
  python3-torchvision
  # Python tests
  python3-pytest
)

mode=install
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  --list) mode=list ;;
  -h | --help) usage; exit 0 ;;
  *) echo "install-deps.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
esac
if [[ $# -gt 1 ]]; then
  echo "install-deps.sh: too many arguments" >&2
  exit 2
fi

if [[ "${MLUSIM_WITH_TORCH:-1}" != 0 ]]; then
  PACKAGES+=("${TORCH_PACKAGES[@]}")
fi

if [[ $mode == list ]]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps.sh: dpkg-query not found: this script supports Debian 12 (bookworm) only" >&2
  exit 1
fi

is_installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

missing_packages() {
  local pkg
  for pkg in "${PACKAGES[@]}"; do
    is_installed "$pkg" || echo "$pkg"
  done
}

mapfile -t missing < <(missing_packages)

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps.sh: all present (${#PACKAGES[@]} packages)"
  exit 0
fi

if [[ $mode == check ]]; then
  echo "install-deps.sh: missing: ${missing[*]}"
  exit 1
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps.sh: these packages are missing: ${missing[*]}" >&2
  echo "install-deps.sh: installing them needs root: run it as root (e.g. sudo -E tools/install-deps.sh)" >&2
  exit 1
fi

if [[ -r /etc/os-release ]]; then
  # shellcheck disable=SC1091
  version_id="$(. /etc/os-release && echo "${VERSION_ID:-}")"
  if [[ "$version_id" != 12 ]]; then
    echo "install-deps.sh: warning: this script targets Debian 12; found VERSION_ID='$version_id'" >&2
  fi
fi

echo "install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"

mapfile -t still_missing < <(missing_packages)
if [[ ${#still_missing[@]} -ne 0 ]]; then
  echo "install-deps.sh: still missing after apt-get install: ${still_missing[*]}" >&2
  exit 1
fi
echo "install-deps.sh: installed ${missing[*]}"
