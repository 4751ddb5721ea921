// Test driver for platforms/pulpsim/fp.hpp.
//
// stdin : one operation per line, "op rm a b c" (rm, a, b, c in hex; unused operands 0)
// stdout: one line per input line, "result flags" in hex (flags = RISC-V fflags bits).
// `fp_driver --bench [n]` prints a rough ns/op figure for a few hot operations instead.
#include "../../platforms/pulpsim/fp.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

namespace {

enum Op {
    ADD32, SUB32, MUL32, DIV32, SQRT32, FMADD32, FMSUB32, FNMSUB32, FNMADD32, SGNJ32, SGNJN32,
    SGNJX32, MIN32, MAX32, EQ32, LT32, LE32, CLASS32, TOI32_32, TOU32_32, FROMI32_32, FROMU32_32,
    ADD16, SUB16, MUL16, DIV16, SQRT16, FMADD16, FMSUB16, FNMSUB16, FNMADD16, SGNJ16, SGNJN16,
    SGNJX16, MIN16, MAX16, EQ16, LT16, LE16, CLASS16, TOI32_16, TOU32_16, FROMI32_16, FROMU32_16,
    H2S, S2H, TOI16_16, TOU16_16, FROMI16_16, FROMU16_16, AVG16,
};

const std::unordered_map<std::string, Op> kOps = {
    {"add32", ADD32}, {"sub32", SUB32}, {"mul32", MUL32}, {"div32", DIV32}, {"sqrt32", SQRT32},
    {"fmadd32", FMADD32}, {"fmsub32", FMSUB32}, {"fnmsub32", FNMSUB32}, {"fnmadd32", FNMADD32},
    {"sgnj32", SGNJ32}, {"sgnjn32", SGNJN32}, {"sgnjx32", SGNJX32}, {"min32", MIN32},
    {"max32", MAX32}, {"eq32", EQ32}, {"lt32", LT32}, {"le32", LE32}, {"classify32", CLASS32},
    {"to_i32_32", TOI32_32}, {"to_u32_32", TOU32_32}, {"from_i32_32", FROMI32_32},
    {"from_u32_32", FROMU32_32},
    {"add16", ADD16}, {"sub16", SUB16}, {"mul16", MUL16}, {"div16", DIV16}, {"sqrt16", SQRT16},
    {"fmadd16", FMADD16}, {"fmsub16", FMSUB16}, {"fnmsub16", FNMSUB16}, {"fnmadd16", FNMADD16},
    {"sgnj16", SGNJ16}, {"sgnjn16", SGNJN16}, {"sgnjx16", SGNJX16}, {"min16", MIN16},
    {"max16", MAX16}, {"eq16", EQ16}, {"lt16", LT16}, {"le16", LE16}, {"classify16", CLASS16},
    {"to_i32_16", TOI32_16}, {"to_u32_16", TOU32_16}, {"from_i32_16", FROMI32_16},
    {"from_u32_16", FROMU32_16},
    {"h_to_s", H2S}, {"s_to_h", S2H}, {"to_i16_16", TOI16_16}, {"to_u16_16", TOU16_16},
    {"from_i16_16", FROMI16_16}, {"from_u16_16", FROMU16_16}, {"avg16", AVG16},
};

uint32_t run(Op op, int rm, uint32_t a, uint32_t b, uint32_t c, uint32_t& fl) {
    using namespace fp;
    const uint16_t ha = (uint16_t)a, hb = (uint16_t)b, hc = (uint16_t)c;
    switch (op) {
    case ADD32: return add32(a, b, rm, fl);
    case SUB32: return sub32(a, b, rm, fl);
    case MUL32: return mul32(a, b, rm, fl);
    case DIV32: return div32(a, b, rm, fl);
    case SQRT32: return sqrt32(a, rm, fl);
    case FMADD32: return fma32(a, b, c, false, false, rm, fl);
    case FMSUB32: return fma32(a, b, c, false, true, rm, fl);
    case FNMSUB32: return fma32(a, b, c, true, false, rm, fl);
    case FNMADD32: return fma32(a, b, c, true, true, rm, fl);
    case SGNJ32: return sgnj32(a, b);
    case SGNJN32: return sgnjn32(a, b);
    case SGNJX32: return sgnjx32(a, b);
    case MIN32: return min32(a, b, fl);
    case MAX32: return max32(a, b, fl);
    case EQ32: return eq32(a, b, fl);
    case LT32: return lt32(a, b, fl);
    case LE32: return le32(a, b, fl);
    case CLASS32: return classify32(a);
    case TOI32_32: return to_i32_32(a, rm, fl);
    case TOU32_32: return to_u32_32(a, rm, fl);
    case FROMI32_32: return from_i32_32(a, rm, fl);
    case FROMU32_32: return from_u32_32(a, rm, fl);
    case ADD16: return add16(ha, hb, rm, fl);
    case SUB16: return sub16(ha, hb, rm, fl);
    case MUL16: return mul16(ha, hb, rm, fl);
    case DIV16: return div16(ha, hb, rm, fl);
    case SQRT16: return sqrt16(ha, rm, fl);
    case FMADD16: return fma16(ha, hb, hc, false, false, rm, fl);
    case FMSUB16: return fma16(ha, hb, hc, false, true, rm, fl);
    case FNMSUB16: return fma16(ha, hb, hc, true, false, rm, fl);
    case FNMADD16: return fma16(ha, hb, hc, true, true, rm, fl);
    case SGNJ16: return sgnj16(ha, hb);
    case SGNJN16: return sgnjn16(ha, hb);
    case SGNJX16: return sgnjx16(ha, hb);
    case MIN16: return min16(ha, hb, fl);
    case MAX16: return max16(ha, hb, fl);
    case EQ16: return eq16(ha, hb, fl);
    case LT16: return lt16(ha, hb, fl);
    case LE16: return le16(ha, hb, fl);
    case CLASS16: return classify16(ha);
    case TOI32_16: return to_i32_16(ha, rm, fl);
    case TOU32_16: return to_u32_16(ha, rm, fl);
    case FROMI32_16: return from_i32_16(a, rm, fl);
    case FROMU32_16: return from_u32_16(a, rm, fl);
    case H2S: return h_to_s(ha, fl);
    case S2H: return s_to_h(a, rm, fl);
    case TOI16_16: return to_i16_16(ha, rm, fl);
    case TOU16_16: return to_u16_16(ha, rm, fl);
    case FROMI16_16: return from_i16_16(ha, rm, fl);
    case FROMU16_16: return from_u16_16(ha, rm, fl);
    case AVG16: return avg16(ha, hb, rm, fl);
    }
    return 0;
}

template <class Fn> void bench(const char* name, long n, Fn fn) {
    uint32_t x = 0x12345678u, acc = 0, fl = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;   // cheap LCG operands
        acc += fn(x, fl);
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-8s %6.2f ns/op  (checksum %08x %02x)\n", name, ns / (double)n, acc, fl);
}

int do_bench(long n) {
    using namespace fp;
    bench("fma16", n, [](uint32_t x, uint32_t& fl) { return (uint32_t)fma16((uint16_t)x, (uint16_t)(x >> 8), (uint16_t)(x >> 16), false, false, RNE, fl); });
    bench("add16", n, [](uint32_t x, uint32_t& fl) { return (uint32_t)add16((uint16_t)x, (uint16_t)(x >> 16), RNE, fl); });
    bench("mul16", n, [](uint32_t x, uint32_t& fl) { return (uint32_t)mul16((uint16_t)x, (uint16_t)(x >> 16), RNE, fl); });
    bench("fma32", n, [](uint32_t x, uint32_t& fl) { return fma32(x, x * 0x9e3779b9u, x ^ 0x5bd1e995u, false, false, RNE, fl); });
    bench("add32", n, [](uint32_t x, uint32_t& fl) { return add32(x, x * 0x9e3779b9u, RNE, fl); });
    bench("mul32", n, [](uint32_t x, uint32_t& fl) { return mul32(x, x * 0x9e3779b9u, RNE, fl); });
    bench("div32", n, [](uint32_t x, uint32_t& fl) { return div32(x, x * 0x9e3779b9u, RNE, fl); });
    bench("sqrt32", n, [](uint32_t x, uint32_t& fl) { return sqrt32(x, RNE, fl); });
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--bench") == 0)
        return do_bench(argc > 2 ? std::atol(argv[2]) : 20000000L);
    char line[256], name[64];
    int lineno = 0;
    while (std::fgets(line, sizeof line, stdin)) {
        ++lineno;
        unsigned rm = 0, a = 0, b = 0, c = 0;
        const int n = std::sscanf(line, "%63s %x %x %x %x", name, &rm, &a, &b, &c);
        if (n <= 0) continue;  // blank line
        const auto it = kOps.find(name);
        if (n < 3 || it == kOps.end() || rm > 4) {
            std::fprintf(stderr, "fp_driver: bad input line %d: %s", lineno, line);
            return 2;
        }
        uint32_t fl = 0;
        const uint32_t r = run(it->second, (int)rm, a, b, c, fl);
        std::printf("%x %x\n", r, fl);
    }
    return 0;
}
