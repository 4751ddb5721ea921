/* printf and friends on the platform's stdout peripheral: one 32-bit store per character to the
 * channel of (cluster, core); the simulator prints a channel's line when it sees '\n'. */
#include <stdarg.h>
#include <stdint.h>

#include "pmsis.h"

static inline volatile uint32_t *stdout_channel(void) {
  uint32_t hartid;
  __asm__ volatile("csrr %0, mhartid" : "=r"(hartid));
  uint32_t core = hartid & ((1u << PULP_SOC_HARTID_CORE_BITS) - 1);
  uint32_t cluster = (hartid >> PULP_SOC_HARTID_CORE_BITS) & ((1u << PULP_SOC_HARTID_CLUSTER_BITS) - 1);
  return (volatile uint32_t *)(PULP_STDOUT + ((cluster << PULP_SOC_STDOUT_CLUSTER_SHIFT) |
                                              (core << PULP_SOC_STDOUT_CORE_SHIFT)));
}

int putchar(int c) {
  *stdout_channel() = (uint32_t)(unsigned char)c;
  return (unsigned char)c;
}

int puts(const char *s) {
  volatile uint32_t *ch = stdout_channel();
  while (*s) *ch = (uint32_t)(unsigned char)*s++;
  *ch = '\n';
  return 0;
}

static void emit(volatile uint32_t *ch, const char *s, int len, int width, int left, char pad, int *count) {
  if (!left && pad == '0' && len > 0 && (*s == '-') && width > len) {
    *ch = '-';
    s++;
    len--;
    width--;
    (*count)++;
  }
  if (!left)
    for (int i = len; i < width; i++, (*count)++) *ch = (uint32_t)pad;
  for (int i = 0; i < len; i++, (*count)++) *ch = (uint32_t)(unsigned char)s[i];
  if (left)
    for (int i = len; i < width; i++, (*count)++) *ch = ' ';
}

static int utoa(char *buf, uint32_t v, unsigned base, int upper) {
  const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  char tmp[12];
  int n = 0;
  do {
    tmp[n++] = digits[v % base];
    v /= base;
  } while (v);
  for (int i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
  return n;
}

int vprintf(const char *fmt, va_list ap) {
  volatile uint32_t *ch = stdout_channel();
  int count = 0;
  char buf[16];
  for (; *fmt; fmt++) {
    if (*fmt != '%') {
      *ch = (uint32_t)(unsigned char)*fmt;
      count++;
      continue;
    }
    fmt++;
    int left = 0;
    char pad = ' ';
    for (;; fmt++) {
      if (*fmt == '-') left = 1;
      else if (*fmt == '0') pad = '0';
      else break;
    }
    int width = 0;
    if (*fmt == '*') {
      width = va_arg(ap, int);
      fmt++;
    } else {
      while (*fmt >= '0' && *fmt <= '9') width = width * 10 + (*fmt++ - '0');
    }
    while (*fmt == 'l' || *fmt == 'h' || *fmt == 'z') fmt++;  /* int, long and size_t are all 32-bit here */
    if (left) pad = ' ';
    switch (*fmt) {
      case 'd':
      case 'i': {
        int32_t v = va_arg(ap, int32_t);
        int n = 0;
        if (v < 0) {
          buf[n++] = '-';
          n += utoa(buf + n, (uint32_t)0 - (uint32_t)v, 10, 0);
        } else {
          n = utoa(buf, (uint32_t)v, 10, 0);
        }
        emit(ch, buf, n, width, left, pad, &count);
        break;
      }
      case 'u': emit(ch, buf, utoa(buf, va_arg(ap, uint32_t), 10, 0), width, left, pad, &count); break;
      case 'x': emit(ch, buf, utoa(buf, va_arg(ap, uint32_t), 16, 0), width, left, pad, &count); break;
      case 'X': emit(ch, buf, utoa(buf, va_arg(ap, uint32_t), 16, 1), width, left, pad, &count); break;
      case 'p': {
        buf[0] = '0';
        buf[1] = 'x';
        int n = 2 + utoa(buf + 2, (uint32_t)(uintptr_t)va_arg(ap, void *), 16, 0);
        emit(ch, buf, n, width, left, pad, &count);
        break;
      }
      case 'c': buf[0] = (char)va_arg(ap, int); emit(ch, buf, 1, width, left, ' ', &count); break;
      case 's': {
        const char *s = va_arg(ap, const char *);
        if (!s) s = "(null)";
        int n = 0;
        while (s[n]) n++;
        emit(ch, s, n, width, left, ' ', &count);
        break;
      }
      case '%': *ch = '%'; count++; break;
      case '\0': return count;
      default: *ch = '%'; *ch = (uint32_t)(unsigned char)*fmt; count += 2; break;
    }
  }
  return count;
}

int printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vprintf(fmt, ap);
  va_end(ap);
  return n;
}
