// Python binding of the simulator: harness/backends/embedded.py is its only user.
#include <cstring>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

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
  return e;
}

PYBIND11_MODULE(_pulpsim, m) {
  m.doc() = "Cycle-level PULP MCU simulator";
  m.attr("ISA_SHA256") = isa_table_sha256;
  m.attr("SOURCE_SHA256") = PULPSIM_SOURCE_SHA256;
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
        std::vector<uint8_t>& m = mem == "flash" ? mc.flash : mc.hyperram;
        if (mem != "flash" && mem != "hyperram") throw std::runtime_error("unknown external memory " + mem);
        if ((uint64_t)off + s.size() > m.size()) throw std::runtime_error(mem + ": data past its end");
        std::memcpy(&m[off], s.data(), s.size());
      })
      .def("read_external", [](Machine& mc, const std::string& mem, uint32_t off, size_t n) {
        std::vector<uint8_t>& m = mem == "flash" ? mc.flash : mc.hyperram;
        if (mem != "flash" && mem != "hyperram") throw std::runtime_error("unknown external memory " + mem);
        if ((uint64_t)off + n > m.size()) throw std::runtime_error(mem + ": read past its end");
        return py::bytes(reinterpret_cast<const char*>(&m[off]), n);
      })
      .def("set_text", &Machine::set_text)
      .def_readwrite("ahead_refills", &Machine::ahead_refills)
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
