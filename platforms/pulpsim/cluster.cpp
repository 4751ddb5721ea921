// The cluster's shared blocks: event unit (events, barriers, dispatch FIFO, mutexes), cluster DMA
// (MCHAN), and the SoC's peripheral DMA (uDMA) with the HyperRAM / HyperFlash behind it.
// Register layouts and timing follow platform-facts sections 5 and 6 and the calibration kit.
#include <algorithm>
#include <cstring>

#include "sim.hpp"

namespace pulpsim {

// ---------------------------------------------------------------- timed events

void Machine::schedule(uint64_t time, int kind, uint32_t a, uint32_t b) {
  lower_bound(time ? time - 1 : 0);
  timed.push_back(Timed{time, timed_seq++, kind, a, b});
  std::push_heap(timed.begin(), timed.end(), [](const Timed& x, const Timed& y) {
    return x.time != y.time ? x.time > y.time : x.seq > y.seq;
  });
}

void Machine::process_timed(uint64_t upto) {
  auto later = [](const Timed& x, const Timed& y) { return x.time != y.time ? x.time > y.time : x.seq > y.seq; };
  while (!timed.empty() && timed.front().time <= upto && status == Status::Running) {
    std::pop_heap(timed.begin(), timed.end(), later);
    Timed e = timed.back();
    timed.pop_back();
    switch (e.kind) {
      case T_DMA_DONE: dma_complete(e.a, e.time); break;
      case T_UDMA_DONE: {
        HyperTrans& h = hyper[e.a];
        h.busy = false;
        soc_event(e.b ? HYPER_EOT_RX_EVENT : HYPER_EOT_TX_EVENT, e.time);
        break;
      }
      case T_CORE_START: {
        Core& c = pe((int)e.a);
        keys_stale = true;
        if (!c.active) {
          c.active = true;
          c.sleeping = false;
          c.pc = e.b;
          c.mtvec = e.b & ~0xffu;
          c.cycle = std::max(c.cycle, e.time);
          c.start_cycle = c.cycle;
          woke(c);
        }
        break;
      }
    }
  }
}

// ---------------------------------------------------------------- event unit

void Core::sleep_on(WaitKind k, uint32_t rd, uint32_t arg, bool clear, uint32_t delay) {
  sleeping = true;
  wait = k;
  wait_rd = rd;
  wait_arg = arg;
  wait_clear = clear;
  wait_delay = delay;
  sleep_from = t;
  block_pending = true;
}

static void wake(Core& c, uint32_t value, uint64_t when) {
  // The waiting load returns `value`; the next instruction issues wait_delay cycles after the
  // wake-up condition (never before the waiting instruction itself could have completed).
  uint64_t resume = when + c.wait_delay;
  if (resume < c.sleep_from + c.wait_delay) resume = c.sleep_from + c.wait_delay;
  if (c.wait_rd) {
    c.X[c.wait_rd] = value;
    c.ready[c.wait_rd] = 0;
  }
  if (resume > c.cycle) {
    if (c.m->timeline) c.m->timeline->span(c.index, sleep_kind(c, value), c.cycle, resume);
    c.ev[X_WAIT] += resume - c.cycle;
    c.waits.emplace_back(c.cycle, resume);
    c.cycle = resume;
  }
  c.sleeping = false;
  c.wait = Core::W_NONE;
  c.m->keys_stale = true;
  c.m->woke(c);
  // The running core must not get ahead of it, nor take its turn in that cycle if it now runs first.
  c.m->lower_bound(c.cycle - 1);
}

void Machine::eu_try_wake(Core& c, uint64_t when) {
  if (!c.sleeping || c.wait != Core::W_EVENT) return;
  int i = c.cluster_core;
  uint32_t hit = eu.buffer[i] & c.wait_arg;
  if (!hit) return;
  if (c.wait_clear) eu.buffer[i] &= ~hit;
  wake(c, hit, when);
}

void Machine::eu_set_events(uint32_t core_mask, uint32_t bits, uint64_t when) {
  for (int i = 0; i < n_cluster; i++) {
    if (!(core_mask >> i & 1)) continue;
    eu.buffer[i] |= bits;
    eu_try_wake(pe(i), when);
  }
}

void Machine::barrier_arrive(int b, int core, uint64_t when) {
  Barrier& br = eu.bar[b];
  br.status |= 1u << core;
  if (br.trigger_mask && (br.status & br.trigger_mask) == br.trigger_mask) {
    br.status = 0;
    eu_set_events(br.target_mask, 1u << EU_EVT_BARRIER, when);
  }
}

// A read of an event-unit register from cluster core c (offset inside the per-core demux view).
// Registers that wait make the core sleep (block_pending) unless their condition already holds.
bool Machine::eu_read(Core& c, uint32_t off, uint32_t& value, bool elw) {
  int i = c.cluster_core;
  if (i < 0) return false;
  c.eu_touched = true;
  // the overhead of the waiting load, the event unit's reply, and the load's own cycle
  uint32_t delay = c.t_elw_overhead + c.t_eu_wakeup + 1 + (elw ? 0 : c.t_eu_lw_extra);
  auto wait_events = [&](uint32_t mask, bool clear) {
    uint32_t hit = eu.buffer[i] & mask;
    if (hit) {
      if (clear) eu.buffer[i] &= ~hit;
      value = hit;
      c.extra += delay - 1;
      woke(c);  // GVSoC's event unit still puts the core to sleep and wakes it (eu_v3 wait_event)
    } else {
      c.sleep_on(Core::W_EVENT, 0, mask, clear, delay);
    }
  };
  value = 0;
  switch (off) {
    case EU_MASK: value = eu.mask[i]; return true;
    case EU_IRQ_MASK: value = eu.irq_mask[i]; return true;
    case EU_BUFFER: value = eu.buffer[i]; return true;
    case EU_BUFFER_MASKED: value = eu.buffer[i] & eu.mask[i]; return true;
    case EU_BUFFER_IRQ_MASKED: value = eu.buffer[i] & eu.irq_mask[i]; return true;
    case EU_EVENT_WAIT: wait_events(eu.mask[i], false); return true;
    case EU_EVENT_WAIT_CLEAR: wait_events(eu.mask[i], true); return true;
    case EU_DISPATCH: {  // dispatch FIFO pop
      auto& f = eu.fifo[i];
      if (!f.empty()) {
        // a value is there: GVSoC's dispatch unit answers at once, like plain memory (no wake-up)
        value = f.front();
        f.erase(f.begin());
        c.eu_touched = false;
      } else {
        c.sleep_on(Core::W_DISPATCH, 0, 0, false, delay);
      }
      return true;
    }
    case EU_TEAM_CONFIG: value = eu.team; return true;
    default: break;
  }
  if (off >= EU_MUTEX && off < EU_SW_EVENT) {  // mutex: a read locks (and waits while another core holds it)
    int mx = (int)(((off - EU_MUTEX) >> 2) % EU_MUTEX_COUNT);
    if (eu.mutex_owner[mx] < 0) {  // free: locked at once, like a plain access (GVSoC's mutex unit)
      eu.mutex_owner[mx] = i;
      c.eu_touched = false;
    } else {
      c.sleep_on(Core::W_MUTEX, 0, (uint32_t)mx, false, delay);
    }
    return true;
  }
  if (off >= EU_BARRIER && off < EU_BARRIER + EU_BARRIER_STRIDE * EU_BARRIER_COUNT) {
    int b = (int)((off - EU_BARRIER) / EU_BARRIER_STRIDE);
    switch ((off - EU_BARRIER) % EU_BARRIER_STRIDE) {
      case EU_BAR_TRIGGER_MASK: value = eu.bar[b].trigger_mask; return true;
      case EU_BAR_STATUS: value = eu.bar[b].status; return true;
      case EU_BAR_STATUS_SUMMARY: value = eu.bar[b].status ? 1 : 0; return true;
      case EU_BAR_TARGET_MASK: value = eu.bar[b].target_mask; return true;
      case EU_BAR_TRIGGER_WAIT:
      case EU_BAR_TRIGGER_WAIT_CLEAR:
        barrier_arrive(b, i, c.t);
        wait_events(1u << EU_EVT_BARRIER, (off - EU_BARRIER) % EU_BARRIER_STRIDE == EU_BAR_TRIGGER_WAIT_CLEAR);
        return true;
      default: return true;
    }
  }
  return true;  // unimplemented registers read 0, as in the model
}

bool Machine::eu_write(Core& c, uint32_t off, uint32_t v) {
  int i = c.cluster_core;
  if (i < 0) return false;
  switch (off) {
    case EU_MASK: eu.mask[i] = v; eu_try_wake(c, c.t); return true;
    case EU_MASK_AND: eu.mask[i] &= ~v; return true;
    case EU_MASK_OR: eu.mask[i] |= v; eu_try_wake(c, c.t); return true;
    case EU_IRQ_MASK: eu.irq_mask[i] = v; return true;
    case EU_IRQ_MASK_AND: eu.irq_mask[i] &= ~v; return true;
    case EU_IRQ_MASK_OR: eu.irq_mask[i] |= v; return true;
    case EU_BUFFER_CLEAR: eu.buffer[i] &= ~v; return true;
    case EU_DISPATCH: {  // dispatch push to every core of the team
      for (int j = 0; j < n_cluster; j++) {
        if (!(eu.team >> j & 1)) continue;
        Core& p = pe(j);
        if (p.sleeping && p.wait == Core::W_DISPATCH)
          wake(p, v, c.t);
        else
          eu.fifo[j].push_back(v);
      }
      return true;
    }
    case EU_TEAM_CONFIG: eu.team = v; return true;
    default: break;
  }
  if (off >= EU_MUTEX && off < EU_SW_EVENT) {  // mutex unlock: hand over to the waiter of lowest index (GVSoC)
    int mx = (int)(((off - EU_MUTEX) >> 2) % EU_MUTEX_COUNT);
    Core* next = nullptr;
    for (int j = 0; j < n_cluster && !next; j++) {
      Core& p = pe(j);
      if (p.sleeping && p.wait == Core::W_MUTEX && p.wait_arg == (uint32_t)mx) next = &p;
    }
    eu.mutex_owner[mx] = next ? next->cluster_core : -1;
    if (next) wake(*next, 0, c.t);
    return true;
  }
  if (off >= EU_SW_EVENT && off < EU_SW_EVENT + 4 * EU_SW_EVENT_COUNT) {  // software event e to a core mask (0 = all cores)
    int e = (off - EU_SW_EVENT) >> 2;
    uint32_t mask = v ? v : (1u << n_cluster) - 1;
    eu_set_events(mask, 1u << e, c.t);
    return true;
  }
  if (off >= EU_BARRIER && off < EU_BARRIER + EU_BARRIER_STRIDE * EU_BARRIER_COUNT) {
    int b = (int)((off - EU_BARRIER) / EU_BARRIER_STRIDE);
    switch ((off - EU_BARRIER) % EU_BARRIER_STRIDE) {
      case EU_BAR_TRIGGER_MASK: eu.bar[b].trigger_mask = v; return true;
      case EU_BAR_TARGET_MASK: eu.bar[b].target_mask = v; return true;
      case EU_BAR_TRIGGER:
        for (int j = 0; j < n_cluster; j++)
          if (v >> j & 1) barrier_arrive(b, j, c.t);
        return true;
      case EU_BAR_TRIGGER_SELF: barrier_arrive(b, i, c.t); return true;
      default: return true;
    }
  }
  return true;
}

// ---------------------------------------------------------------- cluster DMA (MCHAN v7)

bool Machine::dma_read(Core& c, uint32_t off, int channel, uint32_t& value) {
  const uint32_t all = (1u << MCHAN_COUNTERS) - 1;
  if (off == MCHAN_CMD) {  // allocate a transfer counter
    if (dma_alloc == all) {
      // The hardware would stall this core until software frees a counter, which it never can.
      c.fault("DMA error", "all " + std::to_string(MCHAN_COUNTERS) +
                               " cluster-DMA transfer counters are in use; wait for transfers (pi_cl_dma_cmd_wait) to free them");
      return true;
    }
    for (uint32_t tid = 0; tid < MCHAN_COUNTERS; tid++) {
      if (!(dma_alloc >> tid & 1)) {
        dma_alloc |= 1u << tid;
        dma_chan[channel].tid = (int)tid;
        value = tid;
        return true;
      }
    }
  }
  if (off == MCHAN_STATUS) {
    value = (dma_alloc << 16) | dma_active;
    return true;
  }
  value = 0;
  return true;
}

bool Machine::dma_write(Core& c, uint32_t off, int channel, uint32_t v) {
  if (off == MCHAN_STATUS) {  // free transfer counters
    dma_alloc &= ~(v & ((1u << MCHAN_COUNTERS) - 1));
    return true;
  }
  if (off != MCHAN_CMD) return true;
  DmaChannel& ch = dma_chan[channel];
  ch.words[ch.n++] = v;
  bool two_d = ch.words[0] >> MCHAN_TWOD_BIT & 1;
  if (ch.n < (two_d ? 5 : 3)) return true;
  ch.n = 0;
  DmaXfer x{};
  uint32_t w0 = ch.words[0];
  x.len = w0 & ((1u << MCHAN_LEN_BITS) - 1);
  x.to_l1 = w0 >> MCHAN_DIR_BIT & 1;
  x.two_d = two_d;
  x.event = w0 >> MCHAN_EVENT_BIT & 1;
  x.irq = w0 >> MCHAN_IRQ_BIT & 1;
  x.bcast = w0 >> MCHAN_BCAST_BIT & 1;
  x.loc = ch.words[1] & ((1u << MCHAN_LOC_BITS) - 1);
  x.ext = ch.words[2];
  x.row_len = two_d ? ch.words[3] : x.len;
  x.stride = two_d ? ch.words[4] : x.len;
  x.channel = channel;
  // the counter this channel's last CMD read allocated
  uint32_t tid = ch.tid < 0 ? MCHAN_COUNTERS : (uint32_t)ch.tid;
  ch.tid = -1;
  if (tid == MCHAN_COUNTERS || !(dma_alloc >> tid & 1) || (dma_active >> tid & 1)) {
    c.fault("DMA error", "transfer queued without an allocated counter (read CMD first)");
    return true;
  }
  if (x.loc + x.len > l1_size) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "transfer of %u bytes at L1 offset 0x%05x runs past the end of L1", x.len, x.loc);
    c.fault("DMA error", buf, true, ch.words[1]);
    return true;
  }
  if (x.row_len == 0 && x.len) {
    c.fault("DMA error", "2-D transfer with a row length of 0");
    return true;
  }
  x.tid = tid;
  // Timing: issue cycles through the queues, then dma.bytes_per_cycle on the TCDM side, after the
  // transfers before it in the same direction; every row of a 2-D transfer takes at least one cycle;
  // L1 -> L2 adds one cycle per dma.l1_to_l2_burst bytes.
  uint64_t start = std::max<uint64_t>(c.t + 1 + dma_issue, dma_free_at[x.to_l1]);
  uint64_t dur = 0;
  uint32_t rows = x.two_d ? (x.len + x.row_len - 1) / x.row_len : 1;
  for (uint32_t r = 0; r < rows; r++) {
    uint32_t n = std::min(x.row_len, x.len - r * x.row_len);
    dur += std::max<uint64_t>(1, (n + dma_bpc - 1) / dma_bpc);
    if (!x.to_l1) dur += (n + dma_burst - 1) / dma_burst;
  }
  x.end = start + dur;
  dma_free_at[x.to_l1] = x.end;
  dma_busy_cycles += dur;
  dma_bytes += x.len;
  dma_transfers++;
  dma_active |= 1u << tid;
  dma_inflight[tid] = x;
  schedule(x.end, T_DMA_DONE, tid);
  if (timeline)
    timeline->span(Timeline::T_CLUSTER_DMA, x.to_l1 ? Timeline::K_DMA_TO_L1 : Timeline::K_DMA_TO_L2, start, x.end, x.len,
                   (uint64_t)channel | (uint64_t)rows << 8);
  return true;
}

void Machine::dma_complete(uint32_t tid, uint64_t when) {
  auto it = dma_inflight.find(tid);
  if (it == dma_inflight.end()) return;
  DmaXfer x = it->second;
  dma_inflight.erase(it);
  uint32_t rows = x.two_d ? (x.len + x.row_len - 1) / x.row_len : 1;
  uint32_t done = 0;
  for (uint32_t r = 0; r < rows; r++) {
    uint32_t n = std::min(x.row_len, x.len - done);
    uint32_t ext = x.ext + r * x.stride;
    uint8_t* e = host_ptr(ext, n);
    if (!e) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "transfer row %u of %u bytes at external address 0x%08x is outside L2", r, n, ext);
      status = Status::Fault;
      fault.kind = "DMA error";
      fault.detail = buf;
      fault.has_addr = true;
      fault.addr = ext;
      fault.core = 1 + (x.channel < n_cluster ? x.channel : 0);
      return;
    }
    uint8_t* l = &l1[x.loc + done];
    if (x.to_l1)
      std::memcpy(l, e, n);
    else {
      std::memcpy(e, l, n);
      invalidate(ext, (int)n);
    }
    done += n;
  }
  dma_active &= ~(1u << tid);
  // Completion events: with broadcast every core channel raises the DMA event; the shared (periph)
  // channel only ever raises the external line, on every core.
  uint32_t all = (1u << n_cluster) - 1;
  bool periph = x.channel >= n_cluster;
  if (x.event && x.bcast) eu_set_events(all, 1u << EU_EVT_DMA, when);
  if (x.event && !x.bcast && !periph) eu_set_events(1u << x.channel, 1u << EU_EVT_DMA, when);
  if (periph) eu_set_events(all, 1u << EU_EVT_DMA_EXT, when);
}

// ---------------------------------------------------------------- uDMA and HyperBus memories

// The FC's wfi ends only while a line of its interrupt controller is pending and unmasked (GVSoC's ISS:
// wfi waits for an interrupt request, which the ITC raises while STATUS & MASK is not zero); with
// interrupts disabled it then just goes on.
void Machine::itc_set_status(uint32_t v, uint64_t when) {
  itc_status = v;
  Core& f = fc();
  if (itc_pending() && f.sleeping && f.wait == Core::W_WFI) {
    f.wait_delay = 1;
    wake(f, 0, when);
  }
}

void Machine::soc_event(uint32_t event, uint64_t when) {
  if (event / 32 < SOC_EU_MASK_REGS && (soc_eu_fc_mask[event / 32] >> (event % 32) & 1)) return;
  if (itc_fifo.size() >= ITC_FIFO_SIZE) return;  // a full FIFO drops the event, as GVSoC's
  itc_fifo.push_back(event);
  if (itc_fifo.size() == 1) itc_set_status(itc_status | 1u << ITC_FIFO_IRQ, when);
}

bool Machine::itc_read(uint32_t off, uint32_t& value, uint64_t when) {
  switch (off) {
    case ITC_MASK: value = itc_mask; return true;
    case ITC_STATUS: value = itc_status; return true;
    case ITC_ACK: value = itc_ack; return true;
    case ITC_FIFO:
      value = 0;
      if (!itc_fifo.empty()) {
        value = itc_fifo.front();
        itc_fifo.erase(itc_fifo.begin());
        if (!itc_fifo.empty()) itc_set_status(itc_status | 1u << ITC_FIFO_IRQ, when);
      }
      return true;
    default: value = 0; return true;
  }
}

void Machine::itc_write(uint32_t off, uint32_t v, uint64_t when) {
  switch (off) {
    case ITC_MASK: itc_mask = v; break;
    case ITC_MASK_SET: itc_mask |= v; break;
    case ITC_MASK_CLR: itc_mask &= ~v; break;
    case ITC_STATUS: itc_set_status(v, when); return;
    case ITC_STATUS_SET: itc_set_status(itc_status | v, when); return;
    case ITC_STATUS_CLR: itc_set_status(itc_status & ~v, when); return;
    case ITC_ACK: itc_ack = v; return;
    case ITC_ACK_SET: itc_ack |= v; return;
    case ITC_ACK_CLR: itc_ack &= ~v; return;
    default: return;
  }
  itc_set_status(itc_status, when);  // a new mask may uncover a pending line
}

// Offsets relative to the hyper peripheral: its transaction channels, then the common registers.
bool Machine::udma_read(Core& c, uint32_t off, uint32_t& value) {
  (void)c;
  value = 0;
  if (off >= HYPER_COMMON) {
    if (off == HYPER_COMMON + HYPER_TID_ALLOC) {  // a free transaction id, or the channel count if none
      value = HYPER_CHANNELS;
      for (uint32_t k = 0; k < HYPER_CHANNELS; k++) {
        uint32_t id = (hyper_next_id + k) % HYPER_CHANNELS;
        if (!hyper[id].busy) {
          value = id;
          hyper_next_id = (id + 1) % HYPER_CHANNELS;
          break;
        }
      }
    } else if (off == HYPER_COMMON + HYPER_MEM_SEL) {
      value = hyper_mem_sel;
    }
    return true;
  }
  HyperTrans& h = hyper[off / HYPER_CHANNEL_STRIDE];
  switch (off % HYPER_CHANNEL_STRIDE) {
    case HYPER_RX_SADDR: value = h.rx_saddr; break;
    case HYPER_RX_SIZE: value = h.rx_size; break;
    case HYPER_TX_SADDR: value = h.tx_saddr; break;
    case HYPER_TX_SIZE: value = h.tx_size; break;
    case HYPER_CA_SETUP: value = h.ca; break;
    case HYPER_HYPER_ADDR: value = h.addr; break;
    case HYPER_STATUS: value = h.busy ? 1 : 0; break;
    default: break;
  }
  return true;
}

bool Machine::udma_write(Core& c, uint32_t off, uint32_t v) {
  if (off >= HYPER_COMMON) {
    if (off == HYPER_COMMON + HYPER_MEM_SEL) hyper_mem_sel = v & 1;
    return true;
  }
  uint32_t id = off / HYPER_CHANNEL_STRIDE;
  HyperTrans& h = hyper[id];
  switch (off % HYPER_CHANNEL_STRIDE) {
    case HYPER_RX_SADDR: h.rx_saddr = v; return true;
    case HYPER_RX_SIZE: h.rx_size = v; return true;
    case HYPER_TX_SADDR: h.tx_saddr = v; return true;
    case HYPER_TX_SIZE: h.tx_size = v; return true;
    case HYPER_CA_SETUP: h.ca = v; return true;
    case HYPER_HYPER_ADDR: h.addr = v; return true;
    case HYPER_RX_CFG:
    case HYPER_TX_CFG: break;
    default: return true;
  }
  if (!(v & HYPER_CFG_EN)) return true;  // CFG without EN
  bool read = off % HYPER_CHANNEL_STRIDE == HYPER_RX_CFG;  // RX: external memory -> L2
  Memory& mem = hyper_mem_sel ? flash : hyperram;
  const char* mname = hyper_mem_sel ? "flash" : "hyperram";
  uint32_t l2a = read ? h.rx_saddr : h.tx_saddr;
  uint32_t n = read ? h.rx_size : h.tx_size;
  uint8_t* p = host_ptr(l2a, n);
  char buf[160];
  if (!p || l2a - l2_base >= l2_size) {
    std::snprintf(buf, sizeof buf, "uDMA %s of %u bytes at 0x%08x: the buffer must be in L2", read ? "read" : "write", n, l2a);
    c.fault("uDMA error", buf, true, l2a);
    return true;
  }
  if ((uint64_t)h.addr + n > mem.size()) {
    std::snprintf(buf, sizeof buf, "uDMA %s of %u bytes at %s address 0x%x runs past its %zu bytes", read ? "read" : "write",
                  n, mname, h.addr, mem.size());
    c.fault("uDMA error", buf, true, h.addr);
    return true;
  }
  // The data moves now; completion (STATUS busy, the FC's event) follows the transfer time.
  if (read) {
    std::memcpy(p, &mem[h.addr], n);
    invalidate(l2a, (int)n);
  } else {
    std::memcpy(&mem[h.addr], p, n);
  }
  const ExtMem& em = ext_mem[hyper_mem_sel];
  // A read moves read_cycles_per_byte; a write sends its first write_fast_bytes at a byte per cycle (GVSoC:
  // the uDMA has read them ahead from L2) and the rest at write_cycles_per_byte.
  uint64_t start = std::max<uint64_t>(c.t + 1, udma_free_at);
  uint64_t dur;
  if (read) {
    dur = em.read_setup + (uint64_t)(em.read_cpb * n + 0.5);
  } else {
    uint64_t fast = std::min<uint64_t>(n, em.write_fast);
    dur = em.write_setup + fast + (uint64_t)(em.write_cpb * (double)(n - fast) + 0.5);
  }
  udma_free_at = start + dur;
  udma_busy_cycles += dur;
  udma_bytes += n;
  ext_bytes[hyper_mem_sel][read ? 0 : 1] += n;
  udma_transfers++;
  h.busy = true;
  schedule(start + dur, T_UDMA_DONE, id, read ? 1 : 0);
  if (timeline)
    timeline->span(Timeline::T_UDMA, read ? Timeline::K_UDMA_READ : Timeline::K_UDMA_WRITE, start, start + dur, n,
                   hyper_mem_sel);
  return true;
}

}  // namespace pulpsim
