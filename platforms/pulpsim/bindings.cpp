// Python binding of the simulator: harness/backends/embedded.py is its only user.
#include <cstring>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "sim.hpp"

namespace py = pybind11;
using namespace pulpsim;

static const char* status_name(Status s) {
  switch (s) {
    case Status::Running: return "running";
    case Status::Exited: return "exit";
    case Status::Fault: return "fault";
    case Status::CycleLimit: return "cycle_limit";
    case Status::Deadlock: return "deadlock";
    case Status::Interrupted: return "interrupted";
    case Status::Rerun: return "rerun";
  }
  return "?";
}

static py::dict core_events(const Core& c) {
  py::dict e;
  e["cycles"] = c.cycle;
  e["instructions"] = c.ev[EV_INSTR];
  e["active_cycles"] = c.ev[EV_CYCLES];
  e["load_use"] = c.ev[X_LOAD_USE];
  e["mul"] = c.ev[X_MUL];
  e["dependency"] = c.ev[X_DEP];
  e["branch"] = c.ev[X_BRANCH];
  e["jump"] = c.ev[X_JUMP];
  e["fetch"] = c.ev[EV_IMISS];
  e["div"] = c.ev[X_DIV];
  e["fpu_div"] = c.ev[X_FDIV];
  e["fpu"] = c.ev[X_FPU];
  e["hwloop"] = c.ev[X_HWLOOP];
  e["fpu_contention"] = c.ev[X_FPU_CONT];
  e["bus"] = c.ev[X_BUS];
  e["misaligned"] = c.ev[X_MISALIGNED];
  e["wait"] = c.ev[X_WAIT];
  e["tcdm_conflict"] = c.ev[X_TCDM];
  e["loads"] = c.ev[EV_LD];
  e["stores"] = c.ev[EV_ST];
  e["branches"] = c.ev[EV_BRANCH];
  e["taken_branches"] = c.ev[EV_BTAKEN];
  e["jumps"] = c.ev[EV_JUMP];
  e["compressed"] = c.ev[EV_RVC];
  e["l1_accesses"] = c.ev[X_ACC_L1];
  e["l2_accesses"] = c.ev[X_ACC_L2];
  e["periph_accesses"] = c.ev[X_ACC_PERIPH];
  e["l2_bytes"] = c.ev[X_L2_BYTES];
  e["icache_refills"] = c.ev[X_IREFILL];
  e["icache_refill_bytes"] = c.ev[X_IREFILL_BYTES];
  return e;
}

// ---- what the energy model needs (harness/energy.py): event counts and time split over spans ----

using Spans = std::vector<std::pair<uint64_t, uint64_t>>;

// Sorted, disjoint, non-empty intervals covering the same cycles as `v`.
static Spans merged(Spans v) {
  std::sort(v.begin(), v.end());
  Spans out;
  for (auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

// Cycles in both (each sorted and disjoint).
static uint64_t overlap(const Spans& a, const Spans& b) {
  uint64_t n = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    uint64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) n += hi - lo;
    if (a[i].second < b[j].second) i++; else j++;
  }
  return n;
}

// The cycles a core ran: from its start to its last cycle, less the intervals it waited.
static Spans awake(const Core& c) {
  Spans out;
  if (c.start_cycle == UINT64_MAX) return out;
  uint64_t cur = c.start_cycle;
  for (auto& w : c.waits) {
    if (w.first > cur) out.emplace_back(cur, w.first);
    cur = std::max(cur, w.second);
  }
  if (c.cycle > cur) out.emplace_back(cur, c.cycle);
  return out;
}

static py::dict energy_counts(const Machine& mc, const Machine::Counts& k, const Spans& spans_in, uint64_t t_end) {
  Spans run{{0, t_end}};
  Spans spans = merged(spans_in);
  uint64_t span_cycles = overlap(spans, run);
  uint64_t ev[NEV] = {0};
  std::vector<uint64_t> ops(OP_COUNT, 0);
  for (size_t i = 0; i < mc.cores.size(); i++) {
    for (int e = 0; e < NEV; e++) ev[e] += k.ev[i * NEV + e];
    for (int o = 0; o < OP_COUNT; o++) ops[o] += k.ops[i * OP_COUNT + o];
  }
  // The cluster is powered from its first core's start; it is clock-gated while none of its cores runs.
  uint64_t cl_start = UINT64_MAX;
  Spans any;
  for (auto& c : mc.cores)
    if (!c->is_fc) {
      cl_start = std::min(cl_start, c->start_cycle);
      Spans a = awake(*c);
      any.insert(any.end(), a.begin(), a.end());
    }
  Spans on = cl_start < t_end ? Spans{{cl_start, t_end}} : Spans{};
  uint64_t on_cycles = overlap(spans, on);
  uint64_t wait = 0;
  for (auto& c : mc.cores) {
    uint64_t ran = overlap(spans, awake(*c));
    uint64_t powered = c->is_fc ? span_cycles : on_cycles;
    wait += powered > ran ? powered - ran : 0;
  }
  py::dict d;
  d["cycles"] = span_cycles;
  d["ops"] = ops;
  d["instructions"] = ev[EV_INSTR];
  d["active_cycles"] = ev[EV_CYCLES];
  d["l1_accesses"] = ev[X_ACC_L1];
  d["l2_accesses"] = ev[X_ACC_L2];
  d["periph_accesses"] = ev[X_ACC_PERIPH];
  d["l2_core_bytes"] = ev[X_L2_BYTES];
  d["icache_refills"] = ev[X_IREFILL];
  d["icache_refill_bytes"] = ev[X_IREFILL_BYTES];
  d["tcdm_conflict_cycles"] = ev[X_TCDM];
  d["l1_bank_reads"] = std::vector<uint64_t>(ev + X_L1_RD1, ev + X_L1_RD4 + 1);   // of 1, 2, 3, 4 bytes
  d["l1_bank_writes"] = std::vector<uint64_t>(ev + X_L1_WR1, ev + X_L1_WR4 + 1);
  d["cluster_dma_bytes"] = k.dma_bytes;
  d["udma_bytes"] = k.udma_bytes;
  d["hyperram_read_bytes"] = k.ext[0][0];
  d["hyperram_write_bytes"] = k.ext[0][1];
  d["flash_read_bytes"] = k.ext[1][0];
  d["flash_write_bytes"] = k.ext[1][1];
  d["core_wait_cycles"] = wait;
  d["cluster_on_cycles"] = on_cycles;
  d["cluster_gated_cycles"] = on_cycles - overlap(spans, merged(any));
  return d;
}

PYBIND11_MODULE(_pulpsim, m) {
  m.doc() = "Cycle-level PULP MCU simulator";
#ifdef __F16C__
  if (!__builtin_cpu_supports("f16c"))
    throw std::runtime_error("this build of the simulator uses the F16C instructions this host lacks; rebuild it here: make install");
#endif
  m.attr("ISA_SHA256") = isa_table_sha256;
  m.attr("SOURCE_SHA256") = PULPSIM_SOURCE_SHA256;
  m.def("op_table", []() {
    py::list out;
    for (int o = 0; o < OP_COUNT; o++) out.append(py::make_tuple(op_info[o].name, op_info[o].ext));
    return out;
  }, "(name, extension) of every operation, in the order of the energy counts' `ops`");
  m.def("disasm", &disasm, py::arg("word"), py::arg("pc") = 0, py::arg("fp_separate") = false);
  m.def(
      "decode_name",
      [](uint32_t w, bool fp_sep) {
        Insn d;
        isa_decode(w, d, fp_sep);
        return std::string(d.op == OP_ILLEGAL ? "" : op_info[d.op].name);
      },
      py::arg("word"), py::arg("fp_separate") = false);

  py::class_<Machine>(m, "Machine")
      .def(py::init<const std::map<std::string, double>&>())
      .def("load", [](Machine& mc, uint32_t addr, py::bytes data) {
        std::string s = data;
        mc.load_bytes(addr, reinterpret_cast<const uint8_t*>(s.data()), s.size());
      })
      .def("read", [](Machine& mc, uint32_t addr, size_t n) {
        std::string s(n, '\0');
        mc.read_bytes(addr, reinterpret_cast<uint8_t*>(&s[0]), n);
        return py::bytes(s);
      })
      // The external memories are reached only through the uDMA: a harness fills and reads them
      // directly, as the state a program finds in HyperRAM or flash (e.g. weights a previous step left).
      .def("load_external", [](Machine& mc, const std::string& mem, uint32_t off, py::bytes data) {
        std::string s = data;
        Memory& m = mem == "flash" ? mc.flash : mc.hyperram;
        if (mem != "flash" && mem != "hyperram") throw std::runtime_error("unknown external memory " + mem);
        if ((uint64_t)off + s.size() > m.size()) throw std::runtime_error(mem + ": data past its end");
        std::memcpy(&m[off], s.data(), s.size());
      })
      .def("read_external", [](Machine& mc, const std::string& mem, uint32_t off, size_t n) {
        Memory& m = mem == "flash" ? mc.flash : mc.hyperram;
        if (mem != "flash" && mem != "hyperram") throw std::runtime_error("unknown external memory " + mem);
        if ((uint64_t)off + n > m.size()) throw std::runtime_error(mem + ": read past its end");
        return py::bytes(reinterpret_cast<const char*>(&m[off]), n);
      })
      .def("set_text", &Machine::set_text)
      .def_readwrite("ahead_refills", &Machine::ahead_refills)
      .def_readwrite("run_ahead", &Machine::run_ahead)
      // Record a timeline of the next run: spans that overlap [from, to), at most max_samples counter
      // samples per core and max_spans spans; `functions` lists (entry address, index >= 1) of the
      // functions whose calls become spans.
      .def("timeline", [](Machine& mc, uint64_t from, uint64_t to, uint64_t max_samples, uint64_t max_spans,
                          const std::vector<std::pair<uint32_t, uint32_t>>& functions) {
        auto tl = std::make_unique<Timeline>();
        tl->from = from;
        tl->to = to;
        tl->max_samples = std::max<uint64_t>(2, max_samples);
        tl->max_spans = std::max<uint64_t>(1, max_spans);
        tl->samples.assign(mc.cores.size(), {});
        tl->frames.assign(mc.cores.size(), {});
        tl->text_lo = mc.text_lo;
        tl->func_at.assign((mc.text_hi - mc.text_lo) / 2, 0);
        for (auto& f : functions)
          if (f.first - mc.text_lo < mc.text_hi - mc.text_lo) tl->func_at[(f.first - mc.text_lo) >> 1] = f.second;
        mc.timeline = tl.get();
        mc.timeline_owner = std::move(tl);
      }, py::arg("start") = 0, py::arg("end") = UINT64_MAX, py::arg("max_samples") = 4096,
         py::arg("max_spans") = 2000000, py::arg("functions") = std::vector<std::pair<uint32_t, uint32_t>>())
      // What the run recorded: spans as packed records (uint32 track, kind; uint64 start, end, a, b),
      // per core the counter samples (Timeline::NCOUNTERS uint64 each), the final sample period and
      // the shortest span kept.
      .def("timeline_data", [](Machine& mc) {
        py::dict d;
        Timeline* tl = mc.timeline;
        if (!tl) return d;
        d["spans"] = py::bytes(reinterpret_cast<const char*>(tl->spans.data()), tl->spans.size() * sizeof(Timeline::Span));
        py::list samples;
        for (auto& v : tl->samples)
          samples.append(py::bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(uint64_t)));
        d["samples"] = samples;
        d["counters"] = (int)Timeline::NCOUNTERS;
        d["period"] = tl->period;
        d["min_span"] = tl->min_span;
        d["dropped"] = tl->dropped;
        return d;
      })
      .def("start", &Machine::start_fc)
      .def("run", [](Machine& mc, uint64_t max_cycles, const std::string& trace_path) {
        if (!trace_path.empty()) {
          mc.trace = std::fopen(trace_path.c_str(), "w");
          if (!mc.trace) {
            PyErr_SetFromErrnoWithFilename(PyExc_OSError, trace_path.c_str());
            throw py::error_already_set();
          }
        }
        // Python runs its signal handlers (Ctrl-C, SIGTERM) only between bytecodes: the poll lets
        // them run during a long simulation, and a handler that raises stops the run.
        PyObject *etype = nullptr, *evalue = nullptr, *etb = nullptr;
        mc.poll = [&]() {
          py::gil_scoped_acquire gil;
          if (PyErr_CheckSignals() == 0) return false;
          PyErr_Fetch(&etype, &evalue, &etb);
          return true;
        };
        auto t0 = std::chrono::steady_clock::now();
        Status s;
        {
          py::gil_scoped_release release;
          s = mc.run(max_cycles);
        }
        mc.poll = nullptr;
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::string trace_error;
        if (mc.trace) {
          // a full disk shows only here: buffered writes fail late
          bool bad = std::ferror(mc.trace);
          int err = bad ? errno : 0;
          if (std::fclose(mc.trace) != 0 && !bad) {
            bad = true;
            err = errno;
          }
          mc.trace = nullptr;
          if (bad) trace_error = std::strerror(err ? err : EIO);
        }
        if (s == Status::Interrupted) {
          PyErr_Restore(etype, evalue, etb);
          throw py::error_already_set();
        }
        if (mc.timeline) {
          uint64_t end = 0;
          for (auto& c : mc.cores) end = std::max(end, c->cycle);
          mc.timeline->finish(mc, end);
        }
        py::dict r;
        if (!trace_error.empty()) r["trace_error"] = trace_error;
        r["status"] = status_name(s);
        r["exit_code"] = mc.exit_code;
        r["stdout"] = py::bytes(mc.out);
        r["host_seconds"] = secs;
        for (auto& c : mc.cores) c->sync_counts();
        uint64_t cycles = 0, instr = 0;
        py::list cores;
        for (auto& c : mc.cores) {
          if (!c->is_fc && c->ev[EV_INSTR] == 0) continue;  // cores that never ran
          if (c->cycle > cycles) cycles = c->cycle;
          instr += c->ev[EV_INSTR];
          py::dict cd = core_events(*c);
          cd["core"] = c->is_fc ? std::string("fc") : std::to_string(c->cluster_core);
          cd["event_wait"] = c->ev[X_WAIT];
          cd["fpu_contention_stalls"] = c->ev[X_FPU_CONT];
          cores.append(cd);
        }
        r["cycles"] = cycles;
        r["instructions"] = instr;
        r["cores"] = cores;
        py::list dmas;
        py::dict cl;
        cl["name"] = "cluster_dma";
        cl["busy_cycles"] = mc.dma_busy_cycles;
        cl["bytes"] = mc.dma_bytes;
        cl["transfers"] = mc.dma_transfers;
        dmas.append(cl);
        py::dict ud;
        ud["name"] = "udma";
        ud["busy_cycles"] = mc.udma_busy_cycles;
        ud["bytes"] = mc.udma_bytes;
        ud["transfers"] = mc.udma_transfers;
        dmas.append(ud);
        r["dmas"] = dmas;
        Machine::Counts all;
        mc.counts_now(all);
        r["energy_counts"] = energy_counts(mc, all, {{0, cycles}}, cycles);
        if (!mc.energy_spans.empty()) {
          r["energy_window"] = energy_counts(mc, mc.win_sum, mc.energy_spans, cycles);
          r["energy_windows"] = mc.energy_spans.size();
        }
        if (s != Status::Exited) {
          py::dict f;
          f["kind"] = mc.fault.kind;
          f["detail"] = mc.fault.detail;
          f["pc"] = mc.fault.pc;
          f["core"] = mc.fault.core;
          if (mc.fault.has_addr) f["addr"] = mc.fault.addr;
          r["fault"] = f;
        }
        return r;
      }, py::arg("max_cycles"), py::arg("trace") = std::string());
}
