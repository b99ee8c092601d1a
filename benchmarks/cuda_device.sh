#!/usr/bin/env bash
# The cuda plugin's checks on an NVIDIA GPU (issue 15): one run, under 5 minutes on an H200 with
# 16 cores. Prints the device, `hlort devices`, a ptxas check of the seed kernel, the benchmark
# ratios (benchmarks/cuda_bench.py), the conformance suite on cuda and the StableHLO corpus on
# cuda, and writes their logs to $OUT (the device tool's folder; a temp dir elsewhere).
#
# It needs no network: it installs this checkout (hlort, hlort-cpu, hlort-cuda) into a venv made
# over the machine's own python3 packages (cuda-bindings, nvidia-cublas, llvmlite, numpy,
# ml_dtypes, pluggy, pytest, pytest-xdist come from the image; the project's pins do not apply
# there). Wheels in .whl/ are installed first when present (docs/cuda-plugin.md says how to make
# them). The corpus is $HLORT_CORPUS, else the first of shared/stablehlo-testdata,
# .corpus/stablehlo-testdata and ../shared/stablehlo-testdata that exists.
#
# Stages have their own time limits (seconds, overridable): BENCH_S, CONFORMANCE_S, CORPUS_S.
# A stage that runs out is reported as stopped, and the script goes on.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d)}
JOBS=${JOBS:-14}
BENCH_S=${BENCH_S:-60}
CONFORMANCE_S=${CONFORMANCE_S:-100}
CORPUS_S=${CORPUS_S:-90}
START=$SECONDS
log() { echo "== [$((SECONDS - START)) s] $*"; }
status() {  # status NAME RC: one line per stage for the summary at the end
  local what="ok"
  if [ "$2" = 124 ] || [ "$2" = 137 ]; then what="STOPPED at its time limit"
  elif [ "$2" != 0 ]; then what="FAILED (exit $2)"; fi
  SUMMARY+=$(printf '%-26s %s' "$1" "$what")$'\n'
}
SUMMARY=""

log "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader \
  || echo "nvidia-smi is not here"

log "install (offline, over the image's python3 packages)"
VENV=/tmp/hlort-cuda-venv
rm -rf "$VENV"
python3 -m venv --system-site-packages "$VENV" || exit 1
PY=$VENV/bin/python
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile .whl/*.whl || exit 1
fi
if ! $PY -m pip install -q --no-index --no-deps --no-build-isolation \
    -e . -e plugins/cpu -e plugins/cuda >"$OUT/install.log" 2>&1; then
  # An image whose setuptools cannot build these projects: put the sources on the path and
  # describe them to importlib.metadata with one .dist-info each (name, version, entry points).
  echo "pip could not install the checkout (see install.log); using the sources in place"
  SITE=$($PY -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  $PY - "$SITE" <<'PYEOF' || exit 1
import os, sys, tomllib
site = sys.argv[1]
paths = []
for root, source in ((".", "core"), ("plugins/cpu", "plugins/cpu"), ("plugins/cuda", "plugins/cuda")):
    project = tomllib.load(open(os.path.join(root, "pyproject.toml"), "rb"))["project"]
    info = os.path.join(site, f"{project['name'].replace('-', '_')}-{project['version']}.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = dict(project.get("entry-points", {}))
    if "scripts" in project:
        groups["console_scripts"] = project["scripts"]
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        for group, entries in groups.items():
            f.write(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))
    paths.append(os.path.abspath(source))
with open(os.path.join(site, "hlort_checkout.pth"), "w") as f:
    f.write("\n".join(paths) + "\n")
PYEOF
fi
$PY - <<'PYEOF' || exit 1
import importlib.metadata as md
for name in ("cuda-bindings", "nvidia-cublas", "nvidia-cublas-cu12", "llvmlite", "numpy",
             "ml_dtypes", "pluggy", "pytest", "pytest-xdist"):
    try:
        print(f"  {name} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"  {name} not installed")
import llvmlite.binding as llvm
print(f"  LLVM {'.'.join(map(str, llvm.llvm_version_info))}")
PYEOF
HLORT="$PY -m hlort.cli"
export HLORT_CACHE_DIR
HLORT_CACHE_DIR=$(mktemp -d)  # cold: every program is compiled in this run

log "hlort devices"
$HLORT devices | tee "$OUT/devices.txt"
if ! grep -q '^cuda .* ok' "$OUT/devices.txt"; then
  echo "the cuda backend did not start here: nothing below can run (see the line above)"
  exit 1
fi

log "ptxas on the seed kernel (reduce_sum(x+y*z) as one kernel)"
SEED=$(mktemp -d)
cat >"$SEED/seed.hlo" <<'HLOEOF'
HloModule seed
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4096,1024] parameter(0)
  y = f32[4096,1024] parameter(1)
  z = f32[4096,1024] parameter(2)
  m = f32[4096,1024] multiply(y, z)
  s = f32[4096,1024] add(x, m)
  zero = f32[] constant(0)
  ROOT r = f32[4096] reduce(s, zero), dimensions={1}, to_apply=add
}
HLOEOF
$HLORT compile "$SEED/seed.hlo" --platform cuda --target sm_90 --dump-dir "$SEED/dump" >/dev/null
PTXAS=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
if [ -x "$PTXAS" ]; then
  $PTXAS -arch=sm_90 -v "$SEED/dump/seed.cuda.kernels.ptx" -o /dev/null 2>&1 | tail -3
  status "ptxas sm_90 seed" "${PIPESTATUS[0]}"
else
  echo "no ptxas here"; status "ptxas sm_90 seed" 1
fi

log "benchmark (limit ${BENCH_S} s)"
PYTHONUNBUFFERED=1 timeout "$BENCH_S" $PY benchmarks/cuda_bench.py --json "$OUT/bench.json" \
  2>&1 | tee "$OUT/bench.log"
status "benchmark" "${PIPESTATUS[0]}"

WORKERS=(-n "$JOBS")
$PY -c "import xdist" 2>/dev/null || { WORKERS=(); echo "no pytest-xdist: one worker"; }
log "conformance suite on cuda, ${WORKERS[*]:-one worker} (limit ${CONFORMANCE_S} s)"
PYTHONUNBUFFERED=1 timeout "$CONFORMANCE_S" $PY -m pytest --pyargs hlort.testing \
  --hlort-platform cuda -c /dev/null --rootdir "$PWD" --noconftest -p no:cacheprovider \
  -p no:hypothesispytest -q -rfE "${WORKERS[@]}" >"$OUT/conformance.log" 2>&1
RC=$?
grep -E "^(FAILED|ERROR)" "$OUT/conformance.log" | head -40
tail -3 "$OUT/conformance.log"
status "conformance (cuda)" $RC

CORPUS=${HLORT_CORPUS:-}
for candidate in shared/stablehlo-testdata .corpus/stablehlo-testdata ../shared/stablehlo-testdata; do
  if [ -z "$CORPUS" ] && [ -d "$candidate" ]; then CORPUS=$candidate; fi
done
if [ -n "$CORPUS" ]; then
  log "StableHLO corpus $CORPUS on cuda, $JOBS jobs (limit ${CORPUS_S} s)"
  PYTHONUNBUFFERED=1 timeout "$CORPUS_S" $HLORT testdata "$CORPUS/testdata" \
    "$CORPUS/tests/interpret" --platform cuda --jobs "$JOBS" --report "$OUT/corpus.json" \
    >"$OUT/corpus.log" 2>&1
  RC=$?
  grep -c "FAIL" "$OUT/corpus.log" | sed 's/^/failure lines: /'
  tail -15 "$OUT/corpus.log"
  status "corpus (cuda)" $RC
else
  echo "no StableHLO corpus here (set HLORT_CORPUS or carry .corpus/stablehlo-testdata)"
  status "corpus (cuda)" 1
fi

log "summary"
printf '%s' "$SUMMARY"
if [ -f "$OUT/bench.json" ]; then cat "$OUT/bench.json"; fi
log "done"
