# The two commands of the README, and the steps they share.
#   make run   install what is missing, build what the run needs, train the example
#   make test  install what is missing, build everything, run every test
BUILD     ?= build
# The default job: four robots on fading Wi-Fi, emulated on this machine.
JOB       ?= examples/robot-team.yaml
NODES     ?= examples/nodes/robot-team.yaml
RUN_FLAGS ?=
JOBS      ?= $(shell nproc)

.PHONY: run observe test deps configure build clean

run: configure
	cmake --build $(BUILD) --target edgetrain edgetrain-agent -- -j$(JOBS)
	$(BUILD)/bin/edgetrain run $(JOB) $(if $(NODES),--nodes $(NODES)) $(RUN_FLAGS)

# make run, watched by a local Prometheus that keeps the run's series until Ctrl-C.
observe: RUN_FLAGS += --observe
observe: run

# The tests' scratch files go to one folder of the build, emptied as the next
# run starts, where a failed test's are there to read: in /tmp, the suites'
# temporary folders had grown to 885 MB over a few days of runs.
TEST_TMP = $(abspath $(BUILD))/test-tmp

test: configure
	cmake --build $(BUILD) -- -j$(JOBS)
	-rm -rf $(TEST_TMP)
	mkdir -p $(TEST_TMP)
	cd $(BUILD) && TMPDIR=$(TEST_TMP) TEST_TMPDIR=$(TEST_TMP) ctest --output-on-failure --timeout 600 -j$(JOBS)

build: configure
	cmake --build $(BUILD) -- -j$(JOBS)

# Installs only what is missing; a no-op (well under a second) once all is there.
deps:
	@scripts/deps

configure: deps
	@test -f $(BUILD)/build.ninja || cmake -S . -B $(BUILD) -G Ninja

clean:
	rm -rf $(BUILD)
