/*
 * tests/acl/capture.h — stdout capture for the programs that check kernel
 * print (test_acl_k_*.cpp, test_acl_kernels.cpp): kernel print output
 * reaches stdout at the stream's synchronize, and the programs check it the
 * way the samples' run.sh greps it. On the acl backend the print is where
 * CANN writes it, on rdevd's stdout, which the runner keeps in the file
 * $RDEV_TEST_SERVER_STDOUT names (rdevd.py): what that file gained is
 * captured too. Header-only; each program includes it once.
 */
#ifndef RDEV_TESTS_ACL_CAPTURE_H
#define RDEV_TESTS_ACL_CAPTURE_H

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

/* What fd 1 receives between Begin and End is returned by End (and then
 * shown on the real stdout, for the log). */
class StdoutCapture {
 public:
  bool Begin() {
    server_from_ = ServerSize();
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
    text += ServerSince(server_from_);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    return text;
  }

 private:
  static const char *ServerPath() { return std::getenv("RDEV_TEST_SERVER_STDOUT"); }
  static off_t ServerSize() {
    struct stat st;
    return ServerPath() && stat(ServerPath(), &st) == 0 ? st.st_size : -1;
  }
  static std::string ServerSince(off_t from) {
    std::string text;
    int fd = from >= 0 ? open(ServerPath(), O_RDONLY) : -1;
    if (fd < 0) return text;
    char buf[4096];
    ssize_t n;
    if (lseek(fd, from, SEEK_SET) == from)
      while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    close(fd);
    return text;
  }

  std::FILE *file_ = nullptr;
  int saved_ = -1;
  off_t server_from_ = -1;
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
