// The timeline recorder behind pulp-odl's --timeline: spans of sleeps, function calls and DMA
// transfers, and core counters sampled at a period that doubles as a run grows, so that a long run
// stays within max_samples samples per core and max_spans spans (then the shortest spans are left
// out, and `dropped` says so). harness/timeline.py turns what it holds into Chrome trace events.
#include <algorithm>

#include "sim.hpp"

namespace pulpsim {

void Timeline::span(uint32_t track, uint32_t kind, uint64_t s, uint64_t e, uint64_t a, uint64_t b) {
  if (e <= s || !in_window(s, e) || e - s < min_span) return;
  spans.push_back(Span{track, kind, s, e, a, b});
  while (spans.size() > max_spans) {
    min_span = min_span ? 2 * min_span : 2;
    dropped = true;
    uint64_t m = min_span;
    spans.erase(std::remove_if(spans.begin(), spans.end(), [m](const Span& x) { return x.end - x.start < m; }),
                spans.end());
  }
}

void Timeline::record(Core& c) {
  c.sync_counts();   // INSTR follows from the per-operation counts
  const uint64_t* ev = c.ev;
  uint64_t row[NCOUNTERS];
  row[C_CYCLE] = c.cycle;
  row[C_INSTR] = ev[EV_INSTR];
  row[C_ACTIVE] = ev[EV_CYCLES];
  row[C_FPU_CONT] = ev[X_FPU_CONT];
  row[C_TCDM] = ev[X_TCDM];
  row[C_DEPEND] = ev[X_LOAD_USE] + ev[X_DEP] + ev[X_MUL];
  row[C_BUS] = ev[X_BUS] + ev[X_MISALIGNED];
  row[C_FETCH] = ev[EV_IMISS];
  row[C_WAIT] = ev[X_WAIT];
  row[C_MULTI] = ev[X_FPU] + ev[X_FDIV] + ev[X_DIV];
  row[C_CONTROL] = ev[X_BRANCH] + ev[X_JUMP] + ev[X_HWLOOP];
  std::vector<uint64_t>& v = samples[c.index];
  v.insert(v.end(), row, row + NCOUNTERS);
}

void Timeline::sample(Core& c) {
  std::vector<uint64_t>& v = samples[c.index];
  if (c.cycle + period >= from && c.cycle < to) record(c);
  c.tl_next = (c.cycle / period + 1) * period;
  if (v.size() / NCOUNTERS <= max_samples) return;
  // Too many samples: twice the period, keeping each core's first sample in every new period.
  period *= 2;
  for (auto& s : samples) {
    std::vector<uint64_t> kept;
    uint64_t last = UINT64_MAX;
    for (size_t i = 0; i < s.size(); i += NCOUNTERS) {
      uint64_t bucket = s[i + C_CYCLE] / period;
      if (bucket == last) continue;
      last = bucket;
      kept.insert(kept.end(), s.begin() + i, s.begin() + i + NCOUNTERS);
    }
    s.swap(kept);
  }
  for (auto& k : c.m->cores) k->tl_next = (k->cycle / period + 1) * period;
}

void Timeline::call(Core& c) {
  std::vector<Frame>& f = frames[c.index];
  if (f.size() >= 256) return;   // deeper calls are not followed
  f.push_back(Frame{c.X[1], c.X[2], func_at[(c.pc - text_lo) >> 1], c.cycle});
}

void Timeline::ret(Core& c) {
  std::vector<Frame>& f = frames[c.index];
  while (!f.empty() && f.back().ra == c.pc && f.back().sp == c.X[2]) {
    span(c.index, K_FUNCTION, f.back().start, c.cycle, f.back().fn, f.size() - 1);
    f.pop_back();
  }
}

// What a core slept for: for an event wait, the events that woke it (`bits`), since the mask it
// waits with may hold more (the runtime leaves barrier, mutex and dispatch events enabled).
uint32_t sleep_kind(const Core& c, uint32_t bits) {
  switch (c.wait) {
    case Core::W_WFI: return Timeline::K_WFI;
    case Core::W_DISPATCH: return Timeline::K_DISPATCH;
    case Core::W_MUTEX: return Timeline::K_MUTEX;
    case Core::W_EVENT:
      if (bits >> EU_EVT_BARRIER & 1) return Timeline::K_BARRIER;
      if ((bits >> EU_EVT_DMA & 1) || (bits >> EU_EVT_DMA_EXT & 1)) return Timeline::K_DMA_EVENT;
      return Timeline::K_EVENT;
    default: return Timeline::K_EVENT;
  }
}

// The end of a run: what is still open (cores asleep, functions not returned from) ends at `end`,
// and every core that ran gets a last sample.
void Timeline::finish(Machine& m, uint64_t end) {
  for (auto& k : m.cores) {
    Core& c = *k;
    c.sync_counts();
    if (c.ev[EV_INSTR] == 0) continue;
    // never woken: what it waits for is its mask, when that names one event
    uint32_t m = c.wait_arg;
    if (c.active && c.sleeping) span(c.index, sleep_kind(c, (m & (m - 1)) == 0 ? m : 0), c.cycle, end);
    std::vector<Frame>& f = frames[c.index];
    while (!f.empty()) {
      span(c.index, K_FUNCTION, f.back().start, std::max(end, f.back().start), f.back().fn, f.size() - 1);
      f.pop_back();
    }
    std::vector<uint64_t>& v = samples[c.index];
    bool have = !v.empty() && v[v.size() - NCOUNTERS + C_CYCLE] == c.cycle;
    if (!have && c.cycle + period >= from && (v.size() || c.cycle < to)) record(c);
  }
}

}  // namespace pulpsim
