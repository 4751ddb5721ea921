/* First-fit allocators over the heap regions the linker script leaves in L2 and L1. Chunks are
 * 8-byte aligned; a free list keeps (address, size) blocks sorted by address and merges neighbours. */
#include "pmsis.h"

typedef struct block {
  uint32_t size;
  struct block *next;
} block_t;

typedef struct {
  block_t *free;
  int ready;
} heap_t;

extern char __l2_heap_start[], __l2_heap_end[], __l1_heap_start[], __l1_heap_end[];
static heap_t l2_heap, l1_heap;

static void heap_init(heap_t *h, char *start, char *end) {
  uintptr_t s = ((uintptr_t)start + 7) & ~(uintptr_t)7;
  block_t *b = (block_t *)s;
  b->size = (uint32_t)((uintptr_t)end - s) & ~7u;
  b->next = 0;
  h->free = b->size >= sizeof(block_t) ? b : 0;
  h->ready = 1;
}

static void *heap_alloc(heap_t *h, uint32_t size) {
  size = (size + 7) & ~7u;
  if (size < sizeof(block_t)) size = sizeof(block_t);
  for (block_t **pp = &h->free; *pp; pp = &(*pp)->next) {
    block_t *b = *pp;
    if (b->size < size) continue;
    if (b->size - size >= sizeof(block_t)) {
      block_t *rest = (block_t *)((char *)b + size);
      rest->size = b->size - size;
      rest->next = b->next;
      *pp = rest;
    } else {
      *pp = b->next;
    }
    return b;
  }
  return 0;
}

static void heap_free(heap_t *h, void *chunk, uint32_t size) {
  if (!chunk) return;
  size = (size + 7) & ~7u;
  if (size < sizeof(block_t)) size = sizeof(block_t);
  block_t *b = (block_t *)chunk;
  b->size = size;
  block_t **pp = &h->free;
  while (*pp && *pp < b) pp = &(*pp)->next;
  b->next = *pp;
  *pp = b;
  if (b->next && (char *)b + b->size == (char *)b->next) {  /* merge with the next block */
    b->size += b->next->size;
    b->next = b->next->next;
  }
  for (block_t *p = h->free; p && p != b; p = p->next) {   /* and with the previous one */
    if (p->next == b && (char *)p + p->size == (char *)b) {
      p->size += b->size;
      p->next = b->next;
      break;
    }
  }
}

void *pi_l2_malloc(uint32_t size) {
  if (!l2_heap.ready) heap_init(&l2_heap, __l2_heap_start, __l2_heap_end);
  return heap_alloc(&l2_heap, size);
}
void pi_l2_free(void *chunk, uint32_t size) { heap_free(&l2_heap, chunk, size); }

void *pi_l1_malloc(struct pi_device *device, uint32_t size) {
  (void)device;
  if (!l1_heap.ready) heap_init(&l1_heap, __l1_heap_start, __l1_heap_end);
  return heap_alloc(&l1_heap, size);
}
void pi_l1_free(struct pi_device *device, void *chunk, uint32_t size) {
  (void)device;
  heap_free(&l1_heap, chunk, size);
}
