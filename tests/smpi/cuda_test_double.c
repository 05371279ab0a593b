/* TEST DOUBLE of the CUDA runtime, for tests/smpi only: device memory is ordinary host memory
 * that this file remembers, so that cudaPointerGetAttributes can tell it from host memory.
 * Copies are instant. Programs on the simulator link the simulated CUDA runtime instead. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct test_double_pointer_attributes { /* CUDA 10+ layout of struct cudaPointerAttributes */
  int type;
  int device;
  void* device_pointer;
  void* host_pointer;
};

enum { MAX_ALLOCATIONS = 64, SUCCESS = 0, ERROR_MEMORY_ALLOCATION = 2, ERROR_INVALID_VALUE = 1 };
static struct {
  char* base;
  size_t size;
} allocations[MAX_ALLOCATIONS];

int cudaMalloc(void** ptr, size_t size)
{
  for (int i = 0; i < MAX_ALLOCATIONS; i++) {
    if (allocations[i].base == NULL) {
      allocations[i].base = malloc(size ? size : 1);
      if (allocations[i].base == NULL)
        return ERROR_MEMORY_ALLOCATION;
      allocations[i].size = size;
      *ptr                = allocations[i].base;
      return SUCCESS;
    }
  }
  return ERROR_MEMORY_ALLOCATION;
}

int cudaFree(void* ptr)
{
  for (int i = 0; i < MAX_ALLOCATIONS; i++) {
    if (ptr != NULL && allocations[i].base == ptr) {
      free(allocations[i].base);
      allocations[i].base = NULL;
      return SUCCESS;
    }
  }
  return ERROR_INVALID_VALUE;
}

int cudaMemcpy(void* dst, const void* src, size_t count, int kind)
{
  (void)kind;
  memcpy(dst, src, count);
  return SUCCESS;
}

int cudaPointerGetAttributes(struct test_double_pointer_attributes* attributes, const void* ptr)
{
  const char* p = ptr;
  memset(attributes, 0, sizeof *attributes);
  for (int i = 0; i < MAX_ALLOCATIONS; i++) {
    if (allocations[i].base != NULL && p >= allocations[i].base && p < allocations[i].base + allocations[i].size) {
      attributes->type           = 2; /* cudaMemoryTypeDevice */
      attributes->device_pointer = (void*)ptr;
      return SUCCESS;
    }
  }
  return SUCCESS; /* cudaMemoryTypeUnregistered, as CUDA 11 and later answer for host memory */
}
