// tests/acl/test_acl_streams_memory.cpp — the same program as test_acl_streams_memory.c, compiled as C++.
#include "test_acl_streams_memory.c"
