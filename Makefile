# pulp-odl: one target per job. `make setup` installs everything on a fresh Debian machine (as root).
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
LLVM_PKGS := clang-19 lld-19 llvm-19

.PHONY: setup toolchain install test demo bench-sim bench-kernels clean

setup: toolchain install

toolchain:
	@missing=""; \
	command -v clang-19 >/dev/null || missing="$$missing clang-19"; \
	command -v ld.lld-19 >/dev/null || missing="$$missing lld-19"; \
	command -v llvm-objdump-19 >/dev/null || missing="$$missing llvm-19"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "clang-19, lld-19, llvm-19 and chromium are present"; fi

install:
	$(PIP) install -q "scikit-build-core>=0.9" "pybind11>=2.11" ninja cmake
	$(PIP) install -q --no-build-isolation -e ".[test]"

test:
	$(PYTHON) -m pytest -q

# The product in miniature: the `demo` experiment (experiments/demo.toml: PhiNet on CIFAR-10, replay layers
# 1 and 2, p 1 and 0.7, deployed training steps on `paper`), its three headline lines, one training step
# recorded as a timeline, and the dashboard (results/report/index.html).
demo:
	$(PYTHON) -m harness experiment demo --headline
	$(PYTHON) -m harness report

bench-sim:
	$(PYTHON) -m harness.bench_sim

# The kernels experiment (experiments/kernels.toml): MAC/cycle of the benchmark kernels, cached.
bench-kernels: kernels

clean:
	rm -rf build

# Experiments (experiments/*.toml; docs/experiments.md). Kernel runs are cached in results/cache/.
.PHONY: table2 table2-isolated fig4 kernels report regress golden
table2:
	$(PYTHON) -m harness experiment table2

# The same points composed from isolated per-op kernel programs (results/table2-isolated/); `make table2`
# then prints their task latency beside the deployed one.
table2-isolated:
	$(PYTHON) -m harness experiment table2 --deployment isolated

fig4:
	$(PYTHON) -m harness experiment fig4

kernels:
	$(PYTHON) -m harness experiment kernels

report:
	$(PYTHON) -m harness report

regress:
	$(PYTHON) -m harness regress

golden:
	$(PYTHON) -m harness regress --update

# The README's GVSoC cross-check: every pulp-open kernel of the regress set built once and run on both
# backends (needs a GVSoC: set GVSOC), written to results/crosscheck/regress.csv, then the README's
# block rewritten from that table (tests/test_readme_crosscheck.py holds the two together); then the
# energy cross-checks (GVSoC's power report) of the calibration kit and of the same kernels.
.PHONY: readme-crosscheck
readme-crosscheck:
	$(PYTHON) -m harness crosscheck --kernels regress
	$(PYTHON) -m harness.kernels.crosscheck --readme README.md results/crosscheck/regress.csv
	$(PYTHON) -m harness crosscheck --energy --programs $${PULP_ODL_SHARED:-../shared}/data/gvsoc-calibration \
		--output results/crosscheck/calibration.csv
	$(PYTHON) -m harness.energy_crosscheck --readme README.md --name calibration results/crosscheck/calibration.energy.csv
	$(PYTHON) -m harness crosscheck --energy --kernels regress
	$(PYTHON) -m harness.energy_crosscheck --readme README.md --name regress results/crosscheck/regress.energy.csv

# An ONNX model through the deployer: a small sweep on examples/models/ds_cnn.onnx (examples/models/
# kws_sweep.toml; examples/models/make_models.py wrote the model); writes results/kws_sweep/.
.PHONY: example-onnx
example-onnx:
	$(PYTHON) -m harness experiment examples/models/kws_sweep.toml
