# mkueue — build, test, demo. `make help` lists the targets.
# Every entry point calls `deps`, so a fresh Debian machine needs nothing by hand.

VERSION   ?= 0.1.0
CC        ?= cc
BUILD     ?= build
PKGS      := jansson yajl libcurl yaml-0.1 openssl libmicrohttpd zlib
CSTD      := -std=c11 -D_GNU_SOURCE
WARN      := -Wall -Wextra -Werror
CFLAGS    ?= -O2 -g
ALL_CFLAGS = $(CSTD) $(WARN) $(CFLAGS) -Icommon -DMKUEUE_VERSION='"$(VERSION)"' \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LIBS       = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
TEST_LIBS  = -lcmocka
# the reconciler's allocator (reconciler/heap.h says why); not in the ASan
# builds, whose own malloc checks every access
RC_ALLOC_LIBS := -ljemalloc

# Debian packages the build, tests and demo need (checked by `make deps`).
# "pkg:cmd" is skipped when cmd is already on PATH (e.g. Node's own npm).
DEB_PKGS  := build-essential pkg-config libmicrohttpd-dev libssl-dev libjansson-dev libyajl-dev \
             libcurl4-openssl-dev libyaml-dev zlib1g-dev libjemalloc-dev libcmocka-dev clang clang-format cppcheck \
             openssl curl jq bats python3

COMMON_SRC  := $(sort $(wildcard common/*.c common/kinds/*.c))
# the reconciler's allocator as its binary links it: `make unit` only (the
# ASan builds bring their own malloc)
JEMALLOC_UNIT_SRC := reconciler/tests/test_rc_heap_jemalloc.c
UNIT_SRC    := $(filter-out $(JEMALLOC_UNIT_SRC),$(sort $(wildcard common/tests/test_*.c \
               webhook/tests/test_*.c reconciler/tests/test_*.c)))
TEST_SUPPORT:= $(sort $(wildcard common/tests/support/*.c))
# the reconciler's test fixtures: linked into the unit tests only (the
# webhook benchmark links TEST_SUPPORT without the reconciler)
RC_TEST_SUPPORT:= $(sort $(wildcard reconciler/tests/support/*.c))
FUZZ_SRC    := $(sort $(wildcard common/fuzz/fuzz_*.c webhook/fuzz/fuzz_*.c reconciler/fuzz/fuzz_*.c))
WEBHOOK_SRC := $(sort $(filter-out webhook/main.c,$(wildcard webhook/*.c)))
RECON_SRC   := $(sort $(filter-out reconciler/main.c,$(wildcard reconciler/*.c)))

SHELL  := /bin/bash
OBJDIR := $(BUILD)/obj

.DEFAULT_GOAL := all

.PHONY: install-plugin
# The kubectl plugin (plugin/kubectl-mkueue, POSIX sh): `kubectl mkueue why
# job/NAME`, `kubectl mkueue clusters`. Installed beside kubectl.
PLUGIN_DIR ?= $(or $(patsubst %/,%,$(dir $(shell command -v kubectl 2>/dev/null))),/usr/local/bin)
install-plugin:
	install -m 0755 plugin/kubectl-mkueue $(PLUGIN_DIR)/kubectl-mkueue

.PHONY: all deps build testbed unit unit-asan lint fuzz fuzz-ci test e2e e2e-asan e2e-up e2e-down demo bench clean help format

all: deps build

help:
	@echo "make            build libmkueue.a and bin/mkueue-{webhook,reconciler}"
	@echo "make test       lint + unit tests (plain and ASan/UBSan) + fuzzing (10 s a target) + e2e on real apiservers"
	@echo "make demo       local clusters, mkueue installed, a job dispatched across clusters"
	@echo "make unit       unit tests;  make unit-asan  the same under ASan+UBSan"
	@echo "make fuzz       libFuzzer targets, bounded time each (FUZZ_SECONDS=$(FUZZ_SECONDS))"
	@echo "make lint       clang-format check + cppcheck"
	@echo "make testbed    build the test bed's Kubernetes, etcd, Kueue, KWOK, Helm from Go modules (cached)"
	@echo "make e2e-up / e2e-down   start / stop the three local clusters"
	@echo "make deps       install missing Debian packages with apt-get"
	@echo "make install-plugin   kubectl-mkueue beside kubectl (PLUGIN_DIR=$(PLUGIN_DIR))"

deps:
	@missing=""; for e in $(DEB_PKGS); do p=$${e%%:*}; c=$${e#*:}; \
	  if [ "$$c" != "$$e" ] && command -v $$c >/dev/null; then continue; fi; \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "deps: run as root or install:$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

build: $(BUILD)/libmkueue.a bin/mkueue-webhook bin/mkueue-reconciler

$(OBJDIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libmkueue.a: $(COMMON_SRC:%.c=$(BUILD)/obj/%.o)
	@rm -f $@
	ar rcs $@ $^

bin/mkueue-webhook: webhook/main.c $(WEBHOOK_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/libmkueue.a
	@mkdir -p bin
	$(CC) $(ALL_CFLAGS) -Iwebhook -o $@ $^ $(LIBS)

bin/mkueue-reconciler: reconciler/main.c $(RECON_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/libmkueue.a
	@mkdir -p bin
	$(CC) $(ALL_CFLAGS) -Ireconciler -o $@ $^ $(LIBS) $(RC_ALLOC_LIBS)

# ---- unit tests -----------------------------------------------------------
# One cmocka binary per test file, run under prove through cmocka's TAP output.
# A variant tree ($(BUILD)/<variant>) keeps sanitizer objects apart.
define unit_variant
$(BUILD)/$(1)/obj/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_CFLAGS) $(2) -Iwebhook -Ireconciler -MMD -MP -c $$< -o $$@

$(BUILD)/$(1)/tests/%: $(BUILD)/$(1)/obj/%.o $(TEST_SUPPORT:%.c=$(BUILD)/$(1)/obj/%.o) \
		$(RC_TEST_SUPPORT:%.c=$(BUILD)/$(1)/obj/%.o) \
		$(COMMON_SRC:%.c=$(BUILD)/$(1)/obj/%.o) $(WEBHOOK_SRC:%.c=$(BUILD)/$(1)/obj/%.o) \
		$(RECON_SRC:%.c=$(BUILD)/$(1)/obj/%.o)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_CFLAGS) $(2) -o $$@ $$^ $$(LIBS) $$(TEST_LIBS)

$(1)-bins: $(UNIT_SRC:%.c=$(BUILD)/$(1)/tests/%)
endef

SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
$(eval $(call unit_variant,plain,))
$(eval $(call unit_variant,asan,$(SAN_FLAGS)))

JEMALLOC_TESTS := $(JEMALLOC_UNIT_SRC:%.c=$(BUILD)/plain/tests/%)
$(JEMALLOC_TESTS): TEST_LIBS += $(RC_ALLOC_LIBS)

PROVE := prove --merge --timer
unit: deps plain-bins $(JEMALLOC_TESTS)
	@cd $(BUILD)/plain/tests && CMOCKA_MESSAGE_OUTPUT=TAP MKUEUE_TEST_DATA=$(CURDIR)/common/tests/data \
	  $(PROVE) -e '' $(UNIT_SRC:%.c=%) $(JEMALLOC_UNIT_SRC:%.c=%)

unit-asan: deps asan-bins
	@cd $(BUILD)/asan/tests && CMOCKA_MESSAGE_OUTPUT=TAP MKUEUE_TEST_DATA=$(CURDIR)/common/tests/data \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(PROVE) -e '' $(UNIT_SRC:%.c=%)

# ---- fuzzing --------------------------------------------------------------
FUZZ_SECONDS ?= 20
# extra libFuzzer flags; `make test` fixes the seed so a CI run is repeatable
FUZZ_ARGS    ?=
FUZZ_CFLAGS  := $(CSTD) -O1 -g -fsanitize=address,undefined -Icommon -Iwebhook -Ireconciler \
                -DMKUEUE_VERSION='"$(VERSION)"' $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# every source instrumented for libFuzzer once, linked into each target (kept:
# not make's intermediates)
.PRECIOUS: $(BUILD)/fuzz/obj/%.o
$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
FUZZ_LINK = @mkdir -p $(dir $@) && clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS)
FUZZ_OBJ  = $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(1))
$(BUILD)/fuzz/common/fuzz/%: $(BUILD)/fuzz/obj/common/fuzz/%.o $(call FUZZ_OBJ,$(COMMON_SRC))
	$(FUZZ_LINK)
$(BUILD)/fuzz/webhook/fuzz/%: $(BUILD)/fuzz/obj/webhook/fuzz/%.o \
		$(call FUZZ_OBJ,$(COMMON_SRC) $(WEBHOOK_SRC))
	$(FUZZ_LINK)
$(BUILD)/fuzz/reconciler/fuzz/%: $(BUILD)/fuzz/obj/reconciler/fuzz/%.o \
		$(call FUZZ_OBJ,$(COMMON_SRC) $(RECON_SRC))
	$(FUZZ_LINK)

fuzz: deps $(FUZZ_SRC:%.c=$(BUILD)/fuzz/%)
	@set -e; for f in $(FUZZ_SRC:%.c=%); do \
	  name=$$(basename $$f); corpus=$(BUILD)/fuzz-corpus/$$name; mkdir -p $$corpus; \
	  seeds=$$(dirname $$f)/corpus/$$name; [ -d $$seeds ] || seeds=; \
	  echo "fuzz: $$name for $(FUZZ_SECONDS)s"; \
	  $(BUILD)/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -print_final_stats=1 $(FUZZ_ARGS) \
	    $$corpus $$seeds 2>&1 | grep -E 'stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY|^Done' ; \
	  test $${PIPESTATUS[0]} -eq 0; \
	done

# ---- lint -----------------------------------------------------------------
# unbounded or thread-unsafe string functions, banned as curl's checksrc bans them
BANNED_FUNCS := strcat|strncat|strcpy|strncpy|sprintf|vsprintf|strtok|strtok_r|gets
# the status convention (errf.h): no raw snprintf into a caller's err/errlen, no
# bare number as errf's code, no negated errno, no module codes
STATUS_BANNED := \bsnprintf\(([a-z_]+->)?err, ([a-z_]+->)?errlen\b|\berrf\([^,]+, [^,]+, -[0-9]|-E[A-Z0-9]{3,}\b|-errno\b|\b(KC|KW|KCACHE|KCFG|LIST)_(ERR_[A-Z]+|OK)\b
# tests, fuzz targets and benchmarks: exempt from the product-only rules
TEST_C_FILES = $(shell printf '%s\n' $(C_FILES) | grep -E '/(tests|fuzz|bench)/')
C_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find common webhook reconciler -name '*.[ch]')
BATS_FILES  := $(shell git ls-files 'e2e/tests/*.bats' 2>/dev/null || find e2e/tests -name '*.bats')
lint: deps
	@echo "lint: clang-format"; clang-format --dry-run --Werror $(C_FILES)
	@echo "lint: banned functions"; ! grep -nE '\b($(BANNED_FUNCS))[[:space:]]*\(' $(C_FILES) || \
	  { echo "lint: use snprintf/buf_*/memcpy/strsep instead (see docs/design.md 3)"; exit 1; }
	@echo "lint: one status convention"; ! grep -nE '$(STATUS_BANNED)' $(C_FILES) || \
	  { echo "lint: fill a caller's err with errf() and return 0 or an MK_ERR_* code (docs/design.md 3)"; exit 1; }
	@echo "lint: jx_dump"; ! grep -nE '\bjson_dumps[[:space:]]*\(' $(filter-out $(TEST_C_FILES),$(C_FILES)) || \
	  { echo "lint: serialize with jx_dump (common/jsonx.h): json_dumps' text comes from jansson's allocator"; exit 1; }
	@echo "lint: jx_loadb"; ! grep -nE '\bjson_load[bs][[:space:]]*\(' $(filter-out common/jsonx.c $(TEST_C_FILES),$(C_FILES)) || \
	  { echo "lint: decode with jx_loadb (common/jsonx.h): one decoder, yajl's speed, jansson's verdicts"; exit 1; }
	@echo "lint: bats negations"; ! grep -nE '^[[:space:]]*! ' $(BATS_FILES) | grep -v '|| false$$' || \
	  { echo "lint: end a '! cmd' assertion with '|| false': bash's set -e ignores a negated command, so it never fails a test"; exit 1; }
	@echo "lint: cppcheck"; cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	  --inline-suppr --std=c11 -Icommon --suppress=missingIncludeSystem $(C_FILES)

format:
	clang-format -i $(C_FILES)

# ---- end to end -----------------------------------------------------------
# The test bed's upstream parts (Kubernetes, etcd, Kueue, KWOK, Helm, job
# controllers) from the Go modules pinned in e2e/gomod, built once into
# /var/cache/mkueue and reused.
testbed:
	e2e/scripts/build-testbed.sh

e2e-up: deps build
	e2e/testbed.sh up

e2e-down:
	e2e/testbed.sh down

e2e: deps build $(BUILD)/fakeclock.so
	e2e/run.sh

# The stand-in for a wall clock stepped back (e2e/fakeclock/fakeclock.c),
# LD_PRELOADed by 48-reconciler-wallclock.bats only.
$(BUILD)/fakeclock.so: e2e/fakeclock/fakeclock.c
	@mkdir -p $(BUILD)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -shared -fPIC -o $@ $< -ldl

# The same scenarios against binaries built with ASan+UBSan: a memory error
# or leak in a real flow writes a report, and any report fails the target.
ASAN_BIN := $(BUILD)/asan-bin
$(ASAN_BIN)/mkueue-webhook: webhook/main.c $(WEBHOOK_SRC:%.c=$(BUILD)/asan/obj/%.o) \
		$(COMMON_SRC:%.c=$(BUILD)/asan/obj/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -Iwebhook -o $@ $^ $(LIBS)
$(ASAN_BIN)/mkueue-reconciler: reconciler/main.c $(RECON_SRC:%.c=$(BUILD)/asan/obj/%.o) \
		$(COMMON_SRC:%.c=$(BUILD)/asan/obj/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -Ireconciler -o $@ $^ $(LIBS)

e2e-asan: deps build $(ASAN_BIN)/mkueue-webhook $(ASAN_BIN)/mkueue-reconciler
	@rm -rf $(BUILD)/asan-reports && mkdir -p $(BUILD)/asan-reports
	MKUEUE_BIN=$(CURDIR)/$(ASAN_BIN) \
	  ASAN_OPTIONS=detect_leaks=1:log_path=$(CURDIR)/$(BUILD)/asan-reports/asan \
	  UBSAN_OPTIONS=print_stacktrace=1:log_path=$(CURDIR)/$(BUILD)/asan-reports/ubsan \
	  e2e/run.sh $(E2E_ASAN_TESTS)
	@if ls $(BUILD)/asan-reports/* >/dev/null 2>&1; then \
	  echo "e2e-asan: sanitizer reports:"; head -n 40 $(BUILD)/asan-reports/*; exit 1; fi
	@echo "e2e-asan: no sanitizer report"
E2E_ASAN_TESTS ?= e2e/tests/20-webhook.bats e2e/tests/30-reconciler-job.bats \
	e2e/tests/32-reconciler-jobset.bats e2e/tests/33-reconciler-ha.bats \
	e2e/tests/38-reconciler-standalone-core.bats e2e/tests/394-why-placement.bats \
	e2e/tests/46-reconciler-podgroups.bats e2e/tests/47-reconciler-kinds-more.bats

demo: deps build
	e2e/demo.sh

test: deps lint build unit unit-asan fuzz-ci chart-test image-check bench-tools-test e2e e2e-asan

# every libFuzzer target for 10 s from its seeds, with a fixed seed
fuzz-ci:
	$(MAKE) fuzz FUZZ_SECONDS=10 FUZZ_ARGS=-seed=1

clean:
	rm -rf $(BUILD) bin

# ---- webhook (issue 4) ------------------------------------------------------
# GnuTLS for the serving certificate callback (libmicrohttpd's TLS is GnuTLS);
# fuzz targets under webhook/fuzz also link webhook/*.c (but main.c); the
# benchmark (make bench) runs bin/mkueue-webhook and a static-response server
# of the same stack under a libcurl load generator.
PKGS     += gnutls
DEB_PKGS += libgnutls28-dev

$(BUILD)/wh-bench: webhook/bench/wh_bench.c $(WEBHOOK_SRC:%.c=$(BUILD)/obj/%.o) \
		$(TEST_SUPPORT:%.c=$(BUILD)/obj/%.o) $(BUILD)/libmkueue.a
	$(CC) $(ALL_CFLAGS) -Iwebhook -Icommon/tests/support -o $@ $^ $(LIBS)

# bench-webhook: mkueue's webhook, the static floor and Kueue's own job webhook
# (a test bed's worker-1; webhook/bench/run.sh), figures to build/bench/webhook.json
bench-webhook: deps bin/mkueue-webhook $(BUILD)/wh-bench
	webhook/bench/run.sh

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---- chart and container image (issue 6) ----------------------------------------
# chart-test: helm lint + helm template with many values, parsed and checked
# (charts/tests/chart-test.sh; build/chart-kinds prints the kind registry the
# chart must match). image-check: the Dockerfile's runtime packages provide
# every library bin/* links against.
.PHONY: chart-test image-check
$(BUILD)/chart-kinds: charts/tests/chart_kinds.c $(BUILD)/libmkueue.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

chart-test: deps $(BUILD)/chart-kinds
	@HELM=$${HELM:-$$(e2e/scripts/build-testbed.sh)/bin/helm} KINDS_TOOL=$(BUILD)/chart-kinds \
	  $(PROVE) -e '' charts/tests/chart-test.sh

image-check: deps build
	charts/tests/image-check.sh

# ---- managers benchmark (issues 5, 15; additive block) ----------------------
# `make bench-managers`: the same jobs through mkueue standalone, mkueue with
# Kueue, and Kueue's own MultiKueue manager (e2e/bench/managers.sh; BENCH_MODES,
# BENCH_N, BENCH_RATE, BENCH_RATE_LOW, BENCH_M, BENCH_THREADS, BENCH_RUNNING,
# BENCH_TRACKED, BENCH_PAIRS, MKUEUE_WORKERS tune it); `make bench-reconciler`: mkueue
# standalone alone.
# `make bench` runs the webhook's and the managers' benchmarks and prints one
# table of every build/bench/*.json (e2e/bench/render.py).
.PHONY: bench bench-webhook bench-reconciler bench-managers
bench: bench-webhook bench-managers
$(BUILD)/rc_bench: e2e/bench/rc_bench.c $(BUILD)/libmkueue.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

bench-managers: deps build $(BUILD)/rc_bench
	e2e/bench/managers.sh

# the bench's log readers on logs written by their tests (e2e/bench/tests)
.PHONY: bench-tools-test
bench-tools-test:
	python3 -m unittest discover -s e2e/bench/tests

bench-reconciler: deps build $(BUILD)/rc_bench
	BENCH_MODES=mkueue-standalone e2e/bench/managers.sh
