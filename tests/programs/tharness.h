/* tharness.h - output and timing helpers for the ISA test programs (parsed by tests/helpers.py).
 *
 * Output: one line per result group, "tag v0 v1 ...", every value as 8 hex digits, written
 * straight to the FC's stdout channel (one store per character).
 *
 * Timed sections follow the layout of the GVSoC calibration kit (sec.h there), so their numbers
 * compare directly with ../shared/data/gvsoc-calibration/*.gvsoc.txt:
 *
 *   name:  csrw 0x79F, zero            reset all PULP performance counters
 *          SETUP                       untimed
 *          .balign 16
 *          nop ; nop                   bring the line into the prefetch buffer
 *          csrr  t6, mcycle            T0
 *          csrwi 0xCC1, 1              counters on
 *          BODY                        starts on a 16-byte boundary, 32-bit instructions only
 *          csrwi 0xCC1, 0              counters off
 *          csrr  t5, mcycle            T1
 *          sub   a0, t5, t6            cycles = T1 - T0 = 3 + cost of BODY with a warm icache
 *          POST ; ret                  POST may leave a value in a1
 *
 * Bodies may use a0-a7 and t0-t4 (t5/t6 hold the time stamps). */
#ifndef THARNESS_H
#define THARNESS_H
#include <pmsis.h>
#include <pulp_isa.h>

#define TH_CHAN ((volatile uint32_t *)(PULP_STDOUT + (PULP_FC_CLUSTER_ID << PULP_SOC_STDOUT_CLUSTER_SHIFT)))
#define TH_FC_ICACHE_CTRL ((volatile uint32_t *)(PULP_FC_ICACHE_CTRL + PULP_SOC_ICACHE_ENABLE))
#define TH_PCER PULP_STR(PULP_CSR_PCER)
#define TH_PCMR PULP_STR(PULP_CSR_PCMR)
#define TH_PCCR_ALL PULP_STR(PULP_CSR_PCCR_ALL)

static inline __attribute__((noinline)) void th_str(const char *s) {
  volatile uint32_t *c = TH_CHAN;
  while (*s) *c = (uint8_t)*s++;
}
static inline __attribute__((noinline)) void th_hex(uint32_t v) {
  volatile uint32_t *c = TH_CHAN;
  *c = ' ';
  for (int i = 28; i >= 0; i -= 4) {
    uint32_t d = (v >> i) & 15;
    *c = d < 10 ? '0' + d : 'a' + d - 10;
  }
}
static inline void th_end(void) { *TH_CHAN = '\n'; }
static inline __attribute__((noinline)) void th_arr(const char *tag, const uint32_t *v, int n) {
  th_str(tag);
  for (int i = 0; i < n; i++) th_hex(v[i]);
  th_end();
}
static inline __attribute__((noinline)) void th_kv(const char *tag, uint32_t v) {
  th_str(tag);
  th_hex(v);
  th_end();
}

#define TH_CSRR(csr) ({ uint32_t __v; __asm__ volatile("csrr %0, " #csr : "=r"(__v)::"memory"); __v; })
/* performance counter n (pulp_isa.h's PULP_PERF_*) */
#define TH_PCCR(n) \
  ({ uint32_t __v; __asm__ volatile("csrr %0, " PULP_STR(PULP_CSR_PCCR0) " + " PULP_STR(n) : "=r"(__v)::"memory"); __v; })

/* ---- timed sections ---- */
typedef struct { uint32_t cyc, val; } th_r2;
typedef th_r2 (*th_fn)(uint32_t, uint32_t);

#define TH_SECTION(name, setup, body, post)                                                          \
  __asm__(".pushsection .text." #name ",\"ax\",@progbits\n.option push\n.option norvc\n"             \
          ".balign 16\n.global " #name "\n.type " #name ", @function\n" #name ":\n"                   \
          "  csrw " TH_PCCR_ALL ", zero\n" setup "\n"                                                \
          ".balign 16\n  nop\n  nop\n  csrr t6, mcycle\n  csrwi " TH_PCMR ", 1\n" body "\n"          \
          "  csrwi " TH_PCMR ", 0\n  csrr t5, mcycle\n  sub a0, t5, t6\n" post "\n  ret\n"            \
          ".size " #name ", . - " #name "\n.option pop\n.popsection\n");                              \
  extern th_r2 name(uint32_t, uint32_t);

/* Performance counters on (all events) and the FC instruction cache enabled. */
static inline void th_timing_init(int icache) {
  __asm__ volatile("csrwi " TH_PCMR ", 0\n csrw " TH_PCER ", %0\n csrw " TH_PCCR_ALL ", zero" ::"r"(0xFFFFFFFFu));
  *TH_FC_ICACHE_CTRL = icache ? 0xFFFFFFFFu : 0;
}

/* Run a section twice (the second run is warm) and print
 * "tag cycles value pcc instr ld_stall imiss apu_cont misaligned". */
static inline __attribute__((noinline)) void th_time(const char *tag, th_fn fn, uint32_t a0, uint32_t a1) {
  th_r2 r = fn(a0, a1);
  r = fn(a0, a1);
  uint32_t v[8] = {r.cyc, r.val, TH_PCCR(PULP_PERF_CYCLES), TH_PCCR(PULP_PERF_INSTR), TH_PCCR(PULP_PERF_LD_STALL),
                   TH_PCCR(PULP_PERF_IMISS), TH_PCCR(PULP_PERF_FC_APU_CONT), TH_PCCR(PULP_PERF_MISALIGNED)};
  th_arr(tag, v, 8);
}

#endif
