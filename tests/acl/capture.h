/*
 * tests/acl/capture.h — stdout capture for the kernel-flow programs
 * (test_acl_k_*.cpp): kernel print output reaches stdout at the stream's
 * synchronize, and the programs check it the way the samples' run.sh greps
 * it. Header-only; each program includes it once.
 */
#ifndef RDEV_TESTS_ACL_CAPTURE_H
#define RDEV_TESTS_ACL_CAPTURE_H

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

/* What fd 1 receives between Begin and End is returned by End (and then
 * shown on the real stdout, for the log). */
class StdoutCapture {
 public:
  bool Begin() {
    std::fflush(stdout);
    file_ = std::tmpfile();
    saved_ = file_ ? dup(1) : -1;
    return saved_ >= 0 && dup2(fileno(file_), 1) >= 0;
  }
  std::string End() {
    std::fflush(stdout);
    std::string text;
    if (saved_ >= 0) {
      dup2(saved_, 1);
      close(saved_);
      saved_ = -1;
    }
    if (file_) {
      std::rewind(file_);
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0) text.append(buf, n);
      std::fclose(file_);
      file_ = nullptr;
    }
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    return text;
  }

 private:
  std::FILE *file_ = nullptr;
  int saved_ = -1;
};

/* The values of the lines "<key> N" in text, in order (as run.sh's grep). */
inline std::vector<long> Values(const std::string &text, const char *key) {
  std::vector<long> out;
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
    long v = 0;
    if (std::sscanf(text.c_str() + at + std::strlen(key), " %ld", &v) == 1) out.push_back(v);
  }
  return out;
}

} // namespace

#endif
