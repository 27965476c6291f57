#!/usr/bin/env bash
# Installs what mlusim needs to build and test: the Debian 12 (bookworm) packages and, for the
# PyTorch layer, the project venv with the exact PyPI pins of tools/requirements/torch.txt.
#
# Idempotent: checks which packages are missing and only then runs apt-get update and installs
# those, without recommended packages. The venv is created if missing, and pip runs only if the
# lock file or the venv's Python changed since the last install (a stamp file in the venv says
# which). Works on a minimal Debian 12 (debootstrap --variant=minbase bookworm) as root; run it
# again at any time.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: tools/install-deps.sh [--check | --list | --help]

Installs the Debian 12 packages mlusim needs (compiler and CMake included) with
  apt-get install -y --no-install-recommends
Only missing packages are installed, and `apt-get update` runs only if something is missing.
Installing packages needs root; when everything is present it succeeds as any user.

Then, for the PyTorch layer, it sets up the project venv (default: .venv/ in the repository):
  /usr/bin/python3 -m venv .venv                (Debian's Python 3.11, if the venv is missing)
  .venv/bin/python -m pip install --no-deps --only-binary=:all: -r tools/requirements/torch.txt
  .venv/bin/python -m pip check
tools/requirements/torch.txt pins every package exactly (torch 2.14.1, torchvision 0.29.2,
transformers, timm, pytest, numpy and all their dependencies), so nothing unpinned is installed.
The venv takes about 5.7 GB; the first install downloads about 3 GB from PyPI (HTTPS).
A stamp file in the venv (.mlusim-install-stamp) records the lock file's sha256 and the Python
version; while both match, pip does not run at all. When the lock file changes, pip installs
what differs (packages dropped from the lock stay; delete the venv to get rid of them). A venv
whose Python no longer works (e.g. after an upgrade of Debian's python3) or that was not made
from /usr/bin/python3 is deleted and made again. The build uses the venv's python (cmake
variable MLUSIM_PYTHON, default .venv/bin/python).

Options:
  --check   only report missing packages and a missing or outdated venv; exit status 1 if
            anything is missing or outdated
  --list    print the Debian package list and exit (the PyPI pins are in
            tools/requirements/torch.txt)
  --help    print this help and exit

Environment:
  MLUSIM_VENV=DIR       the venv's folder (default: <repository>/.venv). For another folder,
                        configure with -DMLUSIM_PYTHON=DIR/bin/python (tools/test.sh does this
                        when MLUSIM_VENV is set).
  MLUSIM_WITH_TORCH=0   skip the PyTorch bridge: its Debian packages (python3-venv,
                        python3-dev, pybind11-dev) and the venv. Default 1: the bridge is part
                        of the build (cmake option MLUSIM_WITH_TORCH, default ON).
EOF
}

# Base packages: everything the C++ layers, their tests and benchmarks need.
PACKAGES=(
  # Toolchain and build system
  build-essential g++ cmake ninja-build pkg-config
  # Source control and HTTPS certificates (CMake/git over https; pip from PyPI: Debian's pip
  # uses the system certificates)
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
  # The libFuzzer targets of tests/fuzz (tools/test.sh's fuzz step): clang and its runtime
  # libraries (libclang_rt.fuzzer, ASan, UBSan), which Debian packages apart from the compiler
  clang-14 libclang-rt-14-dev
  # Headless browser for the test of `mlusim report`'s HTML page (renders, no script errors)
  chromium
  # Build-time scripts
  python3
)

# The PyTorch PrivateUse1 bridge and its Python package, built-in TorchScript models and the
# Python tests. Installed unless MLUSIM_WITH_TORCH=0 (match the cmake option of the same name).
# torch itself, torchvision, transformers, timm and pytest come from PyPI into the venv below.
TORCH_PACKAGES=(
  # The project venv: `python3 -m venv` with pip (python3-venv), Python headers for the
  # pybind11 module torch_mlu._C (python3-dev)
  python3-venv python3-dev
  # Python bindings of torch_mlu
  pybind11-dev
  # `ip netns` / veth: the 2-machine torch.distributed test (tests/python/test_distributed_netns.py)
  iproute2
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

with_torch=1
if [[ "${MLUSIM_WITH_TORCH:-1}" == 0 ]]; then
  with_torch=0
fi
if [[ $with_torch == 1 ]]; then
  PACKAGES+=("${TORCH_PACKAGES[@]}")
fi

if [[ $mode == list ]]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

# --check: what is missing; the exit status is 1 if anything is.
status=0

# ---- Debian packages ---------------------------------------------------------------------------

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
elif [[ $mode == check ]]; then
  echo "install-deps.sh: missing: ${missing[*]}"
  status=1
else
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
  if ! apt-get update; then
    echo "install-deps.sh: apt-get update failed" >&2
    exit 1
  fi
  if ! apt-get install -y --no-install-recommends "${missing[@]}"; then
    echo "install-deps.sh: apt-get install failed for: ${missing[*]}" >&2
    exit 1
  fi

  mapfile -t still_missing < <(missing_packages)
  if [[ ${#still_missing[@]} -ne 0 ]]; then
    echo "install-deps.sh: still missing after apt-get install: ${still_missing[*]}" >&2
    exit 1
  fi
  echo "install-deps.sh: installed ${missing[*]}"
fi

# ---- The project venv (PyPI packages of the PyTorch layer) ------------------------------------

if [[ $with_torch == 0 ]]; then
  echo "install-deps.sh: venv skipped (MLUSIM_WITH_TORCH=0)"
  exit "$status"
fi

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lock_file="$repo_root/tools/requirements/torch.txt"
lock_name="tools/requirements/torch.txt"
system_python=/usr/bin/python3
venv="${MLUSIM_VENV:-$repo_root/.venv}"
if [[ $venv != /* ]]; then
  venv="$PWD/$venv"
fi
while [[ $venv == */ && $venv != / ]]; do
  venv="${venv%/}"
done
stamp="$venv/.mlusim-install-stamp"

if [[ ! -r $lock_file ]]; then
  echo "install-deps.sh: the lock file $lock_file is missing or unreadable" >&2
  exit 1
fi
lock_sha256="$(sha256sum "$lock_file" | cut -d' ' -f1)"

# Run by the venv's python: prints its version if the venv is usable (a venv of Debian's
# /usr/bin/python3 whose site-packages matches the running Python, with pip); exits non-zero
# with the reason otherwise.
probe='
import os, sys
if sys.prefix == sys.base_prefix:
    sys.exit("its python is not a venv python")
if sys.base_prefix != "/usr":
    sys.exit("made from the Python in %s, not from /usr/bin/python3" % sys.base_prefix)
site = os.path.join(sys.prefix, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
if not os.path.isdir(site):
    sys.exit("made by another Python version than the current %d.%d (no %s)" % (sys.version_info[:2] + (site,)))
try:
    import pip  # noqa: F401
except ImportError:
    sys.exit("pip is missing")
print("%d.%d.%d" % sys.version_info[:3])
'

# Sets venv_state (missing | not-a-venv | broken | current | outdated), venv_reason and
# venv_python_version.
inspect_venv() {
  local out
  venv_reason=""
  venv_python_version=""
  if [[ ! -e $venv ]] || [[ -d $venv && -z "$(ls -A "$venv")" ]]; then
    venv_state=missing
  elif [[ ! -d $venv || ! -f $venv/pyvenv.cfg ]]; then
    venv_state=not-a-venv
  elif [[ ! -x $venv/bin/python ]]; then
    venv_state=broken
    venv_reason="$venv/bin/python is missing or does not point to a Python"
  elif ! out="$("$venv/bin/python" -I -c "$probe" 2>&1)"; then
    venv_state=broken
    venv_reason="$(tail -n 1 <<<"$out")"
  else
    venv_python_version="$out"
    if [[ -f $stamp && "$(cat "$stamp")" == "$(expected_stamp)" ]]; then
      venv_state=current
    else
      venv_state=outdated
      if [[ ! -f $stamp ]]; then
        venv_reason="no install stamp: not set up by this script, or its last install did not finish"
      else
        venv_reason="$lock_name or the venv's Python changed since the last install"
      fi
    fi
  fi
}

expected_stamp() {
  printf '# tools/install-deps.sh installed this lock file (sha256) with this Python; delete to reinstall\n'
  printf 'lock-sha256 %s\n' "$lock_sha256"
  printf 'python %s\n' "$venv_python_version"
}

inspect_venv

if [[ $mode == check ]]; then
  case $venv_state in
    current) echo "install-deps.sh: venv up to date ($venv: $lock_name, Python $venv_python_version)" ;;
    missing) echo "install-deps.sh: venv missing: $venv"; status=1 ;;
    not-a-venv) echo "install-deps.sh: $venv exists but is not a venv (no pyvenv.cfg)"; status=1 ;;
    broken) echo "install-deps.sh: venv broken ($venv: $venv_reason)"; status=1 ;;
    outdated) echo "install-deps.sh: venv outdated ($venv: $venv_reason)"; status=1 ;;
  esac
  exit "$status"
fi

case $venv_state in
  current)
    echo "install-deps.sh: venv up to date ($venv: $lock_name, Python $venv_python_version)"
    exit 0
    ;;
  not-a-venv)
    echo "install-deps.sh: $venv exists but is not a venv (no pyvenv.cfg); move it away or set MLUSIM_VENV to another folder" >&2
    exit 1
    ;;
  broken)
    echo "install-deps.sh: the venv $venv is unusable ($venv_reason): deleting it and making it again"
    if ! rm -rf -- "$venv"; then
      echo "install-deps.sh: could not delete the broken venv $venv" >&2
      exit 1
    fi
    venv_state=missing
    ;;
esac

started=$SECONDS

if [[ $venv_state == missing ]]; then
  if [[ ! -x $system_python ]]; then
    echo "install-deps.sh: $system_python not found (Debian package python3)" >&2
    exit 1
  fi
  echo "install-deps.sh: creating the venv $venv ($system_python -m venv)"
  if ! "$system_python" -m venv "$venv"; then
    echo "install-deps.sh: '$system_python -m venv $venv' failed (is python3-venv installed?)" >&2
    rm -rf -- "$venv"
    exit 1
  fi
  inspect_venv
  if [[ $venv_state != outdated ]]; then
    echo "install-deps.sh: the new venv $venv is unusable: ${venv_reason:-$venv_state}" >&2
    exit 1
  fi
fi

echo "install-deps.sh: installing $lock_name into $venv (pip install --no-deps; the first install downloads about 3 GB)"
if ! "$venv/bin/python" -I -m pip install --disable-pip-version-check --no-input \
  --no-deps --only-binary=:all: -r "$lock_file"; then
  echo "install-deps.sh: pip install -r $lock_name into $venv failed (pip's message is above)" >&2
  exit 1
fi
if ! "$venv/bin/python" -I -m pip check --disable-pip-version-check; then
  echo "install-deps.sh: pip check failed in $venv: the pins of $lock_name do not satisfy each other's requirements (pip's message is above)" >&2
  exit 1
fi

# Exactly the pins? Packages the lock does not name (left from an older lock, or installed by
# hand) stay: say so. Names are compared normalized (lower case, runs of -_. as one -).
normalize() {
  awk '!/^[ \t\r]*(#|$)/ {
    gsub(/[ \t\r]/, ""); i = index($0, "==")
    n = tolower(i ? substr($0, 1, i - 1) : $0); gsub(/[-_.]+/, "-", n)
    print n (i ? substr($0, i) : "")
  }' | LC_ALL=C sort -u
}
if ! frozen="$("$venv/bin/python" -I -m pip freeze --disable-pip-version-check --all --exclude pip)"; then
  echo "install-deps.sh: pip freeze failed in $venv" >&2
  exit 1
fi
not_installed="$(LC_ALL=C comm -13 <(normalize <<<"$frozen") <(normalize <"$lock_file") | paste -sd ' ' -)"
if [[ -n $not_installed ]]; then
  echo "install-deps.sh: after pip install, $venv lacks these pins of $lock_name: $not_installed" >&2
  exit 1
fi
extra="$(LC_ALL=C comm -23 <(normalize <<<"$frozen") <(normalize <"$lock_file") | paste -sd ' ' -)"
if [[ -n $extra ]]; then
  echo "install-deps.sh: warning: $venv also holds packages that $lock_name does not pin: $extra" >&2
  echo "install-deps.sh: warning: to get exactly the lock file, delete $venv and run tools/install-deps.sh again" >&2
fi

expected_stamp >"$stamp"
echo "install-deps.sh: venv ready: $venv ($(du -sh "$venv" | cut -f1), Python $venv_python_version, $lock_name) in $((SECONDS - started)) s"
