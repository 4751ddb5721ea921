"""Bad input, faults and interruptions, command by command: a table of cases.

Every case of CASES runs `pulp-odl ARGV` in a directory of its own, holding a copy of the same files
(a C source, ELFs, a user's notes, ...), after an optional setup that adds more. It must end with
the expected exit status and exactly one line on stderr containing the expected fragment (or, for a
program's own message, the fragment on stdout), no traceback, no file of that directory changed,
and no probe file left behind. Cases marked fs="ro" or fs="full" run over a read-only or a full
filesystem, in a private mount namespace (unshare), all in one subprocess.

A new command adds its rows here: test_every_command_has_cases fails until it does.

Interruption tests (SIGINT, SIGTERM, SIGKILL of a parallel sweep; Ctrl-C of a long simulation) run
real subprocesses and check, by session id, that no process they started is left.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import ROOT

CLANG = shutil.which("clang-19") is not None and shutil.which("ld.lld-19") is not None
pytestmark = pytest.mark.skipif(not CLANG, reason="clang-19/lld-19 not installed (make setup)")


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple               # arguments of pulp-odl; {d} is the case directory, {ro}/{full} the fs mounts
    exit: int                 # expected exit status
    fragment: str             # expected in the one stderr line (stdout when stream="stdout")
    setup: str | None = None  # a function of SETUPS that adds files to the case directory first
    env: tuple = ()           # (NAME, value) pairs set for the run
    fs: str | None = None     # "ro" or "full": needs the mount namespace
    stream: str = "stderr"


K = ("kernel", "--kind", "pw", "--cin", "4", "--cout", "4", "--hw", "4", "--step", "fw")
KC = ("kernel", "--kind", "conv", "--cin", "4", "--cout", "4", "--hw", "4", "--step", "fw")
MEM = ("memory", "--net", "phinet", "--dataset", "cifar10")
EXP = ("experiment", "{d}/exp.toml", "--quiet")
REPORT = ("report", "--results", "{d}/res")
CC = ("crosscheck", "--programs", "{d}/elfs", "--json")
DEPLOY = ("deploy", "--net", "phinet", "--dataset", "cifar10")
RUN_TL = ("run", "{d}/hello.elf", "--timeline")
ONNX = ("layers", "--dataset", "cifar10", "--net")
EXPO = ("export-onnx", "--net", "phinet", "--dataset", "cifar10", "-o")
GV = (("GVSOC", "{d}/gvsoc"),)
HUGE = str(2 ** 64)


# the importer's refusals (tests/onnx_models.py writes the models): file name, message fragment
REFUSALS = (("symbolic.onnx", "give --input-shape CxHxW"), ("opset.onnx", "opset 99: the importer reads opsets 7 to"),
            ("maxpool.onnx", "node '/pool2/MaxPool' (MaxPool): op type MaxPool is not supported"),
            ("grouped.onnx", "a grouped convolution (2 groups of 8 channels); the kernels run dense convolutions"),
            ("noclassifier.onnx", "is made by node '/pool/GlobalAveragePool' (GlobalAveragePool), not by a classifier"),
            ("softmax.onnx", "op type Softmax is not supported (export the logits"),
            ("nonsquare.onnx", "a 3x1 kernel; the kernels run square k x k kernels"),
            ("branchcut.onnx", "block b starts where more than one tensor crosses (at blk.pw)"))


def kernel_with(*extra, base=K):
    return (*base, *extra)


CASES = [
    # ---- build: an output is never one of the inputs, nor a file pulp-odl did not write ----
    Case("build-o-is-source", ("build", "{d}/hello.c", "-o", "{d}/hello.c"), 2, "is also an input"),
    Case("build-o-is-source-other-spelling", ("build", "{d}/hello.c", "-o", "{d}/./sub/../hello.c"), 2,
         "is also an input", setup="subdir"),
    Case("build-o-is-hardlink-of-source", ("build", "{d}/hello.c", "-o", "{d}/link.c"), 2, "is also an input",
         setup="hardlink"),
    Case("build-o-is-user-file", ("build", "{d}/hello.c", "-o", "{d}/notes.txt"), 2, "is not an ELF file"),
    Case("build-o-is-other-source", ("build", "{d}/hello.c", "-o", "{d}/other.c"), 2, "refusing to overwrite",
         setup="other_source"),
    Case("build-o-is-directory", ("build", "{d}/hello.c", "-o", "{d}/sub"), 2, "is a directory", setup="subdir"),
    Case("build-o-under-a-file", ("build", "{d}/hello.c", "-o", "{d}/notes.txt/x.elf"), 2, "is a file, not a directory"),
    Case("build-o-empty", ("build", "{d}/hello.c", "-o", ""), 2, "empty path"),
    Case("build-o-read-only", ("build", "{d}/hello.c", "-o", "{ro}/x.elf"), 2, "Read-only file system", fs="ro"),
    Case("build-o-full", ("build", "{d}/hello.c", "-o", "{full}/x.elf"), 2, "No space left on device", fs="full"),
    Case("build-missing-source", ("build", "{d}/nope.c", "-o", "{d}/x.elf"), 2, "no such source file"),
    Case("build-source-not-c", ("build", "{d}/notes.txt", "-o", "{d}/x.elf"), 2, "unsupported source type"),
    Case("build-bad-opt", ("build", "{d}/hello.c", "-o", "{d}/x.elf", "-O", "9"), 2, "unknown optimisation level"),
    Case("build-bad-define", ("build", "{d}/hello.c", "-o", "{d}/x.elf", "-D", "=1"), 2, "expected NAME"),
    Case("build-compile-error", ("build", "{d}/bad.c", "-o", "{d}/x.elf"), 2, "build failed", setup="bad_source"),
    Case("build-unknown-platform", ("build", "{d}/hello.c", "-o", "{d}/x.elf", "--platform", "nope"), 2,
         "unknown platform"),

    # ---- run: arguments, ELF files, trace files ----
    Case("run-max-cycles-2^64", ("run", "{d}/hello.elf", "--max-cycles", HUGE), 2, "--max-cycles: must be an integer"),
    Case("run-max-cycles-nan", ("run", "{d}/hello.elf", "--max-cycles", "nan"), 2, "--max-cycles: 'nan' is not an integer"),
    Case("run-max-cycles-1e3", ("run", "{d}/hello.elf", "--max-cycles", "1e3"), 2, "is not an integer"),
    Case("run-max-cycles-zero", ("run", "{d}/hello.elf", "--max-cycles", "0"), 2, "from 1 to"),
    Case("run-max-cycles-negative", ("run", "{d}/hello.elf", "--max-cycles", "-5"), 2, "from 1 to"),
    Case("run-missing-elf", ("run", "{d}/nope.elf"), 2, "no such file"),
    Case("run-report-with-json", ("run", "{d}/hello.elf", "--report", "--json"), 2,
         "--report: the JSON object of --json already holds the cycle report"),
    Case("run-directory-as-elf", ("run", "{d}/sub"), 2, "is a directory", setup="subdir"),
    Case("run-text-as-elf", ("run", "{d}/notes.txt"), 2, "not a readable ELF"),
    Case("run-host-elf", ("run", "{d}/host.elf"), 2, "not a 32-bit RISC-V ELF", setup="host_elf"),
    Case("run-relocatable-object", ("run", "{d}/obj.o"), 2, "relocatable object", setup="object_file"),
    Case("run-huge-p-memsz", ("run", "{d}/huge.elf"), 2, "segment 0", setup="huge_memsz"),
    Case("run-phnum-0xffff", ("run", "{d}/phnum.elf"), 2, "no loadable segment", setup="phnum_xnum"),
    Case("run-truncated-elf", ("run", "{d}/cut.elf"), 2, "cut.elf", setup="truncated_elf"),
    Case("run-entry-outside-code", ("run", "{d}/entry.elf"), 2, "entry point", setup="bad_entry"),
    Case("run-no-loadable-segment", ("run", "{d}/noload.elf"), 2, "no loadable segment", setup="no_load"),
    Case("run-built-for-other-platform", ("run", "{d}/paper.elf"), 2, "built for platform 'paper'"),
    Case("run-unknown-platform", ("run", "{d}/hello.elf", "--platform", "nope"), 2, "unknown platform 'nope'"),
    Case("run-trace-is-directory", ("run", "{d}/hello.elf", "--trace", "{d}/sub"), 2, "is a directory", setup="subdir"),
    Case("run-trace-under-a-file", ("run", "{d}/hello.elf", "--trace", "{d}/notes.txt/t"), 2, "is a file, not a directory"),
    Case("run-trace-is-the-elf", ("run", "{d}/hello.elf", "--trace", "{d}/hello.elf"), 2, "is also an input"),
    Case("run-trace-is-user-file", ("run", "{d}/hello.elf", "--trace", "{d}/notes.txt"), 2, "is not an instruction trace"),
    Case("run-trace-is-source", ("run", "{d}/hello.elf", "--trace", "{d}/hello.c"), 2, "refusing to overwrite"),
    Case("run-trace-disk-full", ("run", "{d}/hello.elf", "--trace", "/dev/full"), 2, "No space left on device"),
    Case("run-trace-read-only", ("run", "{d}/hello.elf", "--trace", "{ro}/t.txt"), 2, "Read-only file system", fs="ro"),
    Case("run-trace-full", ("run", "{d}/hello.elf", "--trace", "{full}/t.txt"), 2, "No space left on device", fs="full"),
    Case("run-gvsoc-launcher-exit-1", ("run", "{d}/hello.elf", "--backend", "gvsoc"), 3, "GVSoC failed",
         setup="gvsoc_exit_1", env=GV),
    Case("run-gvsoc-launcher-139", ("run", "{d}/hello.elf", "--backend", "gvsoc"), 3, "SIGSEGV",
         setup="gvsoc_exit_139", env=GV),
    Case("run-gvsoc-launcher-segfault", ("run", "{d}/hello.elf", "--backend", "gvsoc"), 3, "SIGSEGV",
         setup="gvsoc_segfault", env=GV),
    Case("run-gvsoc-missing", ("run", "{d}/hello.elf", "--backend", "gvsoc"), 2, "GVSoC not found",
         env=(("GVSOC", "{d}/nowhere"),)),
    Case("run-dma-size-overflow", ("run", "{d}/dma.elf"), 1, "do not fit the 17-bit size", setup="dma_program",
         stream="stdout"),
    Case("run-cycle-limit", ("run", "{d}/loop.elf", "--max-cycles", "10000"), 3, "cycle limit", setup="loop_program"),
    # ---- timelines (run, kernel, deploy): outputs checked before the run, windows by argparse ----
    Case("run-timeline-is-user-file", (*RUN_TL, "{d}/notes.txt"), 2, "is not a pulp-odl timeline"),
    Case("run-timeline-is-the-elf", (*RUN_TL, "{d}/hello.elf"), 2, "is also an input"),
    Case("run-timeline-is-directory", (*RUN_TL, "{d}/sub"), 2, "is a directory", setup="subdir"),
    Case("run-timeline-is-the-trace", ("run", "{d}/hello.elf", "--trace", "{d}/t.txt", "--timeline", "{d}/t.txt"), 2,
         "is also the --trace file"),
    Case("run-timeline-disk-full", (*RUN_TL, "/dev/full"), 2, "No space left on device"),
    Case("run-timeline-read-only", (*RUN_TL, "{ro}/t.json"), 2, "Read-only file system", fs="ro"),
    Case("run-timeline-full", (*RUN_TL, "{full}/t.json"), 2, "No space left on device", fs="full"),
    Case("run-timeline-window-alone", ("run", "{d}/hello.elf", "--timeline-window", "0:100"), 2,
         "--timeline-window: needs --timeline"),
    *[Case(f"run-timeline-window-{tag}", (*RUN_TL, "{d}/t.json", "--timeline-window", value), 2,
           "argument --timeline-window:")
      for tag, value in (("empty", "500:500"), ("reversed", "9:3"), ("word", "start:end"), ("no-colon", "100"),
                         ("negative", "-5:10"), ("huge", f"0:{HUGE}"), ("three-parts", "1:2:3"))],
    Case("run-timeline-gvsoc", (*RUN_TL, "{d}/t.json", "--backend", "gvsoc"), 2, "records no timeline",
         setup="gvsoc_exit_0", env=GV),
    Case("kernel-timeline-is-file", kernel_with("--timeline", "{d}/notes.txt"), 2, "is not a directory"),
    Case("kernel-timeline-has-user-files", kernel_with("--timeline", "{d}"), 2, "which is not a pulp-odl timeline"),
    Case("kernel-timeline-is-keep", kernel_with("--keep", "{d}/k", "--timeline", "{d}/k"), 2,
         "is also the --keep directory"),
    Case("kernel-timeline-window-alone", kernel_with("--timeline-window", "10:"), 2, "needs --timeline"),
    Case("kernel-timeline-gvsoc", kernel_with("--timeline", "{d}/tl", "--backend", "gvsoc"), 2, "records no timeline"),
    Case("kernel-timeline-read-only", kernel_with("--timeline", "{ro}/tl"), 2, "Read-only file system", fs="ro"),
    Case("deploy-timeline-is-user-file", (*DEPLOY, "--layer-id", "1", "--timeline", "{d}/notes.txt"), 2,
         "is not a pulp-odl timeline"),
    Case("deploy-timeline-window-reversed", (*DEPLOY, "--layer-id", "1", "--timeline", "{d}/t.json",
                                             "--timeline-window", "7:2"), 2, "argument --timeline-window:"),
    Case("deploy-timeline-read-only", (*DEPLOY, "--layer-id", "1", "--timeline", "{ro}/t.json"), 2,
         "Read-only file system", fs="ro"),

    # ---- disasm ----
    Case("disasm-missing", ("disasm", "{d}/nope.elf"), 2, "no such file"),
    Case("disasm-relocatable", ("disasm", "{d}/obj.o"), 2, "relocatable object", setup="object_file"),
    Case("disasm-huge-p-memsz", ("disasm", "{d}/huge.elf"), 2, "segment 0", setup="huge_memsz"),
    Case("disasm-unknown-platform", ("disasm", "{d}/hello.elf", "--platform", "nope"), 2, "unknown platform"),

    # ---- kernel: every number is an argparse error, absurd shapes are refused before allocating ----
    *[Case(f"kernel-{flag[2:]}-{tag}", kernel_with(flag, value, base=KC if flag in ("--k", "--stride", "--pad") else K),
           2, f"argument {flag}:")
      for flag in ("--cin", "--cout", "--k", "--stride", "--pad")
      for tag, value in (("nan", "nan"), ("1e3", "1e3"), ("4x", "4x"), ("axb", "axb"), ("inf", "inf"),
                         ("empty", ""), ("negative", "-2"), ("1e20", "100000000000000000000"))],
    *[Case(f"kernel-{flag[2:]}-zero", kernel_with(flag, "0", base=KC if flag in ("--k", "--stride") else K), 2,
           f"argument {flag}:") for flag in ("--cin", "--cout", "--k", "--stride")],
    *[Case(f"kernel-hw-{tag}", kernel_with("--hw", value), 2, "argument --hw:")
      for tag, value in (("4x", "4x"), ("axb", "axb"), ("nan", "nan"), ("0", "0"), ("3d", "2x2x2"), ("x4", "x4"),
                         ("huge", "9999999"))],
    *[Case(f"kernel-{flag[2:]}-{tag}", kernel_with(flag, value), 2, f"argument {flag}:")
      for flag in ("--p", "--p-in", "--p-out")
      for tag, value in (("nan", "nan"), ("zero", "0"), ("above-1", "1.5"), ("word", "half"), ("inf", "inf"))],
    Case("kernel-k-99999", ("kernel", "--kind", "conv", "--cin", "4", "--cout", "4", "--hw", "99999", "--k", "99999",
                            "--step", "fw"), 2, "does not fit"),
    Case("kernel-cin-1e6", kernel_with("--cin", "1000000", "--cout", "1000000"), 2, "does not fit"),
    Case("kernel-p-and-p-in", kernel_with("--p", "0.5", "--p-in", "0.5"), 2, "either --p or --p-in"),
    Case("kernel-pad-too-big", kernel_with("--pad", "5", base=KC), 2, "not smaller than the kernel size"),
    Case("kernel-linear-hw", ("kernel", "--kind", "linear", "--cin", "4", "--cout", "4", "--hw", "4", "--step", "fw"),
         2, "one vector"),
    Case("kernel-keep-is-file", kernel_with("--keep", "{d}/notes.txt"), 2, "not a directory"),
    Case("kernel-keep-has-user-files", kernel_with("--keep", "{d}"), 2, "did not write"),
    Case("kernel-keep-step-dir-has-user-file", kernel_with("--keep", "{d}/keep"), 2, "did not write",
         setup="keep_with_user_file"),
    Case("kernel-keep-read-only", kernel_with("--keep", "{ro}/k"), 2, "Read-only file system", fs="ro"),
    Case("kernel-keep-full", kernel_with("--keep", "{full}/k"), 2, "No space left on device", fs="full"),
    Case("kernel-unknown-platform", kernel_with("--platform", "nope"), 2, "unknown platform"),
    Case("kernel-platform-l1-size-0", kernel_with("--platform", "{d}/bad.toml"), 2, "size: must be at least 1",
         setup="platform_l1_size_0"),

    # ---- layers and memory ----
    *[Case(f"memory-{flag[2:]}-{tag}", (*MEM, "--layer-id", "1", flag, value) if flag != "--layer-id"
           else (*MEM, flag, value), 2, "--p must be in (0, 1]" if flag == "--p" and tag != "word" else flag)
      for flag in ("--layer-id", "--p", "--batch", "--replays", "--new-per-task", "--resolution", "--classes")
      for tag, value in (("nan", "nan"), ("word", "x"), ("negative", "-1"), ("huge", "1" + "0" * 20))],
    Case("platform-no-action", ("platform",), 2, "the following arguments are required: ACTION"),
    Case("platform-unknown-action", ("platform", "bogus"), 2, "invalid choice: 'bogus'"),
    Case("platform-show-no-name", ("platform", "show"), 2, "see 'pulp-odl platform show --help'"),
    Case("platform-show-unknown", ("platform", "show", "nosuch"), 2, "unknown platform 'nosuch'; choose one of"),
    Case("platform-show-missing-file", ("platform", "show", "{d}/none.toml"), 2, "cannot read platform file"),
    Case("platform-show-clock-0", ("platform", "show", "{d}/bad.toml"), 2, "clock_hz: must be at least 1",
         setup="platform_clock_0"),
    Case("memory-plan-chunk-tail-not-a-divisor", (*MEM, "--layer-id", "2", "--plan", "--chunk-tail", "5"), 2,
         "--chunk-tail 5: must divide the 16 samples it splits; choose one of 1, 2, 4, 8, 16"),
    Case("memory-plan-chunk-frozen-zero", (*MEM, "--layer-id", "2", "--plan", "--chunk-frozen", "0"), 2,
         "argument --chunk-frozen"),
    Case("memory-layer-id-out-of-range", (*MEM, "--layer-id", "999"), 2, "--layer-id must be from 1 to"),
    Case("memory-batch-below-replay", (*MEM, "--layer-id", "1", "--batch", "4"), 2, "must exceed the replayed part"),
    Case("memory-platform-l1-size-0", (*MEM, "--layer-id", "1", "--platform", "{d}/bad.toml"), 2,
         "[memory l1] size: must be at least 1", setup="platform_l1_size_0"),
    Case("memory-platform-clock-0", (*MEM, "--layer-id", "1", "--platform", "{d}/bad.toml"), 2,
         "clock_hz: must be at least 1", setup="platform_clock_0"),
    Case("memory-platform-banks-0", (*MEM, "--layer-id", "1", "--platform", "{d}/bad.toml"), 2,
         "banks: must be at least 1", setup="platform_banks_0"),
    Case("memory-platform-icache-0", (*MEM, "--layer-id", "1", "--platform", "{d}/bad.toml"), 2,
         "icache_ways: must be at least 1", setup="platform_icache_ways_0"),
    Case("memory-platform-not-utf8", (*MEM, "--layer-id", "1", "--platform", "{d}/bad.toml"), 2, "not valid TOML",
         setup="platform_not_utf8"),
    Case("memory-platform-is-directory", (*MEM, "--layer-id", "1", "--platform", "{d}/sub.toml"), 2,
         "cannot read platform file", setup="dir_named_toml"),
    Case("layers-resolution-zero", ("layers", "--net", "phinet", "--dataset", "cifar10", "--resolution", "0"), 2,
         "argument --resolution:"),
    Case("layers-classes-nan", ("layers", "--net", "phinet", "--dataset", "cifar10", "--classes", "nan"), 2,
         "argument --classes:"),
    Case("layers-unknown-net", ("layers", "--net", "resnet", "--dataset", "cifar10"), 2, "invalid choice"),
    Case("layers-resolution-huge", ("layers", "--net", "phinet", "--dataset", "cifar10", "--resolution", "1" + "0" * 9),
         2, "argument --resolution:"),

    # ---- ONNX models: files, refused constructs, input shapes, weights ----
    Case("onnx-missing-file", (*ONNX, "{d}/nope.onnx"), 2, "nope.onnx not found; give the path of a .onnx file"),
    Case("onnx-not-a-model", (*ONNX, "{d}/notes.onnx"), 2, "not a readable ONNX file", setup="onnx_text"),
    Case("onnx-is-directory", (*ONNX, "{d}/sub.onnx"), 2, "is a directory; give the path of a .onnx file",
         setup="onnx_dir"),
    *[Case(f"onnx-{name[:-len('.onnx')]}", (*ONNX, f"{{d}}/{name}"), 2, fragment, setup="onnx_models")
      for name, fragment in REFUSALS],
    Case("onnx-input-shape-two-values", (*ONNX, "{d}/symbolic.onnx", "--input-shape", "3x32"), 2,
         "argument --input-shape: '3x32' is not CxHxW", setup="onnx_models"),
    Case("onnx-input-shape-zero", (*ONNX, "{d}/symbolic.onnx", "--input-shape", "3x0x8"), 2, "argument --input-shape:",
         setup="onnx_models"),
    Case("onnx-input-shape-disagrees", (*ONNX, "{d}/ok.onnx", "--input-shape", "3x9x9"), 2,
         "disagrees with the model's input 'input' (H is 8)", setup="onnx_models"),
    Case("onnx-input-shape-of-builtin", ("layers", "--net", "phinet", "--dataset", "cifar10", "--input-shape", "3x8x8"),
         2, "--input-shape applies to ONNX models"),
    Case("onnx-resolution", (*ONNX, "{d}/ok.onnx", "--resolution", "64"), 2, "input size and classes come from the model",
         setup="onnx_models"),
    Case("onnx-memory-unknown-cut", ("memory", "--net", "{d}/ok.onnx", "--dataset", "cifar10", "--cut", "nope"), 2,
         "has no weight layer 'nope'; valid names: stem, blk.dw, blk.pw, fc", setup="onnx_models"),
    Case("onnx-memory-layer-id-out-of-range", ("memory", "--net", "{d}/ok.onnx", "--dataset", "cifar10", "--layer-id",
                                               "4"), 2, "--layer-id must be from 1 to 3", setup="onnx_models"),
    Case("onnx-deploy-refused-model", ("deploy", "--net", "{d}/grouped.onnx", "--dataset", "cifar10", "--layer-id", "1"),
         2, "a grouped convolution", setup="onnx_models"),
    Case("deploy-weights-model-of-builtin", (*DEPLOY, "--layer-id", "1", "--weights", "model"), 2,
         "--weights model needs an ONNX model"),
    Case("deploy-weights-word", (*DEPLOY, "--layer-id", "1", "--weights", "trained"), 2, "argument --weights:"),
    Case("experiment-onnx-missing", EXP, 2, "ONNX model nope.onnx not found", setup="exp_onnx_missing"),
    Case("experiment-onnx-refused", EXP, 2, "op type MaxPool is not supported", setup="exp_onnx_maxpool"),
    Case("experiment-weights-model-of-builtin", EXP, 2, 'weights must be "random" or, for an ONNX model, "model"',
         setup="exp_weights_builtin"),
    Case("export-onnx-o-user-file", (*EXPO, "{d}/notes.txt"), 2, "is not an ONNX model written by pulp-odl"),
    Case("export-onnx-o-directory", (*EXPO, "{d}/sub"), 2, "is a directory", setup="subdir"),
    Case("export-onnx-o-empty", (*EXPO, ""), 2, "empty path"),
    Case("export-onnx-o-is-the-input", ("export-onnx", "--net", "{d}/ok.onnx", "--dataset", "cifar10", "-o", "{d}/ok.onnx",
                                        "--weights", "model"), 2, "is also an input", setup="onnx_models"),
    Case("export-onnx-o-read-only", (*EXPO, "{ro}/m.onnx"), 2, "Read-only file system", fs="ro"),
    Case("export-onnx-o-full", (*EXPO, "{full}/m.onnx"), 2, "No space left on device", fs="full"),
    Case("export-onnx-weights-missing", (*EXPO, "{d}/m.onnx", "--weights", "{d}/nope.npz"), 2, "nope.npz not found"),
    Case("export-onnx-weights-not-npz", (*EXPO, "{d}/m.onnx", "--weights", "{d}/w.npz"), 2, "not a readable .npz file",
         setup="npz_text"),
    Case("export-onnx-weights-incomplete", (*EXPO, "{d}/m.onnx", "--weights", "{d}/w.npz"), 2,
         "no weights for layer stem.dw", setup="npz_incomplete"),
    Case("export-onnx-weights-word", (*EXPO, "{d}/m.onnx", "--weights", "trained"), 2, "give random, model or the path"),
    Case("export-onnx-weights-model-of-builtin", (*EXPO, "{d}/m.onnx", "--weights", "model"), 2,
         "--weights model needs an ONNX model"),
    Case("export-onnx-seed-negative", (*EXPO, "{d}/m.onnx", "--seed", "-1"), 2, "argument --seed:"),
    Case("export-onnx-unknown-net", ("export-onnx", "--net", "resnet", "--dataset", "cifar10", "-o", "{d}/m.onnx"), 2,
         "invalid choice: 'resnet'"),
    Case("export-onnx-in-missing-directory", (*EXPO, "{d}/new/m.onnx"), 0, "wrote", stream="stdout"),

    # ---- experiment: files, parameters, result directories ----
    Case("experiment-jobs-1e20", (*EXP, "--jobs", "100000000000000000000"), 2, "argument --jobs:", setup="exp_ok"),
    Case("experiment-jobs-zero", (*EXP, "--jobs", "0"), 2, "argument --jobs:", setup="exp_ok"),
    Case("experiment-jobs-word", (*EXP, "--jobs", "many"), 2, "argument --jobs:", setup="exp_ok"),
    Case("experiment-unknown-name", ("experiment", "tabel2"), 2, "unknown experiment 'tabel2'"),
    Case("experiment-missing-file", ("experiment", "{d}/nope.toml"), 2, "not found"),
    Case("experiment-not-utf8", EXP, 2, "not UTF-8 text", setup="exp_not_utf8"),
    Case("experiment-not-toml", EXP, 2, "not valid TOML", setup="exp_not_toml"),
    Case("experiment-pad-two-values", EXP, 2, "--pad must be one integer or four", setup="exp_pad_list"),
    Case("experiment-pad-string", EXP, 2, "--pad must be one integer or four", setup="exp_pad_string"),
    Case("experiment-cin-float", EXP, 2, "--cin must be a positive integer", setup="exp_cin_float"),
    Case("experiment-network-alpha-negative", EXP, 2, "network: phinet parameter alpha: must be a number in (0, 8]",
         setup="exp_alpha_negative"),
    Case("experiment-network-unknown-key", EXP, 2, "unknown phinet parameter 'gamma'", setup="exp_network_unknown"),
    Case("experiment-network-resolution-zero", EXP, 2, "resolution: must be an integer", setup="exp_resolution_zero"),
    Case("experiment-cl-batch-zero", EXP, 2, "cl: CL parameter batch", setup="exp_cl_batch_zero"),
    Case("experiment-p-above-1", EXP, 2, "p must be in (0, 1]", setup="exp_p_above_1"),
    Case("experiment-results-is-file", (*EXP, "--results", "{d}/notes.txt"), 2, "not a directory", setup="exp_ok"),
    Case("experiment-results-under-file", (*EXP, "--results", "{d}/notes.txt/r"), 2, "is a file, not a directory",
         setup="exp_ok"),
    Case("experiment-results-read-only", (*EXP, "--results", "{ro}/r"), 2, "Read-only file system", setup="exp_ok",
         fs="ro"),
    Case("experiment-results-full", (*EXP, "--results", "{full}/r"), 2, "No space left on device", setup="exp_ok",
         fs="full"),
    Case("experiment-results-env-empty", EXP, 2, "PULP_ODL_RESULTS is set but empty", setup="exp_ok",
         env=(("PULP_ODL_RESULTS", ""),)),
    Case("experiment-named-like-builtin", ("experiment", "{d}/kernels.toml", "--results", "{d}/res", "--quiet"), 2,
         "holds the results of", setup="builtin_results"),
    Case("experiment-result-dir-of-user", (*EXP, "--results", "{d}/res"), 2, "which no experiment wrote",
         setup="user_result_dir"),
    Case("experiment-result-dir-is-file", (*EXP, "--results", "{d}/res"), 2, "is a file, not a result directory",
         setup="result_dir_is_file"),
    Case("experiment-unknown-platform", (*EXP, "--platform", "nope"), 2, "unknown platform 'nope'", setup="exp_ok"),
    Case("experiment-timeline-names-no-point", EXP, 2, "[experiment] timeline names no point of the experiment",
         setup="exp_timeline_no_point"),
    Case("experiment-timeline-unknown-key", EXP, 2, "unknown key 'cores' in [experiment] timeline",
         setup="exp_timeline_unknown_key"),
    Case("experiment-timeline-in-kernels", EXP, 2, "timeline belongs to latency experiments",
         setup="exp_timeline_kernels"),
    Case("experiment-timeline-isolated", EXP, 2, "it needs deployment = \"deployed\"",
         setup="exp_timeline_isolated"),

    # ---- regress: golden files ----
    Case("regress-golden-abc", ("regress", "--golden", "{d}/g.csv"), 2, "column cycles: must be an integer",
         setup="golden_abc"),
    Case("regress-golden-nan", ("regress", "--golden", "{d}/g.csv"), 2, "column cycles: must be an integer",
         setup="golden_nan"),
    Case("regress-golden-negative", ("regress", "--golden", "{d}/g.csv"), 2, "at least 0", setup="golden_negative"),
    Case("regress-golden-duplicate", ("regress", "--golden", "{d}/g.csv"), 2, "repeats kernel", setup="golden_duplicate"),
    Case("regress-golden-empty", ("regress", "--golden", "{d}/g.csv"), 2, "empty file", setup="golden_empty"),
    Case("regress-golden-missing-column", ("regress", "--golden", "{d}/g.csv"), 2, "lacks column(s) cycles",
         setup="golden_no_cycles"),
    Case("regress-golden-not-utf8", ("regress", "--golden", "{d}/g.csv"), 2, "not UTF-8 text", setup="golden_binary"),
    Case("regress-golden-directory", ("regress", "--golden", "{d}/sub"), 2, "is a directory", setup="subdir"),
    Case("regress-golden-missing", ("regress", "--golden", "{d}/nope.csv"), 2, "make golden"),
    Case("regress-update-golden-is-user-file", ("regress", "--update", "--golden", "{d}/notes.txt"), 2,
         "is not a golden CSV"),
    Case("regress-update-golden-read-only", ("regress", "--update", "--golden", "{ro}/g.csv"), 2,
         "Read-only file system", fs="ro"),
    Case("regress-update-golden-full", ("regress", "--update", "--golden", "{full}/g.csv"), 2,
         "No space left on device", fs="full"),
    Case("regress-jobs-huge", ("regress", "--jobs", "1000000"), 2, "argument --jobs:"),
    Case("regress-results-is-file", ("regress", "--results", "{d}/notes.txt"), 2, "not a directory"),

    # ---- experiment and regress on a Dask cluster: the address is checked, then reached, before any work ----
    Case("experiment-executor-unknown", (*EXP, "--executor", "spark"), 2, "argument --executor: invalid choice",
         setup="exp_ok"),
    Case("experiment-scheduler-unknown-protocol", (*EXP, "--executor", "dask", "--scheduler", "http://h:8786"), 2,
         "unknown protocol 'http'", setup="exp_ok"),
    Case("experiment-scheduler-port-too-big", (*EXP, "--executor", "dask", "--scheduler", "h:99999"), 2,
         "the port '99999' is not an integer from 1 to 65535", setup="exp_ok"),
    Case("experiment-scheduler-port-word", (*EXP, "--executor", "dask", "--scheduler", "tcp://h:port"), 2,
         "the port 'port' is not an integer", setup="exp_ok"),
    Case("experiment-scheduler-bad-host", (*EXP, "--executor", "dask", "--scheduler", "tcp://-h-:8786"), 2,
         "'-h-' is not a host name", setup="exp_ok"),
    Case("experiment-scheduler-empty", (*EXP, "--executor", "dask", "--scheduler", ""), 2, "empty address",
         setup="exp_ok"),
    Case("experiment-scheduler-without-dask", (*EXP, "--scheduler", "127.0.0.1:1"), 2, "add --executor dask",
         setup="exp_ok"),
    Case("experiment-scheduler-and-jobs", (*EXP, "--executor", "dask", "--scheduler", "127.0.0.1:1", "--jobs", "2"),
         2, "--jobs applies to the local executor and to a LocalCluster", setup="exp_ok"),
    Case("experiment-scheduler-unreachable", (*EXP, "--executor", "dask", "--scheduler", "tcp://127.0.0.1:1"), 2,
         "no Dask scheduler answers there (Connection refused)", setup="exp_ok"),
    Case("experiment-scheduler-unknown-host", (*EXP, "--executor", "dask", "--scheduler", "no-such-host.invalid"), 2,
         "--scheduler tcp://no-such-host.invalid:8786: no Dask scheduler answers there", setup="exp_ok"),
    Case("regress-executor-unknown", ("regress", "--executor", "ray"), 2, "argument --executor: invalid choice"),
    Case("regress-scheduler-bad-address", ("regress", "--executor", "dask", "--scheduler", "tcp://h:p"), 2,
         "argument --scheduler:"),
    Case("regress-scheduler-without-dask", ("regress", "--scheduler", "127.0.0.1:1"), 2, "add --executor dask"),
    Case("regress-scheduler-unreachable", ("regress", "--executor", "dask", "--scheduler", "127.0.0.1:1"), 2,
         "no Dask scheduler answers there"),

    # ---- report: result tables and accuracy files ----
    Case("report-empty-kernels-csv", REPORT, 2, "kernels.csv: empty file", setup="results_empty_kernels"),
    Case("report-kernels-csv-bad-number", REPORT, 2, "column mac_per_cycle: must be a number",
         setup="results_bad_kernels"),
    Case("report-latency-csv-bad-p", REPORT, 2, "column p: must be a number in (0, 1]", setup="results_bad_latency"),
    Case("report-accuracy-not-numbers", (*REPORT, "--accuracy", "{d}/acc.csv"), 2, "column accuracy: must be a number",
         setup="accuracy_words"),
    Case("report-accuracy-p-out-of-range", (*REPORT, "--accuracy", "{d}/acc.csv"), 2, "column p: must be a number",
         setup="accuracy_bad_p"),
    Case("report-accuracy-layer-id-float", (*REPORT, "--accuracy", "{d}/acc.csv"), 2, "column layer_id",
         setup="accuracy_bad_layer"),
    Case("report-accuracy-missing-columns", (*REPORT, "--accuracy", "{d}/acc.csv"), 2, "lacks column(s)",
         setup="accuracy_no_columns"),
    Case("report-accuracy-directory", (*REPORT, "--accuracy", "{d}/sub"), 2, "is a directory", setup="results_ok"),
    Case("report-accuracy-missing", (*REPORT, "--accuracy", "{d}/nope.csv"), 2, "no such file", setup="results_ok"),
    Case("report-accuracy-not-utf8", (*REPORT, "--accuracy", "{d}/acc.csv"), 2, "not UTF-8 text",
         setup="accuracy_binary"),
    Case("report-results-missing", ("report", "--results", "{d}/nope"), 2, "no such directory"),
    Case("report-results-is-file", ("report", "--results", "{d}/notes.txt"), 2, "not a directory"),
    Case("report-results-empty-dir", ("report", "--results", "{d}/sub"), 2, "no results under", setup="subdir"),
    Case("report-output-is-file", (*REPORT, "--output", "{d}/notes.txt"), 2, "not a directory", setup="results_ok"),
    Case("report-output-has-user-index", (*REPORT, "--output", "{d}/site"), 2, "is not a pulp-odl report",
         setup="user_index"),
    Case("report-output-read-only", (*REPORT, "--output", "{ro}/site"), 2, "Read-only file system",
         setup="results_ok", fs="ro"),
    Case("report-output-full", (*REPORT, "--output", "{full}/site"), 2, "No space left on device",
         setup="results_ok", fs="full"),
    Case("report-results-env-empty", ("report",), 2, "PULP_ODL_RESULTS is set but empty",
         env=(("PULP_ODL_RESULTS", ""),)),

    # ---- crosscheck ----
    Case("crosscheck-output-is-directory", (*CC, "--output", "{d}/sub"), 2, "is a directory",
         setup="crosscheck_ok", env=GV),
    Case("crosscheck-output-is-user-file", (*CC, "--output", "{d}/notes.txt"), 2, "is not a crosscheck table",
         setup="crosscheck_ok", env=GV),
    Case("crosscheck-output-is-an-input", (*CC, "--output", "{d}/elfs/hello.elf"), 2, "refusing to overwrite",
         setup="crosscheck_ok", env=GV),
    Case("crosscheck-output-read-only", (*CC, "--output", "{ro}/c.csv"), 2, "Read-only file system",
         setup="crosscheck_ok", env=GV, fs="ro"),
    Case("crosscheck-output-full", (*CC, "--output", "{full}/c.csv"), 2, "No space left on device",
         setup="crosscheck_ok", env=GV, fs="full"),
    Case("crosscheck-unreadable-elf-among-others", (*CC, "--output", "{d}/out/c.csv"), 1,
         "1 of 2 program(s) could not be run", setup="crosscheck_one_bad", env=GV),
    Case("crosscheck-max-cycles-zero", (*CC, "--max-cycles", "0"), 2, "argument --max-cycles:"),
    Case("crosscheck-programs-missing", ("crosscheck", "--programs", "{d}/nope"), 2, "not a directory",
         setup="gvsoc_exit_0", env=GV),
    Case("crosscheck-kernels-unknown-experiment", ("crosscheck", "--kernels", "nope"), 2, "unknown experiment 'nope'",
         setup="gvsoc_exit_0", env=GV),
    Case("crosscheck-kernels-latency-experiment", ("crosscheck", "--kernels", "demo"), 2,
         "--kernels demo: a latency experiment; give a kernels experiment", setup="gvsoc_exit_0", env=GV),
    Case("crosscheck-kernels-paper-only", ("crosscheck", "--kernels", "{d}/exp.toml"), 2,
         "none of its kernels runs on a platform GVSoC models", setup="exp_paper_only", env=GV),
    Case("crosscheck-kernels-and-programs", ("crosscheck", "--kernels", "{d}/exp.toml", "--programs", "{d}/elfs"), 2,
         "--kernels: compares kernels, --programs ELFs; give one of them", setup="crosscheck_kernels_ok", env=GV),
    Case("crosscheck-kernels-max-cycles", ("crosscheck", "--kernels", "{d}/exp.toml", "--max-cycles", "5"), 2,
         "--max-cycles: applies to --programs", setup="crosscheck_kernels_ok", env=GV),
    Case("crosscheck-energy-without-gvsoc", ("crosscheck", "--energy", "--programs", "{d}/elfs"), 2, "GVSoC not found",
         setup="crosscheck_ok", env=(("GVSOC", "{d}/nowhere"),)),
    Case("crosscheck-energy-gvsoc-wrapper", ("crosscheck", "--energy", "--programs", "{d}/elfs"), 2,
         "power report is read through gvrun", setup="crosscheck_ok", env=GV),
    Case("crosscheck-energy-jobs", ("crosscheck", "--energy", "--programs", "{d}/elfs", "--jobs", "2"), 2,
         "--jobs: --energy runs one program at a time", setup="crosscheck_ok", env=GV),
    Case("crosscheck-kernels-without-gvsoc", ("crosscheck", "--kernels", "{d}/exp.toml"), 2, "GVSoC not found",
         setup="exp_ok", env=(("GVSOC", "{d}/nowhere"),)),
    Case("crosscheck-kernels-output-is-user-file", ("crosscheck", "--kernels", "{d}/exp.toml", "--output",
                                                    "{d}/notes.txt"), 2, "is not a kernel crosscheck table",
         setup="crosscheck_kernels_ok", env=GV),
    Case("crosscheck-kernels-output-read-only", ("crosscheck", "--kernels", "{d}/exp.toml", "--output", "{ro}/k.csv"),
         2, "Read-only file system", setup="crosscheck_kernels_ok", env=GV, fs="ro"),
    Case("crosscheck-jobs-zero", ("crosscheck", "--kernels", "regress", "--jobs", "0"), 2, "argument --jobs:"),
    Case("crosscheck-jobs-without-kernels", (*CC, "--jobs", "2"), 2, "--jobs: applies to --kernels",
         setup="crosscheck_ok", env=GV),

    # ---- deploy ----
    *[Case(f"deploy-{flag[2:]}-{tag}", (*DEPLOY, flag, value), 2, f"argument {flag}:")
      for flag in ("--layer-id", "--p", "--jobs")
      for tag, value in (("nan", "nan"), ("word", "x"), ("zero", "0"), ("huge", "1" + "0" * 20))
      if not (flag == "--layer-id" and tag == "huge")],
    Case("deploy-layer-id-out-of-range", (*DEPLOY, "--layer-id", "999"), 2, "layer_id must be an integer from 1 to"),
    Case("deploy-chunk-frozen-not-a-divisor", (*DEPLOY, "--layer-id", "2", "--chunk-frozen", "5"), 2,
         "--chunk-frozen 5: must divide the 12 samples it splits"),
    Case("deploy-unknown-platform", (*DEPLOY, "--layer-id", "1", "--platform", "nope"), 2, "unknown platform"),
    Case("deploy-platform-l1-size-0", (*DEPLOY, "--layer-id", "1", "--platform", "{d}/bad.toml"), 2, "size: must be at least 1",
         setup="platform_l1_size_0"),
    Case("deploy-results-env-empty", (*DEPLOY, "--layer-id", "1"), 2, "PULP_ODL_RESULTS is set but empty",
         env=(("PULP_ODL_RESULTS", ""),)),

    # ---- an output in a directory that does not exist yet: created, not an error ----
    Case("build-o-in-missing-directory", ("build", "{d}/hello.c", "-o", "{d}/new/dir/x.elf"), 0, "built", stream="stdout"),
    Case("run-trace-in-missing-directory", ("run", "{d}/hello.elf", "--trace", "{d}/new/t.txt"), 7,
         "sum of squares 1..100 = 338350", stream="stdout"),
    Case("run-timeline-in-missing-directory", (*RUN_TL, "{d}/new/t.json"), 7, "sum of squares", stream="stdout"),
    Case("run-report-on-stderr", ("run", "{d}/hello.elf", "--report"), 7, "sum of squares", stream="stdout"),
    Case("kernel-keep-missing-directory", kernel_with("--keep", "{d}/new/k"), 0, "pw 4->4", stream="stdout"),
    Case("report-output-missing-directory", (*REPORT, "--output", "{d}/new/site"), 0, "dashboard:", setup="results_ok",
         stream="stdout"),
    Case("experiment-results-missing-directory", (*EXP, "--results", "{d}/new/r"), 0, "wrote", setup="exp_ok",
         stream="stdout"),

    # ---- timeline: the file it draws, the page it writes ----
    Case("timeline-missing-file", ("timeline", "{d}/nope.json"), 2, "no such file"),
    Case("timeline-not-json", ("timeline", "{d}/notes.txt"), 2, "not JSON"),
    Case("timeline-no-events", ("timeline", "{d}/t.json"), 2, "has no traceEvents list", setup="timeline_not_a_trace"),
    Case("timeline-nothing-to-draw", ("timeline", "{d}/t.json"), 2, "holds no span to draw", setup="timeline_empty"),
    Case("timeline-output-is-user-file", ("timeline", "{d}/t.json", "-o", "{d}/notes.txt"), 2,
         "is not a pulp-odl page", setup="timeline_empty"),
    Case("timeline-output-is-the-input", ("timeline", "{d}/t.json", "-o", "{d}/t.json"), 2, "is also an input",
         setup="timeline_empty"),
    Case("timeline-output-read-only", ("timeline", "{d}/t.json", "-o", "{ro}/t.html"), 2, "Read-only file system",
         setup="timeline_empty", fs="ro"),
    Case("timeline-directory", ("timeline", "{d}/sub"), 2, "is a directory", setup="subdir"),

    # ---- doctor ----
    Case("doctor-extra-argument", ("doctor", "--frobnicate"), 2, "unrecognized arguments"),

    # ---- the command line itself ----
    Case("unknown-command", ("frobnicate",), 2, "invalid choice"),
    Case("run-without-elf", ("run",), 2, "required"),
]


# --------------------------------------------------------------------------------------------------
# setups: each adds files to the case directory `d` (see FILES for what every directory holds)
# --------------------------------------------------------------------------------------------------
def _write(path: Path, text, mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    if mode is not None:
        path.chmod(mode)
    return path


def _patch_elf(src: Path, dst: Path, edit) -> None:
    """Copy an ELF, letting `edit(bytearray, elffile)` change its bytes."""
    from elftools.elf.elffile import ELFFile

    data = bytearray(src.read_bytes())
    with open(src, "rb") as f:
        edit(data, ELFFile(f))
    dst.write_bytes(bytes(data))


def _first_load(elf):
    return next(i for i, seg in enumerate(elf.iter_segments()) if seg["p_type"] == "PT_LOAD")


def _ph_field(data, elf, index, offset, value, size=4):
    at = elf["e_phoff"] + index * elf["e_phentsize"] + offset
    data[at:at + size] = value.to_bytes(size, "little")


def setup_subdir(d):
    (d / "sub").mkdir()


def setup_hardlink(d):
    os.link(d / "hello.c", d / "link.c")


def setup_other_source(d):
    _write(d / "other.c", "int other(void) { return 1; }\n")


def setup_bad_source(d):
    _write(d / "bad.c", "int main(void) { return undefined_name; }\n")


def setup_host_elf(d):
    shutil.copy(sys.executable if Path(sys.executable).read_bytes()[:4] == b"\x7fELF" else "/bin/true", d / "host.elf")


def setup_object_file(d):
    from harness import platform as platmod, toolchain

    src = _write(d / "obj.c", "int main(void) { return 3; }\n")
    tc = toolchain.find()
    subprocess.run([tc.cc, *toolchain.flags(tc, platmod.load("pulp-open"), "2"), "-c", str(src), "-o", str(d / "obj.o")],
                   check=True, capture_output=True)


def setup_huge_memsz(d):
    # p_memsz of the first loadable segment -> 4 GB - 4 KB: refused before anything is allocated
    _patch_elf(d / "hello.elf", d / "huge.elf", lambda data, elf: _ph_field(data, elf, _first_load(elf), 20, 0xFFFFF000))


def setup_phnum_xnum(d):
    _patch_elf(d / "hello.elf", d / "phnum.elf", lambda data, elf: data.__setitem__(slice(44, 46), b"\xff\xff"))


def setup_truncated_elf(d):
    data = (d / "hello.elf").read_bytes()
    _write(d / "cut.elf", data[: len(data) // 3])


def setup_bad_entry(d):
    _patch_elf(d / "hello.elf", d / "entry.elf", lambda data, elf: data.__setitem__(slice(24, 28), (0x40).to_bytes(4, "little")))


def setup_no_load(d):
    # every PT_LOAD becomes PT_NULL
    def edit(data, elf):
        for i, seg in enumerate(elf.iter_segments()):
            if seg["p_type"] == "PT_LOAD":
                _ph_field(data, elf, i, 0, 0)
    _patch_elf(d / "hello.elf", d / "noload.elf", edit)


def _build(d, name, text, platform="pulp-open"):
    from harness import platform as platmod, toolchain

    src = _write(d / f"{name}.c", text)
    toolchain.build([src], d / f"{name}.elf", platmod.load(platform))


DMA_PROGRAM = r"""
#include <pmsis.h>
static char buf[16] __attribute__((section(".l1")));
static char src[16];
static void task(void *arg) {
  if (pi_core_id() == 0) {
    pi_cl_dma_cmd_t cmd;
    pi_cl_dma_cmd((uint32_t)src, (uint32_t)buf, 0x20000, PI_CL_DMA_DIR_EXT2LOC, &cmd);
    pi_cl_dma_cmd_wait(&cmd);
  }
}
int main(void) {
  struct pi_device cl;
  struct pi_cluster_conf conf;
  struct pi_cluster_task t;
  pi_cluster_conf_init(&conf);
  pi_open_from_conf(&cl, &conf);
  pi_cluster_open(&cl);
  pi_cluster_task(&t, task, 0);
  pi_cluster_send_task_to_cl(&cl, &t);
  return 0;
}
"""
LOOP_PROGRAM = 'int main(void) { for (;;) __asm__ volatile("nop"); }\n'


def setup_dma_program(d):
    shutil.copy(TEMPLATE / "dma.elf", d / "dma.elf")


def setup_loop_program(d):
    shutil.copy(TEMPLATE / "loop.elf", d / "loop.elf")


def setup_keep_with_user_file(d):
    _write(d / "keep" / "fw" / "kernel.c", "/* generated */\n")
    _write(d / "keep" / "fw" / "my-notes.md", "mine\n")


def _platform_edit(d, old: str, new: str):
    text = (ROOT / "platforms" / "pulp-open.toml").read_text()
    assert old in text, old
    _write(d / "bad.toml", text.replace(old, new, 1))


def setup_platform_l1_size_0(d):
    _platform_edit(d, "size = 0x10000", "size = 0")


def setup_platform_clock_0(d):
    _platform_edit(d, "clock_hz = 50_000_000", "clock_hz = 0")


def setup_platform_banks_0(d):
    _platform_edit(d, "banks = 16", "banks = 0")


def setup_platform_icache_ways_0(d):
    _platform_edit(d, "icache_ways = 4", "icache_ways = 0")


def setup_platform_not_utf8(d):
    _write(d / "bad.toml", b"[platform]\nname = \"\xff\xfe\"\n")


def setup_dir_named_toml(d):
    (d / "sub.toml").mkdir()


EXP_HEAD = '[experiment]\ndescription = "t"\nkind = "kernels"\nplatforms = ["pulp-open"]\nsteps = ["fw"]\n'
EXP_OK = EXP_HEAD + '\n[[kernel]]\nkind = "pw"\ncin = 4\ncout = 4\nhw = 4\n'
SWEEP = '[experiment]\ndescription = "t"\nkind = "latency"\nplatforms = ["pulp-open"]\n\n[[sweep]]\nnet = "phinet"\n' \
        'datasets = ["cifar10"]\nlayer_ids = [1]\np = [1.0]\n'


def setup_onnx_models(d):
    import onnx

    from tests import onnx_models
    onnx.save(onnx_models.tiny(), str(d / "ok.onnx"))
    for name, model, _ in onnx_models.refusals():
        onnx.save(model, str(d / name))


def setup_onnx_text(d):
    _write(d / "notes.onnx", "not a model\n")


def setup_onnx_dir(d):
    (d / "sub.onnx").mkdir()


def setup_npz_text(d):
    _write(d / "w.npz", "not an archive\n")


def setup_npz_incomplete(d):
    import numpy as np
    np.savez(d / "w.npz", **{"classifier.weight": np.zeros((10, 211), np.float32)})


def setup_exp_onnx_missing(d):
    _write(d / "exp.toml", SWEEP.replace('net = "phinet"', 'net = "nope.onnx"'))


def setup_exp_onnx_maxpool(d):
    setup_onnx_models(d)
    _write(d / "exp.toml", SWEEP.replace('net = "phinet"', 'net = "maxpool.onnx"'))


def setup_exp_weights_builtin(d):
    _write(d / "exp.toml", SWEEP + 'weights = "model"\n')


def setup_exp_ok(d):
    _write(d / "exp.toml", EXP_OK)


TIMELINE_AT = 'timeline = {{ net = "phinet", dataset = "cifar10", layer_id = {lid}, p = 1.0{extra} }}\n'


def _sweep_with(line: str, deployment: str = "") -> str:
    head = SWEEP.replace('kind = "latency"\n', f'kind = "latency"\n{deployment}{line}')
    return head


def setup_timeline_not_a_trace(d):
    _write(d / "t.json", '{"events": []}')


def setup_timeline_empty(d):
    _write(d / "t.json", '{"otherData": {"generator": "pulp-odl timeline"}, "traceEvents": []}')


def setup_exp_timeline_no_point(d):
    _write(d / "exp.toml", _sweep_with(TIMELINE_AT.format(lid=3, extra="")))


def setup_exp_timeline_unknown_key(d):
    _write(d / "exp.toml", _sweep_with(TIMELINE_AT.format(lid=1, extra=", cores = 8")))


def setup_exp_timeline_kernels(d):
    _write(d / "exp.toml", EXP_HEAD + TIMELINE_AT.format(lid=1, extra="") + '\n[[kernel]]\nkind = "pw"\ncin = 4\n'
           'cout = 4\nhw = 4\n')


def setup_exp_timeline_isolated(d):
    _write(d / "exp.toml", _sweep_with(TIMELINE_AT.format(lid=1, extra=""), 'deployment = "isolated"\n'))


def setup_exp_not_utf8(d):
    _write(d / "exp.toml", EXP_OK.encode() + b"# \xff\xfe\n")


def setup_exp_not_toml(d):
    _write(d / "exp.toml", EXP_OK + "[[kernel\n")


def setup_exp_pad_list(d):
    _write(d / "exp.toml", EXP_HEAD + '\n[[kernel]]\nkind = "conv"\ncin = 4\ncout = 4\nhw = 8\npad = [1, 2]\n')


def setup_exp_pad_string(d):
    _write(d / "exp.toml", EXP_HEAD + '\n[[kernel]]\nkind = "conv"\ncin = 4\ncout = 4\nhw = 8\npad = "x"\n')


def setup_exp_cin_float(d):
    _write(d / "exp.toml", EXP_HEAD + '\n[[kernel]]\nkind = "pw"\ncin = 1e20\ncout = 4\nhw = 4\n')


def setup_exp_alpha_negative(d):
    _write(d / "exp.toml", SWEEP + "network = {alpha = -1}\n")


def setup_exp_network_unknown(d):
    _write(d / "exp.toml", SWEEP + "network = {gamma = 2}\n")


def setup_exp_resolution_zero(d):
    _write(d / "exp.toml", SWEEP + "network = {resolution = 0}\n")


def setup_exp_cl_batch_zero(d):
    _write(d / "exp.toml", SWEEP + "cl = {batch = 0}\n")


def setup_exp_p_above_1(d):
    _write(d / "exp.toml", SWEEP.replace("p = [1.0]", "p = [1.5]"))


def setup_builtin_results(d):
    """A custom file named kernels.toml, and results/kernels/ of the built-in experiment."""
    _write(d / "kernels.toml", EXP_OK)
    _write(d / "res" / "kernels" / "meta.json", json.dumps({"experiment": "kernels", "file": "experiments/kernels.toml"}))
    _write(d / "res" / "kernels" / "kernels.csv", "kernel,cycles\nx,1\n")


def setup_user_result_dir(d):
    setup_exp_ok(d)
    _write(d / "res" / "exp" / "thesis.tex", "\\documentclass{article}\n")


def setup_result_dir_is_file(d):
    setup_exp_ok(d)
    _write(d / "res" / "exp", "not a directory\n")


GOLDEN = (ROOT / "results" / "golden" / "regress.csv").read_text().splitlines(keepends=True)


def _golden(d, lines):
    _write(d / "g.csv", "".join(lines))


def setup_golden_abc(d):
    head, first, *rest = GOLDEN
    parts = first.split(",")
    parts[3] = "abc"
    _golden(d, [head, ",".join(parts), *rest])


def setup_golden_nan(d):
    head, first, *rest = GOLDEN
    parts = first.split(",")
    parts[3] = "NaN"
    _golden(d, [head, ",".join(parts), *rest])


def setup_golden_negative(d):
    head, first, *rest = GOLDEN
    parts = first.split(",")
    parts[4] = "-5"
    _golden(d, [head, ",".join(parts), *rest])


def setup_golden_duplicate(d):
    _golden(d, [*GOLDEN, GOLDEN[1]])


def setup_golden_empty(d):
    _golden(d, [])


def setup_golden_no_cycles(d):
    _golden(d, [",".join(p for i, p in enumerate(line.rstrip("\n").split(",")) if i != 3) + "\n" for line in GOLDEN])


def setup_golden_binary(d):
    _write(d / "g.csv", b"kernel,platform\n\xff\xfe\x00\n")


KERNELS_CSV = ("kernel,platform,kind,step,macs,mac_per_cycle,peak_mac_per_cycle,cycles\n"
               "pw_4x4_4x4_fw_p1_pulp-open,pulp-open,pw,fw,256,0.5,8.0,512\n")
LATENCY_CSV = ("platform,net,dataset,layer_id,p,M_MB,S_replay_MB,bw_ms,fw_task_s,update_task_s,total_task_s\n"
               "paper,phinet,cifar10,1,1.0,0.1,0.2,0.3,1.0,2.0,3.0\n")


def setup_results_ok(d):
    _write(d / "res" / "kernels" / "kernels.csv", KERNELS_CSV)
    (d / "sub").mkdir(exist_ok=True)


def setup_results_empty_kernels(d):
    _write(d / "res" / "kernels" / "kernels.csv", "")


def setup_results_bad_kernels(d):
    _write(d / "res" / "kernels" / "kernels.csv", KERNELS_CSV.replace(",0.5,", ",fast,"))


def setup_results_bad_latency(d):
    setup_results_ok(d)
    _write(d / "res" / "fig4" / "latency.csv", LATENCY_CSV.replace(",1,1.0,", ",1,7,"))


def _accuracy(d, text):
    setup_results_ok(d)
    _write(d / "acc.csv", text)


def setup_accuracy_words(d):
    _accuracy(d, "net,dataset,layer_id,p,accuracy\nphinet,cifar10,1,1.0,high\n")


def setup_accuracy_bad_p(d):
    _accuracy(d, "net,dataset,layer_id,p,accuracy\nphinet,cifar10,1,70,0.8\n")


def setup_accuracy_bad_layer(d):
    _accuracy(d, "net,dataset,layer_id,p,accuracy\nphinet,cifar10,1.5,1.0,0.8\n")


def setup_accuracy_no_columns(d):
    _accuracy(d, "model,score\nphinet,0.8\n")


def setup_accuracy_binary(d):
    setup_results_ok(d)
    _write(d / "acc.csv", b"net,dataset\n\xff\xfe\n")


def setup_user_index(d):
    setup_results_ok(d)
    _write(d / "site" / "index.html", "<html><body>my home page</body></html>\n")


FAKE_GVSOC = "#!/bin/sh\n{body}\n"


def _gvsoc(d, body):
    _write(d / "gvsoc", FAKE_GVSOC.format(body=body), mode=0o755)


def setup_gvsoc_exit_0(d):
    _gvsoc(d, "exit 0")


def setup_gvsoc_exit_1(d):
    _gvsoc(d, "exit 1")


def setup_gvsoc_exit_139(d):
    _gvsoc(d, "exit 139")


def setup_gvsoc_segfault(d):
    _gvsoc(d, "kill -SEGV $$")


def setup_crosscheck_ok(d):
    setup_gvsoc_exit_0(d)
    (d / "sub").mkdir(exist_ok=True)
    (d / "elfs").mkdir()
    shutil.copy(d / "hello.elf", d / "elfs" / "hello.elf")


def setup_crosscheck_kernels_ok(d):
    setup_crosscheck_ok(d)
    setup_exp_ok(d)


def setup_exp_paper_only(d):
    _write(d / "exp.toml", EXP_OK.replace('platforms = ["pulp-open"]', 'platforms = ["paper"]'))


def setup_crosscheck_one_bad(d):
    setup_crosscheck_ok(d)
    _write(d / "elfs" / "broken.elf", "not an ELF\n")


SETUPS = {name[len("setup_"):]: fn for name, fn in globals().items() if name.startswith("setup_")}


# --------------------------------------------------------------------------------------------------
# running a case
# --------------------------------------------------------------------------------------------------
TEMPLATE: Path = Path()   # set by the `template` fixture (or the namespace driver): files every case starts with
FILES = ("hello.c", "hello.elf", "paper.elf", "notes.txt")


def make_template(where: Path) -> Path:
    from harness import platform as platmod, toolchain

    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "examples" / "hello.c", where / "hello.c")
    toolchain.build([where / "hello.c"], where / "hello.elf", platmod.load("pulp-open"))
    toolchain.build([where / "hello.c"], where / "paper.elf", platmod.load("paper"))
    _write(where / "notes.txt", "my notes: nothing here may be overwritten\n")
    extras = where / "extras"
    extras.mkdir()
    _build(extras, "dma", DMA_PROGRAM)
    _build(extras, "loop", LOOP_PROGRAM)
    for f in ("dma.elf", "loop.elf"):
        shutil.move(extras / f, where / f)
    shutil.rmtree(extras)
    return where


def _snapshot(d: Path) -> dict:
    out = {}
    for p in sorted(d.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(d))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def prepare(case: Case, d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for f in FILES:
        shutil.copy(TEMPLATE / f, d / f)
    if case.setup:
        SETUPS[case.setup](d)


def execute(case: Case, d: Path, mounts: dict | None = None) -> dict:
    """Run the case in this process; returns exit status, both streams and what changed in `d`."""
    from harness.cli import main

    mounts = mounts or {"ro": str(d / "ro-unavailable"), "full": str(d / "full-unavailable")}
    fmt = {"d": str(d), **mounts}
    argv = [a.format(**fmt) for a in case.argv]
    env = {"PULP_ODL_RESULTS": str(d / "results"), **{k: v.format(**fmt) for k, v in case.env}}
    saved = {k: os.environ.get(k) for k in env}
    before = _snapshot(d)
    cwd = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    try:
        os.environ.update(env)
        os.chdir(d)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - a case must never end in a traceback: record it as the failure
        code = "traceback"
        err.write(traceback.format_exc())
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    after = _snapshot(d)
    return {"exit": code, "stdout": out.getvalue(), "stderr": err.getvalue(), "seconds": time.monotonic() - t0,
            "changed": sorted(k for k, v in before.items() if after.get(k) != v),
            "probes": sorted(k for k in after if ".pulp-odl-probe-" in k)}


def check(case: Case, r: dict) -> None:
    lines = [ln for ln in r["stderr"].splitlines() if ln.strip()]
    assert "Traceback" not in r["stderr"], r["stderr"]
    assert r["exit"] == case.exit, f"exit {r['exit']} (expected {case.exit}); stderr: {r['stderr']}"
    if case.stream == "stderr":
        assert len(lines) == 1, f"expected one line on stderr, got: {r['stderr']!r}"
        assert lines[0].startswith("pulp-odl: ") and case.fragment in lines[0], lines[0]
    else:   # the program's own message, or a run that succeeds: progress lines on stderr, but no error
        assert "error:" not in r["stderr"], r["stderr"]
        assert case.fragment in r["stdout"], r["stdout"]
    assert not r["changed"], f"files changed: {r['changed']}"
    assert not r["probes"], f"probe files left: {r['probes']}"


@pytest.fixture(scope="session")
def template(tmp_path_factory):
    global TEMPLATE
    TEMPLATE = make_template(tmp_path_factory.mktemp("bad-input-template"))
    return TEMPLATE


LOCAL = [c for c in CASES if c.fs is None]
NAMESPACED = [c for c in CASES if c.fs is not None]


@pytest.mark.parametrize("case", LOCAL, ids=[c.id for c in LOCAL])
def test_case(case, template, tmp_path):
    d = tmp_path / "case"
    prepare(case, d)
    check(case, execute(case, d))


# ---- read-only and full filesystems: all such cases in one unshare'd subprocess ----

MOUNTS = """set -e
mkdir -p "$1/ro" "$1/full"
mount -t tmpfs -o size=1m tmpfs "$1/ro"
mount -o remount,ro "$1/ro"
mount -t tmpfs -o size=256k tmpfs "$1/full"
head -c 1048576 /dev/zero > "$1/full/fill" 2>/dev/null || true
shift
exec "$@"
"""


def _unshare_works() -> bool:
    if not shutil.which("unshare") or not sys.platform.startswith("linux"):
        return False
    p = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"], capture_output=True)
    return p.returncode == 0


@pytest.fixture(scope="session")
def namespaced_results(template, tmp_path_factory):
    if not _unshare_works():
        pytest.skip("unshare -rm cannot mount here: read-only and full filesystems cannot be made")
    root = tmp_path_factory.mktemp("bad-input-fs")
    jobs = {}
    for case in NAMESPACED:
        d = root / case.id
        prepare(case, d)
        jobs[case.id] = str(d)
    spec = root / "jobs.json"
    spec.write_text(json.dumps({"template": str(template), "jobs": jobs}))
    out = root / "results.json"
    p = subprocess.run(["unshare", "-rm", "sh", "-c", MOUNTS, "sh", str(root), sys.executable, "-m",
                        "tests.test_bad_input", "--driver", str(spec), str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("case", NAMESPACED, ids=[c.id for c in NAMESPACED])
def test_filesystem_case(case, namespaced_results):
    check(case, namespaced_results[case.id])


def _driver(spec_path: str, out_path: str) -> None:
    """In the mount namespace: run the named cases in-process, write their results as JSON."""
    global TEMPLATE
    spec = json.loads(Path(spec_path).read_text())
    TEMPLATE = Path(spec["template"])
    root = Path(spec_path).parent
    mounts = {"ro": str(root / "ro"), "full": str(root / "full")}
    by_id = {c.id: c for c in CASES}
    results = {cid: execute(by_id[cid], Path(d), mounts) for cid, d in spec["jobs"].items()}
    Path(out_path).write_text(json.dumps(results))


# --------------------------------------------------------------------------------------------------
# the table covers every command
# --------------------------------------------------------------------------------------------------
def test_every_command_has_cases():
    from harness.cli import _commands

    covered = {c.argv[0] for c in CASES}
    missing = [m.NAME for m in _commands() if m.NAME not in covered]
    assert not missing, f"commands without bad-input cases in tests/test_bad_input.py: {missing}"


GARBAGE = ("nan", "inf", "-inf", "", " ", "1e999", "-1", "0", "x", "4x", "0x", "1" + "0" * 30, "1.5", "\u00e9")


def test_typed_options_fail_only_as_argparse_errors(capsys):
    """Every option with a type, of every command, given garbage: argparse's own error (exit 2) or a
    value, never an exception from inside argparse."""
    import argparse

    from harness.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    tried = 0
    for name, cmd in sub.choices.items():
        for action in cmd._actions:
            if action.type is None or not action.option_strings:
                continue
            for bad in GARBAGE:
                tried += 1
                try:
                    cmd.parse_args([action.option_strings[0], bad])
                except SystemExit as e:
                    assert e.code == 2, (name, action.option_strings[0], bad)
    capsys.readouterr()
    assert tried > 200


def test_table_ids_are_unique_and_setups_exist():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert all(c.setup is None or c.setup in SETUPS for c in CASES)


# --------------------------------------------------------------------------------------------------
# interruptions: real subprocesses, and no process of theirs may be left
# --------------------------------------------------------------------------------------------------
SWEEP_TOML = """[experiment]
description = "a short parallel sweep to interrupt"
kind = "kernels"
platforms = ["pulp-open"]
steps = ["fw", "wg", "ig"]
p = [1.0, 0.9, 0.8, 0.7]

[[kernel]]
kind = "pw"
cin = 16
cout = 16
hw = 8
"""


def session_processes(sid: int) -> list[tuple[int, str]]:
    """Live (non-zombie) processes of session `sid`: everything a command started in its own session."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if int(rest[3]) == sid and rest[0] != "Z":
            found.append((int(entry), name))
    return found


def _pulp_odl(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, cwd=ROOT, **kw)


def _wait_for(cond, timeout: float, what: str):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _assert_nothing_left(sid: int) -> None:
    # a SIGKILLed parent's workers get their death signal at once; give them a moment to be reaped
    left = session_processes(sid)
    t0 = time.monotonic()
    while left and time.monotonic() - t0 < 3:
        time.sleep(0.05)
        left = session_processes(sid)
    assert not left, f"processes left running: {left}"


@pytest.fixture
def sweep(tmp_path):
    exp = _write(tmp_path / "sweep.toml", SWEEP_TOML)
    res = tmp_path / "res"
    return exp, res


def _start_sweep(exp, res, executor: str = "local") -> subprocess.Popen:
    # an ELF cache of its own: the kernels compile (a cached ELF would leave no clang to interrupt)
    env = {**os.environ, "PULP_ODL_ELF_CACHE": str(res.parent / "elf-cache")}
    p = _pulp_odl("experiment", str(exp), "--jobs", "2", "--no-cache", "--results", str(res), "--quiet",
                  "--executor", executor, env=env)
    # interrupt while both workers are busy and at least one has a clang child
    _wait_for(lambda: (lambda ps: len(ps) >= 3 and any(n.startswith("clang") for _, n in ps))(session_processes(p.pid)),
              60, "the sweep's workers to start compiling")
    return p


@pytest.mark.parametrize("executor", ["local", "dask"])
@pytest.mark.parametrize("sig,status,line,group", [(signal.SIGINT, 130, "pulp-odl: interrupted", False),
                                                   (signal.SIGINT, 130, "pulp-odl: interrupted", True),
                                                   (signal.SIGTERM, 143, "pulp-odl: interrupted (SIGTERM)", False),
                                                   (signal.SIGKILL, -9, None, False)],
                         ids=["SIGINT", "Ctrl-C", "SIGTERM", "SIGKILL"])
def test_interrupted_sweep_leaves_no_process(sweep, sig, status, line, group, executor):
    """Ctrl-C in a terminal signals the whole process group (the workers too): the same end."""
    p = _start_sweep(*sweep, executor=executor)
    if group:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode == status
    if line is not None:
        assert err.strip().splitlines()[-1] == line and "Traceback" not in err
    _assert_nothing_left(p.pid)


def test_interrupted_pool_leaves_no_manager_thread():
    """An interrupted local pool's manager thread has finished when stop returns: Python's exit hook
    would otherwise race it for the wake-up pipe and print an EBADF traceback under the one line."""
    import concurrent.futures as cf
    import multiprocessing
    import threading

    from harness import procs
    from harness.experiments import execute

    pool = execute.LocalPool(2)
    pool._pool = cf.ProcessPoolExecutor(max_workers=2, initializer=procs.worker_init, initargs=(os.getpid(),),
                                        mp_context=multiprocessing.get_context("fork"))
    busy = [pool._pool.submit(time.sleep, 30) for _ in range(3)]
    _wait_for(lambda: busy[0].running() and busy[1].running(), 10, "the workers to start")
    pool.stop(interrupted=True)
    managers = [t for t in threading.enumerate() if type(t).__name__ == "_ExecutorManagerThread"]
    assert not managers, f"manager thread still running after stop: {managers}"


def test_sigterm_saves_the_provenance_memo(sweep):
    """Rows finished before SIGTERM are in the cache and the provenance memo names them, so a rerun
    finds them without regenerating their programs."""
    exp, res = sweep
    p = _pulp_odl("experiment", str(exp), "--jobs", "2", "--no-cache", "--results", str(res), "--quiet")
    rows = res / "cache" / "rows"
    _wait_for(lambda: rows.is_dir() and len([f for f in rows.iterdir() if f.suffix == ".json"]) >= 2, 90,
              "two finished kernels")
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=30)
    assert p.returncode == 143
    _assert_nothing_left(p.pid)
    memos = list((res / "cache" / "provenance").glob("*.json"))
    assert len(memos) == 1
    done = [json.loads(f.read_text()) for f in rows.glob("*.json")]
    memo = json.loads(memos[0].read_text())
    assert len(memo) >= len(done) >= 2
    assert {json.dumps(e["provenance"], sort_keys=True) for e in done} <= \
        {json.dumps(v, sort_keys=True) for v in memo.values()}


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_a_long_simulation_within_a_second(template, sig, status):
    p = _pulp_odl("run", str(template / "loop.elf"), "--max-cycles", str(10 ** 15))
    time.sleep(1.5)     # well inside the simulation (the CLI starts in about a second)
    assert p.poll() is None
    t0 = time.monotonic()
    p.send_signal(sig)
    _, err = p.communicate(timeout=30)
    took = time.monotonic() - t0
    assert p.returncode == status and took < 1.0, (p.returncode, took, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith("pulp-odl: interrupted")
    _assert_nothing_left(p.pid)


def test_run_piped_into_head_keeps_the_program_status(template):
    """The reader stops after one line: the exit status is still the program's own (7)."""
    cmd = f"{sys.executable} -m harness run {template / 'hello.elf'} | head -1; exit ${{PIPESTATUS[0]}}"
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 7 and p.stdout.count("\n") == 1 and p.stderr == "", p.stderr


# --------------------------------------------------------------------------------------------------
# the result cache: refusals are not retried, damaged rows are recomputed and reported
# --------------------------------------------------------------------------------------------------
def test_kernel_that_does_not_fit_is_cached_not_retried(tmp_path):
    from harness.cli import main

    exp = _write(tmp_path / "big.toml", EXP_HEAD + '\n[[kernel]]\nkind = "pw"\ncin = 2048\ncout = 2048\nhw = 16\n')
    argv = ["experiment", str(exp), "--results", str(tmp_path / "res"), "--quiet", "--jobs", "1"]
    out = io.StringIO()
    for attempt in ("first", "second"):
        with contextlib.redirect_stderr(out), contextlib.redirect_stdout(io.StringIO()):
            assert main(argv) == 0, out.getvalue()
    first, second = [ln for ln in out.getvalue().splitlines() if " cached, " in ln]
    assert "0 cached, 1 run, 1 failed" in first
    assert "1 cached, 0 run, 1 failed" in second


def test_damaged_cache_row_is_recomputed_and_reported(tmp_path):
    from harness.cli import main

    exp = _write(tmp_path / "one.toml", EXP_OK)
    res = tmp_path / "res"
    argv = ["experiment", str(exp), "--results", str(res), "--quiet", "--jobs", "1"]
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    (row,) = (res / "cache" / "rows").glob("*.json")
    entry = json.loads(row.read_text())
    good = entry["row"]["cycles"]
    entry["row"]["cycles"] = good // 2          # an edited row: same key, same schema, wrong content
    row.write_text(json.dumps(entry))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 0
    text = err.getvalue()
    assert "0 cached, 1 run" in text and "1 cached row(s) were damaged and recomputed" in text
    assert "fails its checksum" in text
    assert json.loads(row.read_text())["row"]["cycles"] == good
    import pandas as pd

    assert pd.read_csv(res / "one" / "kernels.csv")["cycles"].tolist() == [good]


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--driver":
    _driver(sys.argv[2], sys.argv[3])
