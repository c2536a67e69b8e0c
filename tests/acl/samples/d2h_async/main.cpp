/**
 * CANN runtime sample example/1_basic_features/memory/4_d2h_async_memory_copy:
 * main.cpp as the seed document shows it (its includes added, and the '&'
 * the document's rendering lost), otherwise unmodified: it compiles against
 * rdev's acl headers and runs against rdevd through libascendcl.so and the
 * sim kernel library (client/cann/samples/).
 */
#include "acl/acl.h"
#include "utils.h"
#include "kernel_func/kernel_ops.h"

int32_t main() {
    aclInit(nullptr);
    int32_t deviceId = 0;
    aclrtSetDevice(deviceId);
    aclrtStream stream = nullptr;
    aclrtCreateStream(&stream);
    // Allocate memory on the host and device
    uint64_t size = 1 * 1024 * 1024; // 1 MB
    int* hostPtrA;
    int* devPtrB;
    CHECK_ERROR(aclrtMallocHost((void**)&hostPtrA, size));
    CHECK_ERROR(aclrtMalloc((void**)&devPtrB, size, ACL_MEM_MALLOC_HUGE_FIRST));
    // Write the data 123 to the virtual address devPtrB
    constexpr uint32_t blockDim = 1;
    int writeValue = 123;
    WriteDo(blockDim, stream, devPtrB, writeValue);
    // Copy memory from devPtrB to hostPtrA asynchronously
    CHECK_ERROR(aclrtMemcpyAsync(hostPtrA, size, devPtrB, size, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    // Read the value at address hostPtrA after stream synchronization
    aclrtSynchronizeStream(stream);
    int readValue = *hostPtrA;
    INFO_LOG("Destination data: %d", readValue);
    // Release resources
    aclrtDestroyStreamForce(stream);
    aclrtFreeHost(hostPtrA);
    aclrtFree(devPtrB);
    aclrtResetDeviceForce(deviceId);
    aclFinalize();
    return 0;
}
