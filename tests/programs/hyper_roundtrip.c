/* HyperRAM and flash round trips through the peripheral DMA, sync and async, odd sizes. */
#include <pmsis.h>

static PI_L2 uint8_t a[5000], b[5000];

int main(void) {
  int fails = 0;
  struct pi_device ram, flash;
  struct pi_hyperram_conf rc;
  struct pi_hyperflash_conf fc;
  pi_hyperram_conf_init(&rc);
  pi_open_from_conf(&ram, &rc);
  pi_ram_open(&ram);
  uint32_t x, y;
  if (pi_ram_alloc(&ram, &x, 4999) || pi_ram_alloc(&ram, &y, 333)) return 2;
  for (int i = 0; i < 5000; i++) a[i] = (uint8_t)(i * 13 + 1);
  pi_ram_write(&ram, x + 1, a, 4997);
  pi_ram_read(&ram, x + 1, b, 4997);
  for (int i = 0; i < 4997; i++) if (a[i] != b[i]) { fails++; break; }
  pi_task_t t;
  pi_ram_write_async(&ram, y, a + 7, 333, pi_task_block(&t));
  pi_task_wait_on(&t);
  pi_ram_read_async(&ram, y, b, 333, pi_task_block(&t));
  pi_task_wait_on(&t);
  for (int i = 0; i < 333; i++) if (b[i] != a[7 + i]) { fails++; break; }
  pi_hyperflash_conf_init(&fc);
  pi_open_from_conf(&flash, &fc);
  pi_flash_open(&flash);
  pi_flash_program(&flash, 0x12345, a, 1000);
  for (int i = 0; i < 1000; i++) b[i] = 0;
  pi_flash_read(&flash, 0x12345, b, 1000);
  for (int i = 0; i < 1000; i++) if (b[i] != a[i]) { fails++; break; }
  pi_ram_open(&ram);  /* the RAM still holds its data after flash traffic */
  pi_ram_read(&ram, x + 1, b, 100);
  for (int i = 0; i < 100; i++) if (a[i] != b[i]) { fails++; break; }
  printf("hyper round trips failures %d\n", fails);
  return fails;
}
