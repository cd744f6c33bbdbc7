# moeprobe - plain GNU Makefile with pkg-config.
#
#   make            build ./moeprobe and ./refengine/refengine (release flags; needs no
#                   test framework)
#   make demo       install missing deps (as root), build, run qualify on the demo world
#   make check      the developer loop (under a minute): release build, every unit test,
#                   fuzz-corpus replay, the quick integration tier (golden reports, ...),
#                   depcheck, lint and hdrcheck
#   make test       everything CI runs: -Werror build under ASan+UBSan, unit tests,
#                   integration tests (-j $(nproc)), fuzz-corpus replay, depcheck, lint,
#                   and a smoke run of every libFuzzer target (FUZZ_SMOKE_SECONDS each,
#                   default 20; 0 = none; skipped without clang/libFuzzer); ends with
#                   "N passed, N failed"
#   make unit | integration | fuzz-replay
#                   build and run only those tests (release; SANITIZE=1 for ASan+UBSan);
#                   tests/run.sh [-j N] [--tier quick|full] [PATTERN...] picks by name
#   make fuzz       libFuzzer binaries (clang) under build/fuzz/
#   make fuzz-run   build them and run each for FUZZ_SECONDS (default 300)
#   make lint       banned functions, header self-containment
#   make depcheck   includes follow the module ranks (DESIGN.md "Layout")
#   make install    PREFIX=/usr/local DESTDIR=
#   make cuda       refengine's CUDA backends (skipped when nvcc is absent)
#   SANITIZE=1      build everything with ASan+UBSan into build/san/

PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc
PKGS     = libcurl sqlite3 libcjson libpcre2-8
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CMOCKA_CFLAGS := $(shell pkg-config --cflags cmocka 2>/dev/null)
CMOCKA_LIBS   := $(shell pkg-config --libs cmocka 2>/dev/null)

WARN    = -Wall -Wextra -Wshadow -Wno-unused-parameter -Wformat=2 -Wvla
CSTD    = -std=c11 -D_GNU_SOURCE
ifeq ($(SANITIZE),1)
  VARIANT = san
  OPT     = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  LDSAN   = -fsanitize=address,undefined
else
  VARIANT = rel
  OPT     = -O2 -g
  LDSAN   =
endif
ifeq ($(FUZZ),1)
  VARIANT = fuzz
  OPT     = -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
  LDSAN   = -fsanitize=address,undefined
endif
ifeq ($(WERROR),1)
  WARN += -Werror
endif
CFLAGS  ?=
CFLAGS  += $(CSTD) $(WARN) $(OPT) -Isrc -Isrc/base -MMD -MP $(PKG_CFLAGS)
LDLIBS  = $(PKG_LIBS) -lm -ldl
B       = build/$(VARIANT)

BASE_SRC := $(wildcard src/base/*.c)
LIB_SRC  := $(filter-out src/main.c,$(shell find src -name '*.c' | sort))
RE_SRC   := $(sort $(wildcard refengine/*.c))
UT_SRC   := $(sort $(wildcard tests/unit/test_*.c))
FZ_SRC   := $(sort $(wildcard tests/fuzz/fuzz_*.c))

DATA_FILES := $(sort $(wildcard data/*.json data/*.txt data/*.ini))
DATA_OBJ := $(DATA_FILES:%=$(B)/gen/%.o)
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o) $(DATA_OBJ)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(B)/bench/%)
BASE_OBJ := $(BASE_SRC:%.c=$(B)/%.o)
RE_OBJ   := $(RE_SRC:%.c=$(B)/%.o)
# refengine objects except its main, for unit and fuzz tests of its parsers
RE_LIB_OBJ := $(filter-out $(B)/refengine/main.o,$(RE_OBJ))
UT_BIN   := $(UT_SRC:tests/unit/%.c=$(B)/tests/%)
FZ_REPLAY := $(FZ_SRC:tests/fuzz/%.c=$(B)/fuzz-replay/%)

.DEFAULT_GOAL := all
.PHONY: depcheck bench-bins unit-bins fuzz-bins fuzz-libfuzzer fuzz-run all deps test-deps demo test check unit integration fuzz-replay fuzz lint install clean cuda gpu-check bench hdrcheck
all: deps $(B)/bin/moeprobe $(B)/bin/refengine
	@cp -f $(B)/bin/moeprobe moeprobe.tmp && mv -f moeprobe.tmp moeprobe
	@cp -f $(B)/bin/refengine refengine/refengine.tmp && mv -f refengine/refengine.tmp refengine/refengine

# bench: build benchmark drivers; the scripts under bench/ run them (see docs/performance.md)
bench: all bench-bins

# build dependencies only (plain make); test-deps adds what the tests link (cmocka)
deps:
	@scripts/deps.sh check
test-deps:
	@scripts/deps.sh check test

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# `moeprobe version` names the commit it was built from (#29); the stamp
# changes only when the commit does, so version.o is rebuilt only then
MP_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git rev-parse --git-dir >/dev/null 2>&1 && ! git diff --quiet HEAD -- src 2>/dev/null && echo -dirty)
MP_COMMIT_STAMP := $(B)/gen/commit.txt
$(shell mkdir -p $(B)/gen && (echo '$(MP_COMMIT)' | cmp -s - $(MP_COMMIT_STAMP) || echo '$(MP_COMMIT)' > $(MP_COMMIT_STAMP)))
$(B)/src/base/version.o: $(MP_COMMIT_STAMP)
$(B)/src/base/version.o: CFLAGS += -DMP_COMMIT='"$(MP_COMMIT)"'

# data/ files are compiled in: data/x.json -> const unsigned char mp_data_x_json[]
$(B)/gen/%.c: % scripts/embed.sh
	@mkdir -p $(dir $@)
	scripts/embed.sh $< > $@

$(B)/gen/%.o: $(B)/gen/%.c
	$(CC) $(CSTD) $(OPT) -c $< -o $@

$(B)/bench/%: bench/%.c $(B)/libmp.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDSAN) -o $@ $< $(B)/libmp.a $(LDLIBS)

bench-bins: $(BENCH_BIN)

$(B)/libmp.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/bin/moeprobe: $(B)/src/main.o $(B)/libmp.a
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $^ $(LDLIBS)

$(B)/bin/refengine: $(RE_OBJ) $(BASE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDSAN) -o $@ $^ $(LDLIBS)

$(B)/tests/%: tests/unit/%.c $(B)/libmp.a $(RE_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CMOCKA_CFLAGS) -Irefengine $(LDSAN) -o $@ $< $(RE_LIB_OBJ) $(B)/libmp.a $(CMOCKA_LIBS) $(LDLIBS)

$(B)/fuzz-replay/%: tests/fuzz/%.c tests/fuzz/replay.c $(B)/libmp.a $(RE_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Irefengine $(LDSAN) -o $@ $< tests/fuzz/replay.c $(RE_LIB_OBJ) $(B)/libmp.a $(LDLIBS)

# a stand-in for libnvidia-ml.so.1 (tests load it through MOEPROBE_NVML_LIB)
$(B)/tests/libfake_nvml.so: tests/fake/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -Wall -Wextra -O1 -fPIC -shared -o $@ $<

unit-bins: $(UT_BIN) $(B)/tests/libfake_nvml.so
fuzz-bins: $(FZ_REPLAY)

# tests run side by side, one per CPU; the builds below use as many jobs
# unless make was given -j itself
NPROC   := $(shell nproc 2>/dev/null || echo 1)
JOBS     = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC))
RUNTESTS = MOEPROBE=$(CURDIR)/$(B)/bin/moeprobe REFENGINE=$(CURDIR)/$(B)/bin/refengine \
           BUILD=$(CURDIR)/$(B) tests/run.sh -j$(NPROC)

# The CI entry point. Builds the sanitizer variant with -Werror and runs
# everything; tests/run.sh prints the closing "N passed, N failed" line.
test:
	@scripts/deps.sh install
	@scripts/depcheck.sh
	@$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory $(JOBS) SANITIZE=1 WERROR=1 build/san/bin/moeprobe build/san/bin/refengine unit-bins fuzz-bins
	@$(MAKE) --no-print-directory cuda
	@MOEPROBE=$(CURDIR)/build/san/bin/moeprobe REFENGINE=$(CURDIR)/build/san/bin/refengine \
	  BUILD=$(CURDIR)/build/san FUZZ_SMOKE_SECONDS=$(FUZZ_SMOKE_SECONDS) tests/run.sh -j$(NPROC)

# The developer loop: the current variant (release unless SANITIZE=1) built,
# the quick tier of tests/run.sh (units, corpus replays, golden reports and
# the other "# tier: quick" scripts), the include ranks and the lint.
check: test-deps
	@$(MAKE) --no-print-directory $(JOBS) all unit-bins fuzz-bins
	@scripts/depcheck.sh
	@$(MAKE) --no-print-directory lint
	@$(RUNTESTS) --tier quick

unit: test-deps
	@$(MAKE) --no-print-directory $(JOBS) unit-bins
	@$(RUNTESTS) 'unit/*'

integration: test-deps
	@$(MAKE) --no-print-directory $(JOBS) $(B)/bin/moeprobe $(B)/bin/refengine unit-bins
	@$(RUNTESTS) 'integration/*'

fuzz-replay:
	@$(MAKE) --no-print-directory $(JOBS) fuzz-bins
	@$(RUNTESTS) 'fuzz-replay/*'

# seconds per libFuzzer target in make test's smoke run (scripts/fuzz-smoke.sh)
FUZZ_SMOKE_SECONDS ?= 20
# seconds per target for make fuzz-run
FUZZ_SECONDS ?= 300

demo:
	@scripts/deps.sh install build
	@$(MAKE) --no-print-directory all
	@rm -rf demo-run
	@echo "moeprobe demo: qualifying the sm12x-nvfp4 preset against refengine's Nemotron-3-Super world (a short workload)"
	./moeprobe qualify --out demo-run --max-tokens 32 --seq 5 --conc 4:8 --conc 8:16 \
	  -- ./refengine/refengine --world worlds/demo-nemotron-super.ini --port '{port}'

# libFuzzer binaries: the library built with clang and fuzzer instrumentation
# into build/fuzz/, one binary per target in build/fuzz/libfuzzer/.
fuzz:
	@command -v clang >/dev/null || { echo "make fuzz needs clang"; exit 2; }
	@$(MAKE) --no-print-directory CC=clang FUZZ=1 fuzz-libfuzzer
	@for f in $(FZ_SRC); do n=$$(basename $$f .c); \
	  echo "built build/fuzz/libfuzzer/$$n (corpus: tests/fuzz/corpus/$${n#fuzz_}/)"; done

fuzz-libfuzzer: $(FZ_SRC:tests/fuzz/%.c=$(B)/libfuzzer/%)

# every target for FUZZ_SECONDS from its committed corpus; a crash fails
fuzz-run:
	@scripts/fuzz-smoke.sh all $(FUZZ_SECONDS)

$(B)/libfuzzer/%: tests/fuzz/%.c $(B)/libmp.a $(RE_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Irefengine -fsanitize=fuzzer,address,undefined -o $@ $< $(RE_LIB_OBJ) $(B)/libmp.a $(LDLIBS)

# banned calls; fork/exec and /proc only in src/proc/ (scripts/lint.sh says which)
lint: hdrcheck
	@scripts/lint.sh

depcheck:
	@scripts/depcheck.sh

hdrcheck:
	@for h in $$(find src refengine -name '*.h'); do \
	  echo "#include \"$$h\"" | $(CC) $(CSTD) -Isrc -Isrc/base -Irefengine $(PKG_CFLAGS) -fsyntax-only -xc - -I. || exit 1; done

cuda:
	@if command -v nvcc >/dev/null 2>&1 && [ -f refengine/cuda/Makefile ]; then \
	  $(MAKE) -C refengine/cuda; else echo "cuda: nvcc not found (or no CUDA sources); skipping CUDA backends"; fi

# on the GPU machine: build the CUDA backends, numerics test, qualify a CUDA world (docs/gpu.md)
gpu-check:
	@scripts/gpu-check.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(B)/bin/moeprobe $(DESTDIR)$(PREFIX)/bin/moeprobe
	install -m 755 $(B)/bin/refengine $(DESTDIR)$(PREFIX)/bin/moeprobe-refengine
	install -d $(DESTDIR)$(PREFIX)/share/moeprobe/worlds
	install -m 644 worlds/*.ini $(DESTDIR)$(PREFIX)/share/moeprobe/worlds/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 644 docs/moeprobe.1 $(DESTDIR)$(PREFIX)/share/man/man1/moeprobe.1
	install -m 644 completions/moeprobe.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/moeprobe

clean:
	rm -rf build moeprobe refengine/refengine demo-run

-include $(shell find build -name '*.d' 2>/dev/null)
.SECONDARY:
