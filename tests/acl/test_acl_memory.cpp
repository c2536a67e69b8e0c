// tests/acl/test_acl_memory.cpp — the same program as test_acl_memory.c, compiled as C++: the acl headers and the
// library serve C++ programs unmodified.
#include "test_acl_memory.c"
