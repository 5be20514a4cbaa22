/* Example C consumer of the installed kvio package (kvio.h alone, C99): backs up two pages of
 * a layer_first pool into a page_first pool on the cpu backend and checks every byte moved.
 * Built by scripts/check-cpp-package.sh with the flags of the installed kvio.pc, as
 * -std=c99 -pedantic -Werror. Exits 0 on success. */
#include <kvio/kvio.h>
#include <stdint.h>
#include <stdio.h>

static int check(kvio_status status, const char* what) {
  if (status == KVIO_STATUS_OK) return 0;
  fprintf(stderr, "%s: %s: %s\n", what, kvio_status_name(status), kvio_last_error());
  return 1;
}

int main(void) {
  /* MHA, 2 layers, 4 pages of 2 tokens, 1 head of 8 bytes: token rows of 8 bytes. */
  kvio_pool_spec device_spec = {KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, 2, 4, 2, 1, 8};
  kvio_pool_spec host_spec = device_spec;
  const int64_t from[4] = {2, 3, 6, 7}; /* pages 1 and 3 */
  const int64_t to[4] = {0, 1, 2, 3};   /* pages 0 and 1 */
  uint64_t device = 0, host = 0, executor = 0, transfer = 0;
  uint64_t device_bytes = 0, host_address = 0, host_bytes = 0, device_address = 0;
  uint8_t* src;
  const uint8_t* dst;
  int64_t regions = 0, c, l, t, b;
  host_spec.layout = KVIO_LAYOUT_PAGE_FIRST;
  if (check(kvio_pool_allocate(&device_spec, &device), "kvio_pool_allocate (device side)") ||
      check(kvio_pool_allocate(&host_spec, &host), "kvio_pool_allocate (host side)") ||
      check(kvio_pool_region(device, 0, &device_address, &device_bytes, &regions),
            "kvio_pool_region") ||
      check(kvio_pool_region(host, 0, &host_address, &host_bytes, &regions),
            "kvio_pool_region") ||
      check(kvio_executor_create(KVIO_BACKEND_CPU, 1, &executor), "kvio_executor_create")) {
    return 1;
  }
  src = (uint8_t*)(uintptr_t)device_address;
  for (b = 0; b < (int64_t)device_bytes; ++b) src[b] = (uint8_t)(b * 13 + 5);
  if (check(kvio_submit_args(executor, device, host, from, to, 4, 0, 0, 2, &transfer),
            "kvio_submit_args") ||
      check(kvio_transfer_wait(transfer, -1), "kvio_transfer_wait") ||
      check(kvio_transfer_close(transfer), "kvio_transfer_close")) {
    return 1;
  }
  /* layer_first: [component][layer][token][row]; page_first: [component][token][layer][row]. */
  dst = (const uint8_t*)(uintptr_t)host_address;
  for (c = 0; c < 2; ++c) {
    for (t = 0; t < 4; ++t) {
      for (l = 0; l < 2; ++l) {
        for (b = 0; b < 8; ++b) {
          const uint8_t want = src[((c * 2 + l) * 8 + from[t]) * 8 + b];
          const uint8_t got = dst[((c * 8 + to[t]) * 2 + l) * 8 + b];
          if (want != got) {
            fprintf(stderr, "component %d, token %d, layer %d, byte %d: %u, expected %u\n",
                    (int)c, (int)t, (int)l, (int)b, got, want);
            return 1;
          }
        }
      }
    }
  }
  if (check(kvio_executor_close(executor), "kvio_executor_close") ||
      check(kvio_pool_close(host), "kvio_pool_close") ||
      check(kvio_pool_close(device), "kvio_pool_close")) {
    return 1;
  }
  printf("kvio %s from C: 2 pages x 2 layers backed up, every byte checked\n", kvio_version());
  return 0;
}
