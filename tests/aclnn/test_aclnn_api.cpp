/*
 * tests/aclnn/test_aclnn_api.cpp — the operator library's contract call by
 * call, as a CANN program meets it: first-phase refusals with CANN's codes
 * and aclGetRecentErrMsg's sentence, executors (single use, repeatable,
 * changed addresses, destroyed), objects destroyed before the run, strided
 * views, scalars of other types, the default stream, and a tensor naming
 * freed memory refused at the synchronize. Run by run_aclnn.py; exit 0 =
 * every check held.
 */
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnn/opdev/op_errno.h"
#include "aclnnop/aclnn_add.h"

static int failures = 0;
#define EXPECT(cond)                                              \
  do {                                                            \
    if (!(cond)) {                                                \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                 \
    }                                                             \
  } while (0)
#define OK(call) EXPECT((call) == 0)

struct Buf {
  void *dev = nullptr;
  size_t bytes = 0;
};

static Buf upload(const std::vector<float> &host) {
  Buf b;
  b.bytes = host.size() * sizeof(float);
  OK(aclrtMalloc(&b.dev, b.bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  OK(aclrtMemcpy(b.dev, b.bytes, host.data(), b.bytes, ACL_MEMCPY_HOST_TO_DEVICE));
  return b;
}

static std::vector<float> download(const Buf &b) {
  std::vector<float> host(b.bytes / sizeof(float));
  OK(aclrtMemcpy(host.data(), b.bytes, b.dev, b.bytes, ACL_MEMCPY_DEVICE_TO_HOST));
  return host;
}

static aclTensor *vec(const Buf &b, int64_t n) {
  int64_t stride = 1;
  return aclCreateTensor(&n, 1, ACL_FLOAT, &stride, 0, ACL_FORMAT_ND, &n, 1, b.dev);
}

static bool near(const std::vector<float> &got, const std::vector<float> &want) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); i++)
    if (std::fabs(got[i] - want[i]) > 1e-6f) return false;
  return true;
}

int main() {
  OK(aclInit(nullptr));
  OK(aclrtSetDevice(0));
  OK(aclnnInit(nullptr));
  aclrtStream stream;
  OK(aclrtCreateStream(&stream));
  Buf a = upload({1, 2, 3, 4}), b = upload({10, 20, 30, 40}), o = upload({0, 0, 0, 0}), o2 = upload({0, 0, 0, 0});
  aclTensor *ta = vec(a, 4), *tb = vec(b, 4), *to = vec(o, 4);
  float one = 1.0f;
  aclScalar *alpha = aclCreateScalar(&one, ACL_FLOAT);
  uint64_t ws = 99;
  aclOpExecutor *ex = nullptr;

  /* first-phase refusals */
  EXPECT(aclnnAddGetWorkspaceSize(nullptr, tb, alpha, to, &ws, &ex) == ACLNN_ERR_PARAM_NULLPTR);
  const char *msg = aclGetRecentErrMsg();
  EXPECT(msg && std::strstr(msg, "self"));
  EXPECT(aclnnAddGetWorkspaceSize(ta, tb, alpha, to, nullptr, &ex) == ACLNN_ERR_PARAM_NULLPTR);
  int64_t three = 3, unit = 1;
  aclTensor *t3 = aclCreateTensor(&three, 1, ACL_FLOAT, &unit, 0, ACL_FORMAT_ND, &three, 1, b.dev);
  EXPECT(aclnnAddGetWorkspaceSize(ta, t3, alpha, to, &ws, &ex) == ACLNN_ERR_PARAM_INVALID);
  msg = aclGetRecentErrMsg();
  EXPECT(msg && std::strstr(msg, "broadcast"));
  EXPECT(aclnnAddGetWorkspaceSize(ta, reinterpret_cast<const aclTensor *>(alpha), alpha, to, &ws, &ex) ==
         ACLNN_ERR_PARAM_INVALID); /* an object of another kind */
  EXPECT(aclCreateTensor(&three, 1, static_cast<aclDataType>(999), &unit, 0, ACL_FORMAT_ND, &three, 1, b.dev) ==
         nullptr);
  EXPECT(aclnnAdd(nullptr, 0, nullptr, stream) == ACLNN_ERR_PARAM_NULLPTR);

  /* the two phases; the objects may go before the run */
  aclTensor *ta2 = vec(a, 4), *tb2 = vec(b, 4), *to2 = vec(o, 4);
  OK(aclnnAddGetWorkspaceSize(ta2, tb2, alpha, to2, &ws, &ex));
  EXPECT(ws == 0);
  OK(aclDestroyTensor(ta2));
  OK(aclDestroyTensor(tb2));
  OK(aclDestroyTensor(to2));
  OK(aclnnAdd(nullptr, ws, ex, stream));
  OK(aclrtSynchronizeStream(stream));
  EXPECT(near(download(o), {11, 22, 33, 44}));

  /* a repeatable executor runs again, with an output address changed */
  OK(aclnnAddGetWorkspaceSize(ta, tb, alpha, to, &ws, &ex));
  EXPECT(aclSetOutputTensorAddr(ex, 0, to, o2.dev) == ACLNN_ERR_PARAM_INVALID); /* not repeatable yet */
  OK(aclSetAclOpExecutorRepeatable(ex));
  OK(aclnnAdd(nullptr, 0, ex, stream));
  OK(aclSetOutputTensorAddr(ex, 0, to, o2.dev));
  OK(aclSetInputTensorAddr(ex, 1, tb, a.dev)); /* other := a: o2 = a + a */
  EXPECT(aclSetInputTensorAddr(ex, 2, tb, a.dev) == ACLNN_ERR_PARAM_INVALID); /* Add has two inputs */
  OK(aclnnAdd(nullptr, 0, ex, stream));
  OK(aclrtSynchronizeStream(stream));
  EXPECT(near(download(o2), {2, 4, 6, 8}));
  void *addr = nullptr;
  OK(aclGetRawTensorAddr(to, &addr));
  EXPECT(addr == o2.dev); /* the set call updates the tensor it names too */
  OK(aclDestroyAclOpExecutor(ex));
  OK(aclSetRawTensorAddr(to, o.dev));
  OK(aclSetRawTensorAddr(tb, b.dev));

  /* strided views: self is the transpose of a 2x2 buffer; an int64 alpha */
  int64_t dims[2] = {2, 2}, tstrides[2] = {1, 2};
  aclTensor *tt = aclCreateTensor(dims, 2, ACL_FLOAT, tstrides, 0, ACL_FORMAT_ND, dims, 2, a.dev);
  aclTensor *tb22 = aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 2, b.dev);
  aclTensor *to22 = aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 2, o.dev);
  int64_t two = 2;
  aclScalar *alpha2 = aclCreateScalar(&two, ACL_INT64);
  OK(aclnnAddGetWorkspaceSize(tt, tb22, alpha2, to22, &ws, &ex));
  OK(aclnnAdd(nullptr, 0, ex, nullptr)); /* the default stream */
  OK(aclrtSynchronizeStream(nullptr));
  EXPECT(near(download(o), {1 + 20, 3 + 40, 2 + 60, 4 + 80}));
  int64_t *got = nullptr;
  uint64_t n = 0;
  OK(aclGetViewStrides(tt, &got, &n));
  EXPECT(n == 2 && got[0] == 1 && got[1] == 2);
  std::free(got);
  aclDataType dt;
  OK(aclGetDataType(tt, &dt));
  EXPECT(dt == ACL_FLOAT);

  /* a float16 scalar */
  aclFloat16 half = aclFloatToFloat16(0.5f);
  aclScalar *ahalf = aclCreateScalar(&half, ACL_FLOAT16);
  OK(aclnnAddGetWorkspaceSize(ta, tb, ahalf, to, &ws, &ex));
  OK(aclnnAdd(nullptr, 0, ex, stream));
  OK(aclrtSynchronizeStream(stream));
  EXPECT(near(download(o), {6, 12, 18, 24}));

  /* freed memory: the first phase cannot know, the synchronize reports it */
  Buf gone = upload({1, 1, 1, 1});
  aclTensor *tg = vec(gone, 4);
  OK(aclrtFree(gone.dev));
  OK(aclnnAddGetWorkspaceSize(tg, tb, alpha, to, &ws, &ex));
  OK(aclnnAdd(nullptr, 0, ex, stream));
  EXPECT(aclrtSynchronizeStream(stream) == ACL_ERROR_INVALID_PARAM);
  OK(aclrtSynchronizeStream(stream)); /* reported once; the stream goes on */

  for (aclTensor *t : {ta, tb, to, t3, tt, tb22, to22, tg}) OK(aclDestroyTensor(t));
  for (aclScalar *s : {alpha, alpha2, ahalf}) OK(aclDestroyScalar(s));
  EXPECT(aclDestroyTensor(nullptr) == ACLNN_ERR_PARAM_NULLPTR);
  for (Buf *x : {&a, &b, &o, &o2}) OK(aclrtFree(x->dev));
  OK(aclrtDestroyStream(stream));
  OK(aclnnFinalize());
  OK(aclrtResetDevice(0));
  OK(aclFinalize());
  if (failures) std::fprintf(stderr, "%d checks failed\n", failures);
  return failures ? 1 : 0;
}
